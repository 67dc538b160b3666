/*
 * test_tool_trace_lod.c - the trace index's levels of detail: XProf's
 * visibility rule on constructed traces with known answers (nesting, tiny
 * events, long events, counters), the per-pixel bound, and a brute-force
 * reference over random nested traces (the indexed query must return
 * exactly what the rule gives when applied to every event of the window).
 * Persistence: an index saved and loaded back answers byte for byte like
 * the built one; corrupt, truncated, extended, forged (re-hashed) images
 * and images of other profiles are rejected.  Parallel build: the serial
 * index byte for byte on 2-8 threads.  A row written out of order (with
 * internal events among its events) indexes as the same events in order;
 * a sorted row's build scratch stays a few bytes per event.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "synth.h"
#include "testutil.h"
#include "tool.h"
#include "tool_xspace.h"
#include "trace_fixture.h"
#include "trace_index.h"
#include "trace_index_int.h"

static int cmp_hit(const void *a, const void *b) {
    const xpv_trace_hit *x = a, *y = b;
    if (x->row != y->row) return x->row < y->row ? -1 : 1;
    return x->ev < y->ev ? -1 : x->ev > y->ev;
}

/* Starts (in ps) of the hits of row `row`, ascending. */
static size_t starts_of(const fixture *f, const xpv_trace_hit *h, size_t n, uint32_t row,
                        int64_t *out, size_t cap) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (h[i].row == row && k < cap) out[k++] = xpv_trace_event(&f->hs, &f->ix->rows[row], h[i].ev)->start_ps;
    for (size_t i = 1; i < k; i++)
        for (size_t j = i; j > 0 && out[j - 1] > out[j]; j--) {
            int64_t t = out[j - 1];
            out[j - 1] = out[j];
            out[j] = t;
        }
    return k;
}

/* ---- known answers ---------------------------------------------------- */

static void test_tiny_events(void **state) {
    (void)state;
    int pl, ln;
    tx_space *s = tx_new_line("/host:CPU", 5, "worker", &pl, &ln);
    /* 1000 events of 1 ns every 2 ns over [0, 2 us). */
    for (int i = 0; i < 1000; i++) tx_event(s, pl, ln, "tiny", (int64_t)i * 2 * NS, NS);
    fixture f;
    fx_open(&f, s);
    assert_int_equal(f.ix->nrows, 1);
    assert_int_equal(f.ix->rows[0].pid, 701);
    assert_int_equal(f.ix->rows[0].tid, 5);
    xpv_trace_hit *h;
    /* R = 100 ns: first at 0 (ends 1 ns), next start >= 101 ns -> 102 ns,
     * then >= 203 -> 204...: 20 events at k * 102 ns. */
    size_t n = xpv_trace_query(&f.hs, f.ix, 0, 2 * US, 100 * NS, &h);
    int64_t st[64];
    size_t k = starts_of(&f, h, n, 0, st, 64);
    assert_int_equal(k, 20);
    for (size_t i = 0; i < k; i++) assert_int_equal(st[i], (int64_t)i * 102 * NS);
    free(h);
    /* R = 0: every event of the window [100 ns, 200 ns): starts 100..198
     * (50 events) plus the one overlapping 100 ns?  Events are [2k, 2k+1)
     * ns, so 98 ns ends at 99 ns: not overlapping. */
    n = xpv_trace_query(&f.hs, f.ix, 100 * NS, 200 * NS, 0, &h);
    assert_int_equal(n, 50);
    free(h);
    /* A window in the middle: the first overlapping event is visible. */
    n = xpv_trace_query(&f.hs, f.ix, 1001 * NS, 2 * US, 100 * NS, &h);
    k = starts_of(&f, h, n, 0, st, 64);
    assert_true(k > 0);
    assert_int_equal(st[0], 1002 * NS);
    assert_int_equal(st[1], 1104 * NS);
    free(h);
    fx_close(&f);
}

static void test_nesting(void **state) {
    (void)state;
    int pl, ln;
    tx_space *s = tx_new_line("/host:CPU", 1, "main", &pl, &ln);
    /* parent [0, 1000 ns); children of 50 ns at 100k ns, k = 0..9 */
    tx_event(s, pl, ln, "parent", 0, 1000 * NS);
    for (int k = 0; k < 10; k++) tx_event(s, pl, ln, "child", (int64_t)k * 100 * NS, 50 * NS);
    /* a later top-level event of 10 ns */
    tx_event(s, pl, ln, "after", 1100 * NS, 10 * NS);
    fixture f;
    fx_open(&f, s);
    assert_int_equal(f.ix->rows[0].ngroups, 2);   /* depth 0 and depth 1 */
    xpv_trace_hit *h;
    size_t n = xpv_trace_query(&f.hs, f.ix, 0, 1200 * NS, 200 * NS, &h);
    qsort(h, n, sizeof *h, cmp_hit);
    /* depth 0: parent (>= R) and "after" (starts 100 ns >= R after 1000 ns?
     * no: 1100 - 1000 = 100 ns < 200 ns and 10 ns < R: hidden).
     * depth 1: children 0, 3, 6, 9 (each >= 200 ns after the last end). */
    int64_t want[] = {0, 0, 300 * NS, 600 * NS, 900 * NS};
    assert_int_equal(n, 5);
    int64_t got[5];
    for (size_t i = 0; i < n; i++) got[i] = xpv_trace_event(&f.hs, &f.ix->rows[0], h[i].ev)->start_ps;
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && got[j - 1] > got[j]; j--) {
            int64_t t = got[j - 1];
            got[j - 1] = got[j];
            got[j] = t;
        }
    for (size_t i = 0; i < 5; i++) assert_int_equal(got[i], want[i]);
    free(h);
    /* A window inside the parent: the parent overlaps, so it is visible. */
    n = xpv_trace_query(&f.hs, f.ix, 450 * NS, 460 * NS, 1 * NS, &h);
    assert_int_equal(n, 1);
    assert_int_equal(h[0].ev, 0);
    free(h);
    fx_close(&f);
}

