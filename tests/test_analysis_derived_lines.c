/*
 * test_analysis_derived_lines.c - derived GPU timeline lines: the facts of
 * XProf's derived_timeline_test.cc on constructed XSpaces, and on the real
 * JAX-on-GPU files counts checked against an independent count of kernels
 * (derived_count.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "derived_count.h"
#include "derived_lines.h"
#include "group_events.h"
#include "testutil.h"
#include "tool_xspace.h"
#include "trace_index.h"

static const xpv_line *find_line(const xpv_dl_plane *d, const char *prefix) {
    for (uint32_t i = 0; i < d->synth.nlines; i++)
        if (xpv_str_has_prefix(d->synth.lines[i].name, prefix)) return &d->synth.lines[i];
    return NULL;
}

static xpv_str ev_name(const xpv_dl_plane *d, const xpv_event *e) {
    const xpv_event_meta *m = &d->synth.event_meta[e->meta];
    return m->display_name.len ? m->display_name : m->name;
}

/* A stat of derived event `i` of line `ln` (-1 / empty when absent). */
static int64_t ev_int(const xpv_dl_plane *d, const xpv_line *ln, uint32_t i, const char *name) {
    xpv_stat st;
    int64_t v;
    int32_t id = xpv_stat_id(&d->synth, name);
    if (id >= 0 && xpv_event_stat(&d->synth, ln, &ln->events[i], id, &st) && xpv_stat_as_int(&st, &v))
        return v;
    return -1;
}
static xpv_str ev_str(const xpv_dl_plane *d, const xpv_line *ln, uint32_t i, const char *name) {
    xpv_stat st;
    int32_t id = xpv_stat_id(&d->synth, name);
    if (id >= 0 && xpv_event_stat(&d->synth, ln, &ln->events[i], id, &st) && st.kind == XPV_STAT_STR)
        return st.v.s;
    return (xpv_str){NULL, 0};
}

static double ev_double(const xpv_dl_plane *d, const xpv_line *ln, uint32_t i, const char *name) {
    xpv_stat st;
    int32_t id = xpv_stat_id(&d->synth, name);
    if (id >= 0 && xpv_event_stat(&d->synth, ln, &ln->events[i], id, &st) &&
        st.kind == XPV_STAT_DOUBLE)
        return st.v.d;
    return -1;
}

static tx_event_t *kernel(tx_space *s, int pl, int ln, const char *name, int64_t off, int64_t dur) {
    tx_event_t *e = tx_event(s, pl, ln, name, off, dur);
    tx_ev_str(s, pl, e, "kernel_details", "blah");
    return e;
}

/* Consecutive kernels of the same hlo_op merge into one XLA Ops event and
 * one XLA Modules event; a different op starts a new one; `::` parts give
 * levels; names and line names as XProf's. */
static void test_hlo_merge_and_levels(void **state) {
    (void)state;
    int pl, ln;
    tx_space *s = tx_new_line("/device:GPU:0", 7, "Stream #7(Compute)", &pl, &ln);
    const char *ops[] = {"fusion.1", "fusion.1", "dot.2", "dot.2::gemm", "dot.2::gemm"};
    for (int i = 0; i < 5; i++) {
        tx_event_t *e = kernel(s, pl, ln, "k", 10000 * i, 5000);
        tx_ev_str(s, pl, e, "hlo_module", "jit_f");
        tx_ev_int(s, pl, e, "program_id", 42);
        tx_ev_str(s, pl, e, "hlo_op", ops[i]);
    }
    xpv_profile *p = tx_decode(s);
    xpv_derived_lines *d = xpv_derived_lines_build(p, NULL);
    const xpv_dl_plane *dp = xpv_derived_lines_plane(d, 0);
    assert_non_null(dp);
    assert_int_equal(dp->synth.nlines, 2);  /* empty framework lines dropped */
    const xpv_line *mod = find_line(dp, "XLA Modules");
    const xpv_line *xo = find_line(dp, "XLA Ops");
    assert_non_null(mod);
    assert_non_null(xo);
    assert_true(xpv_str_eq(mod->name, "XLA Modules - from #7"));
    assert_true(xpv_str_eq(xo->name, "XLA Ops - from #7"));
    assert_int_equal(mod->nevents, 1);
    assert_true(xpv_str_eq(ev_name(dp, &mod->events[0]), "jit_f(42)"));
    assert_int_equal(mod->events[0].start_ps, 0);
    assert_int_equal(mod->events[0].dur_ps, 45000);
    /* fusion.1 [0,15000), dot.2 [20000,45000) (level 0; dot.2 of the plain
     * kernel and of the two-level ones is the same metadata), gemm
     * [30000,45000) level 1. */
    assert_int_equal(xo->nevents, 3);
    assert_true(xpv_str_eq(ev_name(dp, &xo->events[0]), "fusion.1"));
    assert_true(xpv_str_eq(dp->synth.event_meta[xo->events[0].meta].name, "42/fusion.1"));
    assert_int_equal(xo->events[0].dur_ps, 15000);
    assert_true(xpv_str_eq(ev_name(dp, &xo->events[1]), "dot.2"));
    assert_int_equal(xo->events[1].start_ps, 20000);
    assert_int_equal(xo->events[1].dur_ps, 25000);
    assert_true(xpv_str_eq(ev_name(dp, &xo->events[2]), "gemm"));
    assert_int_equal(xo->events[2].start_ps, 30000);
    assert_int_equal(xo->events[2].dur_ps, 15000);
    /* ids and display order: stream 1, modules 4, ops 5 */
    assert_int_equal(mod->id, XPV_DL_DEVICE_MIN + XPV_DL_MODULE);
    assert_int_equal(dp->line_display_id[0], 1);
    assert_int_equal(mod->display_id, 4);
    assert_int_equal(xo->display_id, 5);
    xpv_derived_lines_free(d);
    xpv_profile_free(p);
}

/* A different group_id does not merge. */
static void test_group_breaks_merge(void **state) {
    (void)state;
    int pl, ln;
    tx_space *s = tx_new_line("/device:GPU:0", 1, "Stream #1(Compute)", &pl, &ln);
    for (int i = 0; i < 3; i++) {
        tx_event_t *e = kernel(s, pl, ln, "k", 10000 * i, 5000);
        tx_ev_str(s, pl, e, "hlo_module", "m");
        tx_ev_str(s, pl, e, "hlo_op", "op");
        tx_ev_int(s, pl, e, "group_id", i < 2 ? 1 : 2);
    }
    xpv_profile *p = tx_decode(s);
    xpv_derived_lines *d = xpv_derived_lines_build(p, NULL);
    const xpv_dl_plane *dp = xpv_derived_lines_plane(d, 0);
    assert_non_null(dp);
    assert_int_equal(find_line(dp, "XLA Modules")->nevents, 2);
    assert_int_equal(find_line(dp, "XLA Ops")->nevents, 2);
    assert_true(xpv_str_eq(ev_name(dp, &find_line(dp, "XLA Ops")->events[0]), "op"));
    assert_true(xpv_str_eq(dp->synth.event_meta[find_line(dp, "XLA Ops")->events[0].meta].name, "m/op"));
    xpv_derived_lines_free(d);
    xpv_profile_free(p);
}

/* Every new derived event carries its group id as a `group_id` stat
 * (XProf's ExpandOrAddLevelEvent adds it when the event is created; a
 * merged event keeps the one of its first kernel, the merge needs equal
 * groups); an event without a group has no stats at all.  Kernels of
 * groups 1, 1, 2, none on every derived line: events 1, 2, none. */
static void test_group_id_stats(void **state) {
    (void)state;
    int pl, ln;
    tx_space *s = tx_new_line("/device:GPU:0", 1, "Stream #1(Compute)", &pl, &ln);
    for (int i = 0; i < 4; i++) {
        tx_event_t *e = kernel(s, pl, ln, "k", 10000 * i, 5000);
        tx_ev_str(s, pl, e, "hlo_module", "m");
        tx_ev_str(s, pl, e, "hlo_op", "op");
        tx_ev_str(s, pl, e, "tf_op", "a/Add:Add");
        if (i < 3) tx_ev_int(s, pl, e, "group_id", i < 2 ? 1 : 2);
    }
    xpv_profile *p = tx_decode(s);
    xpv_derived_lines *d = xpv_derived_lines_build(p, NULL);
    const xpv_dl_plane *dp = xpv_derived_lines_plane(d, 0);
    assert_non_null(dp);
    const char *rows[] = {"XLA Modules", "XLA Ops", "Framework Ops", "Framework Name Scope"};
    for (int r = 0; r < 4; r++) {
        const xpv_line *l = find_line(dp, rows[r]);
        assert_non_null(l);
        assert_int_equal(l->nevents, 3);
        assert_int_equal(ev_int(dp, l, 0, "group_id"), 1);
        assert_int_equal(l->events[0].dur_ps, 15000);   /* the two kernels of group 1 */
        assert_int_equal(ev_int(dp, l, 1, "group_id"), 2);
        assert_int_equal(l->events[2].wire, XPV_NO_STATS);
        assert_int_equal(ev_int(dp, l, 2, "group_id"), -1);
        assert_int_equal(ev_str(dp, l, 0, "step_name").len, 0);  /* Steps events only */
    }
    xpv_derived_lines_free(d);
    xpv_profile_free(p);
}

