/*
 * main.c - the xpview command line.
 *
 *   xpview [--logdir DIR] [--port 6006] [--host ADDR | --bind_all]
 *          [--path_prefix /sub/path] [--cache_dir DIR] [--max_file_size N]
 *          [--cache_mb N] [--help] [--version]
 *   xpview export --tool NAME [--host H] [--param k=v]... [--route R] RUN_DIR
 *   xpview export --list_tools      (the tool names, one per line)
 *   xpview synth [--size BYTES] [--hosts N] [--steps N] [--gpus N]
 *                [--seed N] [--run NAME] OUT_DIR
 *   xpview info FILE
 *   xpview diff [--tool T] [--host H] [--base_host H] [--format text|json|csv]
 *               [--fail_if_slower PCT] [--top N] BASE NEW
 *   xpview healthcheck [URL]      (exit 0 when URL answers 200)
 *   xpview capture --logdir DIR [--duration_ms N] [--num_retry N] [...]
 *                  ADDR[,ADDR...]  (remote capture into a new run)
 *
 * Without --logdir the server generates the bundled demo logdir (synthetic
 * TF-GPU profiles) and serves it.  Signals: SIGINT/SIGTERM stop gracefully.
 */
#include <errno.h>
#include <ftw.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "discovery.h"
#include "capture.h"
#include "capture_route.h"
#include "compare.h"
#include "http.h"
#include "loader.h"
#include "query.h"
#include "cache.h"
#include "routes.h"
#include "synth.h"
#include "tool.h"
#include "version.h"

static const char usage[] =
    "usage: xpview [--logdir PATH | PATH] [--port 6006] [--host 127.0.0.1 | --bind_all]\n"
    "              [--path_prefix /sub/path] [--allowed_hosts NAME,...]\n"
    "              [--cache_dir DIR] [--max_file_size BYTES] [--cache_mb N]\n"
    "              [--max_connections N] [--max_connections_per_ip N]\n"
    "              [--timeout SECONDS] [--head_timeout SECONDS] [--grace SECONDS]\n"
    "              [--workers N] [--max_queued N] [--busy_wait SECONDS]\n"
    "              [--allow_capture] [--capture_allow HOST[:PORT],...]\n"
    "              [--help] [--version]\n"
    "       xpview export --list_tools\n"
    "       xpview export --tool NAME [--host H] [--param k=v]... [--route data]\n"
    "              [--max_file_size BYTES] RUN_DIR\n"
    "       xpview synth [--size BYTES] [--hosts N] [--steps N] [--gpus N]\n"
    "              [--seed N] [--run NAME] OUT_DIR\n"
    "       xpview info FILE\n"
    "       xpview diff [--tool overview_page] [--host H] [--base_host H]\n"
    "              [--format text|json|csv] [--fail_if_slower PCT] [--top N]\n"
    "              BASE NEW\n"
    "       xpview healthcheck [http://127.0.0.1:6006/healthz]\n"
    "       xpview capture --logdir DIR [--duration_ms 1000] [--num_retry 3]\n"
    "              [--host_tracer_level 2] [--device_tracer_level 1]\n"
    "              [--python_tracer_level 0] [--delay_ms 0] [--timeout_ms N]\n"
    "              [--max_file_size BYTES] ADDR[,ADDR...]\n"
    "\n"
    "Serves the TensorBoard profile runs under --logdir (every\n"
    "<dir>/plugins/profile/<run>/<host>.xplane.pb) at http://localhost:6006/.\n"
    "Without --logdir a synthetic demo logdir is generated and served.\n"
    "\n"
    "  --logdir PATH        TensorBoard log directory to serve; also a directory\n"
    "                       inside one (run, plugins/profile, one profile run) or\n"
    "                       a single profile file; a bare PATH works the same\n"
    "  --port N             TCP port (default 6006; 0 = any free port)\n"
    "  --host ADDR          address to bind (default 127.0.0.1)\n"
    "  --bind_all           bind every interface (IPv6 and IPv4)\n"
    "  --path_prefix P      serve under /P/ (behind a reverse proxy)\n"
    "  --allowed_hosts L    Host names answered besides IP addresses, localhost,\n"
    "                       this machine's name and --host (DNS rebinding\n"
    "                       protection): a reverse proxy's public name;\n"
    "                       .example.com also allows its subdomains, * any name\n"
    "  --cache_dir DIR      persistent cache, shareable by replicas: trace\n"
    "                       viewer indexes in DIR/trace-index/ (reused across\n"
    "                       restarts; written atomically; never inside the\n"
    "                       logdir) and, without --logdir, the demo logdir in\n"
    "                       DIR/demo (default: no index cache, demo in a\n"
    "                       temporary directory removed on exit)\n"
    "  --max_file_size N    largest profile file (and gunzipped size) loaded,\n"
    "                       bytes; K/M/G suffixes allowed (default 4G)\n"
    "  --cache_mb N         memory budget for decoded profiles and results\n"
    "                       (default: half the RAM, at most 8192)\n"
    "  --max_connections N  open connections at most (default 512); at the cap an\n"
    "                       idle or stalled connection is closed to admit a new one\n"
    "  --max_connections_per_ip N  from one client address (default half the cap)\n"
    "  --workers N          threads for heavy requests (decodes, tool builds,\n"
    "                       trace queries; default two per core, 4 to 16); the\n"
    "                       HTTP threads answer cached results meanwhile\n"
    "  --max_queued N       requests waiting for a worker at most (default 256);\n"
    "                       more get 503 with Retry-After at once\n"
    "  --busy_wait S        longest wait for a worker, or for memory held by\n"
    "                       other requests, before a 503 with Retry-After\n"
    "                       (default 120 and 15)\n"
    "  --grace S            on SIGTERM/SIGINT, let responses in flight (full trace\n"
    "                       downloads too) finish for up to S seconds (default 60)\n"
    "  --head_timeout S     a new connection's first request head must arrive\n"
    "                       within S seconds (default 10; at most --timeout)\n"
    "  --timeout SECONDS    a connection must send a complete request head\n"
    "                       within this time and is closed when idle this\n"
    "                       long (default 30)\n"
    "  --allow_capture      allow Capture Profile (the capture_profile route)\n"
    "                       with --bind_all or a non-loopback --host, and for\n"
    "                       requests through a proxy (X-Forwarded-For); a\n"
    "                       loopback server allows it to loopback clients\n"
    "  --capture_allow L    capture only from these targets: HOST[:PORT],...\n"
    "                       (default: any for loopback clients, only this\n"
    "                       machine's loopback addresses for the others)\n"
    "\n"
    "  export               print the JSON the /data route returns for a run\n"
    "                       directory (a plugins/profile/<run> directory)\n"
    "  synth                write a synthetic TF-GPU logdir\n"
    "  info                 print the planes, lines and event counts of a file\n"
    "  capture              take a profile from running jobs (ADDR =\n"
    "                       grpc://HOST:PORT or HOST:PORT of\n"
    "                       jax.profiler.start_server / tf.profiler.experimental.\n"
    "                       server.start) into DIR/plugins/profile/<new run>/\n"
    "                       <host>.xplane.pb, one file per address, in parallel;\n"
    "                       deadline per address: --timeout_ms (default 30 s +\n"
    "                       delay + duration; at most 600000, 10 minutes);\n"
    "                       a file over --max_file_size (default 4G) is deleted\n"
    "  diff                 compare two profiles (run directories or profile\n"
    "                       files) in one tool: per-row base, new and change,\n"
    "                       sorted by change (tools: overview_page, kernel_stats,\n"
    "                       memory_profile, framework_op_stats); exit 0, 3 when\n"
    "                       --fail_if_slower PCT is given and the new total is\n"
    "                       slower by more than PCT percent, 2 on usage or load\n"
    "                       errors\n"
    "  healthcheck          GET the URL (default http://127.0.0.1:6006/healthz);\n"
    "                       exit 0 on HTTP 200, 1 otherwise (for containers)\n";

