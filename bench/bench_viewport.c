/*
 * bench_viewport.c - the trace viewer's zoom steps on the server side
 * (issue 17): the viewport queries the page sends while zooming in.
 *
 *   bench_viewport FILE.xplane.pb [reps [margin]]
 *
 * Loads the file as the server does (mapped, enrichment, trace index),
 * then asks the windows of 12 zoom steps of 1.4x (the page's W key) at
 * 5 places of the trace: the view plus `margin` views each side (default
 * 0.125, the page's; 1 = the former 3x window), resolution one event per
 * 2 px of a 1700 px plot.  Per window: the budgeted query alone
 * (xpv_trace_query_budget, default budget) and the whole answer
 * (render: query + JSON), the same query on one thread (the serial path,
 * same hits, checked), the query without the budget (the visible
 * events before it) and the format=columns answer (the page's); per zoom
 * step the median over places and reps, and the total.  A checksum
 * (FNV-1a) of every answer's bytes tells two builds' answers apart (and
 * one of the format=columns answers).  Timings, never asserted; compare builds in the
 * same run.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "enrich.h"
#include "loader.h"
#include "model.h"
#include "tool.h"
#include "trace_index.h"
#include "trace_index_int.h"

#define STEPS 12
#define PLACES 5
#define PLOT_PX 1700

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++) h = (h ^ c[i]) * 1099511628211ULL;
    return h;
}

/* The answer to the page's request for [s, e] ps at `res` px into `out`
 * (`columns`: format=columns); returns the seconds it took. */
static double render_window(const xpv_hostset *hs, const xpv_trace_index *ix, double s, double e,
                            int res, int columns, xpv_buf *out) {
    char s1[64], s2[64], s3[32];
    snprintf(s1, sizeof s1, "%.6f", s / 1e9);
    snprintf(s2, sizeof s2, "%.6f", e / 1e9);
    snprintf(s3, sizeof s3, "%d", res);
    const char *k4[] = {"start_time_ms", "end_time_ms", "resolution", "format"};
    const char *v4[] = {s1, s2, s3, "columns"};
    xpv_params q = {columns ? 4 : 3, k4, v4, "trace_viewer@"};
    xpv_err err;
    memset(&err, 0, sizeof err);
    xpv_buf_reset(out);
    double a = bench_now();
    if (xpv_tool_find("trace_viewer")->render(hs, ix, &q, out, &err) != 0) {
        fprintf(stderr, "render failed: %s\n", err.msg);
        exit(1);
    }
    return bench_now() - a;
}

