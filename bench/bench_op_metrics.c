/*
 * bench_op_metrics.c - speed of the op metrics build (analysis/ops/op_metrics.c).
 *
 *   bench_op_metrics FILE.xplane.pb [reps]
 *
 * Reads and decodes the file once, then builds the op metrics dbs (host,
 * device, TF-level device, kernel stats) `reps` times (default 3) from the
 * same decoded profile and prints the best time as MB/s of file, next to
 * the decode time of the same file as a baseline, and the best process CPU
 * time (less disturbed than wall time on a shared machine).  Also prints the db sizes
 * so two runs can be checked to produce the same result.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_util.h"
#include "model.h"
#include "op_metrics.h"

int main(int argc, char **argv) {
    int reps = bench_reps(argc, argv, 3);
    double t0;
    bench_host one;
    xpv_profile *p = bench_load_host(argv[1], &one);
    double mb = (double)one.len / 1e6;
    const xpv_hostset hs = one.hs;

    double best = 1e30, best_cpu = 1e30;
    size_t nhost = 0, ndev = 0, nker = 0;
    for (int r = 0; r < reps; r++) {
        xpv_err err;
        t0 = bench_now();
        double c0 = bench_cpu_now();
        xpv_op_metrics *m = xpv_op_metrics_build(&hs, &err);
        double t = bench_now() - t0, c = bench_cpu_now() - c0;
        if (c < best_cpu) best_cpu = c;
        if (!m) {
            fprintf(stderr, "build failed: %s\n", err.msg);
            return 1;
        }
        if (t < best) best = t;
        nhost = m->host.n;
        ndev = m->device.n;
        nker = m->nkernels;
        xpv_op_metrics_free(m);
    }
    printf("file        %.1f MB\n", mb);
    printf("decode      %.3f s  %.0f MB/s (baseline)\n", one.decode_s, mb / one.decode_s);
    printf("op_metrics  %.3f s  %.0f MB/s (best of %d; CPU %.3f s)  host %zu ops, "
           "device %zu ops, %zu kernels\n",
           best, mb / best, reps, best_cpu, nhost, ndev, nker);
    xpv_profile_free(p);
    return 0;
}