/* XProf's DeriveEventsFromAnnotationsTest name-scope facts: tf_op
 * a/b/c/d/e/Add:Add [0,10000), a/b/c/d/f/Sub:Sub [10000,12000),
 * a/g/Mul:Mul [20000,50000) give a 50000, b 12000, c 11000 (shrunk by
 * 1 ns to stand apart from b), d 11000, e 10000, f 1000 (shrunk), g 30000;
 * the op line shows the op types. */
static void test_tf_name_scopes(void **state) {
    (void)state;
    int pl, ln;
    tx_space *s = tx_new_line("/device:GPU:0", 0, "Stream #0", &pl, &ln);
    tx_ev_str(s, pl, kernel(s, pl, ln, "op1", 0, 10000), "tf_op", "a/b/c/d/e/Add:Add");
    tx_ev_str(s, pl, kernel(s, pl, ln, "op2", 10000, 2000), "tf_op", "a/b/c/d/f/Sub:Sub");
    tx_ev_str(s, pl, kernel(s, pl, ln, "op3", 20000, 30000), "tf_op", "a/g/Mul:Mul");
    xpv_profile *p = tx_decode(s);
    xpv_derived_lines *d = xpv_derived_lines_build(p, NULL);
    const xpv_dl_plane *dp = xpv_derived_lines_plane(d, 0);
    assert_non_null(dp);
    const xpv_line *sc = find_line(dp, "Framework Name Scope");
    assert_non_null(sc);
    assert_int_equal(sc->nevents, 7);
    const char *names[] = {"a", "b", "c", "d", "e", "f", "g"};
    const int64_t durs[] = {50000, 12000, 11000, 11000, 10000, 1000, 30000};
    for (int k = 0; k < 7; k++) {
        int found = 0;
        for (uint32_t i = 0; i < sc->nevents; i++)
            if (xpv_str_eq(ev_name(dp, &sc->events[i]), names[k])) {
                found = 1;
                if (sc->events[i].dur_ps != durs[k])
                    print_message("%s: %lld\n", names[k], (long long)sc->events[i].dur_ps);
                assert_int_equal(sc->events[i].dur_ps, durs[k]);
            }
        assert_true(found);
    }
    const xpv_line *op = find_line(dp, "Framework Ops");
    assert_non_null(op);
    assert_int_equal(op->nevents, 3);
    assert_true(xpv_str_eq(ev_name(dp, &op->events[0]), "Add"));
    assert_true(xpv_str_eq(ev_name(dp, &op->events[2]), "Mul"));
    assert_int_equal(dp->synth.nlines, 2);
    xpv_derived_lines_free(d);
    xpv_profile_free(p);
}

/* A plane that already holds derived lines (TF 2.4) is left alone, and so
 * is a non-GPU plane. */
static void test_no_derivation_when_present(void **state) {
    (void)state;
    int pl, ln;
    tx_space *s = tx_new_line("/device:GPU:0", 3, "Stream #3(Compute)", &pl, &ln);
    int dl = tx_line(s, pl, (int64_t)(int32_t)0xdeadbeefu + 5, "XLA Ops", 0);
    tx_event(s, pl, dl, "op", 0, 5000);
    tx_event_t *e = kernel(s, pl, ln, "k", 0, 5000);
    tx_ev_str(s, pl, e, "hlo_module", "m");
    tx_ev_str(s, pl, e, "hlo_op", "op");
    int tp = tx_plane(s, "/device:TPU:0");
    int tl = tx_line(s, tp, 1, "Stream #1", 0);
    e = kernel(s, tp, tl, "k", 0, 5000);
    tx_ev_str(s, tp, e, "hlo_module", "m");
    tx_ev_str(s, tp, e, "hlo_op", "op");
    xpv_profile *p = tx_decode(s);
    xpv_derived_lines *d = xpv_derived_lines_build(p, NULL);
    assert_int_equal(d->nplanes, 0);
    xpv_derived_lines_free(d);
    xpv_profile_free(p);
}

/* ==== scope_range_id (DeriveEventsFromAnnotationsForLines) ============== */

/* A `/host:__ScopeRangeCallStack__` tree edge child -> parent as its
 * writer stores it: a plane stat whose metadata id is the child id and
 * names no stat metadata. */
static void tree_edge(tx_space *s, int tp, int64_t child, int64_t parent) {
    tx_plane_t *p = s->space.planes[tp];
    tx_stat_t *st = tx_alloc(s, sizeof *st);
    tx_stat_t init = TENSORFLOW__PROFILER__XSTAT__INIT;
    *st = init;
    st->metadata_id = child;
    st->value_case = TENSORFLOW__PROFILER__XSTAT__VALUE_INT64_VALUE;
    st->int64_value = parent;
    tx_push(s, &p->n_stats, (void ***)&p->stats, st);
}

static tx_event_t *module_kernel(tx_space *s, int pl, int ln, int64_t off, int64_t dur,
                                 const char *hlo_op, int64_t scope) {
    tx_event_t *e = kernel(s, pl, ln, "k", off, dur);
    tx_ev_str(s, pl, e, "hlo_module", "hlo_module");
    if (hlo_op) tx_ev_str(s, pl, e, "hlo_op", hlo_op);
    if (scope >= 0) tx_ev_int(s, pl, e, "scope_range_id", scope);
    return e;
}

/* XProf's HloModuleNameSameScopeRangeIdTest / ...DifferentScopeRangeIdTest:
 * two kernels of one module with scope_range_id 10 and 10 give one XLA
 * Modules event, with 10 and 20 two; without a scope id on either side
 * they merge. */
static void test_scope_range_module(void **state) {
    (void)state;
    const int64_t second[] = {10, 20, -1};
    const uint32_t want[] = {1, 2, 1};
    for (int c = 0; c < 3; c++) {
        int pl, ln;
        tx_space *s = tx_new_line("/device:GPU:0", 0, "Stream #0", &pl, &ln);
        module_kernel(s, pl, ln, 0, 100, NULL, 10);
        module_kernel(s, pl, ln, 200, 300, NULL, second[c]);
        xpv_profile *p = tx_decode(s);
        xpv_derived_lines *d = xpv_derived_lines_build(p, NULL);
        const xpv_dl_plane *dp = xpv_derived_lines_plane(d, 0);
        assert_non_null(dp);
        assert_int_equal(dp->synth.nlines, 1);   /* only XLA Modules */
        const xpv_line *mod = find_line(dp, "XLA Modules");
        assert_non_null(mod);
        assert_int_equal(mod->nevents, want[c]);
        assert_true(xpv_str_eq(ev_name(dp, &mod->events[0]), "hlo_module"));
        if (want[c] == 1) assert_int_equal(mod->events[0].dur_ps, 500);
        xpv_derived_lines_free(d);
        xpv_profile_free(p);
    }
}

/* With the tree, XLA Modules events key on the root of a kernel's chain
 * (kernels 11, 12 under execution 1 merge; 21 under execution 2 starts a
 * new event although the module is the same), and XLA Ops levels take the
 * chain from the root down when it has one id per `::` level: op "a::b"
 * of kernels 11 (chain 11 -> 1) and 12 (12 -> 1) share level 0 (id 1) but
 * split at level 1 (11 vs 12).  The tree's stats name no metadata. */