int main(int argc, char **argv) {
    bench_need_file(argc, argv, "[reps [margin]]");
    int reps = argc > 2 ? atoi(argv[2]) : 3;
    if (reps < 1 || reps > 50) reps = 3;
    double margin = argc > 3 ? atof(argv[3]) : 0.125;
    xpv_load_limits lim = {UINT64_MAX, UINT64_MAX, NULL, 0};
    xpv_err lerr;
    xpv_profile *p = xpv_load_profile(argv[1], NULL, &lim, &lerr);
    if (!p) {
        fprintf(stderr, "load failed: %s\n", lerr.msg);
        return 1;
    }
    const xpv_profile *ps[1] = {p};
    const char *names[1] = {"host"};
    xpv_hostset hs = {1, ps, names};
    xpv_enrich(p);
    double t0 = bench_now();
    xpv_trace_index *ix = xpv_trace_index_build(&hs);
    printf("index           %.2f s, %llu events, %u rows\n", bench_now() - t0,
           (unsigned long long)ix->nidx, ix->nrows);
    double full0 = (double)ix->min_ps, full1 = (double)ix->max_ps, full = full1 - full0;
    static double tq[STEPS][PLACES * 50], tr[STEPS][PLACES * 50], tn[STEPS][PLACES * 50],
        ts[STEPS][PLACES * 50], tc[STEPS][PLACES * 50], tsc[STEPS][PLACES * 50];
    static size_t nev[STEPS], nbytes[STEPS], nvis[STEPS], cbytes[STEPS];
    uint64_t sum = 1469598103934665603ULL, csum = sum;
    xpv_buf out;
    xpv_buf_init(&out);
    xpv_trace_budget budget = {50000, 16u << 20, NULL};
    for (int r = 0; r < reps; r++)
        for (int pl = 0; pl < PLACES; pl++) {
            double c = full0 + full * (0.1 + 0.2 * pl);
            double span = full;
            for (int k = 0; k < STEPS; k++) {
                span /= 1.4;
                double s = c - span / 2 - margin * span, e = c + span / 2 + margin * span;
                if (s < full0) s = full0;
                if (e > full1) e = full1;
                int res = (int)((double)PLOT_PX * (e - s) / span / 2 + 0.5);
                int64_t sps = (int64_t)s, eps = (int64_t)e, rps = (int64_t)((e - s) / res);
                xpv_trace_hit *hits = NULL;
                xpv_ti_query_threads = 1;
                double a = bench_now(), ca = bench_cpu_now();
                size_t n1 = xpv_trace_query_budget(&hs, ix, sps, eps, rps, &budget, NULL, &hits);
                ts[k][r * PLACES + pl] = bench_now() - a;
                tsc[k][r * PLACES + pl] = bench_cpu_now() - ca;
                free(hits);
                xpv_ti_query_threads = 0;
                a = bench_now();
                size_t n = xpv_trace_query_budget(&hs, ix, sps, eps, rps, &budget, NULL, &hits);
                tq[k][r * PLACES + pl] = bench_now() - a;
                free(hits);
                if (n1 != n) {
                    fprintf(stderr, "serial and parallel queries differ\n");
                    return 1;
                }
                a = bench_now();
                size_t n0 = xpv_trace_query_budget(&hs, ix, sps, eps, rps, NULL, NULL, &hits);
                tn[k][r * PLACES + pl] = bench_now() - a;
                free(hits);
                if (n0 > nvis[k]) nvis[k] = n0;
                tc[k][r * PLACES + pl] = render_window(&hs, ix, s, e, res, 1, &out);
                if (r == 0) {
                    csum = fnv(csum, out.data, out.len);
                    if (out.len > cbytes[k]) cbytes[k] = out.len;
                }
                tr[k][r * PLACES + pl] = render_window(&hs, ix, s, e, res, 0, &out);
                if (r == 0) {
                    sum = fnv(sum, out.data, out.len);
                    if (n > nev[k]) nev[k] = n;
                    if (out.len > nbytes[k]) nbytes[k] = out.len;
                }
            }
        }
    int m = reps * PLACES;
    double tot_q = 0, tot_r = 0, tot_s = 0, tot_c = 0, tot_sc = 0;
    printf("margin %.3f, %d places x %d reps; per zoom step: median ms query / answer, max "
           "events, max MB; the format=columns answer: median ms, max MB\n", margin, PLACES, reps);
    for (int k = 0; k < STEPS; k++) {
        qsort(tq[k], (size_t)m, sizeof(double), bench_cmp_double);
        qsort(tr[k], (size_t)m, sizeof(double), bench_cmp_double);
        qsort(tn[k], (size_t)m, sizeof(double), bench_cmp_double);
        qsort(ts[k], (size_t)m, sizeof(double), bench_cmp_double);
        qsort(tc[k], (size_t)m, sizeof(double), bench_cmp_double);
        qsort(tsc[k], (size_t)m, sizeof(double), bench_cmp_double);
        tot_sc += tsc[k][m / 2];
        tot_s += ts[k][m / 2];
        tot_c += tc[k][m / 2];
        tot_q += tq[k][m / 2];
        tot_r += tr[k][m / 2];
        printf("  step %2d  %8.1f / %8.1f ms (query on one thread %8.1f ms)  %6zu events  %5.2f MB;  "
               "no budget %8.1f ms %7zu events;  columns %6.1f ms %5.2f MB\n", k + 1,
               tq[k][m / 2] * 1e3, tr[k][m / 2] * 1e3, ts[k][m / 2] * 1e3, nev[k], nbytes[k] / 1e6,
               tn[k][m / 2] * 1e3, nvis[k], tc[k][m / 2] * 1e3, cbytes[k] / 1e6);
    }
    printf("total           query %.1f ms (on one thread %.1f ms), answer %.1f ms, columns answer "
           "%.1f ms (sums of the step medians)\n", tot_q * 1e3, tot_s * 1e3, tot_r * 1e3, tot_c * 1e3);
    printf("one thread CPU  query %.1f ms (CPU time of the serial query: steadier than wall "
           "time on a loaded machine)\n", tot_sc * 1e3);
    printf("checksum        %016llx (answers of the first rep)\n", (unsigned long long)sum);
    printf("columns         %016llx (format=columns answers of the first rep)\n",
           (unsigned long long)csum);
    xpv_buf_free(&out);
    xpv_trace_index_free(ix);
    xpv_profile_free(p);
    return 0;
}
