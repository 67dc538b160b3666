/*
 * bench_memory_profile.c - speed of the memory profile converter
 * (tools/memory_profile.c) on one host file.
 *
 *   bench_memory_profile FILE.xplane.pb [reps]
 *
 * Reads and decodes the file once (decode time is the baseline), then
 * renders memory_profile `reps` times (default 3) and prints the best wall
 * and process CPU time and the output size (two runs must agree).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "buf.h"
#include "model.h"
#include "tool.h"

int main(int argc, char **argv) {
    int reps = bench_reps(argc, argv, 3);
    double t0;
    bench_host one;
    xpv_profile *p = bench_load_host(argv[1], &one);
    const xpv_hostset hs = one.hs;
    xpv_params q = {0, NULL, NULL, NULL};
    xpv_err err;
    double best = 1e30, best_cpu = 1e30;
    size_t outlen = 0;
    for (int r = 0; r < reps; r++) {
        xpv_buf out;
        xpv_buf_init(&out);
        t0 = bench_now();
        double c0 = bench_cpu_now();
        if (xpv_tool_find("memory_profile")->render(&hs, NULL, &q, &out, &err) != 0) {
            fprintf(stderr, "render failed: %s\n", err.msg);
            return 1;
        }
        double t = bench_now() - t0, c = bench_cpu_now() - c0;
        if (t < best) best = t;
        if (c < best_cpu) best_cpu = c;
        outlen = out.len;
        xpv_buf_free(&out);
    }
    printf("file            %.1f MB\n", (double)one.len / 1e6);
    printf("decode          %.3f s (baseline)\n", one.decode_s);
    printf("memory_profile  %.3f s  (CPU %.3f s) = %.2fx decode, %zu bytes (best of %d)\n", best,
           best_cpu, best / one.decode_s, outlen, reps);
    xpv_profile_free(p);
    return 0;
}
