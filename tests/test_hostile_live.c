/*
 * test_hostile_live.c - live logdirs: runs appearing, growing and
 * disappearing while the server runs; a half-written profile answers 422
 * "incomplete ... still being written" and succeeds once complete; cached
 * conversions and ETags follow the file's size and mtime.
 *
 * Through xpv_app_route() (no socket) with a rescan on every request
 * (scan_interval_ms 0), so nothing here waits on a clock.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "app_fixture.h"
#include "routes.h"
#include "srv_fixture.h"
#include "testutil.h"

static char *root;
static xpv_app *app;
static xpv_response last;

static const char *const planes[] = {"/host:CPU", "/device:GPU:0", NULL};

static int setup(void **state) {
    (void)state;
    app = fx_app_one_run(&root, "first", planes);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    xpv_response_release(&last);
    xpv_app_free(app);
    tu_rmrf(root);
    free(root);
    return 0;
}

/* GET `uri` (with If-None-Match `inm`); the response stays in `last`. */
static int get(const char *uri, const char *inm) {
    xpv_response_release(&last);
    xpv_app_route(app, "GET", uri, inm, &last);
    return last.status;
}

static int body_has(const char *s) {
    return last.len && memmem(last.body, last.len, s, strlen(s)) != NULL;
}

static void path_of(char *out, size_t n, const char *run, const char *file) {
    snprintf(out, n, "%s/plugins/profile/%s/%s", root, run, file);
}

static uint64_t decodes(void) {
    xpv_app_stats st;
    xpv_app_get_stats(app, &st);
    return st.decodes;
}

#define P "/data/plugin/profile/"

static void test_live__runs_appear_grow_disappear(void **state) {
    (void)state;
    char d[4096];
    assert_int_equal(get(P "runs", NULL), 200);
    assert_false(body_has("second"));
    /* A run appears. */
    snprintf(d, sizeof d, "%s/plugins/profile/second", root);
    fx_host_file(d, "a.xplane.pb", planes, 2);
    assert_int_equal(get(P "runs", NULL), 200);
    assert_true(body_has("\"second\""));
    assert_int_equal(get(P "hosts?run=second", NULL), 200);
    assert_true(body_has("\"a\"") && !body_has("\"b\""));
    /* It grows: a second host. */
    fx_host_file(d, "b.xplane.pb", planes, 2);
    assert_int_equal(get(P "hosts?run=second", NULL), 200);
    assert_true(body_has("\"a\"") && body_has("\"b\""));
    assert_int_equal(get(P "profile_info?run=second&host=b", NULL), 200);
    /* A nested TensorBoard run appears too. */
    snprintf(d, sizeof d, "%s/train/plugins/profile/third", root);
    fx_host_file(d, "c.xplane.pb", planes, 1);
    assert_int_equal(get(P "runs", NULL), 200);
    assert_true(body_has("\"train/third\""));
    /* It disappears. */
    snprintf(d, sizeof d, "%s/plugins/profile/second", root);
    tu_rmrf(d);
    assert_int_equal(get(P "runs", NULL), 200);
    assert_false(body_has("\"second\""));
    assert_int_equal(get(P "profile_info?run=second&host=a", NULL), 404);
    assert_true(body_has("unknown run"));
    /* One host file vanishes from a live run. */
    char f[4096];
    snprintf(d, sizeof d, "%s/train", root);
    tu_rmrf(d);
    path_of(f, sizeof f, "first", "h.xplane.pb");
    assert_int_equal(get(P "profile_info?run=first&host=h", NULL), 200);
}