static void test_scope_range_tree(void **state) {
    (void)state;
    tx_space *s = tx_new();
    int tp = tx_plane(s, "/host:__ScopeRangeCallStack__");
    tree_edge(s, tp, 11, 1);
    tree_edge(s, tp, 12, 1);
    tree_edge(s, tp, 21, 2);
    tree_edge(s, tp, 11, 7);   /* a repeated child keeps its first parent */
    int pl = tx_plane(s, "/device:GPU:0");
    int ln = tx_line(s, pl, 0, "Stream #0", 0);
    module_kernel(s, pl, ln, 0, 100, "a::b", 11);
    module_kernel(s, pl, ln, 100, 100, "a::b", 12);
    module_kernel(s, pl, ln, 200, 100, "a::b", 21);
    xpv_profile *p = tx_decode(s);
    xpv_derived_lines *d = xpv_derived_lines_build(p, NULL);
    const xpv_dl_plane *dp = xpv_derived_lines_plane(d, 1);
    assert_non_null(dp);
    const xpv_line *mod = find_line(dp, "XLA Modules");
    assert_non_null(mod);
    assert_int_equal(mod->nevents, 2);
    assert_int_equal(mod->events[0].start_ps, 0);
    assert_int_equal(mod->events[0].dur_ps, 200);
    assert_int_equal(mod->events[1].start_ps, 200);
    const xpv_line *xo = find_line(dp, "XLA Ops");
    assert_non_null(xo);
    /* level 0 "a": [0,200) then [200,300) (a new module resets the ops);
     * level 1 "b": [0,100), [100,200), [200,300) */
    uint32_t na = 0, nb = 0;
    for (uint32_t i = 0; i < xo->nevents; i++) {
        if (xpv_str_eq(ev_name(dp, &xo->events[i]), "a")) na++;
        if (xpv_str_eq(ev_name(dp, &xo->events[i]), "b")) nb++;
    }
    assert_int_equal(na, 2);
    assert_int_equal(nb, 3);
    assert_true(xpv_str_eq(ev_name(dp, &xo->events[0]), "a"));
    assert_int_equal(xo->events[0].dur_ps, 200);
    xpv_derived_lines_free(d);
    xpv_profile_free(p);
}

/* XProf's CycleDetectionTest: a cyclic tree (10 -> 20 -> 10) ends; the
 * chain of 10 is [10, 20, 10] as XProf walks it (it stops at the first
 * parent seen twice), so its module keys on 10, and that of 20 on 20:
 * kernels 10, 20, 10 give three XLA Modules events. */
static void test_scope_range_cycle(void **state) {
    (void)state;
    tx_space *s = tx_new();
    int tp = tx_plane(s, "/host:__ScopeRangeCallStack__");
    tree_edge(s, tp, 10, 20);
    tree_edge(s, tp, 20, 10);
    int pl = tx_plane(s, "/device:GPU:0");
    int ln = tx_line(s, pl, 0, "Stream #0", 0);
    module_kernel(s, pl, ln, 0, 100, NULL, 10);
    module_kernel(s, pl, ln, 100, 100, NULL, 20);   /* chain [20, 10, 20]: root 20 */
    module_kernel(s, pl, ln, 200, 100, NULL, 10);
    xpv_profile *p = tx_decode(s);
    xpv_derived_lines *d = xpv_derived_lines_build(p, NULL);
    const xpv_dl_plane *dp = xpv_derived_lines_plane(d, 1);
    assert_non_null(dp);
    const xpv_line *mod = find_line(dp, "XLA Modules");
    assert_non_null(mod);
    assert_int_equal(mod->nevents, 3);
    xpv_derived_lines_free(d);
    xpv_profile_free(p);
}

/* ==== CUDA graphs ======================================================= */

/* XProf's XloOpHasCudaGraphStats: two kernels of one op, inner nodes of
 * CUDA graph 20 with correlation_id 10000, merge into one XLA Ops event
 * that carries cuda_graph_id 20 (uint64) and correlation_id 10000.  As in
 * HloOpsFromCudaKernelsTest, two different ops give two events, each with
 * the stats; a cuda_graph_id of 0 adds nothing. */
static void test_cuda_graph_stats(void **state) {
    (void)state;
    for (int c = 0; c < 3; c++) {
        int pl, ln;
        tx_space *s = tx_new_line("/device:GPU:0", 0, "Stream #0", &pl, &ln);
        for (int i = 0; i < 2; i++) {
            tx_event_t *e = kernel(s, pl, ln, "op", i ? 200 : 0, i ? 300 : 100);
            tx_ev_int(s, pl, e, "group_id", 1);
            tx_ev_str(s, pl, e, "hlo_module", "module");
            tx_ev_str(s, pl, e, "hlo_op", c == 1 ? (i ? "hlo_op2" : "hlo_op1") : "op_level_2");
            tx_ev_int(s, pl, e, "correlation_id", 10000);
            tx_stat_t *st = tx_new_stat(s, pl, &e->n_stats, &e->stats, "cuda_graph_id");
            st->value_case = TENSORFLOW__PROFILER__XSTAT__VALUE_UINT64_VALUE;
            st->uint64_value = c == 2 ? 0 : 20;
        }
        xpv_profile *p = tx_decode(s);
        xpv_derived_lines *d = xpv_derived_lines_build(p, NULL);
        const xpv_dl_plane *dp = xpv_derived_lines_plane(d, 0);
        assert_non_null(dp);
        const xpv_line *xo = find_line(dp, "XLA Ops");
        assert_non_null(xo);
        assert_int_equal(xo->nevents, c == 1 ? 2 : 1);
        for (uint32_t i = 0; i < xo->nevents; i++) {
            assert_int_equal(ev_int(dp, xo, i, "group_id"), 1);
            assert_int_equal(ev_int(dp, xo, i, "cuda_graph_id"), c == 2 ? -1 : 20);
            assert_int_equal(ev_int(dp, xo, i, "correlation_id"), c == 2 ? -1 : 10000);
            if (c != 2) {
                xpv_stat st;
                int32_t id = xpv_stat_id(&dp->synth, "cuda_graph_id");
                assert_true(xpv_event_stat(&dp->synth, xo, &xo->events[i], id, &st));
                assert_int_equal(st.kind, XPV_STAT_UINT);
                id = xpv_stat_id(&dp->synth, "correlation_id");
                assert_true(xpv_event_stat(&dp->synth, xo, &xo->events[i], id, &st));
                assert_int_equal(st.kind, XPV_STAT_INT);
            }
        }
        if (c == 0) assert_int_equal(xo->events[0].dur_ps, 500);
        /* the other derived lines carry no graph stats */
        const xpv_line *mod = find_line(dp, "XLA Modules");
        assert_int_equal(ev_int(dp, mod, 0, "cuda_graph_id"), -1);
        xpv_derived_lines_free(d);
        xpv_profile_free(p);
    }
}

/* XProf's TfOpLineTest and NoHloModuleNameTest: a CUDA graph execution
 * (an event with cuda_graph_exec_id, no kernel_details) counts as a
 * kernel: with tf_op mul:Mul after two kernels of it, one Framework Ops
 * event [0,600); without annotations it derives nothing. */
static void test_cuda_graph_exec(void **state) {
    (void)state;
    for (int c = 0; c < 2; c++) {
        int pl, ln;
        tx_space *s = tx_new_line("/device:GPU:0", 0, "Stream #0", &pl, &ln);
        tx_event_t *e1 = kernel(s, pl, ln, "op1", 0, 100);
        tx_event_t *e2 = kernel(s, pl, ln, "op2", 200, 300);
        tx_event_t *e3 = tx_event(s, pl, ln, "op3", 500, 100);
        tx_stat_t *st = tx_new_stat(s, pl, &e3->n_stats, &e3->stats, "cuda_graph_exec_id");
        st->value_case = TENSORFLOW__PROFILER__XSTAT__VALUE_UINT64_VALUE;
        st->uint64_value = 1;
        if (c == 0) {
            tx_ev_str(s, pl, e1, "tf_op", "mul:Mul");
            tx_ev_str(s, pl, e2, "tf_op", "mul:Mul");
            tx_ev_str(s, pl, e3, "tf_op", "mul:Mul");
        }
        xpv_profile *p = tx_decode(s);
        xpv_derived_lines *d = xpv_derived_lines_build(p, NULL);
        const xpv_dl_plane *dp = xpv_derived_lines_plane(d, 0);
        if (c == 1) {
            assert_null(dp);
        } else {
            assert_non_null(dp);
            assert_int_equal(dp->synth.nlines, 1);
            const xpv_line *op = find_line(dp, "Framework Ops");
            assert_non_null(op);
            assert_int_equal(op->nevents, 1);
            assert_int_equal(op->events[0].start_ps, 0);
            assert_int_equal(op->events[0].dur_ps, 600);
        }
        xpv_derived_lines_free(d);
        xpv_profile_free(p);
    }
}

/* The H100 files with XLA command buffers (jax_gpu_mlp: every kernel an
 * inner node of CUDA graph 2 under hlo_op command_buffer_1): each XLA Ops
 * event carries cuda_graph_id and the correlation_id of the last kernel
 * it covers, counted straight from the kernels; the file without command
 * buffers has none. */