/* ==== Argument helpers ================================================== */

/* "--name value" or "--name=value": returns the value and advances *i, or
 * NULL when argv[*i] is not this option. */
static const char *opt_value(int argc, char **argv, int *i, const char *name) {
    size_t n = strlen(name);
    const char *a = argv[*i];
    if (strncmp(a, name, n) != 0) return NULL;
    if (a[n] == '=') return a + n + 1;
    if (a[n] != '\0') return NULL;
    if (*i + 1 >= argc) {
        fprintf(stderr, "xpview: %s needs a value\n", name);
        exit(2);
    }
    return argv[++*i];
}

/* Bytes with an optional K/M/G/T suffix (powers of 1024). */
static unsigned long long parse_size(const char *s, const char *what) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    unsigned long long mul = 1;
    if (*end == 'k' || *end == 'K') mul = 1ULL << 10, end++;
    else if (*end == 'm' || *end == 'M') mul = 1ULL << 20, end++;
    else if (*end == 'g' || *end == 'G') mul = 1ULL << 30, end++;
    else if (*end == 't' || *end == 'T') mul = 1ULL << 40, end++;
    if (*end == 'B' || *end == 'b') end++;
    if (errno || end == s || *end || s[0] == '-' || v > UINT64_MAX / mul) {
        fprintf(stderr, "xpview: %s: not a size: %s\n", what, s);
        exit(2);
    }
    return v * mul;
}

static long parse_int(const char *s, const char *what, long lo, long hi) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) {
        fprintf(stderr, "xpview: %s: expected an integer in [%ld, %ld]: %s\n",
                what, lo, hi, s);
        exit(2);
    }
    return v;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

static void rmrf(const char *path) {
    nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* ==== Subcommands ====================================================== */

static int cmd_synth(int argc, char **argv) {
    xpv_synth_opts o;
    const char *out = NULL, *run = NULL, *v;
    memset(&o, 0, sizeof o);
    for (int i = 2; i < argc; i++) {
        if ((v = opt_value(argc, argv, &i, "--size"))) o.size_bytes = parse_size(v, "--size");
        else if ((v = opt_value(argc, argv, &i, "--hosts")))
            o.hosts = (int)parse_int(v, "--hosts", 1, 1024);
        else if ((v = opt_value(argc, argv, &i, "--steps")))
            o.steps = (int)parse_int(v, "--steps", 1, 1000000);
        else if ((v = opt_value(argc, argv, &i, "--gpus")))
            o.gpus = (int)parse_int(v, "--gpus", 1, 64);
        else if ((v = opt_value(argc, argv, &i, "--seed")))
            o.seed = parse_size(v, "--seed");
        else if ((v = opt_value(argc, argv, &i, "--run"))) run = v;
        else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "xpview synth: unknown option %s\n%s", argv[i], usage);
            return 2;
        } else if (!out) out = argv[i];
        else {
            fprintf(stderr, "xpview synth: one OUT_DIR only\n");
            return 2;
        }
    }
    if (!out) {
        fprintf(stderr, "xpview synth: OUT_DIR missing\n%s", usage);
        return 2;
    }
    xpv_synth_defaults(&o);
    char err[512] = "";
    if (xpv_synth_logdir(&o, out, run, err, sizeof err) != 0) {
        fprintf(stderr, "xpview synth: %s\n", err);
        return 1;
    }
    return 0;
}

