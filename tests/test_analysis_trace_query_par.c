/*
 * test_analysis_trace_query_par.c - a viewport query on two threads
 * (trace_query_par.c) answers what the serial query answers, hit for hit:
 * on a constructed trace of 135 busy rows (where the budget re-queries
 * most rows) and on every real xplane of ../shared, over windows from the
 * whole trace down to 1/256 of it, resolutions 0 (every event), 500 and
 * 2000 px, and no budget or budgets of 50000, 1500 and 200 events; the
 * budget's report (info, per-row resolutions) is the same too.  The test
 * counts the queries where the budget bound, so that the budget's
 * parallel half is known to have run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "tool_xspace.h"
#include "trace_index.h"
#include "trace_index_int.h"

#define US 1000000LL

static int bound;

/* The same query serial and on two threads. */
static void same_query(const xpv_hostset *hs, const xpv_trace_index *ix, int64_t s, int64_t e,
                       int64_t res, size_t max_events, const char *what) {
    int64_t *rr1 = xpv_xcalloc(ix->nrows + 1, sizeof *rr1);
    int64_t *rr2 = xpv_xcalloc(ix->nrows + 1, sizeof *rr2);
    xpv_trace_budget b1 = {max_events, max_events ? 16u << 20 : 0, rr1};
    xpv_trace_budget b2 = {max_events, max_events ? 16u << 20 : 0, rr2};
    xpv_trace_budget_info i1, i2;
    xpv_trace_hit *h1 = NULL, *h2 = NULL;
    xpv_ti_query_threads = 1;
    size_t n1 = xpv_trace_query_budget(hs, ix, s, e, res, max_events ? &b1 : NULL, &i1, &h1);
    xpv_ti_query_threads = 0;
    xpv_ti_query_parallel_min = 0;
    size_t n2 = xpv_trace_query_budget(hs, ix, s, e, res, max_events ? &b2 : NULL, &i2, &h2);
    if (n1 != n2 || memcmp(h1, h2, n1 * sizeof *h1))
        fail_msg("%s: [%lld, %lld) res %lld budget %zu: %zu hits serial, %zu on two threads, or "
                 "other hits", what, (long long)s, (long long)e, (long long)res, max_events, n1,
                 n2);
    if (memcmp(&i1, &i2, sizeof i1) || memcmp(rr1, rr2, ix->nrows * sizeof *rr1))
        fail_msg("%s: the budget's report differs on two threads", what);
    bound += i1.rows_coarsened > 0;
    free(h1);
    free(h2);
    free(rr1);
    free(rr2);
}

static void same_queries(const xpv_hostset *hs, const char *what) {
    xpv_trace_index *ix = xpv_trace_index_build(hs);
    assert_non_null(ix);
    int64_t span = ix->max_ps - ix->min_ps;
    static const int64_t div[] = {1, 4, 16, 256};
    static const int64_t px[] = {0, 500, 2000};
    static const size_t budgets[] = {0, 50000, 1500, 200};
    for (size_t d = 0; d < sizeof div / sizeof *div; d++)
        for (int at = 0; at < 3; at++) {
            int64_t w = span / div[d] + 1;
            int64_t s = ix->min_ps + (span - w + 1) / 2 * at;
            for (size_t r = 0; r < sizeof px / sizeof *px; r++)
                for (size_t k = 0; k < sizeof budgets / sizeof *budgets; k++)
                    same_query(hs, ix, s, s + w, px[r] ? w / px[r] : 0, budgets[k], what);
        }
    xpv_trace_index_free(ix);
}

/* 135 rows of nested events (as test_analysis_trace_budget.c builds). */
static void test_constructed(void **state) {
    (void)state;
    tx_space *s = tx_new();
    int pl = tx_plane(s, "/device:TPU:0");
    for (int r = 0; r < 135; r++) {
        int ln = tx_line(s, pl, 1 + r, "busy", 0);
        for (int i = 0; i < 400; i++) {
            int64_t t = (int64_t)i * 2 * US + (r % 7) * 10000;
            tx_event(s, pl, ln, "op", t, 1 * US + ((i * 37 + r) % 11) * 1000);
            tx_event(s, pl, ln, "child", t + 50000, (100 + ((i * 13 + r) % 4) * 100) * 1000);
        }
    }
    xpv_profile *p = tx_decode(s);
    assert_non_null(p);
    const xpv_profile *ps[1] = {p};
    const char *names[1] = {"host0"};
    xpv_hostset hs = {1, ps, names};
    bound = 0;
    same_queries(&hs, "constructed");
    print_message("the budget bound on %d queries\n", bound);
    assert_true(bound > 10);
    xpv_profile_free(p);
}

static void test_real_files(void **state) {
    (void)state;
    TU_SKIP_NO_SHARED();
    char **files = tu_real_xplanes();
    int checked = 0;
    bound = 0;
    for (char **f = files; *f; f++) {
        xpv_profile *p = tx_decode_file(*f);
        const xpv_profile *ps[1] = {p};
        const char *names[1] = {"host"};
        xpv_hostset hs = {1, ps, names};
        same_queries(&hs, *f);
        xpv_profile_free(p);
        checked++;
    }
    tu_free_list(files);
    print_message("%d real files, the budget bound on %d queries\n", checked, bound);
    assert_true(checked > 0);
    assert_true(bound > 0);
}

TU_MAIN(cmocka_unit_test(test_constructed),
        cmocka_unit_test(test_real_files))