static void test_live__half_written(void **state) {
    (void)state;
    char d[4096], f[4096];
    xpv_buf b;
    xpv_buf_init(&b);
    fx_xspace(&b, planes, 200, "writer-host");
    snprintf(d, sizeof d, "%s/plugins/profile/writing", root);
    fx_mkdirs(d);
    path_of(f, sizeof f, "writing", "w.xplane.pb");
    /* The profiler has written 60% so far. */
    fx_write(f, b.data, b.len * 6 / 10);
    assert_int_equal(get(P "profile_info?run=writing&host=w", NULL), 422);
    assert_true(body_has("incomplete"));
    assert_true(body_has("still being written"));
    assert_true(body_has("\"file\":\"plugins/profile/writing/w.xplane.pb\""));
    /* Asked again without a change: the remembered answer, no new read. */
    uint64_t n0 = decodes();
    assert_int_equal(get(P "profile_info?run=writing&host=w", NULL), 422);
    assert_int_equal(decodes(), n0);
    /* More bytes arrive, still short. */
    fx_write(f, b.data, b.len * 9 / 10);
    assert_int_equal(get(P "profile_info?run=writing&host=w", NULL), 422);
    assert_true(body_has("incomplete"));
    assert_int_equal(decodes(), n0 + 1);
    /* Complete. */
    fx_write(f, b.data, b.len);
    assert_int_equal(get(P "profile_info?run=writing&host=w", NULL), 200);
    assert_true(body_has("writer-host"));
    /* The same for a gzip'ed profile still being written. */
    size_t gl;
    unsigned char *gz = fx_gzip(b.data, b.len, &gl);
    path_of(f, sizeof f, "writing", "z.xplane.pb.gz");
    fx_write(f, gz, gl / 2);
    assert_int_equal(get(P "profile_info?run=writing&host=z", NULL), 422);
    assert_true(body_has("incomplete"));
    fx_write(f, gz, gl);
    assert_int_equal(get(P "profile_info?run=writing&host=z", NULL), 200);
    free(gz);
    xpv_buf_free(&b);
}