static void check_graph_file(const char *path, int want_graph) {
    xpv_profile *p = tx_decode_file(path);
    xpv_derived_lines *d = xpv_derived_lines_build(p, NULL);
    const xpv_plane *gpu = xpv_find_plane(p, "/device:GPU:0");
    assert_non_null(gpu);
    const xpv_dl_plane *dp = xpv_derived_lines_plane(d, (uint32_t)(gpu - p->planes));
    assert_non_null(dp);
    const xpv_line *xo = find_line(dp, "XLA Ops");
    assert_non_null(xo);
    const xpv_line *ln = &gpu->lines[0];
    int32_t sg = xpv_stat_id(gpu, "cuda_graph_id"), sc = xpv_stat_id(gpu, "correlation_id");
    size_t with = 0;
    for (uint32_t i = 0; i < xo->nevents; i++) {
        int64_t g = ev_int(dp, xo, i, "cuda_graph_id");
        if (g < 0) continue;
        with++;
        /* the last kernel that ends inside the event */
        const xpv_event *x = &xo->events[i];
        int64_t want_g = -1, want_c = -1;
        for (uint32_t k = 0; k < ln->nevents; k++) {
            const xpv_event *e = &ln->events[k];
            if (e->start_ps < x->start_ps || e->start_ps + e->dur_ps > x->start_ps + x->dur_ps)
                continue;
            xpv_stat st;
            int64_t v;
            if (sg >= 0 && xpv_event_stat(gpu, ln, e, sg, &st) && xpv_stat_as_int(&st, &v)) want_g = v;
            if (sc >= 0 && xpv_event_stat(gpu, ln, e, sc, &st) && xpv_stat_as_int(&st, &v)) want_c = v;
        }
        assert_int_equal(g, want_g);
        assert_int_equal(ev_int(dp, xo, i, "correlation_id"), want_c);
    }
    print_message("%s: %u XLA Ops events, %zu with cuda_graph_id\n", path, xo->nevents, with);
    assert_int_equal(with, want_graph ? xo->nevents : 0);
    xpv_derived_lines_free(d);
    xpv_profile_free(p);
}

static void test_real_cuda_graph(void **state) {
    (void)state;
    const char *src = getenv("XPV_SRC");
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/data/device/jax_gpu_mlp.xplane.pb", src ? src : ".");
    check_graph_file(path, 1);
    snprintf(path, sizeof path, "%s/tests/data/device/jax_gpu_mlp_nocmdbuf.xplane.pb", src ? src : ".");
    check_graph_file(path, 0);
}

/* The trace index shows the derived rows under the GPU process, after
 * their stream, with XProf's display ids as tids. */
static void test_trace_rows(void **state) {
    (void)state;
    int pl, l9;
    tx_space *s = tx_new_line("/device:GPU:0", 9, "Stream #9(Memcpy)", &pl, &l9);
    int l7 = tx_line(s, pl, 7, "Stream #7(Compute)", 0);
    kernel(s, pl, l9, "copy", 0, 1000);
    tx_event_t *e = kernel(s, pl, l7, "k", 0, 5000);
    tx_ev_str(s, pl, e, "hlo_module", "m");
    tx_ev_str(s, pl, e, "hlo_op", "op");
    xpv_profile *p = tx_decode(s);
    const xpv_profile *ps[1] = {p};
    const char *names[1] = {"h"};
    xpv_hostset hs = {1, ps, names};
    xpv_trace_index *ix = xpv_trace_index_build(&hs);
    assert_int_equal(ix->nrows, 4);
    const char *want[] = {"Stream #7(Compute)", "XLA Modules - from #7", "XLA Ops - from #7",
                          "Stream #9(Memcpy)"};
    const int64_t tids[] = {1, 4, 5, 7};
    for (int i = 0; i < 4; i++) {
        assert_string_equal(ix->rows[i].name, want[i]);
        assert_int_equal(ix->rows[i].tid, tids[i]);
        assert_int_equal(ix->rows[i].pid, 1);
    }
    /* save/load round trip keeps the derived rows */
    xpv_buf b;
    xpv_buf_init(&b);
    xpv_trace_index_save(ix, &hs, &b);
    xpv_trace_index *ix2 = xpv_trace_index_load(&hs, b.data, b.len);
    assert_non_null(ix2);
    assert_int_equal(ix2->nrows, 4);
    assert_int_equal(ix2->nidx, ix->nidx);
    xpv_trace_index_free(ix2);
    xpv_buf_free(&b);
    xpv_trace_index_free(ix);
    xpv_profile_free(p);
}

/* Real JAX-on-GPU files: derived counts equal the independent count. */
static void check_file(const char *path, size_t *nfiles) {
    xpv_profile *p = tx_decode_file(path);
    size_t want_mod, want_ops;
    dc_count(p, &want_mod, &want_ops);
    xpv_derived_lines *d = xpv_derived_lines_build(p, NULL);
    size_t got_mod = 0, got_ops = 0;
    for (uint32_t i = 0; i < d->nplanes; i++)
        for (uint32_t l = 0; l < d->planes[i].synth.nlines; l++) {
            const xpv_line *ln = &d->planes[i].synth.lines[l];
            int64_t slot = (ln->id - XPV_DL_DEVICE_MIN) % XPV_DL_PER_STREAM;
            if (slot == XPV_DL_MODULE) got_mod += ln->nevents;
            if (slot == XPV_DL_HLO_OP) got_ops += ln->nevents; /* one level in these files */
        }
    print_message("%s: XLA Modules %zu (independent %zu), XLA Ops %zu (independent %zu)\n", path,
                  got_mod, want_mod, got_ops, want_ops);
    assert_int_equal(got_mod, want_mod);
    assert_int_equal(got_ops, want_ops);
    if (want_mod) (*nfiles)++;
    xpv_derived_lines_free(d);
    xpv_profile_free(p);
}

static void test_real_jax_gpu(void **state) {
    (void)state;
    size_t n = 0;
    const char *src = getenv("XPV_SRC");
    char path[4096];
    const char *dev[] = {"jax_gpu_mlp_nocmdbuf", "jax_gpu_mlp"};
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/tests/data/device/%s.xplane.pb", src ? src : ".", dev[i]);
        check_file(path, &n);
    }
    TU_SKIP_NO_SHARED();
    char **files = tu_real_xplanes();
    for (char **f = files; *f; f++) check_file(*f, &n);
    tu_free_list(files);
    assert_true(n >= 6);
}

/* ==== TPU (DeriveLinesFromStats) ======================================== */

static const xpv_line *line_by_id(const xpv_dl_plane *d, int64_t id) {
    for (uint32_t i = 0; i < d->synth.nlines; i++)
        if (d->synth.lines[i].id == id) return &d->synth.lines[i];
    return NULL;
}

/* A TensorCore plane gets Framework Name Scope / Framework Ops / Source
 * code from its ops' tf_op and source metadata stats, with XProf's line
 * ids (kThreadIdTfNameScope, TfOp, Source) and names; an op of one
 * module merges, the same op in the next module (another group) does
 * not; `_a` events give nothing; the op event shows the JAX op type. */
static void test_tpu_lines_from_stats(void **state) {
    (void)state;
    int pl, lm;
    tx_space *s = tx_new_line("/device:TPU:0", 1, "XLA Modules", &pl, &lm);
    int lo = tx_line(s, pl, 2, "XLA Ops", 0);
    int la = tx_line(s, pl, 3, "Async XLA Ops", 0);
    tx_event(s, pl, lm, "jit_f(1)", 0, 100000);
    tx_event(s, pl, lm, "jit_f(1)", 200000, 100000);
    tx_meta_str(s, pl, "dot.1", "tf_op", "jit(f)/jit(main)/dot_general:");
    tx_meta_str(s, pl, "dot.1", "source", "f.py:3");
    tx_meta_str(s, pl, "copy.2", "tf_op", "jit(f)/jit(main)/copy:");
    tx_event(s, pl, lo, "dot.1", 1000, 10000);
    tx_event(s, pl, lo, "dot.1", 12000, 10000);   /* same op, same module: merges */
    tx_event(s, pl, lo, "dot.1", 201000, 10000);  /* next module: a new event */
    tx_event_t *a = tx_event(s, pl, la, "copy.2", 30000, 5000);
    tx_ev_int(s, pl, a, "_a", 1);                /* asynchronous: left out */
    xpv_profile *p = tx_decode(s);
    xpv_groups *g = xpv_group_events(p);
    assert_int_equal(g->ngroups, 2);             /* one per module (TPU grouping) */
    xpv_derived_lines *d = xpv_derived_lines_build(p, g);
    const xpv_dl_plane *dp = xpv_derived_lines_plane(d, 0);
    assert_non_null(dp);
    assert_int_equal(dp->synth.nlines, 3);
    const xpv_line *ns = line_by_id(dp, XPV_DL_BASE + 2), *op = line_by_id(dp, XPV_DL_BASE + 3),
                   *src = line_by_id(dp, XPV_DL_BASE + 7);
    assert_non_null(ns);
    assert_non_null(op);
    assert_non_null(src);
    assert_true(xpv_str_eq(ns->name, "Framework Name Scope"));
    assert_true(xpv_str_eq(op->name, "Framework Ops"));
    assert_true(xpv_str_eq(src->name, "Source code"));
    assert_int_equal(op->nevents, 2);
    assert_int_equal(op->events[0].start_ps, 1000);
    assert_int_equal(op->events[0].dur_ps, 21000);
    assert_true(xpv_str_eq(ev_name(dp, &op->events[0]), "dot_general"));
    assert_int_equal(ns->nevents, 4);            /* jit(f), jit(main) per module */
    assert_true(xpv_str_eq(ev_name(dp, &ns->events[0]), "jit(f)"));
    assert_int_equal(src->nevents, 2);
    assert_true(xpv_str_eq(ev_name(dp, &src->events[0]), "f.py:3"));
    /* the plane's own lines keep their display ids */
    assert_int_equal(dp->line_display_id[0], 1);
    xpv_derived_lines_free(d);
    xpv_groups_free(g);
    xpv_profile_free(p);
}