static int cmd_export(int argc, char **argv) {
    const char *tool = NULL, *host = NULL, *dir = NULL, *route = "data", *v;
    uint64_t max_file_size = 0;
    xpv_query q = XPV_QUERY_INIT;
    const char *params[XPV_QUERY_MAX_PARAMS];
    size_t nparams = 0;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--list_tools")) {
            for (const xpv_tool *const *t = xpv_tools(); *t; t++) printf("%s\n", (*t)->name);
            return 0;
        }
        if ((v = opt_value(argc, argv, &i, "--tool"))) tool = v;
        else if ((v = opt_value(argc, argv, &i, "--host"))) host = v;
        else if ((v = opt_value(argc, argv, &i, "--route"))) route = v;
        else if ((v = opt_value(argc, argv, &i, "--max_file_size")))
            max_file_size = parse_size(v, "--max_file_size");
        else if ((v = opt_value(argc, argv, &i, "--param"))) {
            if (!strchr(v, '=') || nparams == XPV_QUERY_MAX_PARAMS - 4) {
                fprintf(stderr, "xpview export: --param wants key=value: %s\n", v);
                return 2;
            }
            params[nparams++] = v;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "xpview export: unknown option %s\n%s", argv[i], usage);
            return 2;
        } else if (!dir) dir = argv[i];
        else {
            fprintf(stderr, "xpview export: one RUN_DIR only\n");
            return 2;
        }
    }
    if (!dir || (!tool && (!strcmp(route, "data") || !strcmp(route, "data_csv")))) {
        fprintf(stderr, "xpview export: --tool NAME and RUN_DIR are required\n%s", usage);
        return 2;
    }
    xpv_app_config cfg = {dir, 1, "", max_file_size, 0, -1};
    xpv_err err;
    xpv_app *app = xpv_app_new(&cfg, &err);
    if (!app) {
        fprintf(stderr, "xpview export: %s\n", err.msg);
        return 1;
    }
    const char *root = xpv_app_logdir(app);
    const char *base = strrchr(root, '/');
    base = base && base[1] ? base + 1 : root;
    xpv_query_add(&q, "run", base);
    if (tool) xpv_query_add(&q, "tag", tool);
    if (host) xpv_query_add(&q, "host", host);
    for (size_t i = 0; i < nparams; i++) {
        char k[256];
        const char *eq = strchr(params[i], '=');
        snprintf(k, sizeof k, "%.*s", (int)(eq - params[i]), params[i]);
        xpv_query_add(&q, k, eq + 1);
    }
    xpv_response r;
    xpv_app_data_route(app, route, &q, &r);
    int rc = 0;
    if (r.status != 200) {
        fprintf(stderr, "xpview export: %d %.*s\n", r.status, (int)r.len, r.body);
        rc = 1;
    } else if (r.produce) {
        /* Streamed (the full trace): the same chunks HTTP sends. */
        xpv_buf chunk;
        xpv_buf_init(&chunk);
        int more = 1;
        while (more && !rc) {
            xpv_buf_reset(&chunk);
            more = r.produce(r.state, &chunk);
            if (more < 0) {
                fprintf(stderr, "xpview export: the output could not be completed\n");
                rc = 2;
            } else if (fwrite(chunk.data, 1, chunk.len, stdout) != chunk.len) {
                rc = 1;
            }
        }
        if (!rc && fflush(stdout) != 0) rc = 1;
        if (rc == 1) fprintf(stderr, "xpview export: write error: %s\n", strerror(errno));
        if (rc) rc = 1;
        xpv_buf_free(&chunk);
    } else if (fwrite(r.body, 1, r.len, stdout) != r.len || fflush(stdout) != 0) {
        fprintf(stderr, "xpview export: write error: %s\n", strerror(errno));
        rc = 1;
    }
    xpv_response_release(&r);
    xpv_query_release(&q);
    xpv_app_free(app);
    return rc;
}