static const char *http_date(time_t t) {
    static char d[64];
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(d, sizeof d, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    return d;
}

static void set_mtime(const char *f, time_t t) {
    struct timespec ts[2] = {{t, 0}, {t, 0}};
    assert_int_equal(utimensat(AT_FDCWD, f, ts, 0), 0);
}

static void test_live__invalidation(void **state) {
    (void)state;
    char d[4096], f[4096], etag[64];
    xpv_buf b;
    xpv_buf_init(&b);
    snprintf(d, sizeof d, "%s/plugins/profile/changing", root);
    fx_mkdirs(d);
    path_of(f, sizeof f, "changing", "x.xplane.pb");
    fx_xspace(&b, planes, 10, "host-AAAA");
    fx_write(f, b.data, b.len);
    set_mtime(f, 1000000000);
    assert_int_equal(get(P "profile_info?run=changing&host=x", NULL), 200);
    assert_true(body_has("host-AAAA"));
    assert_non_null(last.etag);
    /* Last-Modified: the newest of the mtime (2001 here), the ctime (now:
     * the mtime was set back) and the binary's mtime. */
    struct stat fs, xs;
    assert_int_equal(stat(f, &fs), 0);
    assert_int_equal(stat("/proc/self/exe", &xs), 0);
    assert_string_equal(last.last_modified,
                        http_date(fs.st_ctime > xs.st_mtime ? fs.st_ctime : xs.st_mtime));
    snprintf(etag, sizeof etag, "%s", last.etag);
    uint64_t n0 = decodes();
    /* Unchanged: cached (no decode) and 304 on revalidation. */
    assert_int_equal(get(P "profile_info?run=changing&host=x", NULL), 200);
    assert_int_equal(get(P "profile_info?run=changing&host=x", etag), 304);
    assert_int_equal(last.len, 0);
    assert_int_equal(decodes(), n0);
    /* Same size, new bytes, new mtime: a new decode, new ETag. */
    xpv_buf_reset(&b);
    fx_xspace(&b, planes, 10, "host-BBBB");
    fx_write(f, b.data, b.len);
    set_mtime(f, 1000000100);
    assert_int_equal(get(P "profile_info?run=changing&host=x", etag), 200);
    assert_true(body_has("host-BBBB"));
    assert_string_not_equal(last.etag, etag);
    assert_int_equal(decodes(), n0 + 1);
    /* Size changes with the mtime put back: still noticed. */
    snprintf(etag, sizeof etag, "%s", last.etag);
    xpv_buf_reset(&b);
    fx_xspace(&b, planes, 12, "host-CCCCCC");
    fx_write(f, b.data, b.len);
    set_mtime(f, 1000000100);
    assert_int_equal(get(P "profile_info?run=changing&host=x", etag), 200);
    assert_true(body_has("host-CCCCCC"));
    assert_int_equal(decodes(), n0 + 2);
    /* The tool list is computed from the changed file too. */
    assert_int_equal(get(P "run_tools?run=changing", NULL), 200);
    xpv_buf_free(&b);
}

/* An app on the logdir whose scan is an hour old after the first request:
 * the snapshot of the first request stays in use. */
static xpv_app *slow_app(void) {
    xpv_app_config cfg = {.logdir = root, .cache_bytes = 64u << 20,
                          .scan_interval_ms = 3600 * 1000};
    xpv_err err;
    xpv_app *a = xpv_app_new(&cfg, &err);
    assert_non_null(a);
    return a;
}

/* The TOCTOU of a live logdir: the scan saw a regular file; before it is
 * loaded someone swaps it for a symlink to a profile outside the logdir.
 * The load must refuse it (403, JSON naming the file), not follow it.  A
 * slow rescan interval keeps the pre-swap snapshot in use. */
static void test_live__symlink_swapped_after_scan(void **state) {
    (void)state;
    char d[4096], f[4096], out[4096];
    char *outside = tu_mkdtemp();
    snprintf(out, sizeof out, "%s/secret.xplane.pb", outside);
    fx_host_file(outside, "secret.xplane.pb", planes, 5);
    snprintf(d, sizeof d, "%s/plugins/profile/swapped", root);
    fx_host_file(d, "s.xplane.pb", planes, 1);
    xpv_app *slow = slow_app();
    xpv_response r;
    xpv_app_route(slow, "GET", P "hosts?run=swapped", NULL, &r);   /* the scan */
    assert_int_equal(r.status, 200);
    xpv_response_release(&r);
    path_of(f, sizeof f, "swapped", "s.xplane.pb");
    assert_int_equal(unlink(f), 0);
    assert_int_equal(symlink(out, f), 0);
    xpv_app_route(slow, "GET", P "profile_info?run=swapped&host=s", NULL, &r);
    assert_int_equal(r.status, 403);
    assert_non_null(memmem(r.body, r.len, "outside the logdir", 18));
    assert_non_null(memmem(r.body, r.len, "\"file\":\"plugins/profile/swapped/s.xplane.pb\"", 44));
    assert_null(memmem(r.body, r.len, "secret", 6));
    xpv_response_release(&r);
    xpv_app_route(slow, "GET", P "data?run=swapped&tag=overview_page&host=s", NULL, &r);
    assert_int_equal(r.status, 403);
    xpv_response_release(&r);
    xpv_app_free(slow);
    tu_rmrf(outside);
    free(outside);
}

/* A profile rewritten in place (same inode and size) while the scan still
 * shows its old identity (issue 26, item 3): the cached profile, whose
 * mapping now holds the new bytes, is not used for the next answer: it is
 * forgotten and the file decoded again (a stale reload), and that answer
 * names the new host; a profile read into memory would have no such
 * problem, so this needs the mapped path (a plain file). */
static void test_live__rewritten_in_place(void **state) {
    (void)state;
    char d[4096], f[4096];
    xpv_buf b;
    xpv_buf_init(&b);
    snprintf(d, sizeof d, "%s/plugins/profile/rewritten", root);
    fx_mkdirs(d);
    path_of(f, sizeof f, "rewritten", "x.xplane.pb");
    fx_xspace(&b, planes, 10, "host-AAAA");
    fx_write(f, b.data, b.len);
    xpv_app *slow = slow_app();
    xpv_response r;
    xpv_app_route(slow, "GET", P "profile_info?run=rewritten&host=x", NULL, &r);
    assert_int_equal(r.status, 200);
    assert_non_null(memmem(r.body, r.len, "host-AAAA", 9));
    xpv_response_release(&r);
    xpv_app_stats st0, st1;
    xpv_app_get_stats(slow, &st0);
    assert_int_equal(st0.stale_reloads, 0);
    /* same size, new bytes, written over the same inode */
    struct stat a, c;
    assert_int_equal(stat(f, &a), 0);
    xpv_buf_reset(&b);
    fx_xspace(&b, planes, 10, "host-BBBB");
    int fd = open(f, O_WRONLY);
    assert_true(fd >= 0);
    assert_int_equal(pwrite(fd, b.data, b.len, 0), (ssize_t)b.len);
    close(fd);
    assert_int_equal(stat(f, &c), 0);
    assert_int_equal(a.st_ino, c.st_ino);
    assert_int_equal(a.st_size, c.st_size);
    xpv_app_route(slow, "GET", P "run_tools?run=rewritten", NULL, &r);
    assert_int_equal(r.status, 200);
    xpv_response_release(&r);
    xpv_app_get_stats(slow, &st1);
    assert_int_equal(st1.stale_reloads, 1);
    assert_int_equal(st1.decodes, st0.decodes + 1);
    xpv_app_free(slow);
    xpv_buf_free(&b);
}

/* The same for a TF 2.2 per-tool file, which is read by legacy_serve.c. */
static void test_live__legacy_symlink_swapped_after_scan(void **state) {
    (void)state;
    char d[4096], f[8192], out[4096];
    char *outside = tu_mkdtemp();
    snprintf(out, sizeof out, "%s/secret.pod_viewer.json", outside);
    FILE *o = fopen(out, "w");
    assert_non_null(o);
    fputs("{\"podStats\":{\"secret\":1}}", o);
    fclose(o);
    snprintf(d, sizeof d, "%s/plugins/profile/legswap", root);
    fx_mkdirs(d);
    snprintf(f, sizeof f, "%s/w.pod_viewer.json", d);
    o = fopen(f, "w");
    assert_non_null(o);
    fputs("{\"podStats\":{}}", o);
    fclose(o);
    xpv_app *slow = slow_app();
    xpv_response r;
    xpv_app_route(slow, "GET", P "hosts?run=legswap&tag=pod_viewer", NULL, &r); /* the scan */
    assert_int_equal(r.status, 200);
    assert_non_null(memmem(r.body, r.len, "\"w\"", 3));
    xpv_response_release(&r);
    assert_int_equal(unlink(f), 0);
    assert_int_equal(symlink(out, f), 0);
    xpv_app_route(slow, "GET", P "data?run=legswap&tag=pod_viewer&host=w", NULL, &r);
    assert_int_equal(r.status, 403);
    assert_null(memmem(r.body, r.len, "secret", 6));
    xpv_response_release(&r);
    xpv_app_free(slow);
    tu_rmrf(outside);
    free(outside);
}

/* If-Modified-Since (no If-None-Match): 304 when Last-Modified is not newer,
 * decided before any file is read; ignored when If-None-Match is present,
 * when invalid, or when in the future. */
static void test_live__if_modified_since(void **state) {
    (void)state;
    char d[4096], lm[64], before[64];
    snprintf(d, sizeof d, "%s/plugins/profile/ims", root);
    fx_host_file(d, "i.xplane.pb", planes, 4);
    const char *u = P "data?run=ims&tag=overview_page&host=i";
    xpv_response r;
    xpv_app_route_cond(app, "GET", u, NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    assert_true(r.last_modified[0]);
    snprintf(lm, sizeof lm, "%s", r.last_modified);
    xpv_response_release(&r);
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    assert_non_null(strptime(lm, "%a, %d %b %Y %H:%M:%S GMT", &tm));
    time_t t = timegm(&tm);
    snprintf(before, sizeof before, "%s", http_date(t - 1));
    uint64_t n0 = decodes();
    struct { const char *inm, *ims; int status; } rows[] = {
        {NULL, lm, 304},                                /* not modified since */
        {NULL, "Sun, 06 Nov 1994 08:49:37 GMT", 200},   /* modified since */
        {NULL, before, 200},                            /* one second too old */
        {NULL, "Sunday, 06-Nov-94 08:49:37 GMT", 200},  /* RFC 850 form */
        {NULL, "yesterday", 200},                       /* invalid: ignored */
        {NULL, "Fri, 31 Dec 9999 23:59:59 GMT", 200},   /* future: ignored */
        {"\"nope\"", lm, 200},                          /* If-None-Match decides */
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        xpv_app_route_cond(app, "GET", u, rows[i].inm, rows[i].ims, &r);
        if (r.status != rows[i].status)
            fail_msg("row %zu (%s): %d, want %d", i, rows[i].ims, r.status, rows[i].status);
        if (r.status == 304) {
            assert_int_equal(r.len, 0);
            assert_string_equal(r.last_modified, lm);
        }
        xpv_response_release(&r);
    }
    /* The asctime form of the same date: 304 too. */
    char asc[64];
    gmtime_r(&t, &tm);
    strftime(asc, sizeof asc, "%a %b %e %H:%M:%S %Y", &tm);
    xpv_app_route_cond(app, "GET", u, NULL, asc, &r);
    assert_int_equal(r.status, 304);
    xpv_response_release(&r);
    assert_int_equal(decodes(), n0);   /* the 304s read no file */
    /* Static files and the run list carry no Last-Modified: never 304. */
    xpv_app_route_cond(app, "GET", P "runs", NULL, lm, &r);
    assert_int_equal(r.status, 200);
    xpv_response_release(&r);
}

TU_MAIN_WITH(setup, teardown,
             cmocka_unit_test(test_live__runs_appear_grow_disappear),
             cmocka_unit_test(test_live__half_written),
             cmocka_unit_test(test_live__invalidation),
             cmocka_unit_test(test_live__symlink_swapped_after_scan),
             cmocka_unit_test(test_live__rewritten_in_place),
             cmocka_unit_test(test_live__legacy_symlink_swapped_after_scan),
             cmocka_unit_test(test_live__if_modified_since))
