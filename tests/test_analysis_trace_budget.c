/*
 * test_analysis_trace_budget.c - the total budget of a trace viewport
 * (xpv_trace_budget): on a constructed trace of 135 rows (one light, 134
 * busy with nested events) the answer stays within the budget, no row goes
 * blank, a row within its share keeps exactly its events, the busy rows
 * share the budget fairly (the cap is checked against a water filling
 * computed here from unbudgeted counts), each busy row's events are what
 * XProf's rule shows at the coarser resolution the budget chose for it
 * (checked by a brute-force reference over every event), a row with more depth groups than its
 * share keeps its longest events, answers are deterministic, and the
 * budget changes nothing when it does not bind.  Through the tool: the
 * JSON holds at most max_events events and says how the budget applied;
 * long names lower the count to the byte bound.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "testutil.h"
#include "tool.h"
#include "tool_xspace.h"
#include "trace_fixture.h"
#include "trace_index.h"

#define NROWS 135
#define PER_ROW 600

/* Row 0 ("light"): 10 events.  Rows 1..134: PER_ROW parents of 1 us every
 * 2 us, each with a child of 100-400 ns (durations vary by row and
 * event). */
static tx_space *busy_trace(const char *name) {
    int pl, ln;
    tx_space *s = tx_new_line("/device:TPU:0", 1, "light", &pl, &ln);
    for (int i = 0; i < 10; i++) tx_event(s, pl, ln, name, (int64_t)i * 100 * US, 3 * US);
    for (int r = 1; r < NROWS; r++) {
        ln = tx_line(s, pl, 1 + r, "busy", 0);
        for (int i = 0; i < PER_ROW; i++) {
            int64_t t = (int64_t)i * 2 * US + (r % 7) * 10 * NS;
            tx_event(s, pl, ln, name, t, 1 * US + ((i * 37 + r) % 11) * NS);
            tx_event(s, pl, ln, "child", t + 50 * NS, (100 + ((i * 13 + r) % 4) * 100) * NS);
        }
    }
    return s;
}

/* XProf's rule over every event of a row (no levels), per depth group. */
static size_t reference_row(const fixture *f, uint32_t row, int64_t ws, int64_t we, int64_t R,
                            uint32_t *out) {
    const xpv_trace_index *ix = f->ix;
    const xpv_trace_row *r = &ix->rows[row];
    size_t n = 0;
    for (uint32_t gi = r->group0; gi < r->group0 + r->ngroups; gi++) {
        const xpv_trace_group *g = &ix->groups[gi];
        uint32_t cnt = g->seg[XPV_TRACE_LEVELS];
        uint32_t *evs = malloc(cnt * sizeof *evs);
        memcpy(evs, ix->idx + g->off, cnt * sizeof *evs);
        /* events were added in start order, so the index is start order */
        for (uint32_t i = 1; i < cnt; i++)
            for (uint32_t j = i; j > 0 && evs[j - 1] > evs[j]; j--) {
                uint32_t t = evs[j - 1];
                evs[j - 1] = evs[j];
                evs[j] = t;
            }
        int64_t last = INT64_MIN;
        for (uint32_t i = 0; i < cnt; i++) {
            const xpv_event *e = xpv_trace_event(&f->hs, r, evs[i]);
            int64_t d = e->dur_ps > 0 ? e->dur_ps : 0;
            if (e->start_ps >= we || e->start_ps + (d > 1 ? d : 1) <= ws) continue;
            if (R > 0 && last != INT64_MIN && d < R && e->start_ps - last < R) continue;
            out[n++] = evs[i];
            if (e->start_ps + d > last) last = e->start_ps + d;
        }
        free(evs);
    }
    return n;
}

static size_t reference_all(const fixture *f, int64_t ws, int64_t we, int64_t R) {
    uint32_t *ref = malloc(f->ix->nidx * sizeof *ref + 4);
    size_t n = 0;
    for (uint32_t r = 0; r < f->ix->nrows; r++) n += reference_row(f, r, ws, we, R, ref);
    free(ref);
    return n;
}