static int cmd_info(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: xpview info FILE\n");
        return 2;
    }
    xpv_err err;
    xpv_profile *p = xpv_load_profile(argv[2], NULL, NULL, &err);
    if (!p) {
        fprintf(stderr, "xpview info: %s\n", err.msg);
        return 1;
    }
    printf("file %s: %zu bytes, %u planes, %llu events, model %zu bytes\n", argv[2],
           p->file_size, p->nplanes, (unsigned long long)p->nevents, p->mem_size);
    for (uint32_t i = 0; i < p->nhostnames; i++)
        printf("hostname %.*s\n", (int)p->hostnames[i].len, p->hostnames[i].ptr);
    for (uint32_t i = 0; i < p->nerrors; i++)
        printf("error %.*s\n", (int)p->errors[i].len, p->errors[i].ptr);
    for (uint32_t i = 0; i < p->nwarnings; i++)
        printf("warning %.*s\n", (int)p->warnings[i].len, p->warnings[i].ptr);
    for (uint32_t i = 0; i < p->nplanes; i++) {
        const xpv_plane *pl = &p->planes[i];
        printf("plane %lld \"%.*s\": %u lines, %llu events, %u event metadata, "
               "%u stat metadata, %u stats\n", (long long)pl->id, (int)pl->name.len,
               pl->name.ptr, pl->nlines, (unsigned long long)pl->nevents,
               pl->nevent_meta ? pl->nevent_meta - 1 : 0,
               pl->nstat_meta ? pl->nstat_meta - 1 : 0, pl->nstats);
        for (uint32_t j = 0; j < pl->nlines; j++) {
            const xpv_line *ln = &pl->lines[j];
            printf("  line %lld \"%.*s\": %u events\n", (long long)ln->id,
                   (int)ln->display_name.len, ln->display_name.ptr, ln->nevents);
        }
    }
    xpv_profile_free(p);
    return 0;
}

/* One side of `xpview diff`: an app over the run directory holding PATH
 * (a run directory, or a profile file whose directory is the run) and the
 * run / host to pick in it. */
typedef struct diff_side {
    xpv_app *app;
    char run[1024];
    char host[1024];             /* "" = the option's host */
} diff_side;

/* Host name of a profile file: its name minus the profile suffix. */
static void host_of_file(const char *file, char *out, size_t n) {
    static const char *const suffixes[] = {
        ".xplane.pb.gz", ".xplane.pb", ".pt.trace.json.gz", ".pt.trace.json",
        ".trace.json.gz", ".json.gz", ".json",
    };
    const char *b = strrchr(file, '/');
    b = b ? b + 1 : file;
    snprintf(out, n, "%s", b);
    size_t len = strlen(out);
    for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
        size_t sl = strlen(suffixes[i]);
        if (len > sl && !strcmp(out + len - sl, suffixes[i])) {
            out[len - sl] = '\0';
            return;
        }
    }
}

static int diff_open(const char *path, diff_side *s) {
    struct stat st;
    memset(s, 0, sizeof *s);
    if (stat(path, &st) != 0) {
        fprintf(stderr, "xpview diff: %s: %s\n", path, strerror(errno));
        return -1;
    }
    char dir[4096];
    if (S_ISDIR(st.st_mode)) {
        snprintf(dir, sizeof dir, "%s", path);
    } else {
        snprintf(dir, sizeof dir, "%s", path);
        char *slash = strrchr(dir, '/');
        if (slash == dir) slash[1] = '\0';
        else if (slash) *slash = '\0';
        else snprintf(dir, sizeof dir, ".");
        host_of_file(path, s->host, sizeof s->host);
    }
    xpv_app_config cfg = {dir, 1, "", 0, 0, -1};
    xpv_err err;
    s->app = xpv_app_new(&cfg, &err);
    if (!s->app) {
        fprintf(stderr, "xpview diff: %s: %s\n", path, err.msg);
        return -1;
    }
    const char *root = xpv_app_logdir(s->app);
    const char *b = strrchr(root, '/');
    snprintf(s->run, sizeof s->run, "%s", b && b[1] ? b + 1 : root);
    return 0;
}