/* An expected derived event: [b, e) ns and its name. */
typedef struct span {
    int64_t b, e;
    const char *name;
} span;

static void check_spans(const xpv_dl_plane *dp, const xpv_line *ln, const span *want, uint32_t n) {
    assert_int_equal(ln->nevents, n);
    for (uint32_t i = 0; i < n; i++) {
        assert_int_equal(ln->events[i].start_ps, want[i].b * 1000);
        assert_int_equal(ln->events[i].dur_ps, (want[i].e - want[i].b) * 1000);
        assert_true(xpv_str_eq(ev_name(dp, &ln->events[i]), want[i].name));
    }
}

/* Grouped TPU ops merge on each derived line by that line's own name
 * and group (add_level): two metadata with the same tf_op merge; an
 * event naming no tf_op leaves the Framework lines open; another op in
 * between closes the op (not the common scope); the next module does
 * not merge.  Times in ns, counted by hand. */
static void test_tpu_grouped_merge(void **state) {
    (void)state;
    int pl, lm;
    tx_space *s = tx_new_line("/device:TPU:0", 1, "XLA Modules", &pl, &lm);
    int lo = tx_line(s, pl, 2, "XLA Ops", 0);
    tx_event(s, pl, lm, "jit_f(1)", 0, 100000);
    tx_event(s, pl, lm, "jit_f(1)", 100000, 100000);
    const char *add = "jit(f)/jit(g)/add:", *mul = "jit(f)/mul:";
    tx_meta_str(s, pl, "add.1", "tf_op", add);
    tx_meta_str(s, pl, "add.1", "source", "a.py:1");
    tx_meta_str(s, pl, "add.2", "tf_op", add);
    tx_meta_str(s, pl, "add.2", "source", "a.py:1");
    tx_meta_str(s, pl, "mul.1", "tf_op", mul);
    tx_meta_str(s, pl, "mul.1", "source", "a.py:2");
    tx_meta_str(s, pl, "src.1", "source", "a.py:2");
    tx_event(s, pl, lo, "add.1", 0, 10000);
    tx_event(s, pl, lo, "add.2", 20000, 10000);   /* same tf_op: merges [0, 30) */
    tx_event(s, pl, lo, "mul.1", 40000, 10000);   /* closes add and jit(g) */
    tx_event(s, pl, lo, "src.1", 52000, 2000);    /* source only: merges a.py:2 */
    tx_event(s, pl, lo, "mul.1", 56000, 4000);    /* merges [40, 60) */
    tx_event(s, pl, lo, "add.1", 60000, 10000);
    tx_event(s, pl, lo, "add.1", 110000, 10000);  /* next module: new everywhere */
    tx_event(s, pl, lo, "mul.1", 125000, 5000);
    xpv_profile *p = tx_decode(s);
    xpv_groups *g = xpv_group_events(p);
    xpv_derived_lines *d = xpv_derived_lines_build(p, g);
    const xpv_dl_plane *dp = xpv_derived_lines_plane(d, 0);
    assert_non_null(dp);
    const xpv_line *ns = line_by_id(dp, XPV_DL_BASE + 2), *op = line_by_id(dp, XPV_DL_BASE + 3),
                   *src = line_by_id(dp, XPV_DL_BASE + 7);
    assert_non_null(ns);
    assert_non_null(op);
    assert_non_null(src);
    static const span ops[] = {
        {0, 30, "add"}, {40, 60, "mul"}, {60, 70, "add"}, {110, 120, "add"}, {125, 130, "mul"}};
    check_spans(dp, op, ops, 5);
    /* jit(f) per module; jit(g) under each add run */
    static const span scopes[] = {{0, 70, "jit(f)"},    {0, 30, "jit(g)"},
                                  {60, 70, "jit(g)"},   {110, 130, "jit(f)"},
                                  {110, 120, "jit(g)"}};
    check_spans(dp, ns, scopes, 5);
    static const span srcs[] = {{0, 30, "a.py:1"},    {40, 60, "a.py:2"}, {60, 70, "a.py:1"},
                                {110, 120, "a.py:1"}, {125, 130, "a.py:2"}};
    check_spans(dp, src, srcs, 5);
    xpv_derived_lines_free(d);
    xpv_groups_free(g);
    xpv_profile_free(p);
}

/* The walk takes the plane's events in time order across its lines
 * (merge of the lines), then the rest of the last line in turn; a line
 * out of time order is walked in its time order.  Shape 0: ops on two
 * lines, the second one done first; shape 1: all on one line, stored out
 * of order. */
static void test_tpu_walk_order(void **state) {
    (void)state;
    for (int shape = 0; shape < 2; shape++) {
        int pl, la;
        tx_space *s = tx_new_line("/device:TPU:0", 2, "XLA Ops", &pl, &la);
        int lb = shape == 0 ? tx_line(s, pl, 3, "XLA Ops 2", 0) : la;
        static const char *const op[4] = {"a.1", "b.2", "c.3", "d.4"};
        for (int k = 0; k < 4; k++) {
            char tf[32];
            snprintf(tf, sizeof tf, "jit(f)/op%d:", k);
            tx_meta_str(s, pl, op[k], "tf_op", tf);
        }
        if (shape == 1) tx_event(s, pl, la, op[3], 20000, 5000);
        tx_event(s, pl, la, op[0], 0, 5000);
        tx_event(s, pl, lb, op[2], 12000, 1000);
        tx_event(s, pl, la, op[1], 10000, 1000);
        if (shape == 0) tx_event(s, pl, la, op[3], 20000, 5000);
        xpv_profile *p = tx_decode(s);
        xpv_derived_lines *d = xpv_derived_lines_build(p, NULL);
        const xpv_dl_plane *dp = xpv_derived_lines_plane(d, 0);
        assert_non_null(dp);
        const xpv_line *ops = line_by_id(dp, XPV_DL_BASE + 3);
        assert_non_null(ops);
        static const int64_t want[4] = {0, 10000, 12000, 20000};
        assert_int_equal(ops->nevents, 4);
        for (int k = 0; k < 4; k++) assert_int_equal(ops->events[k].start_ps, want[k]);
        xpv_derived_lines_free(d);
        xpv_profile_free(p);
    }
}

/* Without a group id the TPU merge needs the next event to start within
 * twice the last event's duration of its end (XProf's ExpandOrAddLevelEvent
 * on a non-GPU plane); a GPU plane merges whatever the gap. */
static void test_tpu_gap_rule(void **state) {
    (void)state;
    int pl, lo;
    tx_space *s = tx_new_line("/device:TPU:0", 2, "XLA Ops", &pl, &lo);
    tx_meta_str(s, pl, "add.1", "tf_op", "jit(f)/add:");
    tx_event(s, pl, lo, "add.1", 0, 1000);
    tx_event(s, pl, lo, "add.1", 2900, 1000);     /* gap 1900 <= 2 * 1000: merges */
    tx_event(s, pl, lo, "add.1", 9000, 1000);     /* 9000 <= 3900 + 2 * 3900: merges */
    tx_event(s, pl, lo, "add.1", 31000, 1000);    /* 31000 > 10000 + 2 * 10000: new */
    xpv_profile *p = tx_decode(s);
    xpv_derived_lines *d = xpv_derived_lines_build(p, NULL);
    const xpv_dl_plane *dp = xpv_derived_lines_plane(d, 0);
    assert_non_null(dp);
    const xpv_line *op = line_by_id(dp, XPV_DL_BASE + 3);
    assert_non_null(op);
    assert_int_equal(op->nevents, 2);
    assert_int_equal(op->events[0].start_ps, 0);
    assert_int_equal(op->events[0].dur_ps, 10000);
    assert_int_equal(op->events[1].start_ps, 31000);
    xpv_derived_lines_free(d);
    xpv_profile_free(p);
}

/* An XLA op event named by its HLO text (`S(5)`: host memory) and shown
 * by its instruction name, at [t, t + d) ns on line `ln`. */
static tx_event_t *hlo_ev(tx_space *s, int pl, int ln, const char *disp, int host, int64_t t,
                          int64_t d) {
    char text[160];
    snprintf(text, sizeof text, "%%%s = (f32[4]{0%s}) op(f32[4]{0} %%p)", disp, host ? ":S(5)" : "");
    tx_event_t *e = tx_event(s, pl, ln, text, t * 1000, d * 1000);
    tx_meta_display(s, pl, text, disp);
    return e;
}