static int cmp_u32(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* Whether `got` (n events of the row) is the rule's answer at R. */
static int is_rule_answer(const fixture *f, uint32_t row, int64_t ws, int64_t we, int64_t R,
                          uint32_t *got, size_t n) {
    uint32_t *ref = malloc((f->ix->rows[row].nevents + 1) * sizeof *ref);
    qsort(got, n, sizeof *got, cmp_u32);
    size_t m = reference_row(f, row, ws, we, R, ref);
    qsort(ref, m, sizeof *ref, cmp_u32);
    int ok = m == n && !memcmp(ref, got, n * sizeof *got);
    free(ref);
    return ok;
}

static int cmp_size(const void *a, const void *b) {
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

static void test_budget_shares_rows(void **state) {
    (void)state;
    fixture f;
    fx_open(&f, busy_trace("step"));
    assert_int_equal(f.ix->nrows, NROWS);
    int64_t ws = f.ix->min_ps, we = f.ix->max_ps + 1, R = (we - ws) / 2000;
    xpv_trace_hit *h0, *h1, *h2;
    size_t n0 = xpv_trace_query(&f.hs, f.ix, ws, we, R, &h0);
    /* Unbudgeted: the rule over every event of each row. */
    assert_int_equal(n0, reference_all(&f, ws, we, R));
    int64_t row_res[NROWS];
    memset(row_res, 0, sizeof row_res);
    xpv_trace_budget b = {20000, 0, row_res};
    xpv_trace_budget_info info;
    size_t n1 = xpv_trace_query_budget(&f.hs, f.ix, ws, we, R, &b, &info, &h1);
    assert_true(n1 <= b.max_events);
    assert_int_equal(info.candidates, n0);
    /* Independent water filling: cap = largest c with sum(min(d_r, c)) <=
     * the event share (15/16 of the budget, the rest for flows). */
    size_t d[NROWS];
    memset(d, 0, sizeof d);
    for (size_t i = 0; i < n0; i++) d[h0[i].row]++;
    size_t share = b.max_events - b.max_events / 16, cap = 0;
    for (size_t c = 1; c <= 2 * PER_ROW; c++) {
        size_t sum = 0;
        for (int r = 0; r < NROWS; r++) sum += d[r] < c ? d[r] : c;
        if (sum <= share) cap = c;
    }
    assert_int_equal(info.row_cap, cap);
    assert_int_equal(info.rows_coarsened, NROWS - 1);
    assert_int_equal(info.rows_cut, 0);
    size_t got[NROWS];
    memset(got, 0, sizeof got);
    for (size_t i = 0; i < n1; i++) got[h1[i].row]++;
    uint32_t light = UINT32_MAX;
    for (uint32_t r = 0; r < NROWS; r++)
        if (f.ix->rows[r].nevents == 10) light = r;
    assert_int_not_equal(light, UINT32_MAX);
    assert_int_equal(got[light], 10);
    size_t sorted[NROWS];
    memcpy(sorted, got, sizeof got);
    qsort(sorted, NROWS, sizeof *sorted, cmp_size);
    print_message("budget %zu: %zu of %zu events, cap %zu per row, busy rows %zu..%zu\n",
                  b.max_events, n1, n0, cap, sorted[1], sorted[NROWS - 1]);
    for (uint32_t r = 0; r < NROWS; r++) {
        assert_true(got[r] >= 1);                    /* no row goes blank */
        assert_true(got[r] <= cap);
        if (r != light) assert_true(got[r] >= cap / 2);   /* fair: near the cap */
    }
    /* Each busy row shows what the rule shows at a coarser resolution. */
    uint32_t *evs = malloc(n1 * sizeof *evs);
    assert_int_equal(row_res[light], 0);
    for (uint32_t r = 0; r < NROWS; r++) {
        if (r == light) continue;
        assert_true(row_res[r] > R && row_res[r] <= info.max_row_res_ps);
        size_t k = 0;
        for (size_t i = 0; i < n1; i++)
            if (h1[i].row == r) evs[k++] = h1[i].ev;
        assert_true(is_rule_answer(&f, r, ws, we, row_res[r], evs, k));
    }
    free(evs);
    /* Deterministic. */
    size_t n2 = xpv_trace_query_budget(&f.hs, f.ix, ws, we, R, &b, NULL, &h2);
    assert_int_equal(n2, n1);
    assert_memory_equal(h1, h2, n1 * sizeof *h1);
    free(h2);
    /* A budget that does not bind changes nothing. */
    xpv_trace_budget big = {2 * n0, 0, NULL};
    n2 = xpv_trace_query_budget(&f.hs, f.ix, ws, we, R, &big, &info, &h2);
    assert_int_equal(n2, n0);
    assert_memory_equal(h0, h2, n0 * sizeof *h0);
    assert_int_equal(info.rows_coarsened, 0);
    free(h0);
    free(h1);
    free(h2);
    fx_close(&f);
}

/* A row of 40 depth groups (a staircase of nested events) against a
 * share of 10 events: no resolution fits, so its 10 longest stay. */
static void test_budget_keeps_longest(void **state) {
    (void)state;
    int pl, ln;
    tx_space *s = tx_new_line("/host:CPU", 1, "deep", &pl, &ln);
    for (int k = 0; k < 40; k++) tx_event(s, pl, ln, "nest", k * NS, (1000 - 10 * k) * NS);
    fixture f;
    fx_open(&f, s);
    assert_int_equal(f.ix->ngroups, 40);
    xpv_trace_budget b = {11, 0, NULL};                /* 11 - 11/16 = 11 events */
    xpv_trace_budget_info info;
    xpv_trace_hit *h;
    size_t n = xpv_trace_query_budget(&f.hs, f.ix, 0, 2000 * NS, 1 * NS, &b, &info, &h);
    assert_int_equal(n, 11);
    assert_int_equal(info.rows_cut, 1);
    for (size_t i = 0; i < n; i++) {
        const xpv_event *e = xpv_trace_event(&f.hs, &f.ix->rows[0], h[i].ev);
        assert_true(e->start_ps < 11 * NS);          /* the 11 outermost */
        if (i) assert_true(e->start_ps > xpv_trace_event(&f.hs, &f.ix->rows[0], h[i - 1].ev)->start_ps);
    }
    free(h);
    fx_close(&f);
}

/* The tool: at most max_events events; viewportBudget says how; long
 * names bring the count down to the byte bound. */
static size_t render_count(const fixture *f, const char *max_events, json_t **jout,
                           size_t *bytes) {
    const char *keys[] = {"tag", "resolution", "max_events"};
    const char *vals[] = {"trace_viewer@", "2000", max_events};
    xpv_params q = {max_events ? 3 : 2, keys, vals, "trace_viewer@"};
    xpv_buf out;
    xpv_err err;
    xpv_buf_init(&out);
    memset(&err, 0, sizeof err);
    assert_int_equal(xpv_tool_find("trace_viewer")->render(&f->hs, f->ix, &q, &out, &err), 0);
    json_error_t jerr;
    json_t *j = json_loadb(out.data, out.len, 0, &jerr);
    assert_non_null(j);
    *bytes = out.len;
    xpv_buf_free(&out);
    size_t n = 0, i;
    json_t *e;
    json_array_foreach(json_object_get(j, "traceEvents"), i, e) {
        const char *ph = json_string_value(json_object_get(e, "ph"));
        if (ph && strcmp(ph, "M")) n++;
    }
    assert_int_equal(json_integer_value(json_object_get(j, "returnedEventsSize")), n);
    *jout = j;
    return n;
}

static void test_tool_budget(void **state) {
    (void)state;
    fixture f;
    fx_open(&f, busy_trace("step"));
    json_t *j;
    size_t bytes;
    /* the window the tool answers: the whole trace at span / 2000 */
    int64_t ws = f.ix->min_ps, we = f.ix->max_ps;
    size_t visible = reference_all(&f, ws, we + 1, ((uint64_t)(we - ws) + 1000) / 2000);
    size_t n = render_count(&f, "1000000", &j, &bytes);   /* not binding */
    assert_int_equal(n, visible);
    assert_null(json_object_get(j, "viewportBudget"));
    json_decref(j);
    n = render_count(&f, NULL, &j, &bytes);         /* the default, 50k */
    assert_true(n <= 50000 && n > 40000);
    assert_non_null(json_object_get(j, "viewportBudget"));
    json_decref(j);
    n = render_count(&f, "5000", &j, &bytes);
    assert_true(n <= 5000 && n > 4000);
    json_t *vb = json_object_get(j, "viewportBudget");
    assert_non_null(vb);
    assert_int_equal(json_integer_value(json_object_get(vb, "maxEvents")), 5000);
    assert_int_equal(json_integer_value(json_object_get(vb, "visibleEvents")), visible);
    assert_int_equal(json_integer_value(json_object_get(vb, "rowsCoarsened")), NROWS - 1);
    json_decref(j);
    fx_close(&f);
    /* Names of 3000 characters: 50k events would be ~150 MB of JSON; the
     * byte bound (16 MiB by default) lowers the count. */
    char *longname = malloc(3001);
    memset(longname, 'x', 3000);
    longname[3000] = 0;
    fx_open(&f, busy_trace(longname));
    n = render_count(&f, NULL, &j, &bytes);
    print_message("long names: %zu events, %zu bytes\n", n, bytes);
    assert_true(bytes <= (16u << 20) + (1u << 19));   /* an estimate: within 3% */
    assert_true(n < 25000);
    assert_non_null(json_object_get(j, "viewportBudget"));
    json_decref(j);
    free(longname);
    fx_close(&f);
}

TU_MAIN(cmocka_unit_test(test_budget_shares_rows),
        cmocka_unit_test(test_budget_keeps_longest),
        cmocka_unit_test(test_tool_budget))