static int cmd_diff(int argc, char **argv) {
    const char *tool = "overview_page", *host = NULL, *base_host = NULL, *format = "text";
    const char *paths[2] = {NULL, NULL}, *v;
    double fail_pct = 0;
    int gate = 0;
    long top = 0;
    size_t np = 0;
    for (int i = 2; i < argc; i++) {
        if ((v = opt_value(argc, argv, &i, "--tool"))) tool = v;
        else if ((v = opt_value(argc, argv, &i, "--host"))) host = v;
        else if ((v = opt_value(argc, argv, &i, "--base_host"))) base_host = v;
        else if ((v = opt_value(argc, argv, &i, "--format"))) format = v;
        else if ((v = opt_value(argc, argv, &i, "--top")))
            top = parse_int(v, "--top", 0, 100000000);
        else if ((v = opt_value(argc, argv, &i, "--fail_if_slower"))) {
            char *end;
            errno = 0;
            fail_pct = strtod(v, &end);
            if (errno || end == v || *end || fail_pct != fail_pct) {
                fprintf(stderr, "xpview diff: --fail_if_slower: not a percentage: %s\n", v);
                return 2;
            }
            gate = 1;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "xpview diff: unknown option %s\n%s", argv[i], usage);
            return 2;
        } else if (np < 2) paths[np++] = argv[i];
        else {
            fprintf(stderr, "xpview diff: BASE and NEW only\n");
            return 2;
        }
    }
    if (np != 2) {
        fprintf(stderr, "xpview diff: BASE and NEW are required\n%s", usage);
        return 2;
    }
    if (strcmp(format, "text") && strcmp(format, "json") && strcmp(format, "csv")) {
        fprintf(stderr, "xpview diff: --format is text, json or csv: %s\n", format);
        return 2;
    }
    diff_side sb, sn;
    if (diff_open(paths[0], &sb) != 0) return 2;
    if (diff_open(paths[1], &sn) != 0) {
        xpv_app_free(sb.app);
        return 2;
    }
    xpv_request q;
    memset(&q, 0, sizeof q);
    q.tag = tool && *tool ? tool : NULL;
    q.run = sn.run[0] ? sn.run : NULL;
    q.base_run = sb.run[0] ? sb.run : NULL;
    const char *nh = sn.host[0] ? sn.host : host;
    const char *bh = sb.host[0] ? sb.host : base_host ? base_host : host;
    q.host = nh && *nh ? nh : "ALL_HOSTS";
    q.base_host = bh && *bh ? bh : "ALL_HOSTS";
    xpv_compare *c = NULL;
    xpv_err err;
    xpv_err_clear(&err);
    int rc = 0;
    if (xpv_app_diff(sb.app, sn.app, &q, &c, &err) != 0) {
        /* Name the side the error is about. */
        const char *side = "";
        if (err.file[0]) side = strstr(err.msg, err.file) ? "" : err.file;
        else if (strstr(err.msg, sb.run) && !strstr(err.msg, sn.run)) side = paths[0];
        else if (strstr(err.msg, sn.run)) side = paths[1];
        fprintf(stderr, "xpview diff: %s%s%s\n", side, *side ? ": " : "", err.msg);
        rc = 2;
    } else {
        xpv_buf b;
        xpv_buf_init(&b);
        if (!strcmp(format, "json")) {
            xpv_compare_write_json(c, (size_t)top, &b);
            xpv_buf_putc(&b, '\n');
        } else if (!strcmp(format, "csv")) {
            xpv_compare_write_csv(c, (size_t)top, &b);
        } else {
            char bl[4200], nl[4200];
            snprintf(bl, sizeof bl, "%s%s%s", paths[0], bh ? " host " : "", bh ? bh : "");
            snprintf(nl, sizeof nl, "%s%s%s", paths[1], nh ? " host " : "", nh ? nh : "");
            xpv_compare_write_text(c, (size_t)(top ? top : 0), bl, nl, &b);
        }
        if (fwrite(b.data, 1, b.len, stdout) != b.len || fflush(stdout) != 0) {
            fprintf(stderr, "xpview diff: write error: %s\n", strerror(errno));
            rc = 2;
        }
        xpv_buf_free(&b);
        if (!rc && gate && xpv_compare_slower(c, fail_pct)) {
            fprintf(stderr, "xpview diff: %s: new total %.3f %s is %+.1f%% against base "
                    "%.3f %s: slower by more than %g%%\n", c->kind->tool, c->new_total,
                    c->kind->unit, c->delta_pct, c->base_total, c->kind->unit, fail_pct);
            rc = 3;
        }
        xpv_compare_free(c);
    }
    xpv_app_free(sn.app);
    xpv_app_free(sb.app);
    return rc;
}

/* A plain-socket HTTP/1.0 GET (the runtime image has no curl).  Returns
 * the process exit status: 0 when the server answered 200. */
static int cmd_healthcheck(int argc, char **argv) {
    const char *url = argc > 2 ? argv[2] : "http://127.0.0.1:6006/healthz";
    char host[256], port[16] = "80", path[1024] = "/";
    const char *p = url;
    if (argc > 3 || strncmp(p, "http://", 7) != 0) {
        fprintf(stderr, "usage: xpview healthcheck [http://HOST:PORT/PATH]\n");
        return 2;
    }
    p += 7;
    size_t hl;
    const char *hend;
    if (*p == '[') {                       /* [v6addr]:port */
        hend = strchr(p, ']');
        if (!hend) return 2;
        hl = (size_t)(hend - p - 1);
        p++;
        hend++;
    } else {
        hend = p + strcspn(p, ":/");
        hl = (size_t)(hend - p);
    }
    if (hl == 0 || hl >= sizeof host) {
        fprintf(stderr, "xpview healthcheck: bad URL %s\n", url);
        return 2;
    }
    memcpy(host, p, hl);
    host[hl] = '\0';
    if (*hend == ':') {
        size_t pl = strcspn(hend + 1, "/");
        if (pl == 0 || pl >= sizeof port) return 2;
        memcpy(port, hend + 1, pl);
        port[pl] = '\0';
        hend += 1 + pl;
    }
    if (*hend == '/') snprintf(path, sizeof path, "%s", hend);

    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_socktype = SOCK_STREAM;
    int gai = getaddrinfo(host, port, &hints, &res);
    if (gai != 0) {
        fprintf(stderr, "xpview healthcheck: %s: %s\n", host, gai_strerror(gai));
        return 1;
    }
    int fd = -1;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) continue;
        struct timeval tv = {3, 0};        /* connect, send and receive */
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) break;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0) {
        fprintf(stderr, "xpview healthcheck: cannot connect to %s port %s\n", host, port);
        return 1;
    }
    char req[1400];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nHost: %s\r\n"
                     "Connection: close\r\n\r\n", path, host);
    if (n < 0 || (size_t)n >= sizeof req || write(fd, req, (size_t)n) != n) {
        fprintf(stderr, "xpview healthcheck: cannot send the request\n");
        close(fd);
        return 1;
    }
    char resp[64];
    size_t got = 0;
    while (got < sizeof resp - 1) {
        ssize_t r = read(fd, resp + got, sizeof resp - 1 - got);
        if (r <= 0) break;
        got += (size_t)r;
    }
    close(fd);
    resp[got] = '\0';
    int status = 0;
    if (sscanf(resp, "HTTP/%*d.%*d %d", &status) != 1) {
        fprintf(stderr, "xpview healthcheck: no HTTP answer from %s\n", url);
        return 1;
    }
    if (status != 200) {
        fprintf(stderr, "xpview healthcheck: %s answered %d\n", url, status);
        return 1;
    }
    return 0;
}