static void test_long_events_always_visible(void **state) {
    (void)state;
    int pl, ln;
    tx_space *s = tx_new_line("/host:CPU", 1, "t", &pl, &ln);
    /* Dense tiny events with a 5 us event in the middle of them. */
    int64_t t = 0;
    for (int i = 0; i < 5000; i++) {
        int64_t d = i == 2500 ? 5 * US : 10 * NS;
        tx_event(s, pl, ln, i == 2500 ? "long" : "x", t, d);
        t += d + NS;
    }
    fixture f;
    fx_open(&f, s);
    xpv_trace_hit *h;
    size_t n = xpv_trace_query(&f.hs, f.ix, 0, t, 4 * US, &h);
    int found = 0;
    for (size_t i = 0; i < n; i++) found |= h[i].ev == 2500;
    assert_true(found);
    assert_true(n <= (size_t)(2 * t / (4 * US) + 2));
    free(h);
    fx_close(&f);
}

static void test_counters(void **state) {
    (void)state;
    tx_space *s = tx_new();
    int pl = tx_plane(s, "/device:GPU:0");
    s->space.planes[pl]->id = 0;
    int ln = tx_line(s, pl, 0, "_counters_", 0);
    for (int i = 0; i < 100; i++) {
        tx_event_t *e = tx_event(s, pl, ln, "HBM used", (int64_t)i * US, 0);
        tx_ev_int(s, pl, e, "value", i);
        e = tx_event(s, pl, ln, "temp", (int64_t)i * US + 500 * NS, 0);
        tx_ev_int(s, pl, e, "value", 40 + i % 3);
    }
    fixture f;
    fx_open(&f, s);
    assert_int_equal(f.ix->nrows, 1);
    assert_true(f.ix->rows[0].is_counter);
    assert_int_equal(f.ix->rows[0].ngroups, 2);       /* one per counter */
    assert_int_equal(f.ix->rows[0].pid, 1);
    assert_int_equal(f.ix->ncounter, 200);
    xpv_trace_hit *h;
    /* Window [10.2 us, 50 us), R = 5 us.  "HBM used" (samples at k us):
     * the sample before the window (10 us), then 11, 16, ..., 46.
     * "temp" (k us + 500 ns): before = 9.5, then 10.5, 15.5, ... 45.5. */
    size_t n = xpv_trace_query(&f.hs, f.ix, 10200 * NS, 50 * US, 5 * US, &h);
    int64_t hbm[32], tmp[32];
    size_t nh = 0, nt = 0;
    for (size_t i = 0; i < n; i++) {
        const xpv_event *e = xpv_trace_event(&f.hs, &f.ix->rows[0], h[i].ev);
        xpv_str nm = xpv_event_display_name(&f.p->planes[0], e);
        if (xpv_str_eq(nm, "HBM used")) hbm[nh++] = e->start_ps;
        else tmp[nt++] = e->start_ps;
    }
    int64_t want_h[] = {10, 11, 16, 21, 26, 31, 36, 41, 46};
    assert_int_equal(nh, 9);
    for (size_t i = 0; i < nh; i++) assert_int_equal(hbm[i], want_h[i] * US);
    assert_int_equal(nt, 9);
    assert_int_equal(tmp[0], 9 * US + 500 * NS);
    assert_int_equal(tmp[1], 10 * US + 500 * NS);
    assert_int_equal(tmp[8], 45 * US + 500 * NS);
    free(h);
    fx_close(&f);
}

/* ---- flows: the launching end decides ----------------------------------- */

/* Row index of the row with pid `pid`, tid `tid` (or -1). */
static int row_of(const fixture *f, int64_t pid, int64_t tid) {
    for (uint32_t i = 0; i < f->ix->nrows; i++)
        if (f->ix->rows[i].pid == pid && f->ix->rows[i].tid == tid) return (int)i;
    return -1;
}

/* Sorted starts of the hits in row `row`, as a count. */
static size_t row_starts(const fixture *f, const xpv_trace_hit *h, size_t n, int row, int64_t *st,
                         size_t cap) {
    assert_true(row >= 0);
    return starts_of(f, h, n, (uint32_t)row, st, cap);
}