/* XProf's host offload rows (host_offload_utils.cc, called by
 * DeriveLinesFromStats): a -done of a host-memory op (its HLO text holds
 * S(5)) takes the oldest -start of the same key and makes one event from
 * the start's begin to the done's end, named offload-<op>.<id>, on the
 * row whose end frontier is the smallest at or before its begin, else on
 * a new row; stats _a = 1, the done's raw_bytes_accessed, the start's
 * shape_with_layout.  Counted by hand (times in ns):
 *   copy-start.2 [1,2) .. copy-done.2 [5,6): offload-copy.2 [1,6), done
 *     first: row 0 (frontier 6);
 *   copy-start.1 [0,1) .. copy-done.1 [10,12): [0,12), row 0 ends at 6 >
 *     0: row 1 (frontier 12);
 *   copy-start.3 [20,21) .. copy-done.3 [25,26): [20,26), both rows free
 *     (6, 12), the smaller frontier: row 0 (now 26);
 *   dynamic-slice-start.7 / -done.7 on another line: [30,36), both free
 *     (26, 12): row 1 (now 36);
 *   copy-start / copy-done (no '.'): offload-copy.0 [40,45): row 0;
 *   copy-done.4 without a start, copy-start.5 / done.5 not in host memory,
 *   copy-start.6 / done.6 asynchronous (`_a`): nothing. */
/* `shape`: 0 as above (two lines: the candidates gathered and merged),
 * 1 every event on one line in time order (the one-pass walk), 2 one line
 * with the dynamic-slice pair stored first (out of order: gathered and
 * sorted); 3 and 4 are 1 and 0 with a tf_op on copy-start.1, so that the
 * Framework Ops walk covers the XLA Ops line: 3 feeds the rows from that
 * walk, 4 cannot (the other line, outside it, holds candidates).  The same
 * rows every time. */
static void check_host_offload(int shape) {
    tx_space *s = tx_new();
    int pl = tx_plane(s, "/device:TPU:0");
    int lo = tx_line(s, pl, 2, "XLA Ops", 0);
    int l2 = shape == 1 || shape == 2 || shape == 3 ? lo : tx_line(s, pl, 5, "Other", 0);
    if (shape == 2) {
        hlo_ev(s, pl, l2, "dynamic-slice-start.7", 1, 30, 1);
        hlo_ev(s, pl, l2, "dynamic-slice-done.7", 1, 35, 1);
    }
    hlo_ev(s, pl, lo, "copy-start.1", 1, 0, 1);
    hlo_ev(s, pl, lo, "copy-start.2", 1, 1, 1);
    hlo_ev(s, pl, lo, "copy-done.2", 1, 5, 1);
    hlo_ev(s, pl, lo, "copy-done.1", 1, 10, 2);
    hlo_ev(s, pl, lo, "copy-done.4", 1, 11, 1);
    hlo_ev(s, pl, lo, "copy-start.3", 1, 20, 1);
    hlo_ev(s, pl, lo, "copy-start.5", 0, 21, 1);
    hlo_ev(s, pl, lo, "copy-done.3", 1, 25, 1);
    hlo_ev(s, pl, lo, "copy-done.5", 0, 26, 1);
    if (shape != 2) {
        hlo_ev(s, pl, l2, "dynamic-slice-start.7", 1, 30, 1);
        hlo_ev(s, pl, l2, "dynamic-slice-done.7", 1, 35, 1);
    }
    tx_ev_int(s, pl, hlo_ev(s, pl, lo, "copy-start.6", 1, 36, 1), "_a", 1);
    tx_ev_int(s, pl, hlo_ev(s, pl, lo, "copy-done.6", 1, 38, 1), "_a", 1);
    hlo_ev(s, pl, lo, "copy-start", 1, 40, 1);
    hlo_ev(s, pl, lo, "copy-done", 1, 44, 1);
    tx_meta_str(s, pl, "%copy-start.1 = (f32[4]{0:S(5)}) op(f32[4]{0} %p)", "shape_with_layout",
                "(f32[4]{0}, f32[4]{0:S(5)})");
    tx_meta_int(s, pl, "%copy-done.1 = (f32[4]{0:S(5)}) op(f32[4]{0} %p)", "raw_bytes_accessed", 64);
    if (shape >= 3)
        tx_meta_str(s, pl, "%copy-start.1 = (f32[4]{0:S(5)}) op(f32[4]{0} %p)", "tf_op", "m/copy:Copy");
    xpv_profile *p = tx_decode(s);
    xpv_derived_lines *d = xpv_derived_lines_build(p, NULL);
    const xpv_dl_plane *dp = xpv_derived_lines_plane(d, 0);
    assert_non_null(dp);
    /* no tf_op / source: only the rows; else also Framework Name Scope and Ops */
    assert_int_equal(dp->synth.nlines, shape >= 3 ? 4 : 2);
    const xpv_line *r0 = line_by_id(dp, XPV_DL_BASE + 8), *r1 = line_by_id(dp, XPV_DL_BASE + 9);
    assert_non_null(r0);
    assert_non_null(r1);
    assert_true(xpv_str_eq(r0->name, "Host Offload Ops row 0"));
    assert_true(xpv_str_eq(r1->name, "Host Offload Ops row 1"));
    static const struct { const char *name; int64_t t, d; } want0[] = {
        {"offload-copy.2", 1, 5}, {"offload-copy.3", 20, 6}, {"offload-copy.0", 40, 5},
    };
    assert_int_equal(r0->nevents, 3);
    for (int i = 0; i < 3; i++) {
        if (!xpv_str_eq(ev_name(dp, &r0->events[i]), want0[i].name))
            fail_msg("row 0 event %d: %.*s", i, (int)ev_name(dp, &r0->events[i]).len,
                     ev_name(dp, &r0->events[i]).ptr);
        assert_int_equal(r0->events[i].start_ps, want0[i].t * 1000);
        assert_int_equal(r0->events[i].dur_ps, want0[i].d * 1000);
        assert_int_equal(ev_int(dp, r0, (uint32_t)i, "_a"), 1);
        assert_int_equal(ev_int(dp, r0, (uint32_t)i, "group_id"), -1);
    }
    assert_int_equal(r1->nevents, 2);
    assert_true(xpv_str_eq(ev_name(dp, &r1->events[0]), "offload-copy.1"));
    assert_true(xpv_str_eq(ev_name(dp, &r1->events[1]), "offload-dynamic-slice.7"));
    assert_int_equal(r1->events[1].start_ps, 30000);
    assert_int_equal(r1->events[1].dur_ps, 6000);
    assert_int_equal(r1->events[0].start_ps, 0);
    assert_int_equal(r1->events[0].dur_ps, 12000);
    assert_int_equal(ev_int(dp, r1, 0, "raw_bytes_accessed"), 64);
    assert_true(xpv_str_eq(ev_str(dp, r1, 0, "shape_with_layout"), "(f32[4]{0}, f32[4]{0:S(5)})"));
    assert_int_equal(ev_int(dp, r0, 0, "raw_bytes_accessed"), -1);
    xpv_derived_lines_free(d);
    xpv_profile_free(p);
}

static void test_tpu_host_offload(void **state) {
    (void)state;
    for (int shape = 0; shape < 5; shape++) check_host_offload(shape);
}

/* Row placement against the rule itself (a linear search over the rows,
 * as XProf's code reads): 300 host offload ops, many overlapping (more
 * than 41 at once: the last row takes the rest) and many ending at the
 * same time (equal frontiers: the later row wins). */
typedef struct off_ev {
    int64_t t, d;
    int op, done, at;
} off_ev;

static int cmp_off_ev(const void *a, const void *b) {
    const off_ev *x = a, *y = b;
    if (x->t != y->t) return x->t < y->t ? -1 : 1;
    if (x->d != y->d) return x->d > y->d ? -1 : 1;
    return x->at - y->at;
}

typedef struct off_op {
    int64_t start, dur;
    int made;
} off_op;

static int cmp_off_op(const void *a, const void *b) {
    const off_op *x = a, *y = b;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    if (x->dur != y->dur) return x->dur > y->dur ? -1 : 1;
    return x->made - y->made;
}