/* xpview capture: one new run, a file per address, captured in parallel. */
static int cmd_capture(int argc, char **argv) {
    const char *logdir = NULL, *addrs = NULL, *v;
    xpv_capture_opts o;
    xpv_capture_defaults(&o);
    for (int i = 2; i < argc; i++) {
        if ((v = opt_value(argc, argv, &i, "--logdir"))) logdir = v;
        else if ((v = opt_value(argc, argv, &i, "--duration_ms")))
            o.duration_ms = (uint64_t)parse_int(v, "--duration_ms", 1, (long)XPV_CAPTURE_MAX_MS);
        else if ((v = opt_value(argc, argv, &i, "--num_retry")))
            o.num_retry = (int)parse_int(v, "--num_retry", 0, 100);
        else if ((v = opt_value(argc, argv, &i, "--host_tracer_level")))
            o.host_tracer_level = (int)parse_int(v, "--host_tracer_level", 0, 3);
        else if ((v = opt_value(argc, argv, &i, "--device_tracer_level")))
            o.device_tracer_level = (int)parse_int(v, "--device_tracer_level", 0, 2);
        else if ((v = opt_value(argc, argv, &i, "--python_tracer_level")))
            o.python_tracer_level = (int)parse_int(v, "--python_tracer_level", 0, 1);
        else if ((v = opt_value(argc, argv, &i, "--delay_ms")))
            o.delay_ms = (uint64_t)parse_int(v, "--delay_ms", 0, (long)XPV_CAPTURE_MAX_MS);
        else if ((v = opt_value(argc, argv, &i, "--timeout_ms")))
            o.timeout_ms = (uint64_t)parse_int(v, "--timeout_ms", 1, (long)XPV_CAPTURE_MAX_MS);
        else if ((v = opt_value(argc, argv, &i, "--max_file_size")))
            o.max_bytes = parse_size(v, "--max_file_size");
        else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "xpview capture: unknown option %s\n%s", argv[i], usage);
            return 2;
        } else if (!addrs) addrs = argv[i];
        else {
            fprintf(stderr, "xpview capture: one ADDR[,ADDR...] list only\n");
            return 2;
        }
    }
    if (!logdir || !addrs) {
        fprintf(stderr, "xpview capture: --logdir DIR and ADDR are required\n%s", usage);
        return 2;
    }
    if (o.duration_ms + o.delay_ms >= XPV_CAPTURE_MAX_MS) {
        fprintf(stderr, "xpview capture: --duration_ms + --delay_ms must end within the "
                "%llu ms a capture may take\n", (unsigned long long)XPV_CAPTURE_MAX_MS);
        return 2;
    }
    static xpv_capture_target t[XPV_CAPTURE_MAX_TARGETS];
    char err[1024], run[128];
    int n = xpv_capture_parse_targets(addrs, t, XPV_CAPTURE_MAX_TARGETS, err, sizeof err);
    if (n < 0) {
        fprintf(stderr, "xpview capture: %s\n", err);
        return 2;
    }
    if (xpv_capture_make_run(logdir, run, sizeof run, err, sizeof err) != 0) {
        fprintf(stderr, "xpview capture: %s\n", err);
        return 1;
    }
    /* Absolute: the server resolves repository_root in its own cwd. */
    char *absdir = realpath(logdir, NULL);
    if (absdir) logdir = absdir;
    int failed = xpv_capture_run(logdir, run, t, (size_t)n, &o);
    for (int i = 0; i < n; i++) {
        if (t[i].ok)
            printf("wrote %s (%llu bytes, %s, from %s)\n", t[i].path,
                   (unsigned long long)t[i].bytes,
                   !strcmp(t[i].how, "response") ? "XSpace in the response"
                                                 : "saved by the server under repository_root",
                   t[i].addr);
        else
            fprintf(stderr, "xpview capture: %s\n", t[i].err);
    }
    fflush(stdout);
    free(absdir);
    return failed ? 1 : 0;
}

/* Write the demo logdir into `dir`: a single-host run (newest, shown
 * first) and a two-host run. */
static int write_demo(const char *dir, char *err, size_t errlen) {
    xpv_synth_opts o;
    memset(&o, 0, sizeof o);
    o.hosts = 2;
    xpv_synth_defaults(&o);
    if (xpv_synth_logdir(&o, dir, "2025_01_01_00_00_01_two_hosts", err, errlen) != 0)
        return -1;
    memset(&o, 0, sizeof o);
    xpv_synth_defaults(&o);
    return xpv_synth_logdir(&o, dir, "2025_01_01_00_00_02", err, errlen);
}

/* The demo logdir at `dir`.  With `shared` (a --cache_dir several
 * replicas may share), it is written into a private temporary directory
 * and renamed into place, so no server ever sees a half-written demo: the
 * first replica's rename wins, the others drop their copy. */
