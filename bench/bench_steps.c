/*
 * bench_steps.c - speed of the shared step analysis, the op_stats
 * intermediate (analysis/opstats/steps.c, analysis/opstats/opstats.c) and the four tools that read
 * it, on one host file.
 *
 *   bench_steps FILE.xplane.pb [reps] [steps]
 *
 * Cold: read + decode + one op_stats build (steps and op metrics on two
 * threads, shared by all four tools) + the first render of each of
 * overview_page, input_pipeline_analyzer, framework_op_stats and
 * kernel_stats, as the server does for the first request of each tool on a
 * new file.  Then, `reps` times each (default 3), best wall time and best
 * process CPU time (less disturbed than wall time on a shared machine):
 *   steps       xpv_steps_build alone (one thread)
 *   op_metrics  xpv_op_metrics_build alone (one thread)
 *   op_stats    the cached intermediate: steps and op metrics on two threads
 *   warm        each tool rendered from the cached op_stats (a warm request)
 * Prints the step count and output sizes so two runs can be checked to
 * agree.  With the third argument `steps` only the step build runs (for
 * perf record).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "buf.h"
#include "model.h"
#include "opstats.h"
#include "steps.h"
#include "tool.h"

/* The four tools that read the op_stats intermediate. */
#define NTOOLS 4
static const char *const tool_names[NTOOLS] = {
    "overview_page", "input_pipeline_analyzer", "framework_op_stats", "kernel_stats",
};
#define tools(k) xpv_tool_find(tool_names[k])

typedef struct best {
    double wall, cpu;
} best;

static void best_init(best *b) { b->wall = b->cpu = 1e30; }

static void best_add(best *b, double w, double c) {
    if (w < b->wall) b->wall = w;
    if (c < b->cpu) b->cpu = c;
}

/* One xpv_steps_build of `p`: its wall and CPU seconds; returns the step
 * count. */
static size_t timed_steps(const xpv_profile *p, double *wall, double *cpu) {
    xpv_arena a;
    xpv_arena_init(&a, 64 * 1024);
    xpv_step_db db;
    double t0 = bench_now(), c0 = bench_cpu_now();
    xpv_steps_build(p, &a, &db);
    *wall = bench_now() - t0;
    *cpu = bench_cpu_now() - c0;
    size_t n = db.n;
    xpv_arena_free(&a);
    return n;
}

int main(int argc, char **argv) {
    int reps = bench_reps(argc, argv, 3);
    /* "steps": only xpv_steps_build, for profiling it alone. */
    int only_steps = argc > 3 && !strcmp(argv[3], "steps");
    double tcold = bench_now();
    double t0;
    bench_host one;
    xpv_profile *p = bench_load_host(argv[1], &one);
    double tread = bench_now() - tcold - one.decode_s;
    double mb = (double)one.len / 1e6;
    const xpv_hostset hs = one.hs;
    xpv_params q = {0, NULL, NULL, NULL};
    xpv_err err;

    if (only_steps) {
        for (int r = 0; r < reps; r++) {
            double w, c;
            size_t n = timed_steps(p, &w, &c);
            printf("steps       %.3f s  (CPU %.3f s), %zu steps\n", w, c, n);
        }
        xpv_profile_free(p);
        return 0;
    }
    /* Cold: one op_stats build shared by the four tools, then the first
     * render of each, right after decoding. */
    t0 = bench_now();
    xpv_op_stats *os = xpv_op_stats_build(&hs, &err);
    if (!os) {
        fprintf(stderr, "op_stats failed: %s\n", err.msg);
        return 1;
    }
    double tos_cold = bench_now() - t0;
    xpv_buf out;
    xpv_buf_init(&out);
    double trender_cold[NTOOLS];
    size_t outlen[NTOOLS];
    for (int k = 0; k < NTOOLS; k++) {
        xpv_buf_reset(&out);
        t0 = bench_now();
        if (xpv_tool_render(tools(k), &hs, os, &q, &out, &err) != 0) {
            fprintf(stderr, "%s: render failed: %s\n", tools(k)->name, err.msg);
            return 1;
        }
        trender_cold[k] = bench_now() - t0;
        outlen[k] = out.len;
    }
    double cold = bench_now() - tcold;
    xpv_op_stats_free(os);

    best bs, bo, bos, br[NTOOLS];
    best_init(&bs);
    best_init(&bo);
    best_init(&bos);
    for (int k = 0; k < NTOOLS; k++) best_init(&br[k]);
    size_t nsteps = 0;
    for (int r = 0; r < reps; r++) {
        double w, c;
        nsteps = timed_steps(p, &w, &c);
        best_add(&bs, w, c);

        t0 = bench_now();
        double c0 = bench_cpu_now();
        xpv_op_metrics *m = xpv_op_metrics_build(&hs, &err);
        best_add(&bo, bench_now() - t0, bench_cpu_now() - c0);
        xpv_op_metrics_free(m);

        t0 = bench_now();
        c0 = bench_cpu_now();
        os = xpv_op_stats_build(&hs, &err);
        best_add(&bos, bench_now() - t0, bench_cpu_now() - c0);
        for (int i = 0; i < 5; i++) {
            for (int k = 0; k < NTOOLS; k++) {
                xpv_buf_reset(&out);
                t0 = bench_now();
                c0 = bench_cpu_now();
                xpv_tool_render(tools(k), &hs, os, &q, &out, &err);
                best_add(&br[k], bench_now() - t0, bench_cpu_now() - c0);
            }
        }
        xpv_op_stats_free(os);
    }
    printf("file        %.1f MB, %llu events\n", mb, (unsigned long long)p->nevents);
    printf("read        %.3f s\n", tread);
    printf("decode      %.3f s  %.0f MB/s (baseline)\n", one.decode_s, mb / one.decode_s);
    printf("steps       %.3f s  (CPU %.3f s) = %.2fx decode, %zu steps\n", bs.wall, bs.cpu,
           bs.wall / one.decode_s, nsteps);
    printf("op_metrics  %.3f s  (CPU %.3f s) = %.2fx decode\n", bo.wall, bo.cpu,
           bo.wall / one.decode_s);
    printf("op_stats    %.3f s  (CPU %.3f s), cold %.3f s (two threads)\n", bos.wall, bos.cpu,
           tos_cold);
    double warm_max = 0;
    for (int k = 0; k < NTOOLS; k++) {
        printf("warm        %-24s %.4f s  (CPU %.4f s), cold render %.4f s, %zu bytes\n",
               tools(k)->name, br[k].wall, br[k].cpu, trender_cold[k], outlen[k]);
        if (br[k].wall > warm_max) warm_max = br[k].wall;
    }
    printf("cold        %.3f s  read + decode + op_stats + first render of the 4 tools "
           "(goal <= 3 s)\n",
           cold);
    printf("warm max    %.4f s  slowest of the 4 tools from the cached op_stats "
           "(goal <= 0.050 s)\n",
           warm_max);
    xpv_buf_free(&out);
    xpv_profile_free(p);
    return 0;
}