static void test_flows_first_event_decides(void **state) {
    (void)state;
    int hp, hl;
    tx_space *s = tx_new_line("/host:CPU", 1, "launcher", &hp, &hl);
    /* Launches L1@0, L2@20us, L3@100us (5 us each), correlation 1, 2, 3. */
    int64_t lt[3] = {0, 20 * US, 100 * US};
    for (int k = 0; k < 3; k++) {
        tx_event_t *e = tx_event(s, hp, hl, "cuLaunchKernel", lt[k], 5 * US);
        tx_ev_int(s, hp, e, "correlation_id", k + 1);
    }
    /* Flow by `flow` stat between two host lines: "send"@150us (out) on the
     * launcher line, "recv"@152us (in) on line 2, which a visible "busy"
     * event just before hides by the rule. */
    tx_event_t *e = tx_event(s, hp, hl, "send", 150 * US, 100 * NS);
    tx_stat_t *st = tx_new_stat(s, hp, &e->n_stats, &e->stats, "flow");
    st->value_case = TENSORFLOW__PROFILER__XSTAT__VALUE_UINT64_VALUE;
    st->uint64_value = (9ULL << 2) | 2;
    int hl2 = tx_line(s, hp, 2, "receiver", 0);
    tx_event(s, hp, hl2, "busy", 151 * US, 100 * NS);
    e = tx_event(s, hp, hl2, "recv", 152 * US, 100 * NS);
    st = tx_new_stat(s, hp, &e->n_stats, &e->stats, "flow");
    st->value_case = TENSORFLOW__PROFILER__XSTAT__VALUE_UINT64_VALUE;
    st->uint64_value = (9ULL << 2) | 1;
    /* GPU: memset@1us (no flow), kernels K1@6us, K2@26us, K3@106us, 100 ns
     * each, correlation 1, 2, 3. */
    int gp = tx_plane(s, "/device:GPU:0");
    s->space.planes[gp]->id = 0;
    int gl = tx_line(s, gp, 7, "stream 7", 0);
    tx_event(s, gp, gl, "memset", 1 * US, 100 * NS);
    int64_t kt[3] = {6 * US, 26 * US, 106 * US};
    for (int k = 0; k < 3; k++) {
        e = tx_event(s, gp, gl, "kernel", kt[k], 100 * NS);
        tx_ev_int(s, gp, e, "correlation_id", k + 1);
    }
    fixture f;
    fx_open(&f, s);
    int host = row_of(&f, 701, 1), recv = row_of(&f, 701, 2), gpu = row_of(&f, 1, 7);
    /* Promotion: K1 (a fine level by its own gap) now sits at L1's level 0. */
    const xpv_trace_group *g = &f.ix->groups[f.ix->rows[gpu].group0];
    int k1_level = -1;
    for (int L = 0; L < XPV_TRACE_LEVELS; L++)
        for (uint32_t i = g->seg[L]; i < g->seg[L + 1]; i++)
            if (xpv_trace_event(&f.hs, &f.ix->rows[gpu], f.ix->idx[g->off + i])->start_ps == 6 * US)
                k1_level = L;
    assert_int_equal(k1_level, 0);

    /* R = 50 us over [0, 200 us).  By the rule alone: host L1, L3 (95 us
     * after L1's end), send (45 us after L3's end? no: 150 - 105 = 45 <
     * 50, and 100 ns < R: hidden); receiver: busy only; GPU: memset, K3
     * (104.9 us after memset).  Flows: L1 visible -> K1 added; L2 hidden ->
     * K2 stays hidden; L3 -> K3 (already there); send hidden -> recv
     * stays hidden. */
    xpv_trace_hit *h;
    int64_t t[16];
    size_t n = xpv_trace_query(&f.hs, f.ix, 0, 200 * US, 50 * US, &h);
    size_t k = row_starts(&f, h, n, host, t, 16);
    assert_int_equal(k, 2);
    assert_int_equal(t[0], 0);
    assert_int_equal(t[1], 100 * US);
    k = row_starts(&f, h, n, gpu, t, 16);
    assert_int_equal(k, 3);
    assert_int_equal(t[0], 1 * US);
    assert_int_equal(t[1], 6 * US);          /* K1: pulled in by L1 */
    assert_int_equal(t[2], 106 * US);
    k = row_starts(&f, h, n, recv, t, 16);
    assert_int_equal(k, 1);
    assert_int_equal(t[0], 151 * US);
    /* hits stay ordered by row (then start) */
    for (size_t i = 1; i < n; i++) assert_true(h[i - 1].row <= h[i].row);
    free(h);

    /* [140 us, 200 us) at R = 20 us: send is the first event of the
     * launcher row there, so visible -> recv (hidden by busy: 152 - 151.1 <
     * 20) is added with it. */
    n = xpv_trace_query(&f.hs, f.ix, 140 * US, 200 * US, 20 * US, &h);
    k = row_starts(&f, h, n, recv, t, 16);
    assert_int_equal(k, 2);
    assert_int_equal(t[0], 151 * US);
    assert_int_equal(t[1], 152 * US);
    free(h);

    /* A window that holds K2 but not L2's visible... L2 is the first event
     * of the launcher row in [20 us, 60 us), so K2 comes with it. */
    n = xpv_trace_query(&f.hs, f.ix, 20 * US, 60 * US, 50 * US, &h);
    k = row_starts(&f, h, n, gpu, t, 16);
    assert_int_equal(k, 1);
    assert_int_equal(t[0], 26 * US);
    free(h);

    /* R = 0: everything in the window, no duplicates. */
    n = xpv_trace_query(&f.hs, f.ix, 0, 200 * US, 0, &h);
    assert_int_equal(n, f.ix->nidx);
    free(h);
    fx_close(&f);
}

/* ---- brute force reference -------------------------------------------- */

