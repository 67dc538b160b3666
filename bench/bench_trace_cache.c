/*
 * bench_trace_cache.c - what a warm --cache_dir saves on the trace
 * viewer's cold first viewport (issues 4 and 6).
 *
 *   bench_trace_cache FILE.xplane.pb [reps]
 *
 * Per repetition, in this process: read + decode the file, then
 *   build      xpv_trace_index_build (what a cold server does today)
 *   save       xpv_trace_index_save into memory (image bytes)
 *   write      the image written through server/diskcache (temp + fsync +
 *              rename) into a temporary cache directory
 *   get+load   the image read back through server/diskcache and
 *              xpv_trace_index_load (validation included): what a server
 *              with a warm cache dir does instead of build
 *   render     the first viewport (whole trace, 960 px) from the loaded
 *              index, checked byte-equal to the one from the built index
 * Medians over the repetitions; the file and the image are in the page
 * cache (a server reading from a cold disk pays the reads on top).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "diskcache.h"
#include "model.h"
#include "tool.h"
#include "trace_index.h"

static void render(const xpv_hostset *hs, const void *ix, xpv_buf *out) {
    const char *k[2] = {"tag", "resolution"}, *v[2] = {"trace_viewer@", "960"};
    xpv_params q = {2, k, v, "trace_viewer@"};
    xpv_err err;
    memset(&err, 0, sizeof err);
    xpv_buf_reset(out);
    if (xpv_tool_find("trace_viewer")->render(hs, ix, &q, out, &err) != 0) {
        fprintf(stderr, "render failed: %s\n", err.msg);
        exit(1);
    }
}

enum { T_READ, T_DEC, T_BUILD, T_SAVE, T_WRITE, T_LOAD, T_RENDER, NT };

int main(int argc, char **argv) {
    bench_need_file(argc, argv, "[reps]");
    int reps = argc > 2 ? atoi(argv[2]) : 5;
    if (reps < 1 || reps > 100) reps = 5;
    char dir[] = "/tmp/xpv-bench-cache-XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    char msg[512];
    xpv_diskcache *dc = xpv_diskcache_open(dir, NULL, 1, msg, sizeof msg);
    if (!dc) {
        fprintf(stderr, "%s\n", msg);
        return 1;
    }
    double t[NT][100];
    size_t img_len = 0, flen = 0;
    uint64_t nidx = 0;
    for (int r = 0; r < reps; r++) {
        double t0 = bench_now();
        void *buf = bench_read_all(argv[1], &flen);
        t[T_READ][r] = bench_now() - t0;
        xpv_profile *p = bench_decode(buf, flen, bench_buf_free, &t[T_DEC][r]);
        const xpv_profile *ps[1] = {p};
        const char *names[1] = {"host"};
        xpv_hostset hs = {1, ps, names};
        t0 = bench_now();
        xpv_trace_index *built = xpv_trace_index_build(&hs);
        t[T_BUILD][r] = bench_now() - t0;
        nidx = built->nidx;
        xpv_buf img, a, b;
        xpv_buf_init(&img);
        xpv_buf_init(&a);
        xpv_buf_init(&b);
        t0 = bench_now();
        xpv_trace_index_save(built, &hs, &img);
        t[T_SAVE][r] = bench_now() - t0;
        img_len = img.len;
        t0 = bench_now();
        if (xpv_diskcache_write(dc, "trace-index", "bench", img.data, img.len) != 0) return 1;
        t[T_WRITE][r] = bench_now() - t0;
        t0 = bench_now();
        size_t len;
        void *bytes = xpv_diskcache_get(dc, "trace-index", "bench", (size_t)1 << 40, &len);
        xpv_trace_index *loaded = bytes ? xpv_trace_index_load(&hs, bytes, len) : NULL;
        free(bytes);
        t[T_LOAD][r] = bench_now() - t0;
        if (!loaded) {
            fprintf(stderr, "the image did not load\n");
            return 1;
        }
        t0 = bench_now();
        render(&hs, loaded, &a);
        t[T_RENDER][r] = bench_now() - t0;
        render(&hs, built, &b);
        if (a.len != b.len || memcmp(a.data, b.data, a.len) != 0) {
            fprintf(stderr, "responses differ between the built and the loaded index\n");
            return 1;
        }
        xpv_buf_free(&img);
        xpv_buf_free(&a);
        xpv_buf_free(&b);
        xpv_trace_index_free(built);
        xpv_trace_index_free(loaded);
        xpv_profile_free(p);
    }
    double med[NT];
    for (int k = 0; k < NT; k++) {
        qsort(t[k], (size_t)reps, sizeof t[k][0], bench_cmp_double);
        med[k] = t[k][reps / 2];
    }
    double base = med[T_READ] + med[T_DEC] + med[T_RENDER];
    printf("file            %.1f MB, %llu indexed events; image %.1f MB (%.2f bytes/event)\n",
           flen / 1e6, (unsigned long long)nidx, img_len / 1e6,
           (double)img_len / (double)(nidx ? nidx : 1));
    printf("medians of %d   read %.3f s, decode %.3f s, render first viewport %.3f s\n", reps,
           med[T_READ], med[T_DEC], med[T_RENDER]);
    printf("no cache        index build %.3f s -> first viewport %.3f s\n", med[T_BUILD],
           base + med[T_BUILD]);
    printf("warm cache dir  image read + validate + load %.3f s -> first viewport %.3f s "
           "(saves %.3f s, %.0f%%)\n", med[T_LOAD], base + med[T_LOAD],
           med[T_BUILD] - med[T_LOAD],
           100.0 * (med[T_BUILD] - med[T_LOAD]) / (base + med[T_BUILD]));
    printf("writing         serialize %.3f s (request path) + write/fsync/rename %.3f s "
           "(background)\n", med[T_SAVE], med[T_WRITE]);
    xpv_diskcache_free(dc);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return 0;
}
