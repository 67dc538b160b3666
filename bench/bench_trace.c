/*
 * bench_trace.c - trace viewer figures (issue 4) on one host file.
 *
 *   bench_trace FILE.xplane.pb [width_px [cold]]
 *
 * "cold": only the cold figures (and peak RSS), for files of many GB.
 * Runs in a forked child so ru_maxrss is the serving path's own:
 *   cold       load (map + decode, as the server) + enrichment + trace
 *              index + first viewport (whole trace at width/2 resolution,
 *              as the page's first request)
 *   warm       40 viewports like the page's (a window 3x the view, one
 *              event per 2 px), spans from the whole trace down to 1e-6 of
 *              it at random places: render time, render + gzip level 6 (the
 *              server compresses responses <= 1 MiB at level 6, larger ones
 *              at level 1: for those this overstates), payload raw
 *              and gzip-compressed
 *   emission   JSON bytes/s of resolution-0 responses (every event of a
 *              window, with the stat scan for names/flows)
 *   budget     the first viewport and the warm ones without the viewport
 *              budget (max_events=5000000: the answer before the budget) and
 *              with it (the default): events, bytes raw and gzip-6
 *   details / search  one event's args; name searches: the first (builds
 *              the name index), then new prefixes and a substring
 *   peak RSS   of the child, / file size
 * Baselines in the same run: memcpy of the file buffer's first 64 MiB
 * (GB/s), and `md5sum FILE` (wall time, file in the page cache as for the
 * cold figure, which reads it too): cold first viewport / md5sum.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include "bench_util.h"
#include "model.h"
#include "xplane.h"
#include "loader.h"
#include "tool.h"
#include "trace_index.h"
#include "enrich.h"

static size_t gz_size(const char *data, size_t len, int level) {
    z_stream z;
    memset(&z, 0, sizeof z);
    deflateInit2(&z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
    size_t cap = deflateBound(&z, len);
    unsigned char *out = malloc(cap);
    z.next_in = (unsigned char *)data;
    z.avail_in = (uInt)len;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    deflate(&z, Z_FINISH);
    size_t n = z.total_out;
    deflateEnd(&z);
    free(out);
    return n;
}

static size_t events_of(const xpv_buf *out) {
    const char *r = strstr(out->data, "\"returnedEventsSize\":");
    return r ? strtoull(r + 21, NULL, 10) : 0;
}

static uint64_t rng = 0x9e3779b97f4a7c15ULL;
static uint64_t rnd(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static int render(const xpv_hostset *hs, const void *ix, const char **kv, size_t n, xpv_buf *out) {
    const char *k[9], *v[9];
    for (size_t i = 0; i < n; i++) {
        k[i] = kv[2 * i];
        v[i] = kv[2 * i + 1];
    }
    xpv_params q = {n, k, v, NULL};
    q.tag = xpv_param(&q, "tag");   /* as the server's request parser */
    xpv_err err;
    memset(&err, 0, sizeof err);
    xpv_buf_reset(out);
    int rc = xpv_tool_find("trace_viewer")->render(hs, ix, &q, out, &err);
    if (rc) fprintf(stderr, "render failed: %s\n", err.msg);
    return rc;
}

static double md5_s;

/* The details of one event and five name searches (the first builds the
 * name index), timed. */
static void details_and_search(const xpv_hostset *hs, const xpv_trace_index *ix, xpv_buf *out) {
    const char *kd[] = {"tag", "trace_viewer@", "unique_id", "0"};
    double td = bench_now();
    render(hs, ix, kd, 2, out);
    td = bench_now() - td;
    printf("details         %.2f ms\n", td * 1e3);
    const char *q[][2] = {{"search_prefix", "Mat"}, {"search_prefix", "fu"},
                          {"search_prefix", "copy"}, {"search", "philox"}, {"search", "fusion"}};
    for (size_t i = 0; i < sizeof q / sizeof q[0]; i++) {
        const char *ks[] = {"tag", "trace_viewer@", q[i][0], q[i][1]};
        double ts = bench_now();
        render(hs, ix, ks, 2, out);
        ts = bench_now() - ts;
        const char *tmv = strstr(out->data, "\"totalMatches\":");
        printf("search          %s=%s: %.1f ms, %llu matches%s\n", q[i][0], q[i][1], ts * 1e3,
               tmv ? strtoull(tmv + 15, NULL, 10) : 0ULL, i ? "" : " (builds the name index)");
    }
    printf("name index      %.1f MB\n", xpv_trace_names_bytes(ix) / 1e6);
}