static uint64_t rng = 88172645463325252ULL;
static uint64_t rnd(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* Append children of [s, e) at depth d, in pre-order. */
static void gen(tx_space *sp, int pl, int ln, int64_t s, int64_t e, int d) {
    int64_t t = s;
    while (t < e) {
        int64_t gap = (int64_t)(rnd() % 3 == 0 ? rnd() % (200 * NS) : rnd() % (5 * NS));
        t += gap;
        if (t >= e) break;
        int64_t room = e - t;
        int64_t dur = rnd() % 10 == 0 ? 0 : (int64_t)(rnd() % (uint64_t)(room < 4 * US ? room : 4 * US));
        if (d > 0 && rnd() % 50 == 0) dur = room;   /* fills its parent */
        char name[16];
        snprintf(name, sizeof name, "e%d", (int)(rnd() % 7));
        tx_event(sp, pl, ln, name, t, dur);
        if (d < 3 && dur > 10 * NS && rnd() % 2) gen(sp, pl, ln, t, t + dur, d + 1);
        t += dur > 0 ? dur : 1;
    }
}

static const xpv_event *g_evs;

static int cmp_ev_start(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    int64_t sx = g_evs[x].start_ps, sy = g_evs[y].start_ps;
    if (sx != sy) return sx < sy ? -1 : 1;
    return x < y ? -1 : x > y;
}

/* The rule applied to every event of each group (no levels).  Also fills
 * gid[row * stride + ev] with the group of each event. */
static size_t reference(const fixture *f, int64_t ws, int64_t we, int64_t R, xpv_trace_hit *out,
                        uint32_t *gid, size_t stride) {
    const xpv_trace_index *ix = f->ix;
    size_t n = 0;
    for (uint32_t gi = 0; gi < ix->ngroups; gi++) {
        const xpv_trace_group *g = &ix->groups[gi];
        const xpv_trace_row *r = &ix->rows[g->row];
        uint32_t cnt = g->seg[XPV_TRACE_LEVELS];
        uint32_t *evs = malloc(cnt * sizeof *evs);
        memcpy(evs, ix->idx + g->off, cnt * sizeof *evs);
        g_evs = xpv_trace_event(&f->hs, r, 0);
        qsort(evs, cnt, sizeof *evs, cmp_ev_start);
        int64_t last = INT64_MIN;
        for (uint32_t i = 0; i < cnt; i++) {
            const xpv_event *e = xpv_trace_event(&f->hs, r, evs[i]);
            gid[(size_t)g->row * stride + evs[i]] = gi;
            int64_t d = e->dur_ps > 0 ? e->dur_ps : 0;
            if (e->start_ps >= we || e->start_ps + (d > 1 ? d : 1) <= ws) continue;
            if (R > 0 && last != INT64_MIN && d < R && e->start_ps - last < R) continue;
            out[n++] = (xpv_trace_hit){g->row, evs[i]};
            if (e->start_ps + d > last) last = e->start_ps + d;
        }
        free(evs);
    }
    return n;
}

static void test_random_vs_reference(void **state) {
    (void)state;
    tx_space *s = tx_new();
    int pl = tx_plane(s, "/host:CPU");
    for (int l = 0; l < 3; l++) {
        int ln = tx_line(s, pl, 100 + l, "thread", 0);
        gen(s, pl, ln, 0, 1500 * US, 0);
    }
    fixture f;
    fx_open(&f, s);
    print_message("random trace: %llu events, %u groups\n", (unsigned long long)f.ix->nidx, f.ix->ngroups);
    assert_true(f.ix->nidx > 3000);
    xpv_trace_hit *ref = malloc(f.ix->nidx * sizeof *ref + 16);
    size_t stride = 0;
    for (uint32_t r = 0; r < f.ix->nrows; r++) {
        const xpv_plane *p0 = &f.p->planes[f.ix->rows[r].plane];
        if (p0->lines[f.ix->rows[r].line].nevents > stride)
            stride = p0->lines[f.ix->rows[r].line].nevents;
    }
    uint32_t *gid = calloc(stride * f.ix->nrows, sizeof *gid);
    size_t *per = calloc(f.ix->ngroups, sizeof *per);
    int64_t span = f.ix->max_ps - f.ix->min_ps;
    for (int it = 0; it < 60; it++) {
        int64_t a = f.ix->min_ps + (int64_t)(rnd() % (uint64_t)span);
        int64_t w = 1 + (int64_t)(rnd() % (uint64_t)(span / (1 + rnd() % 50)));
        if (it == 0) {
            a = f.ix->min_ps;
            w = span + 1;
        }
        int64_t R = it % 7 == 0 ? 0 : 1 + (int64_t)(rnd() % (uint64_t)(w / 50 + 1));
        xpv_trace_hit *h;
        size_t n = xpv_trace_query(&f.hs, f.ix, a, a + w, R, &h);
        size_t m = reference(&f, a, a + w, R, ref, gid, stride);
        qsort(h, n, sizeof *h, cmp_hit);
        qsort(ref, m, sizeof *ref, cmp_hit);
        assert_int_equal(n, m);
        for (size_t i = 0; i < n; i++) {
            assert_int_equal(h[i].row, ref[i].row);
            assert_int_equal(h[i].ev, ref[i].ev);
        }
        /* The bound: per group at most 2 events per R of window (+2). */
        if (R > 0) {
            memset(per, 0, f.ix->ngroups * sizeof *per);
            for (size_t i = 0; i < n; i++) per[gid[(size_t)h[i].row * stride + h[i].ev]]++;
            for (uint32_t gi = 0; gi < f.ix->ngroups; gi++)
                assert_true(per[gi] <= (size_t)(2 * (w / R) + 2));
        }
        free(h);
    }
    free(ref);
    free(gid);
    free(per);
    fx_close(&f);
}

static void test_levels_partition(void **state) {
    (void)state;
    int pl, ln;
    tx_space *s = tx_new_line("/host:CPU", 1, "t", &pl, &ln);
    gen(s, pl, ln, 0, 500 * US, 0);
    /* internal events are left out of the index */
    tx_event(s, pl, ln, "MemoryAllocation", 600 * US, 1 * US);
    tx_event(s, pl, ln, "PrefetchProduce", 602 * US, 1 * US);
    fixture f;
    fx_open(&f, s);
    assert_int_equal(f.ix->ndropped, 2);
    uint64_t total = 0;
    for (uint32_t gi = 0; gi < f.ix->ngroups; gi++) {
        const xpv_trace_group *g = &f.ix->groups[gi];
        assert_int_equal(g->seg[0], 0);
        for (int L = 0; L < XPV_TRACE_LEVELS; L++) assert_true(g->seg[L] <= g->seg[L + 1]);
        /* the first event of a group is at level 0 */
        assert_true(g->seg[1] >= 1);
        total += g->seg[XPV_TRACE_LEVELS];
    }
    assert_int_equal(total, f.ix->nidx);
    assert_int_equal(total + 2, f.p->planes[0].lines[0].nevents);
    assert_true(f.ix->max_ps <= 500 * US);
    fx_close(&f);
}

/* ---- persistence (xpv_trace_index_save / _load) ---------------------------- */

static xpv_profile *synth_profile(int hosts, int host) {
    xpv_synth_opts o;
    memset(&o, 0, sizeof o);
    o.size_bytes = 400000;
    o.hosts = hosts;
    o.steps = 4;
    o.gpus = 2;
    xpv_synth_defaults(&o);
    return tu_synth_profile(&o, host);
}

static void render_q(const xpv_hostset *hs, const xpv_trace_index *ix, const char *k1,
                     const char *v1, const char *k2, const char *v2, xpv_buf *out) {
    const char *k[4] = {"tag", k1, k2}, *v[4] = {"trace_viewer@", v1, v2};
    xpv_params q = {k2 ? 3 : k1 ? 2 : 1, k, v, "trace_viewer@"};
    xpv_err err;
    memset(&err, 0, sizeof err);
    xpv_buf_reset(out);
    assert_int_equal(xpv_tool_find("trace_viewer")->render(hs, ix, &q, out, &err), 0);
}

static void assert_same_index(const xpv_trace_index *a, const xpv_trace_index *b) {
    assert_int_equal(a->nprocs, b->nprocs);
    assert_int_equal(a->nrows, b->nrows);
    assert_int_equal(a->ngroups, b->ngroups);
    assert_int_equal(a->nidx, b->nidx);
    assert_int_equal(a->nsteps, b->nsteps);
    assert_int_equal(a->min_ps, b->min_ps);
    assert_int_equal(a->max_ps, b->max_ps);
    assert_int_equal(a->ndropped, b->ndropped);
    assert_int_equal(a->ncounter, b->ncounter);
    assert_int_equal(a->bytes, b->bytes);
    for (uint32_t i = 0; i < a->nprocs; i++) {
        assert_int_equal(a->procs[i].pid, b->procs[i].pid);
        assert_string_equal(a->procs[i].plane_name, b->procs[i].plane_name);
        assert_string_equal(a->procs[i].host_name, b->procs[i].host_name);
        assert_int_equal(a->procs[i].nthreads, b->procs[i].nthreads);
    }
    for (uint32_t i = 0; i < a->nrows; i++) {
        const xpv_trace_row *x = &a->rows[i], *y = &b->rows[i];
        assert_string_equal(x->name, y->name);
        assert_true(x->host == y->host && x->plane == y->plane && x->line == y->line);
        assert_true(x->pid == y->pid && x->tid == y->tid && x->proc == y->proc);
        assert_true(x->group0 == y->group0 && x->ngroups == y->ngroups);
        assert_true(x->nevents == y->nevents && x->st_flow == y->st_flow);
    }
    assert_memory_equal(a->groups, b->groups, a->ngroups * sizeof *a->groups);
    assert_memory_equal(a->idx, b->idx, a->nidx * sizeof *a->idx);
    if (a->nsteps) assert_memory_equal(a->steps, b->steps, a->nsteps * sizeof *a->steps);
}

static void test_persist_round_trip(void **state) {
    (void)state;
    xpv_profile *p[2] = {synth_profile(2, 0), synth_profile(2, 1)};
    const xpv_profile *ps[2] = {p[0], p[1]};
    const char *names[2] = {"worker0", "worker1"};
    xpv_hostset hs = {2, ps, names};
    xpv_trace_index *built = xpv_trace_index_build(&hs);
    assert_true(built->nidx > 1000 && built->nsteps > 0);
    xpv_buf img, img2, o1, o2;
    xpv_buf_init(&img);
    xpv_buf_init(&img2);
    xpv_buf_init(&o1);
    xpv_buf_init(&o2);
    xpv_trace_index_save(built, &hs, &img);
    print_message("image: %zu bytes for %llu events (%.2f bytes/event)\n", img.len,
                  (unsigned long long)built->nidx, (double)img.len / (double)built->nidx);
    assert_true(img.len < 128 + 24 * 2 + built->nidx * 4 + 4096 * (size_t)built->ngroups);
    xpv_trace_index *loaded = xpv_trace_index_load(&hs, img.data, img.len);
    assert_non_null(loaded);
    assert_same_index(built, loaded);
    /* A loaded index saves to the same bytes (replicas write one image). */
    xpv_trace_index_save(loaded, &hs, &img2);
    assert_int_equal(img.len, img2.len);
    assert_memory_equal(img.data, img2.data, img.len);
    /* Same responses: whole trace, a zoomed viewport, a full-detail window,
     * search and details. */
    char a[64], b[64];
    int64_t span = built->max_ps - built->min_ps;
    snprintf(a, sizeof a, "%.6f", (double)(built->min_ps + span / 3) / 1e9);
    snprintf(b, sizeof b, "%.6f", (double)(built->min_ps + span / 3 + span / 50) / 1e9);
    char uid[32] = "";
    for (uint32_t r = 0; r < built->nrows && !uid[0]; r++)
        if (!built->rows[r].is_counter && built->rows[r].ngroups)
            snprintf(uid, sizeof uid, "%llu", (unsigned long long)(((uint64_t)r << 32) |
                     built->idx[built->groups[built->rows[r].group0].off]));
    const char *qs[][4] = {
        {"resolution", "960", NULL, NULL},
        {"start_time_ms", a, "end_time_ms", b},
        {"resolution", "0", NULL, NULL},
        {"search_prefix", "Mat", NULL, NULL},
        {"unique_id", uid, NULL, NULL},
        {NULL, NULL, NULL, NULL},
    };
    for (size_t i = 0; i < sizeof qs / sizeof qs[0]; i++) {
        render_q(&hs, built, qs[i][0], qs[i][1], qs[i][2], qs[i][3], &o1);
        render_q(&hs, loaded, qs[i][0], qs[i][1], qs[i][2], qs[i][3], &o2);
        assert_true(o1.len > 10);
        assert_int_equal(o1.len, o2.len);
        assert_memory_equal(o1.data, o2.data, o1.len);
    }
    /* Another host set (one host of the two): the image does not fit. */
    xpv_hostset one = {1, ps, names};
    assert_null(xpv_trace_index_load(&one, img.data, img.len));
    /* The same host count, the same shapes (synth hosts have equal event
     * counts) but other profiles: the fingerprint tells them apart. */
    const xpv_profile *sw[2] = {p[1], p[0]};
    xpv_hostset swapped = {2, sw, names};
    assert_int_equal(p[0]->nevents, p[1]->nevents);
    assert_null(xpv_trace_index_load(&swapped, img.data, img.len));
    xpv_trace_index_free(loaded);
    xpv_trace_index_free(built);
    xpv_buf_free(&img);
    xpv_buf_free(&img2);
    xpv_buf_free(&o1);
    xpv_buf_free(&o2);
    xpv_profile_free(p[0]);
    xpv_profile_free(p[1]);
}

/* Every real xplane of ../shared: its image loads back as the same index
 * (the span and bounds checks hold on real data, not only on synth). */
static void check_persist(const char *path, xpv_profile *p, void *ctx) {
    (void)ctx;
    const xpv_profile *ps[1] = {p};
    const char *names[1] = {"host"};
    xpv_hostset hs = {1, ps, names};
    xpv_trace_index *built = xpv_trace_index_build(&hs);
    xpv_buf img;
    xpv_buf_init(&img);
    xpv_trace_index_save(built, &hs, &img);
    xpv_trace_index *loaded = xpv_trace_index_load(&hs, img.data, img.len);
    if (!loaded) fail_msg("%s: its own image was rejected", path);
    assert_same_index(built, loaded);
    xpv_trace_index_free(loaded);
    xpv_trace_index_free(built);
    xpv_buf_free(&img);
}

static void test_persist_real_files(void **state) {
    (void)state;
    TU_SKIP_NO_SHARED();
    int checked = tx_each_real_profile(1, check_persist, NULL);
    print_message("%d real files round-tripped\n", checked);
    assert_true(checked > 0);
}

/* Pass 2 on 2, 3 and 8 threads builds the serial index byte for byte (its
 * saved image included), whatever the schedule: two synthetic hosts and
 * every real xplane of ../shared. */
static void same_parallel_build(const xpv_hostset *hs, const char *what) {
    int saved_threads = xpv_ti_threads;
    uint64_t saved_min = xpv_ti_parallel_min;
    xpv_ti_threads = 1;
    xpv_trace_index *ser = xpv_trace_index_build(hs);
    xpv_buf a, b;
    xpv_buf_init(&a);
    xpv_buf_init(&b);
    xpv_trace_index_save(ser, hs, &a);
    static const int threads[] = {2, 3, 8};
    xpv_ti_parallel_min = 0;
    for (size_t t = 0; t < sizeof threads / sizeof *threads; t++) {
        xpv_ti_threads = threads[t];
        xpv_trace_index *par = xpv_trace_index_build(hs);
        assert_same_index(ser, par);
        assert_true(ser->min_ps == par->min_ps && ser->max_ps == par->max_ps);
        assert_true(ser->ndropped == par->ndropped && ser->ncounter == par->ncounter);
        assert_true(ser->bytes == par->bytes);
        xpv_buf_reset(&b);
        xpv_trace_index_save(par, hs, &b);
        if (a.len != b.len || memcmp(a.data, b.data, a.len))
            fail_msg("%s: the image differs on %d threads", what, threads[t]);
        xpv_trace_index_free(par);
    }
    xpv_ti_threads = saved_threads;
    xpv_ti_parallel_min = saved_min;
    xpv_trace_index_free(ser);
    xpv_buf_free(&a);
    xpv_buf_free(&b);
}

static void check_parallel_build(const char *path, xpv_profile *p, void *ctx) {
    (void)ctx;
    const xpv_profile *ps[1] = {p};
    const char *names[1] = {"host"};
    xpv_hostset one = {1, ps, names};
    same_parallel_build(&one, path);
}

static void test_parallel_build(void **state) {
    (void)state;
    xpv_profile *p[2] = {synth_profile(2, 0), synth_profile(2, 1)};
    const xpv_profile *ps[2] = {p[0], p[1]};
    const char *names[2] = {"worker0", "worker1"};
    xpv_hostset hs = {2, ps, names};
    same_parallel_build(&hs, "synth");
    xpv_profile_free(p[0]);
    xpv_profile_free(p[1]);
    if (!tu_shared_dir()) return;
    int checked = tx_each_real_profile(1, check_parallel_build, NULL);
    print_message("parallel = serial index on %d real files\n", checked);
    assert_true(checked >= 5);
}

/* ---- rows out of order ------------------------------------------------ */

typedef struct sd_ev {
    int64_t s, d;
} sd_ev;

static int cmp_sd(const void *a, const void *b) {
    const sd_ev *x = a, *y = b;
    if (x->s != y->s) return x->s < y->s ? -1 : 1;
    return x->d < y->d ? -1 : x->d > y->d;
}

/* Group by group and level by level, `b` holds the events `a` does, as
 * (start, dur): the index of a row does not depend on its file order. */
static void assert_same_levels(const fixture *a, const fixture *b) {
    assert_int_equal(a->ix->ngroups, b->ix->ngroups);
    assert_int_equal(a->ix->nidx, b->ix->nidx);
    sd_ev *x = malloc(a->ix->nidx * sizeof *x + 1), *y = malloc(a->ix->nidx * sizeof *y + 1);
    for (uint32_t gi = 0; gi < a->ix->ngroups; gi++) {
        const xpv_trace_group *ga = &a->ix->groups[gi], *gb = &b->ix->groups[gi];
        assert_int_equal(ga->key, gb->key);
        for (int L = 0; L < XPV_TRACE_LEVELS; L++) {
            assert_int_equal(ga->seg[L + 1], gb->seg[L + 1]);
            uint32_t n = ga->seg[L + 1] - ga->seg[L];
            for (uint32_t i = 0; i < n; i++) {
                const xpv_event *ea = xpv_trace_event(&a->hs, &a->ix->rows[ga->row],
                                                      a->ix->idx[ga->off + ga->seg[L] + i]);
                const xpv_event *eb = xpv_trace_event(&b->hs, &b->ix->rows[gb->row],
                                                      b->ix->idx[gb->off + gb->seg[L] + i]);
                x[i] = (sd_ev){ea->start_ps, ea->dur_ps};
                y[i] = (sd_ev){eb->start_ps, eb->dur_ps};
            }
            qsort(x, n, sizeof *x, cmp_sd);
            qsort(y, n, sizeof *y, cmp_sd);
            assert_memory_equal(x, y, n * sizeof *x);
        }
    }
    free(x);
    free(y);
}

/* A row written out of (start, -dur) order, with internal events (left
 * out of the index) among its events, indexes as the same events in
 * order, and on 2-8 threads as on one. */
static void test_unsorted_rows(void **state) {
    (void)state;
    tx_space *s = tx_new();
    int pl = tx_plane(s, "/host:CPU");
    int ln = tx_line(s, pl, 100, "thread", 0);
    gen(s, pl, ln, 0, 400 * US, 0);
    fixture a;
    fx_open(&a, s);
    const xpv_line *la = &a.p->planes[0].lines[0];
    uint32_t n = la->nevents, *perm = malloc(n * sizeof *perm);
    for (uint32_t i = 0; i < n; i++) perm[i] = i;
    for (uint32_t i = n - 1; i > 0; i--) {
        uint32_t j = (uint32_t)(rnd() % (i + 1)), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    s = tx_new();
    pl = tx_plane(s, "/host:CPU");
    ln = tx_line(s, pl, 100, "thread", 0);
    uint32_t internal = 0;
    for (uint32_t i = 0; i < n; i++) {
        const xpv_event *e = &la->events[perm[i]];
        xpv_str nm = xpv_event_display_name(&a.p->planes[0], e);
        char name[16];
        snprintf(name, sizeof name, "%.*s", (int)nm.len, nm.ptr);
        tx_event(s, pl, ln, name, e->start_ps, e->dur_ps);
        if (rnd() % 8 == 0) {
            tx_event(s, pl, ln, "MemoryAllocation", e->start_ps, (int64_t)(rnd() % US));
            internal++;
        }
    }
    free(perm);
    fixture b;
    fx_open(&b, s);
    print_message("%u events shuffled, %u internal among them\n", n, internal);
    assert_true(n > 1000 && internal > 0);
    assert_int_equal(b.ix->ndropped, a.ix->ndropped + internal);
    assert_true(a.ix->min_ps == b.ix->min_ps && a.ix->max_ps == b.ix->max_ps);
    assert_same_levels(&a, &b);
    same_parallel_build(&b.hs, "shuffled");
    fx_close(&a);
    fx_close(&b);
}

/* 300 events each inside the one before (depths past the one-byte
 * depths of the single-pass build), internal events among them: one group
 * per depth, each holding its event; written with the outermost event
 * last (out of order only at the end of the row) it indexes the same. */
static void deep_row(tx_space *s, int pl, int ln, int outer_last) {
    for (int k = outer_last; k < 300; k++) {
        tx_event(s, pl, ln, "nest", k * NS, (600 - 2 * k) * NS);
        if (k % 7 == 0) tx_event(s, pl, ln, "MemoryDeallocation", k * NS, NS);
    }
    if (outer_last) tx_event(s, pl, ln, "nest", 0, 600 * NS);
}

static void test_deep_nesting(void **state) {
    (void)state;
    fixture f[2];
    for (int v = 0; v < 2; v++) {
        tx_space *s = tx_new();
        int pl = tx_plane(s, "/host:CPU");
        deep_row(s, pl, tx_line(s, pl, 100, "thread", 0), v);
        fx_open(&f[v], s);
    }
    const xpv_trace_index *ix = f[0].ix;
    assert_int_equal(ix->ngroups, 300);
    assert_int_equal(ix->ndropped, 43);
    for (uint32_t k = 0; k < 300; k++) {
        const xpv_trace_group *g = &ix->groups[k];
        assert_int_equal(g->key, k);
        assert_int_equal(g->seg[XPV_TRACE_LEVELS], 1);
        const xpv_event *e = xpv_trace_event(&f[0].hs, &ix->rows[0], ix->idx[g->off]);
        assert_true(e->start_ps == (int64_t)k * NS);
    }
    assert_same_levels(&f[0], &f[1]);
    fx_close(&f[0]);
    fx_close(&f[1]);
}

/* A sorted row is indexed with one byte per event and one group's scratch
 * (5 bytes per event of its largest group), not copies of the row (13 to
 * 37 bytes per event of the largest row before): with capacities doubling,
 * under 2 bytes per event of the row plus 10 per event of its largest
 * group. */
static void test_build_scratch(void **state) {
    (void)state;
    tx_space *s = tx_new();
    int pl = tx_plane(s, "/host:CPU");
    int ln = tx_line(s, pl, 100, "thread", 0);
    const int n = 20000;
    for (int i = 0; i < n / 2; i++) {
        tx_event(s, pl, ln, "parent", (int64_t)i * 20 * NS, 10 * NS);
        tx_event(s, pl, ln, "child", (int64_t)i * 20 * NS + NS, 5 * NS);
    }
    int saved = xpv_ti_threads;
    xpv_ti_threads = 1;
    atomic_store(&xpv_ti_scratch_peak, 0);
    fixture f;
    fx_open(&f, s);
    xpv_ti_threads = saved;
    uint64_t peak = atomic_load(&xpv_ti_scratch_peak);
    assert_int_equal(f.ix->ngroups, 2);
    uint64_t gmax = f.ix->groups[0].seg[XPV_TRACE_LEVELS];
    print_message("scratch %llu bytes for %d events (largest group %llu)\n",
                  (unsigned long long)peak, n, (unsigned long long)gmax);
    assert_true(gmax == (uint64_t)n / 2);
    assert_true(peak > 0 && peak <= 2 * (uint64_t)n + 10 * gmax + 4096);
    fx_close(&f);
}

/* Load a copy of img (so ASan sees reads past `len`) and expect NULL. */
static void expect_rejected(const xpv_hostset *hs, const char *img, size_t len) {
    char *copy = malloc(len ? len : 1);
    if (len) memcpy(copy, img, len);
    xpv_trace_index *ix = xpv_trace_index_load(hs, copy, len);
    if (ix) fail_msg("image of %zu bytes accepted", len);
    free(copy);
}

/* Edit a 32-bit word of a copy of the image, re-hash it, expect NULL. */
static void expect_forged_rejected(const xpv_hostset *hs, const xpv_buf *img, size_t off,
                                   uint32_t v) {
    char *copy = malloc(img->len);
    memcpy(copy, img->data, img->len);
    assert_true(off + 4 <= img->len);
    memcpy(copy + off, &v, 4);
    xpv_trace_index_seal(copy, img->len);
    xpv_trace_index *ix = xpv_trace_index_load(hs, copy, img->len);
    if (ix) fail_msg("forged image accepted (word at %zu = %u)", off, v);
    free(copy);
}

static void test_persist_rejects_bad_images(void **state) {
    (void)state;
    int pl, ln;
    tx_space *s = tx_new_line("/host:CPU", 1, "t", &pl, &ln);
    gen(s, pl, ln, 0, 40 * US, 0);
    int cl = tx_line(s, pl, 2, "_counters_", 0);
    for (int i = 0; i < 20; i++) tx_event(s, pl, cl, i % 2 ? "a" : "b", (int64_t)i * US, 0);
    int sl = tx_line(s, pl, 3, "Steps", 0);
    for (int i = 0; i < 4; i++) tx_event(s, pl, sl, "step", (int64_t)i * 10 * US, 9 * US);
    fixture f;
    fx_open(&f, s);
    const xpv_trace_index *ix = f.ix;
    assert_true(ix->nsteps == 4 && ix->ncounter == 20 && ix->nrows == 3);
    xpv_buf img;
    xpv_buf_init(&img);
    xpv_trace_index_save(ix, &f.hs, &img);
    xpv_trace_index *ok = xpv_trace_index_load(&f.hs, img.data, img.len);
    assert_non_null(ok);
    xpv_trace_index_free(ok);
    print_message("small image: %zu bytes, %llu events\n", img.len, (unsigned long long)ix->nidx);

    /* Every truncation, an extension, every single-bit flip of every byte. */
    for (size_t n = 0; n < img.len; n++) expect_rejected(&f.hs, img.data, n);
    xpv_buf_reserve(&img, 8);
    memset(img.data + img.len, 0, 8);
    expect_rejected(&f.hs, img.data, img.len + 8);
    for (size_t i = 0; i < img.len; i++)
        for (int bit = 0; bit < 8; bit += 3) {
            img.data[i] ^= (char)(1 << bit);
            expect_rejected(&f.hs, img.data, img.len);
            img.data[i] ^= (char)(1 << bit);
        }
    expect_rejected(&f.hs, NULL, 0);

    /* Forged images with a valid hash: only the bounds checks stand. */
    size_t rows = 128 + 24, groups = rows + (size_t)ix->nrows * 32;
    size_t gsz = 16 + 4 * (XPV_TRACE_LEVELS + 1) + 4;
    size_t steps = groups + ix->ngroups * gsz, idx = steps + (size_t)ix->nsteps * 24;
    expect_forged_rejected(&f.hs, &img, 24, ix->nprocs + 1);       /* nprocs */
    expect_forged_rejected(&f.hs, &img, 28, ix->nrows + 1);        /* nrows */
    expect_forged_rejected(&f.hs, &img, 40, (uint32_t)ix->nidx + 1); /* nidx */
    expect_forged_rejected(&f.hs, &img, 52, 0x80000000u);          /* min_ps */
    expect_forged_rejected(&f.hs, &img, 60, 0x7fffffffu);          /* max_ps */
    expect_forged_rejected(&f.hs, &img, 64, 3);                    /* ndropped */
    expect_forged_rejected(&f.hs, &img, 72, 1);                    /* ncounter */
    expect_forged_rejected(&f.hs, &img, 128, 7);                   /* host's planes */
    expect_forged_rejected(&f.hs, &img, 128 + 16, 7);              /* fingerprint */
    expect_forged_rejected(&f.hs, &img, rows + 8, 99);             /* row's line */
    expect_forged_rejected(&f.hs, &img, rows + 12, 1);             /* row's group0 */
    expect_forged_rejected(&f.hs, &img, rows + 16, 1000);          /* row's ngroups */
    expect_forged_rejected(&f.hs, &img, rows + 24, 1u << 30);      /* row's nevents */
    expect_forged_rejected(&f.hs, &img, groups, 5);                /* group's row */
    expect_forged_rejected(&f.hs, &img, groups + 8, (uint32_t)ix->nidx); /* group's off */
    expect_forged_rejected(&f.hs, &img, groups + 12, 1);           /* off high word */
    expect_forged_rejected(&f.hs, &img, groups + 16, 1);           /* seg[0] != 0 */
    expect_forged_rejected(&f.hs, &img, groups + 16 + 4 * 3, 0xffffffffu); /* seg order */
    expect_forged_rejected(&f.hs, &img, groups + 16 + 4 * XPV_TRACE_LEVELS,
                           (uint32_t)ix->nidx + 1);                /* seg past idx */
    expect_forged_rejected(&f.hs, &img, steps + 16, 9);            /* step's row */
    expect_forged_rejected(&f.hs, &img, steps + 20, 100000);       /* step's event */
    expect_forged_rejected(&f.hs, &img, idx, 0xffffffffu);         /* event index */
    expect_forged_rejected(&f.hs, &img, idx + 4 * (ix->nidx - 1),
                           f.p->planes[0].lines[0].nevents);       /* one past */
    /* A counter group whose key (metadata index) is out of range. */
    for (uint32_t gi = 0; gi < ix->ngroups; gi++)
        if (ix->rows[ix->groups[gi].row].is_counter)
            expect_forged_rejected(&f.hs, &img, groups + gi * gsz + 4, 1u << 20);
    /* A newer format is not read. */
    expect_forged_rejected(&f.hs, &img, 8, XPV_TRACE_INDEX_FORMAT + 1);
    xpv_buf_free(&img);
    fx_close(&f);
}

TU_MAIN(cmocka_unit_test(test_tiny_events),
        cmocka_unit_test(test_nesting),
        cmocka_unit_test(test_long_events_always_visible),
        cmocka_unit_test(test_counters),
        cmocka_unit_test(test_flows_first_event_decides),
        cmocka_unit_test(test_random_vs_reference),
        cmocka_unit_test(test_levels_partition),
        cmocka_unit_test(test_persist_round_trip),
        cmocka_unit_test(test_persist_rejects_bad_images),
        cmocka_unit_test(test_persist_real_files),
        cmocka_unit_test(test_parallel_build),
        cmocka_unit_test(test_unsorted_rows),
        cmocka_unit_test(test_deep_nesting),
        cmocka_unit_test(test_build_scratch))