static int make_demo(const char *dir, int shared) {
    char err[512] = "";
    struct stat st;
    if (!shared) {
        if (write_demo(dir, err, sizeof err) == 0) return 0;
        goto fail;
    }
    if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode)) return 0;  /* already there */
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", dir, (long)getpid());
    rmrf(tmp);
    if (mkdir(tmp, 0755) != 0) {
        snprintf(err, sizeof err, "mkdir %.300s: %s", tmp, strerror(errno));
        goto fail;
    }
    if (write_demo(tmp, err, sizeof err) != 0) {
        rmrf(tmp);
        goto fail;
    }
    if (rename(tmp, dir) != 0) {
        int e = errno;
        rmrf(tmp);
        if (!(stat(dir, &st) == 0 && S_ISDIR(st.st_mode))) {
            snprintf(err, sizeof err, "rename to %.300s: %s", dir, strerror(e));
            goto fail;
        }
    }
    return 0;
fail:
    fprintf(stderr, "xpview: cannot write the demo logdir in %s: %s\n", dir, err);
    return -1;
}

/* ==== Server =========================================================== */

/* What `xpview [serve]` was asked for. */
typedef struct serve_opts {
    const char *logdir, *prefix, *cache_dir, *capture_allow;
    int allow_capture;
    unsigned busy_wait;
    xpv_http_config hc;
    xpv_app_config ac;
} serve_opts;

/* Parse the server's arguments into `o`: -1 to go on, else the exit
 * status (0 after --help / --version, 2 for a bad argument). */
static int serve_parse(int argc, char **argv, serve_opts *o) {
    const char *v;
    memset(o, 0, sizeof *o);
    o->prefix = "";
    o->hc.port = 6006;
    o->hc.host = "127.0.0.1";
    o->ac.scan_interval_ms = -1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(usage, stdout);
            return 0;
        }
        if (!strcmp(argv[i], "--version")) {
            printf("xpview %s\n", XPV_VERSION);
            return 0;
        }
        if (!strcmp(argv[i], "--bind_all")) {
            o->hc.bind_all = 1;
            continue;
        }
        if (!strcmp(argv[i], "--allow_capture")) {
            o->allow_capture = 1;
            continue;
        }
        if ((v = opt_value(argc, argv, &i, "--logdir"))) o->logdir = v;
        else if ((v = opt_value(argc, argv, &i, "--port")))
            o->hc.port = (int)parse_int(v, "--port", 0, 65535);
        else if ((v = opt_value(argc, argv, &i, "--host"))) o->hc.host = v;
        else if ((v = opt_value(argc, argv, &i, "--path_prefix"))) o->prefix = v;
        else if ((v = opt_value(argc, argv, &i, "--allowed_hosts"))) o->hc.allowed_hosts = v;
        else if ((v = opt_value(argc, argv, &i, "--cache_dir"))) o->cache_dir = v;
        else if ((v = opt_value(argc, argv, &i, "--capture_allow"))) o->capture_allow = v;
        else if ((v = opt_value(argc, argv, &i, "--max_file_size")))
            o->ac.max_file_size = parse_size(v, "--max_file_size");
        else if ((v = opt_value(argc, argv, &i, "--cache_mb")))
            o->ac.cache_bytes = (uint64_t)parse_int(v, "--cache_mb", 1, 1L << 30) << 20;
        else if ((v = opt_value(argc, argv, &i, "--max_connections")))
            o->hc.conn_limit = (unsigned)parse_int(v, "--max_connections", 1, 100000);
        else if ((v = opt_value(argc, argv, &i, "--timeout")))
            o->hc.timeout_s = (unsigned)parse_int(v, "--timeout", 1, 86400);
        else if ((v = opt_value(argc, argv, &i, "--workers")))
            o->hc.workers = (unsigned)parse_int(v, "--workers", 1, 256);
        else if ((v = opt_value(argc, argv, &i, "--max_queued")))
            o->hc.queue_max = (unsigned)parse_int(v, "--max_queued", 1, 100000);
        else if ((v = opt_value(argc, argv, &i, "--busy_wait")))
            o->busy_wait = (unsigned)parse_int(v, "--busy_wait", 1, 86400);
        else if ((v = opt_value(argc, argv, &i, "--grace")))
            o->hc.grace_s = (unsigned)parse_int(v, "--grace", 1, 86400);
        else if ((v = opt_value(argc, argv, &i, "--head_timeout")))
            o->hc.head_timeout_s = (unsigned)parse_int(v, "--head_timeout", 1, 86400);
        else if ((v = opt_value(argc, argv, &i, "--max_connections_per_ip")))
            o->hc.per_ip_limit = (unsigned)parse_int(v, "--max_connections_per_ip", 1, 100000);
        else if (argv[i][0] != '-' && !o->logdir) o->logdir = argv[i];   /* xpview PATH */
        else {
            fprintf(stderr, "xpview: unknown argument %s\n%s", argv[i], usage);
            return 2;
        }
    }

    return -1;
}

/* The demo logdir when none is given: DIR/demo under --cache_dir (kept),
 * else a temporary directory (*tmp set: remove it on exit).  0 or -1. */
static int serve_demo(const char *cache_dir, char *demo, size_t n, int *tmp) {
    *tmp = 0;
    if (cache_dir) {
        snprintf(demo, n, "%s/demo", cache_dir);
        mkdir(cache_dir, 0755);
    } else {
        const char *t = getenv("TMPDIR");
        snprintf(demo, n, "%s/xpview-demo-XXXXXX", t && *t ? t : "/tmp");
        if (!mkdtemp(demo)) {
            fprintf(stderr, "xpview: cannot create a temporary directory: %s\n", strerror(errno));
            return -1;
        }
        *tmp = 1;
    }
    if (make_demo(demo, !*tmp) != 0) {
        if (*tmp) rmrf(demo);
        return -1;
    }
    return 0;
}