static void test_tpu_offload_rows_rule(void **state) {
    (void)state;
    enum { NOPS = 300 };
    off_ev ev[2 * NOPS];
    uint64_t r = 12345;
    for (int i = 0; i < NOPS; i++) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        int64_t b = 10 * (int64_t)((r >> 33) % 200), len = 10 * (int64_t)(1 + (r >> 13) % 40);
        ev[2 * i] = (off_ev){b, 1, i, 0, 2 * i};
        ev[2 * i + 1] = (off_ev){b + len - 1, 1, i, 1, 2 * i + 1};
    }
    qsort(ev, 2 * NOPS, sizeof *ev, cmp_off_ev);
    tx_space *s = tx_new();
    int pl = tx_plane(s, "/device:TPU:0");
    int lo = tx_line(s, pl, 2, "XLA Ops", 0);
    /* the rule, on the events in time order */
    int64_t begin[NOPS], frontier[41];
    off_op rows[41][2 * NOPS];
    int nrow[41] = {0}, nrows = 0, made = 0;
    for (int i = 0; i < 2 * NOPS; i++) {
        char name[48];
        snprintf(name, sizeof name, "copy-%s.%d", ev[i].done ? "done" : "start", ev[i].op);
        hlo_ev(s, pl, lo, name, 1, ev[i].t, ev[i].d);
        if (!ev[i].done) {
            begin[ev[i].op] = ev[i].t * 1000;
            continue;
        }
        int64_t b = begin[ev[i].op], e = (ev[i].t + ev[i].d) * 1000, minf = b;
        int idx = -1;
        for (int k = 0; k < nrows; k++)
            if (frontier[k] <= minf) {
                idx = k;
                minf = frontier[k];
            }
        if (idx < 0) {
            if (nrows < 41) frontier[nrows++] = e;
            idx = nrows - 1;
        }
        if (e > frontier[idx]) frontier[idx] = e;
        rows[idx][nrow[idx]++] = (off_op){b, e - b, made++};
    }
    assert_int_equal(nrows, 41);
    xpv_profile *p = tx_decode(s);
    xpv_derived_lines *d = xpv_derived_lines_build(p, NULL);
    const xpv_dl_plane *dp = xpv_derived_lines_plane(d, 0);
    assert_non_null(dp);
    for (int k = 0; k < 41; k++) {
        const xpv_line *l = line_by_id(dp, XPV_DL_BASE + 8 + k);
        assert_non_null(l);
        qsort(rows[k], (size_t)nrow[k], sizeof rows[k][0], cmp_off_op);
        assert_int_equal(l->nevents, nrow[k]);
        for (int i = 0; i < nrow[k]; i++) {
            assert_int_equal(l->events[i].start_ps, rows[k][i].start);
            assert_int_equal(l->events[i].dur_ps, rows[k][i].dur);
        }
    }
    xpv_derived_lines_free(d);
    xpv_profile_free(p);
}

/* Real TPU file: Framework Ops / Name Scope / Source code counts equal an
 * independent count (derived_count.h), on each TensorCore plane. */
static void test_real_tpu(void **state) {
    (void)state;
    TU_SKIP_NO_SHARED();
    char path[4096];
    xpv_profile *p = tx_decode_file(tx_real_tpu_path(path, sizeof path));
    size_t wops, wscopes, wsrc;
    dc_count_tpu(p, &wops, &wscopes, &wsrc);
    xpv_groups *g = xpv_group_events(p);
    xpv_derived_lines *d = xpv_derived_lines_build(p, g);
    size_t ops = 0, scopes = 0, src = 0;
    for (uint32_t i = 0; i < d->nplanes; i++) {
        const xpv_dl_plane *dp = &d->planes[i];
        assert_true(xpv_str_has_prefix(p->planes[dp->plane].name, "/device:TPU:"));
        const xpv_line *l;
        if ((l = line_by_id(dp, XPV_DL_BASE + 2))) scopes += l->nevents;
        if ((l = line_by_id(dp, XPV_DL_BASE + 3))) ops += l->nevents;
        if ((l = line_by_id(dp, XPV_DL_BASE + 7))) src += l->nevents;
    }
    print_message("TPU: Framework Ops %zu (independent %zu), Name Scope %zu (%zu), Source %zu (%zu)\n",
                  ops, wops, scopes, wscopes, src, wsrc);
    assert_int_equal(d->nplanes, 4);
    assert_true(wops > 0 && wsrc > 0 && wscopes > 0);
    assert_int_equal(ops, wops);
    assert_int_equal(scopes, wscopes);
    assert_int_equal(src, wsrc);
    /* Host offload rows: as many events as an independent pairing of the
     * host-memory -start / -done events per instruction gives, and no two
     * events of a row overlap (fewer rows than XProf's 41). */
    size_t want_off = dc_count_tpu_offload(p), off = 0;
    for (uint32_t i = 0; i < d->nplanes; i++) {
        const xpv_dl_plane *dp = &d->planes[i];
        for (uint32_t k = 0; k < 41; k++) {
            const xpv_line *l = line_by_id(dp, XPV_DL_BASE + 8 + k);
            if (!l) continue;
            off += l->nevents;
            for (uint32_t e = 1; e < l->nevents; e++)
                assert_true(l->events[e].start_ps >= l->events[e - 1].start_ps + l->events[e - 1].dur_ps);
        }
    }
    print_message("TPU: host offload events %zu (independent %zu)\n", off, want_off);
    assert_true(want_off > 0);
    assert_int_equal(off, want_off);
    xpv_derived_lines_free(d);
    xpv_groups_free(g);
    xpv_profile_free(p);
}

/* ==== GPU Steps and ungrouped events ==================================== */

/* Two host steps ("train 1", "train 2", `_r` roots) launching kernels
 * through correlation_id; a kernel after each launched one has no launch.
 * XProf's ProcessUngroupedEvents gives it the group of the last grouped
 * event before it; DeriveStepEventsFromGroups then makes one Steps event
 * per group covering its kernels (line kThreadIdStepInfo, "Steps", the
 * event shown as the group's name). */
static void test_gpu_steps(void **state) {
    (void)state;
    int h, hl;
    tx_space *s = tx_new_line("/host:CPU", 1, "python", &h, &hl);
    int d = tx_plane(s, "/device:GPU:0");
    int st = tx_line(s, d, 7, "Stream #7(Compute)", 0);
    for (int i = 0; i < 2; i++) {
        int64_t t0 = 1000000 * i;
        tx_event_t *e = tx_event(s, h, hl, "train", t0, 500000);
        tx_ev_int(s, h, e, "_r", 1);
        tx_ev_int(s, h, e, "step_num", i + 1);
        e = tx_event(s, h, hl, "launch", t0 + 1000, 1000);
        tx_ev_int(s, h, e, "correlation_id", 10 + i);
        e = kernel(s, d, st, "k", t0 + 100000, 50000);
        tx_ev_int(s, d, e, "correlation_id", 10 + i);
        kernel(s, d, st, "k2", t0 + 200000, 50000);   /* no launch: ungrouped */
    }
    xpv_profile *p = tx_decode(s);
    xpv_groups *g = xpv_group_events(p);
    assert_int_equal(g->ngroups, 2);
    assert_int_equal(xpv_group_of(g, 1, 0, 1), -1);  /* before the fill */
    xpv_groups_fill_gpu(g, p);
    assert_int_equal(xpv_group_of(g, 1, 0, 1), 0);
    assert_int_equal(xpv_group_of(g, 1, 0, 3), 1);
    xpv_derived_lines *dl = xpv_derived_lines_build(p, g);
    const xpv_dl_plane *dp = xpv_derived_lines_plane(dl, 1);
    assert_non_null(dp);
    const xpv_line *steps = line_by_id(dp, XPV_DL_BASE);
    assert_non_null(steps);
    assert_true(xpv_str_eq(steps->name, "Steps"));
    assert_int_equal(steps->nevents, 2);
    assert_int_equal(steps->events[0].start_ps, 100000);
    assert_int_equal(steps->events[0].dur_ps, 150000);  /* both kernels of step 1 */
    /* XProf: metadata named by the group id, a group_id stat and the
     * group's name as step_name (AddGroupMetadataToStepEvents) */
    for (int k = 0; k < 2; k++) {
        char gid[8], sn[16];
        snprintf(gid, sizeof gid, "%d", k);
        snprintf(sn, sizeof sn, "train %d", k + 1);
        assert_true(xpv_str_eq(ev_name(dp, &steps->events[k]), gid));
        assert_int_equal(ev_int(dp, steps, k, "group_id"), k);
        assert_true(xpv_str_eq(ev_str(dp, steps, k, "step_name"), sn));
    }
    xpv_derived_lines_free(dl);
    xpv_groups_free(g);
    xpv_profile_free(p);
}

/* ==== Launch Stats (DeriveEventsFromHostTrace) ========================== */

/* Host launches in two steps ("train 1", "train 2") on two GPUs: per
 * (device_id, group) one "Launch Stats for <group name>" event on the
 * device's `Launch Stats` line (kThreadIdKernelLaunch), spanning the
 * launches, with group_id, num_launches, max/avg launch time in us.  A
 * "cu..." API event and a device_id past the GPU planes are not launches;
 * GPU:0 gets derived lines (the row is added to them); GPU:1, whose file
 * already holds a derived line, gets only this row. */