static void run(const char *path, int width, int cold_only) {
    char s1[64], s2[64], s3[64];
    double t0 = bench_now();
    /* As the server loads it: mapped, lines parsed on every CPU; no size
     * cap (a 10 GB profile is a case). */
    xpv_load_limits lim = {UINT64_MAX, UINT64_MAX, NULL, 0};
    xpv_err lerr;
    xpv_profile *p = xpv_load_profile(path, NULL, &lim, &lerr);
    if (!p) { fprintf(stderr, "load failed: %s\n", lerr.msg); exit(1); }
    size_t len = p->buf_len;
    double t_dec = bench_now() - t0;
    struct rusage ru0;
    getrusage(RUSAGE_SELF, &ru0);
    const xpv_profile *ps[1] = {p};
    const char *names[1] = {"host"};
    xpv_hostset hs = {1, ps, names};
    double t2 = bench_now();
    xpv_enrich(p);          /* grouping + derived lines, once per profile */
    double t_en = bench_now() - t2;
    t2 = bench_now();
    xpv_trace_index *ix = xpv_trace_index_build(&hs);
    double t_ix = bench_now() - t2;
    xpv_buf out;
    xpv_buf_init(&out);
    double t3 = bench_now();
    snprintf(s1, sizeof s1, "%d", width / 2);
    const char *kv0[] = {"tag", "trace_viewer@", "resolution", s1};
    render(&hs, ix, kv0, 2, &out);
    double t_first = bench_now() - t3;
    size_t first_raw = out.len, first_gz = gz_size(out.data, out.len, 6);
    double cold = bench_now() - t0;
    /* baseline (after the cold figure): memcpy of the file, pages pre-faulted */
    size_t clen = len < (64u << 20) ? len : (64u << 20);   /* small: keeps peak RSS honest */
    char *copy = malloc(clen ? clen : 1);
    memset(copy, 1, clen);
    double tm = bench_now();
    memcpy(copy, p->buf, clen);
    tm = bench_now() - tm;
    volatile char sink = copy[clen / 2];
    (void)sink;
    free(copy);
    printf("file            %.1f MB, %llu events (%llu indexed, %llu internal dropped), %u rows, %u groups\n",
           len / 1e6, (unsigned long long)p->nevents, (unsigned long long)ix->nidx,
           (unsigned long long)ix->ndropped, ix->nrows, ix->ngroups);
    printf("baseline        memcpy of the file (first 64 MiB) %.2f GB/s\n", clen / tm / 1e9);
    printf("cold            %.3f s first viewport (load %.3f + enrich %.3f + "
           "index %.3f + render %.3f) = %.2fx md5sum; peak RSS after load %.1f MB\n", cold, t_dec,
           t_en, t_ix, t_first, md5_s > 0 ? cold / md5_s : 0, ru0.ru_maxrss / 1e3);
    if (cold_only) {
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        printf("peak RSS        %.1f MB (heap and mapped file pages)\n", ru.ru_maxrss / 1e3);
        return;
    }
    printf("index           %.1f MB (%.2f bytes/event)\n", ix->bytes / 1e6,
           (double)ix->bytes / (double)(ix->nidx ? ix->nidx : 1));
    printf("first viewport  %zu bytes raw, %zu gzip-6, %zu events\n", first_raw, first_gz,
           events_of(&out));
    {
        const char *kvb[] = {"tag", "trace_viewer@", "resolution", s1, "max_events", "5000000"};
        double tb = bench_now();
        render(&hs, ix, kvb, 3, &out);
        tb = bench_now() - tb;
        printf("  no budget     %zu bytes raw, %zu gzip-6, %zu events, render %.3f s\n", out.len,
               gz_size(out.data, out.len, 6), events_of(&out), tb);
    }

    /* warm viewports */
    enum { N = 40 };
    double tr[N], tg[N];
    size_t max_raw = 0, max_gz = 0, max_ev = 0, nb_raw = 0, nb_gz = 0, nb_ev = 0;
    double full_ms = (double)(ix->max_ps - ix->min_ps) / 1e9, min_ms = (double)ix->min_ps / 1e9;
    for (int i = 0; i < N; i++) {
        double frac = i == 0 ? 1.0 : 1.0 / (double)(1ULL << (rnd() % 21));  /* 1 .. 1e-6 */
        double span = full_ms * frac;
        double a = min_ms + (full_ms - span) * (double)(rnd() % 1000000) / 1e6;
        double ws = a - span, we = a + 2 * span;
        if (ws < min_ms) ws = min_ms;
        if (we > min_ms + full_ms) we = min_ms + full_ms;
        double px = width * (we - ws) / span;
        snprintf(s1, sizeof s1, "%.9f", ws);
        snprintf(s2, sizeof s2, "%.9f", we);
        snprintf(s3, sizeof s3, "%d", (int)(px / 2) > 0 ? (int)(px / 2) : 1);
        const char *kv[] = {"tag", "trace_viewer@", "start_time_ms", s1, "end_time_ms", s2,
                            "resolution", s3, "max_events", "5000000"};
        render(&hs, ix, kv, 5, &out);           /* before the budget */
        size_t gb = gz_size(out.data, out.len, 6), neb = events_of(&out);
        if (out.len > nb_raw) nb_raw = out.len;
        if (gb > nb_gz) nb_gz = gb;
        if (neb > nb_ev) nb_ev = neb;
        double ta = bench_now();
        render(&hs, ix, kv, 4, &out);
        tr[i] = bench_now() - ta;
        size_t g = gz_size(out.data, out.len, 6);
        tg[i] = bench_now() - ta;
        if (out.len > max_raw) max_raw = out.len;
        if (g > max_gz) max_gz = g;
        size_t ne = events_of(&out);
        if (ne > max_ev) max_ev = ne;
    }
    qsort(tr, N, sizeof *tr, bench_cmp_double);
    qsort(tg, N, sizeof *tg, bench_cmp_double);
    printf("warm viewport   render median %.1f ms, max %.1f ms; render+gzip6 median %.1f ms, max %.1f ms "
           "(%d queries, %d px)\n", tr[N / 2] * 1e3, tr[N - 1] * 1e3, tg[N / 2] * 1e3, tg[N - 1] * 1e3, N, width);
    printf("payload         max %zu bytes raw, %zu gzip-6, max %zu events\n", max_raw, max_gz, max_ev);
    printf("  no budget     max %zu bytes raw, %zu gzip-6, max %zu events\n", nb_raw, nb_gz, nb_ev);

    /* emission speed: every event of windows (resolution 0) */
    size_t bytes = 0;
    double te = 0;
    for (int i = 0; i < 8 && bytes < (size_t)400e6; i++) {
        if (i == 1) bytes = 0, te = 0;      /* the first one grows the buffer */
        double a = min_ms + full_ms * 0.1 * i, b = a + full_ms * 0.05;
        snprintf(s1, sizeof s1, "%.9f", a);
        snprintf(s2, sizeof s2, "%.9f", b);
        const char *kv[] = {"tag", "trace_viewer@", "start_time_ms", s1, "end_time_ms", s2,
                            "resolution", "0", "max_events", "5000000"};
        double ta = bench_now();
        render(&hs, ix, kv, 5, &out);
        te += bench_now() - ta;
        bytes += out.len;
    }
    printf("emission        %.2f GB/s (%.1f MB of resolution-0 JSON in %.3f s)\n",
           bytes / te / 1e9, bytes / 1e6, te);

    details_and_search(&hs, ix, &out);

    xpv_buf_free(&out);
    xpv_trace_index_free(ix);
    xpv_profile_free(p);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("peak RSS        %.1f MB = %.2fx the file\n", ru.ru_maxrss / 1e3, ru.ru_maxrss * 1e3 / (double)len);
}

int main(int argc, char **argv) {
    bench_need_file(argc, argv, "[width_px [cold]]");
    int width = argc > 2 ? atoi(argv[2]) : 1920;
    if (width < 100) width = 1920;
    /* Baseline: md5sum of the same file (wall time; output discarded). */
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "md5sum '%s' > /dev/null", argv[1]);
    if (strchr(argv[1], '\'') || system(cmd) != 0) fprintf(stderr, "md5sum failed\n");
    double tm5 = bench_now();
    if (system(cmd) != 0) fprintf(stderr, "md5sum failed\n");
    tm5 = bench_now() - tm5;
    printf("baseline        md5sum of the file %.3f s (file in the page cache)\n", tm5);
    md5_s = tm5;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        run(argv[1], width, argc > 3 && !strcmp(argv[3], "cold"));
        fflush(stdout);
        _exit(0);
    }
    int st;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}
