/*
 * fuzz_routes.c - libFuzzer target: request target -> response, through
 * the real routes (path and query decoding, prefix handling, run / host /
 * tool resolution, every converter via the cache, CSV export).
 *
 * Input: "[METHOD ]URI[\nIF-NONE-MATCH]" (METHOD one of GET HEAD POST).
 * A logdir is written once into a temporary directory: a synthetic
 * one-host run, a two-host run, a corrupt, an empty and a gzip'ed file,
 * plus a symlink to a directory outside the logdir whose profile's
 * hostname is a canary.  Every input is routed by an app without and one
 * with a path prefix.  Invariants (abort on violation): a known status, a
 * JSON error body for errors, never the canary (nothing outside the logdir
 * is served).  The input is also fed to the DataTable -> CSV converter.
 * The cache budget is small so the run stays bounded in memory.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "legacy.h"
#include "routes.h"
#include "srv_fixture.h"
#include "synth.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CANARY "CANARY-OUTSIDE-LOGDIR"

static char root[256];
static xpv_app *app_plain, *app_prefix;

static void cleanup(void) {
    xpv_app_free(app_plain);
    xpv_app_free(app_prefix);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (system(cmd) != 0) fprintf(stderr, "fuzz_routes: cannot remove %s\n", root);
}

static void write_synth(const char *logdir, const char *run, int hosts) {
    xpv_synth_opts o;
    char err[256];
    memset(&o, 0, sizeof o);
    o.size_bytes = 30000;
    o.steps = 2;
    o.hosts = hosts;
    xpv_synth_defaults(&o);
    if (xpv_synth_logdir(&o, logdir, run, err, sizeof err) != 0) {
        fprintf(stderr, "fuzz_routes: synth: %s\n", err);
        abort();
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    if (app_plain) return 0;   /* once (the replay test may call it twice) */
    (void)argc;
    (void)argv;
    const char *t = getenv("TMPDIR");
    snprintf(root, sizeof root, "%s/xpv-fuzz-routes.XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(root)) abort();
    char logdir[512], p[1024];
    snprintf(logdir, sizeof logdir, "%s/logdir", root);
    write_synth(logdir, "one", 1);
    snprintf(p, sizeof p, "%s/nested", logdir);
    write_synth(p, "two", 2);
    static const char *const planes[] = {"/host:CPU", "/device:GPU:0", NULL};
    snprintf(p, sizeof p, "%s/plugins/profile/bad", logdir);
    fx_mkdirs(p);
    snprintf(p, sizeof p, "%s/plugins/profile/bad/corrupt.xplane.pb", logdir);
    fx_write(p, "\x0a\xff\xff\xff\x0f junk", 10);
    snprintf(p, sizeof p, "%s/plugins/profile/bad/empty.xplane.pb", logdir);
    fx_write(p, "", 0);
    xpv_buf b;
    xpv_buf_init(&b);
    fx_xspace(&b, planes, 20, "gzhost");
    size_t gl;
    unsigned char *gz = fx_gzip(b.data, b.len, &gl);
    snprintf(p, sizeof p, "%s/plugins/profile/bad/g.xplane.pb.gz", logdir);
    fx_write(p, gz, gl);
    free(gz);
    xpv_buf_reset(&b);
    /* Outside the logdir, reachable only through a symlink. */
    snprintf(p, sizeof p, "%s/outside/plugins/profile/evil", root);
    fx_mkdirs(p);
    fx_xspace(&b, planes, 5, CANARY);
    snprintf(p, sizeof p, "%s/outside/plugins/profile/evil/" CANARY ".xplane.pb", root);
    fx_write(p, b.data, b.len);
    xpv_buf_free(&b);
    snprintf(p, sizeof p, "%s/link", logdir);
    if (symlink("../outside", p) != 0) abort();

    /* Scanned once, when the app starts (the logdir never changes here):
     * the server's background rescans, not a walk of the tree per request
     * (a 0 interval), which cost a third of each execution. */
    xpv_app_config cfg = {logdir, 0, "", 0, 16u << 20, 3600 * 1000};
    xpv_err err;
    app_plain = xpv_app_new(&cfg, &err);
    cfg.path_prefix = "/team/profile";
    app_prefix = xpv_app_new(&cfg, &err);
    if (!app_plain || !app_prefix) abort();
    atexit(cleanup);
    return 0;
}

/* 403 is capture_profile's answer when capture is off or the token is
 * wrong (this app has no capture token to guess). `echo`: the request itself contains the canary (error messages may
 * quote the request), so its appearance proves nothing. */
static void check(const xpv_response *r, int echo) {
    switch (r->status) {
    case 200: case 301: case 304: case 400: case 403: case 404: case 405: case 413:
    case 414: case 422: case 500:
        break;
    default:
        fprintf(stderr, "unexpected status %d\n", r->status);
        abort();
    }
    if (r->status >= 400 && (r->len < 10 || memcmp(r->body, "{\"error\":", 9) != 0))
        abort();
    if (!echo && r->len && memmem(r->body, r->len, CANARY, strlen(CANARY))) {
        fprintf(stderr, "served a file outside the logdir\n");
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *s = malloc(size + 1);
    memcpy(s, data, size);
    s[size] = '\0';
    const char *method = "GET";
    char *uri = s;
    if (!strncmp(s, "HEAD ", 5)) method = "HEAD", uri = s + 5;
    else if (!strncmp(s, "POST ", 5)) method = "POST", uri = s + 5;
    else if (!strncmp(s, "GET ", 4)) uri = s + 4;
    char *inm = strchr(uri, '\n');
    if (inm) *inm++ = '\0';
    int echo = memmem(data, size, CANARY, strlen(CANARY)) != NULL;
    xpv_response r;
    xpv_app_route(app_plain, method, uri, inm, &r);
    check(&r, echo);
    xpv_response_release(&r);
    xpv_app_route(app_prefix, method, uri, inm, &r);
    check(&r, echo);
    xpv_response_release(&r);

    xpv_buf csv;
    xpv_err err;
    xpv_buf_init(&csv);
    xpv_err_clear(&err);
    /* The bytes as a stored DataTable JSON file, exported as CSV. */
    xpv_dt_doc doc;
    xpv_dt_doc_init(&doc, 1);
    if (xpv_legacy_tables(XPV_LEGACY_OVERVIEW_JSON, data, size, 1u << 20, &doc, &err) == 0)
        (void)xpv_dt_doc_write_csv(&doc, size % 3, &csv, &err);
    xpv_dt_doc_release(&doc);
    xpv_buf_free(&csv);
    free(s);
    return 0;
}