static void test_launch_stats(void **state) {
    (void)state;
    int h, hl;
    tx_space *s = tx_new_line("/host:CPU", 1, "python", &h, &hl);
    int d0 = tx_plane(s, "/device:GPU:0");
    int st0 = tx_line(s, d0, 7, "Stream #7(Compute)", 0);
    int d1 = tx_plane(s, "/device:GPU:1");
    tx_line(s, d1, 3, "Stream #3", 0);
    /* GPU:1 holds a derived line of its writer (TF 2.4): no other derived
     * rows there, but Launch Stats all the same (XProf adds them to every
     * GPU plane) */
    int dd = tx_line(s, d1, (int64_t)(int32_t)0xdeadbeefu + 3, "TensorFlow Ops", 0);
    tx_event(s, d1, dd, "op", 0, 100);
    /* step, offset, duration, device, correlation id, name */
    struct { int step; int64_t off, dur; int dev, corr; const char *name; } L[] = {
        {0, 1000, 1000, 0, 10, "launch"},  {0, 5000, 3000, 0, 11, "launch"},
        {0, 9000, 2000, 1, 12, "launch"},  {0, 20000, 7000, 0, 13, "cuLaunchKernel"},
        {0, 30000, 9000, 5, 14, "launch"}, {1, 1000, 4000, 0, 20, "launch"},
    };
    for (int i = 0; i < 2; i++) {
        tx_event_t *e = tx_event(s, h, hl, "train", 1000000 * i, 500000);
        tx_ev_int(s, h, e, "_r", 1);
        tx_ev_int(s, h, e, "step_num", i + 1);
        for (size_t k = 0; k < sizeof L / sizeof L[0]; k++) {
            if (L[k].step != i) continue;
            e = tx_event(s, h, hl, L[k].name, 1000000 * i + L[k].off, L[k].dur);
            tx_ev_int(s, h, e, "device_id", L[k].dev);
            tx_ev_int(s, h, e, "correlation_id", L[k].corr);
        }
    }
    tx_ev_int(s, d0, kernel(s, d0, st0, "k", 100000, 5000), "correlation_id", 10);
    xpv_profile *p = tx_decode(s);
    xpv_groups *g = xpv_group_events(p);
    xpv_groups_fill_gpu(g, p);
    xpv_derived_lines *dl = xpv_derived_lines_build(p, g);
    const xpv_dl_plane *dp = xpv_derived_lines_plane(dl, 1);
    assert_non_null(dp);
    assert_non_null(line_by_id(dp, XPV_DL_BASE));          /* its Steps row */
    const xpv_line *ls = line_by_id(dp, XPV_DL_BASE + 1);
    assert_non_null(ls);
    assert_true(xpv_str_eq(ls->name, "Launch Stats"));
    assert_int_equal(ls->nevents, 2);
    assert_true(xpv_str_eq(ev_name(dp, &ls->events[0]), "Launch Stats for train 1"));
    assert_int_equal(ls->events[0].start_ps, 1000);
    assert_int_equal(ls->events[0].dur_ps, 7000);         /* [1000, 8000) */
    assert_int_equal(ev_int(dp, ls, 0, "group_id"), 0);
    assert_int_equal(ev_int(dp, ls, 0, "num_launches"), 2);
    assert_true(ev_double(dp, ls, 0, "max_launch_time_us") == 3000 / 1e6);
    assert_true(ev_double(dp, ls, 0, "avg_launch_time_us") == 2000 / 1e6);
    assert_true(xpv_str_eq(ev_name(dp, &ls->events[1]), "Launch Stats for train 2"));
    assert_int_equal(ls->events[1].start_ps, 1001000);
    assert_int_equal(ev_int(dp, ls, 1, "group_id"), 1);
    assert_int_equal(ev_int(dp, ls, 1, "num_launches"), 1);
    assert_true(ev_double(dp, ls, 1, "avg_launch_time_us") == 4000 / 1e6);
    const xpv_dl_plane *dp1 = xpv_derived_lines_plane(dl, 2);
    assert_non_null(dp1);
    assert_int_equal(dp1->synth.nlines, 1);
    ls = line_by_id(dp1, XPV_DL_BASE + 1);
    assert_non_null(ls);
    assert_int_equal(ls->nevents, 1);
    assert_int_equal(ls->events[0].start_ps, 9000);
    assert_int_equal(ev_int(dp1, ls, 0, "num_launches"), 1);
    assert_int_equal(dp1->line_display_id[0], 3);           /* the stream keeps its id */
    assert_int_equal(dp1->line_display_id[1], (int64_t)(int32_t)0xdeadbeefu + 3);
    /* no GPU:5: nothing else anywhere */
    assert_int_equal(dl->nplanes, 2);
    size_t ev, la;
    dc_launch_count(p, g, &ev, &la);
    assert_int_equal(ev, 3);
    assert_int_equal(la, 4);
    xpv_derived_lines_free(dl);
    xpv_groups_free(g);
    xpv_profile_free(p);
}

/* The Launch Stats rows of real JAX GPU profiles against an independent
 * count of their host launches (derived_count.h): the H100 capture
 * without command buffers launches each kernel from the host in 5 steps;
 * the MI300X files have launches but no step roots, so no groups and (as
 * in XProf, which needs a group) no rows; the command-buffer capture's
 * launches are "cu..." API events. */
static void check_launch_file(const char *path, size_t *nrows) {
    xpv_profile *p = tx_decode_file(path);
    xpv_groups *g = xpv_group_events(p);
    xpv_groups_fill_gpu(g, p);
    xpv_derived_lines *dl = xpv_derived_lines_build(p, g);
    size_t want_ev, want_la, got_ev = 0, got_la = 0;
    dc_launch_count(p, g, &want_ev, &want_la);
    for (uint32_t i = 0; i < dl->nplanes; i++) {
        const xpv_dl_plane *dp = &dl->planes[i];
        const xpv_line *ls = line_by_id(dp, XPV_DL_BASE + 1);
        if (!ls) continue;
        got_ev += ls->nevents;
        for (uint32_t k = 0; k < ls->nevents; k++) got_la += (size_t)ev_int(dp, ls, k, "num_launches");
    }
    const char *b = strrchr(path, '/');
    print_message("%s: Launch Stats events %zu (independent %zu), launches %zu (%zu)\n",
                  b ? b + 1 : path, got_ev, want_ev, got_la, want_la);
    assert_int_equal(got_ev, want_ev);
    assert_int_equal(got_la, want_la);
    *nrows += got_ev;
    xpv_derived_lines_free(dl);
    xpv_groups_free(g);
    xpv_profile_free(p);
}

static void test_real_launch_stats(void **state) {
    (void)state;
    const char *src = getenv("XPV_SRC");
    char path[4096];
    size_t rows = 0;
    snprintf(path, sizeof path, "%s/tests/data/device/jax_gpu_mlp_nocmdbuf.xplane.pb", src ? src : ".");
    check_launch_file(path, &rows);
    assert_int_equal(rows, 5);   /* one per step on GPU:0 */
    snprintf(path, sizeof path, "%s/tests/data/device/jax_gpu_mlp.xplane.pb", src ? src : ".");
    check_launch_file(path, &rows);
    assert_int_equal(rows, 5);
    TU_SKIP_NO_SHARED();
    char **files = tu_real_xplanes();
    for (char **f = files; *f; f++) check_launch_file(*f, &rows);
    tu_free_list(files);
}

TU_MAIN(cmocka_unit_test(test_hlo_merge_and_levels),
        cmocka_unit_test(test_group_breaks_merge),
        cmocka_unit_test(test_group_id_stats),
        cmocka_unit_test(test_tf_name_scopes),
        cmocka_unit_test(test_no_derivation_when_present),
        cmocka_unit_test(test_trace_rows),
        cmocka_unit_test(test_real_jax_gpu),
        cmocka_unit_test(test_tpu_lines_from_stats),
        cmocka_unit_test(test_tpu_gap_rule),
        cmocka_unit_test(test_tpu_grouped_merge),
        cmocka_unit_test(test_tpu_walk_order),
        cmocka_unit_test(test_tpu_host_offload),
        cmocka_unit_test(test_tpu_offload_rows_rule),
        cmocka_unit_test(test_real_tpu),
        cmocka_unit_test(test_gpu_steps),
        cmocka_unit_test(test_launch_stats),
        cmocka_unit_test(test_real_launch_stats),
        cmocka_unit_test(test_scope_range_module),
        cmocka_unit_test(test_scope_range_tree),
        cmocka_unit_test(test_scope_range_cycle),
        cmocka_unit_test(test_cuda_graph_stats),
        cmocka_unit_test(test_cuda_graph_exec),
        cmocka_unit_test(test_real_cuda_graph))