/* "xpview V serving DIR at http://HOST:PORT/PREFIX/". */
static void serve_banner(const serve_opts *o, xpv_app *app, xpv_http *srv, int demo) {
    const char *shown =
        o->hc.bind_all || !strcmp(o->hc.host, "127.0.0.1") ? "localhost" : o->hc.host;
    int v6 = strchr(shown, ':') != NULL;
    /* Normalised prefix: "/a/b" (or ""). */
    char pfx[1024];
    const char *p = o->prefix;
    while (*p == '/') p++;
    size_t pl = strlen(p);
    while (pl && p[pl - 1] == '/') pl--;
    snprintf(pfx, sizeof pfx, "%s%.*s", pl ? "/" : "", (int)pl, p);
    printf("xpview %s serving %s%s at http://%s%s%s:%d%s/\n", XPV_VERSION, xpv_app_logdir(app),
           demo ? " (demo)" : "", v6 ? "[" : "", shown, v6 ? "]" : "", xpv_http_port(srv), pfx);
    fflush(stdout);
}

static int cmd_serve(int argc, char **argv) {
    serve_opts o;
    int rc = serve_parse(argc, argv, &o);
    if (rc >= 0) return rc;

    /* --logdir may name a logdir, a directory inside one or one profile
     * file: serve what it holds. */
    char resolved[4096];
    if (o.logdir) {
        char rerr[512];
        if (xpv_logdir_resolve(o.logdir, resolved, sizeof resolved, &o.ac.session, rerr,
                               sizeof rerr) != 0) {
            fprintf(stderr, "xpview: --logdir %s\n", rerr);
            return 1;
        }
        o.logdir = resolved;
    }

    char demo[4096] = "";
    int demo_tmp = 0;
    if (!o.logdir) {
        if (serve_demo(o.cache_dir, demo, sizeof demo, &demo_tmp) != 0) return 1;
        o.logdir = demo;
    }
    o.ac.logdir = o.logdir;
    o.ac.path_prefix = o.prefix;
    xpv_err err;
    xpv_app *app = xpv_app_new(&o.ac, &err);
    if (app && o.busy_wait) {
        /* One knob for "wait, then 503": for a worker and for memory held
         * by other requests (queueing behind decodes keeps its default). */
        o.hc.queue_wait_s = o.busy_wait;
        xpv_cache_set_admit_wait(xpv_app_cache(app), 120000, 2000, (int)o.busy_wait * 1000);
    }
    if (!app) {
        fprintf(stderr, "xpview: --logdir %s\n", err.msg);
        if (demo_tmp) rmrf(demo);
        return 1;
    }
    if (o.cache_dir && xpv_app_set_cache_dir(app, o.cache_dir, &err) != 0) {
        fprintf(stderr, "xpview: %s\n", err.msg);
        xpv_app_free(app);
        return 1;
    }

    /* Capture Profile writes into the logdir and connects where a user
     * says: on for loopback clients of a loopback-only server, else (other
     * machines, a proxy's requests) only with --allow_capture. */
    int loopback = !o.hc.bind_all && xpv_capture_route_is_loopback(o.hc.host);
    xpv_capture_route_configure(o.allow_capture ? XPV_CAPTURE_ON_LOCAL | XPV_CAPTURE_ON_NETWORK
                                : loopback      ? XPV_CAPTURE_ON_LOCAL
                                                : 0,
                                loopback ? NULL
                                         : "Capture Profile is off on a server reachable from "
                                           "other machines (--bind_all or a non-loopback "
                                           "--host); restart xpview with --allow_capture "
                                           "(and --capture_allow HOST[:PORT],...) to allow it",
                                o.capture_allow);

    /* Block the stop signals in every thread (MHD's inherit this mask) and
     * wait for them here. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    char msg[512];
    xpv_http *srv = xpv_http_start(app, &o.hc, msg, sizeof msg);
    if (!srv) {
        fprintf(stderr, "xpview: %s\n", msg);
        xpv_app_free(app);
        if (demo_tmp) rmrf(demo);
        return 1;
    }
    serve_banner(&o, app, srv, demo[0] != 0);

    int sig = 0;
    sigwait(&set, &sig);
    fprintf(stderr, "xpview: %s, shutting down\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
    if (xpv_http_stop(srv) != 0) {
        /* builds still running past --grace: the process ends now */
        if (demo_tmp) rmrf(demo);
        fflush(stderr);
        _exit(0);
    }
    xpv_app_free(app);
    if (demo_tmp) rmrf(demo);
    return 0;
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "export")) return cmd_export(argc, argv);
    if (argc > 1 && !strcmp(argv[1], "synth")) return cmd_synth(argc, argv);
    if (argc > 1 && !strcmp(argv[1], "info")) return cmd_info(argc, argv);
    if (argc > 1 && !strcmp(argv[1], "diff")) return cmd_diff(argc, argv);
    if (argc > 1 && !strcmp(argv[1], "healthcheck")) return cmd_healthcheck(argc, argv);
    if (argc > 1 && !strcmp(argv[1], "capture")) return cmd_capture(argc, argv);
    return cmd_serve(argc, argv);
}
