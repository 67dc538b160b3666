/*
 * test_analysis_op_metrics.c - host/device op metrics dbs and kernel reports
 * on XSpaces built in the test, where every number is known by hand.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "op_metrics.h"
#include "op_metrics_fixture.h"
#include "tool_xspace.h"

#define DERIVED_STEPS_LINE (-559038737LL)

/* Host: parent 10 ms with a 4 ms child -> self 6 ms; idle per line. */
static xpv_profile *host_profile(void) {
    int pl, l1;
    tx_space *s = tx_new_line("/host:CPU", 1, "python", &pl, &l1);
    tx_event_t *e = tx_event(s, pl, l1, "outer:Foo", 0, 10 * MS);
    tx_ev_int(s, pl, e, "is_eager", 1);
    tx_event(s, pl, l1, "outer/inner:MatMul", 2 * MS, 4 * MS);
    tx_event(s, pl, l1, "SomeUserTraceMe", 0, 1 * MS); /* not an op */
    int l2 = tx_line(s, pl, 2, "tf_data", 0);
    tx_event(s, pl, l2, "Iterator::Batch", 0, 3 * MS);
    tx_event(s, pl, l2, "x:Identity", 5 * MS, 1 * MS);
    e = tx_event(s, pl, l2, "Custom", 7 * MS, 1 * MS);
    tx_ev_str(s, pl, e, "tf_op", "scope/y:Relu");
    /* Derived lines are ignored. */
    int l3 = tx_line(s, pl, DERIVED_STEPS_LINE, "Steps", 0);
    tx_event(s, pl, l3, "z:Add", 0, 50 * MS);
    xpv_profile *p = tx_decode(s);
    assert_non_null(p);
    return p;
}

static void test_host_self_time_and_idle(void **state) {
    (void)state;
    xpv_profile *p = host_profile();
    xpv_op_metrics *m = om_build1(p);
    const xpv_op_metrics_db *h = &m->host;
    /* outer, outer/inner, Iterator::Batch, x, scope/y, IDLE */
    assert_int_equal(h->n, 6);
    const xpv_op_metric *o = om_find_op(h, "outer");
    assert_non_null(o);
    assert_string_equal(o->category, "Foo");
    assert_int_equal(o->occurrences, 1);
    assert_int_equal(o->time_ps, 10 * MS);
    assert_int_equal(o->self_time_ps, 6 * MS);
    assert_int_equal(o->is_eager, 1);
    const xpv_op_metric *in = om_find_op(h, "outer/inner");
    assert_non_null(in);
    assert_string_equal(in->category, "MatMul");
    assert_int_equal(in->self_time_ps, 4 * MS);
    assert_int_equal(in->is_eager, 0);
    const xpv_op_metric *it = om_find_op(h, "Iterator::Batch");
    assert_non_null(it);
    assert_string_equal(it->category, "Dataset");
    const xpv_op_metric *y = om_find_op(h, "scope/y");
    assert_non_null(y);
    assert_string_equal(y->category, "Relu");
    assert_null(om_find_op(h, "z"));
    assert_null(om_find_op(h, "SomeUserTraceMe"));
    /* line 1: span 10, op time 10; line 2: span 8, op time 5 -> idle 3 */
    assert_int_equal(h->total_time_ps, 18 * MS);
    assert_int_equal(h->total_op_time_ps, 15 * MS);
    const xpv_op_metric *idle = om_find_op(h, "IDLE");
    assert_non_null(idle);
    assert_int_equal(idle->self_time_ps, 3 * MS);
    assert_int_equal(idle->occurrences, 0);
    assert_string_equal(idle->category, "IDLE");
    /* Sorted by self time desc, then name: outer 6, inner 4, IDLE 3,
     * Iterator::Batch 3, scope/y 1, x 1. */
    assert_string_equal(h->ops[0].name, "outer");
    assert_string_equal(h->ops[1].name, "outer/inner");
    assert_string_equal(h->ops[2].name, "IDLE");
    assert_string_equal(h->ops[3].name, "Iterator::Batch");
    assert_string_equal(h->ops[4].name, "scope/y");
    assert_string_equal(h->ops[5].name, "x");
    double r = xpv_op_metrics_idle_ratio(h);
    assert_true(r > 3.0 / 18 - 1e-12 && r < 3.0 / 18 + 1e-12);
    /* No GPU plane: device db holds only a zero IDLE row. */
    assert_int_equal(m->has_gpu, 0);
    assert_int_equal(m->device.n, 1);
    assert_int_equal(m->device.total_time_ps, 0);
    assert_int_equal(m->nkernels, 0);
    assert_string_equal(m->device_type, "CPU");
    xpv_op_metrics_free(m);
    xpv_profile_free(p);
}

/* A GPU plane with TF kernels, an old-format kernel, XLA ops, a memcpy. */
static xpv_profile *gpu_profile(void) {
    tx_space *s = tx_new();
    int pl = tx_plane(s, "/device:GPU:0");
    tx_plane_int(s, pl, "core_count", 80);
    tx_plane_int(s, pl, "memory_bandwidth", 900000000000LL);
    int l1 = tx_line(s, pl, 1, "Stream #1(Kernel)", 0);
    const char *det = "regs:32 static_shared:0 dynamic_shared:1024 grid:2,1,1 block:128,1,1 "
                      "occ_pct:50";
    tx_event_t *e = tx_event(s, pl, l1, "k1", 0, 2 * MS);
    tx_ev_ref(s, pl, e, "kernel_details", det);
    tx_ev_ref(s, pl, e, "tf_op", "model/conv/Conv2D:Conv2D");
    e = tx_event(s, pl, l1, "k1", 3 * MS, 1 * MS);
    tx_ev_ref(s, pl, e, "kernel_details", det);
    tx_ev_ref(s, pl, e, "tf_op", "model/conv/Conv2D:Conv2D");
    e = tx_event(s, pl, l1, "h1688gemm", 4 * MS, 3 * MS);
    tx_ev_ref(s, pl, e, "kernel_details", "regs:64 grid:1,1,1 block:256,1,1");
    tx_ev_ref(s, pl, e, "tf_op", "model/dense/MatMul:MatMul");
    tx_ev_int(s, pl, e, "is_eager", 1);
    e = tx_event(s, pl, l1, "MemcpyH2D", 8 * MS, 2 * MS);
    tx_ev_ref(s, pl, e, "memcpy_details", "size:4 dest:0 async:1");
    int l2 = tx_line(s, pl, 2, "Stream #2(Kernel)", 0);
    e = tx_event(s, pl, l2, "old", 1 * MS, MS / 2);
    tx_ev_str(s, pl, e, "kernel_details", "regs:10 shm:512 grid:1,2,3 block:4,5,6");
    e = tx_event(s, pl, l2, "tiny", 9 * MS, 500); /* < 1 ns: left out */
    tx_ev_str(s, pl, e, "kernel_details", "regs:1 grid:1,1,1 block:1,1,1");
    int l3 = tx_line(s, pl, 3, "Stream #3(Kernel)", 0);
    static const struct { const char *op; int64_t b, d; } x[] = {
        {"fusion.1", 0, 1}, {"fusion.1", 1, 1}, {"fusion.2", 2, 1}, {"fusion.1", 3, 1},
    };
    for (int i = 0; i < 4; i++) {
        e = tx_event(s, pl, l3, "xla_kernel", x[i].b * MS, x[i].d * MS);
        tx_ev_ref(s, pl, e, "hlo_op", x[i].op);
        tx_ev_int(s, pl, e, "program_id", 7);
        tx_ev_int(s, pl, e, "group_id", 0);
        tx_ev_str(s, pl, e, "name", strcmp(x[i].op, "fusion.1") ? "jit(f)/add"
                                                                  : "jit(f)/dot_general[p=1]");
    }
    int l4 = tx_line(s, pl, DERIVED_STEPS_LINE + 3, "TensorFlow Ops", 0);
    e = tx_event(s, pl, l4, "k_derived", 0, 100 * MS);
    tx_ev_str(s, pl, e, "kernel_details", "regs:1");
    tx_ev_str(s, pl, e, "tf_op", "d:Add");
    xpv_profile *p = tx_decode(s);
    assert_non_null(p);
    return p;
}

static void test_device_db(void **state) {
    (void)state;
    xpv_profile *p = gpu_profile();
    xpv_op_metrics *m = om_build1(p);
    const xpv_op_metrics_db *d = &m->device;
    assert_int_equal(m->has_gpu, 1);
    assert_string_equal(m->device_type, "GPU");
    const xpv_op_metric *c = om_find_op(d, "model/conv/Conv2D/k1");
    assert_non_null(c);
    assert_int_equal(c->occurrences, 2);
    assert_int_equal(c->time_ps, 3 * MS);
    assert_int_equal(c->self_time_ps, 3 * MS);
    assert_int_equal(c->min_time_ps, 1 * MS);
    assert_string_equal(c->category, "Conv2D");
    assert_string_equal(c->provenance, "model/conv/Conv2D:Conv2D");
    const xpv_op_metric *mm = om_find_op(d, "model/dense/MatMul/h1688gemm");
    assert_non_null(mm);
    assert_int_equal(mm->is_eager, 1);
    /* Consecutive events of fusion.1 merge into one entry, but each kernel
     * is an occurrence (XProf's HLOTracker and EnterOp): 3, 3 ms. */
    const xpv_op_metric *f1 = om_find_op(d, "fusion.1");
    assert_non_null(f1);
    assert_int_equal(f1->occurrences, 3);
    assert_int_equal(f1->time_ps, 3 * MS);
    assert_int_equal(f1->min_time_ps, 1 * MS);
    assert_string_equal(f1->category, "fusion");
    const xpv_op_metric *f2 = om_find_op(d, "fusion.2");
    assert_non_null(f2);
    assert_int_equal(f2->occurrences, 1);
    assert_null(om_find_op(d, "d/k_derived"));
    /* Span 0..10 ms (memcpy included); op time 2+1+3 + 4 (XLA) = 10. */
    assert_int_equal(d->total_time_ps, 10 * MS);
    assert_int_equal(d->total_op_time_ps, 10 * MS);
    assert_int_equal(om_find_op(d, "IDLE")->self_time_ps, 0);

    /* TF-level db groups by provenance. */
    const xpv_op_metrics_db *t = &m->device_tf;
    const xpv_op_metric *tc = om_find_op(t, "model/conv/Conv2D");
    assert_non_null(tc);
    assert_int_equal(tc->occurrences, 2);
    assert_int_equal(tc->time_ps, 3 * MS);
    assert_string_equal(tc->category, "Conv2D");
    const xpv_op_metric *jd = om_find_op(t, "jit(f)/dot_general[p=1]");
    assert_non_null(jd);
    assert_string_equal(jd->category, "dot_general");
    assert_int_equal(jd->time_ps, 3 * MS);
    assert_int_equal(t->total_time_ps, d->total_time_ps);
    assert_non_null(om_find_op(t, "IDLE"));

    /* HBM peak from memory_bandwidth (bytes/s). */
    assert_true(m->perf.peak_hbm_bw_giga_bytes_per_second > 899.9 &&
                m->perf.peak_hbm_bw_giga_bytes_per_second < 900.1);
    xpv_op_metrics_free(m);
    xpv_profile_free(p);
}

static void test_kernel_reports(void **state) {
    (void)state;
    xpv_profile *p = gpu_profile();
    xpv_op_metrics *m = om_build1(p);
    /* k1 (2 occurrences), h1688gemm, old; tiny and derived left out;
     * XLA events carry no kernel_details. */
    assert_int_equal(m->nkernels, 3);
    assert_int_equal(m->kernel_events, 4);
    assert_int_equal(m->kernel_total_ns, 6500000);
    /* Sorted by total duration; the 3 ms tie broken by name. */
    const xpv_kernel_report *a = &m->kernels[0], *b = &m->kernels[1], *c = &m->kernels[2];
    assert_string_equal(a->name, "h1688gemm");
    assert_int_equal(a->is_kernel_using_tensor_core, 1);
    assert_int_equal(a->is_op_tensor_core_eligible, 1);
    assert_int_equal(a->registers_per_thread, 64);
    assert_int_equal(a->block[0], 256);
    assert_string_equal(a->op_name, "model/dense/MatMul");
    assert_string_equal(b->name, "k1");
    assert_int_equal(b->occurrences, 2);
    assert_int_equal(b->total_duration_ns, 3000000);
    assert_int_equal(b->min_duration_ns, 1000000);
    assert_int_equal(b->max_duration_ns, 2000000);
    assert_int_equal(b->dynamic_shmem_bytes, 1024);
    assert_int_equal(b->grid[0], 2);
    assert_true(b->occupancy_pct == 50.0);
    assert_int_equal(b->is_kernel_using_tensor_core, 0);
    assert_int_equal(b->is_op_tensor_core_eligible, 1); /* ends with Conv2D */
    assert_string_equal(c->name, "old");
    assert_int_equal(c->registers_per_thread, 10);
    assert_int_equal(c->static_shmem_bytes, 0); /* shm: is not read */
    assert_int_equal(c->grid[2], 3);
    assert_int_equal(c->block[1], 5);
    assert_string_equal(c->op_name, "");
    assert_int_equal(c->is_op_tensor_core_eligible, 0);
    xpv_op_metrics_free(m);
    xpv_profile_free(p);
}

/* One host line of nested ops, written in capture order (sorted by
 * start) or reversed.  With `ties`, ops start exactly where others end. */
static xpv_profile *host_order_profile(int reverse, int ties) {
    const int64_t t = ties ? 0 : 1;
    const struct {
        const char *name;
        int64_t b, d;
        const char *tf_op;
    } evs[] = {
        {"a:Foo", 0, 10, NULL},          {"a/b:Bar", 2, 4, NULL},
        {"a/b/e:Relu", 3, 1, NULL},      {"a/c:Baz", 6 + t, 2 - t, NULL},
        {"d:Qux", 10 + t, 2, "t/x:Mul"}, {"a/b:Bar", 12 + 2 * t, 1, NULL},
    };
    const int n = (int)(sizeof evs / sizeof evs[0]);
    int pl, l;
    tx_space *s = tx_new_line("/host:CPU", 1, "tf_Compute", &pl, &l);
    for (int k = 0; k < n; k++) {
        int i = reverse ? n - 1 - k : k;
        tx_event_t *e = tx_event(s, pl, l, evs[i].name, evs[i].b * MS, evs[i].d * MS);
        if (evs[i].tf_op) tx_ev_ref(s, pl, e, "tf_op", evs[i].tf_op);
    }
    xpv_profile *p = tx_decode(s);
    assert_non_null(p);
    return p;
}

static int64_t self_of(const xpv_op_metrics_db *db, const char *name) {
    const xpv_op_metric *o = om_find_op(db, name);
    assert_non_null(o);
    return o->self_time_ps;
}

/* Events in file order (the sorted fast path) and reversed (the sort
 * fallback) give the same db; ties are broken by file order, as XProf's
 * stable sort does, so an op starting where another ends is not its child.
 * One event that is an op by name and carries a tf_op stat too pushes two
 * ops; the first end pops both (XProf's OpStack::Pop pops until the match),
 * so only the name op counts and no row is made for the other. */
static void test_host_event_order(void **state) {
    (void)state;
    xpv_profile *p1 = host_order_profile(0, 0), *p2 = host_order_profile(1, 0);
    xpv_op_metrics *m1 = om_build1(p1), *m2 = om_build1(p2);
    const xpv_op_metrics_db *a = &m1->host, *b = &m2->host;
    assert_int_equal(a->n, b->n);
    for (size_t i = 0; i < a->n; i++) {
        assert_string_equal(a->ops[i].name, b->ops[i].name);
        assert_string_equal(a->ops[i].category, b->ops[i].category);
        assert_int_equal(a->ops[i].occurrences, b->ops[i].occurrences);
        assert_int_equal(a->ops[i].time_ps, b->ops[i].time_ps);
        assert_int_equal(a->ops[i].self_time_ps, b->ops[i].self_time_ps);
        assert_int_equal(a->ops[i].min_time_ps, b->ops[i].min_time_ps);
    }
    assert_int_equal(a->total_time_ps, b->total_time_ps);
    assert_int_equal(a->total_op_time_ps, b->total_op_time_ps);
    /* a = 10 - (b 4 + c 1) = 5; b = (4 - e 1) + 1; span 15. */
    assert_int_equal(self_of(a, "a"), 5 * MS);
    assert_int_equal(self_of(a, "a/b"), 4 * MS);
    assert_int_equal(om_find_op(a, "a/b")->occurrences, 2);
    assert_int_equal(om_find_op(a, "a/b")->min_time_ps, 1 * MS);
    assert_int_equal(self_of(a, "a/b/e"), 1 * MS);
    assert_int_equal(self_of(a, "a/c"), 1 * MS);
    assert_null(om_find_op(a, "t/x"));
    assert_int_equal(self_of(a, "d"), 2 * MS);
    assert_int_equal(a->total_time_ps, 15 * MS);
    assert_int_equal(a->total_op_time_ps, 13 * MS);
    assert_int_equal(self_of(a, "IDLE"), 2 * MS);
    xpv_op_metrics_free(m1);
    xpv_op_metrics_free(m2);
    xpv_profile_free(p1);
    xpv_profile_free(p2);

    /* Ties in file order: c starts when b ends, d when a ends. */
    xpv_profile *p3 = host_order_profile(0, 1);
    xpv_op_metrics *m3 = om_build1(p3);
    const xpv_op_metrics_db *c = &m3->host;
    assert_int_equal(self_of(c, "a"), 4 * MS);   /* 10 - (4 + 2) */
    assert_int_equal(self_of(c, "a/b"), 4 * MS); /* (4 - 1) + 1 */
    assert_int_equal(self_of(c, "a/c"), 2 * MS);
    assert_int_equal(om_find_op(c, "d")->time_ps, 2 * MS);
    assert_int_equal(c->total_time_ps, 13 * MS);
    assert_int_equal(c->total_op_time_ps, 13 * MS);
    xpv_op_metrics_free(m3);
    xpv_profile_free(p3);
}

/* Kernel grouping does not depend on how a stat is stored: the same
 * kernel_details as a ref or an inline string, repeated refs (the memo's
 * fast path), and an occupancy stat that differs per event all land in
 * one row; another tf_op makes another row. */
static void test_kernel_grouping_by_value(void **state) {
    (void)state;
    int pl, l;
    tx_space *s = tx_new_line("/device:GPU:0", 1, "Stream #1(Kernel)", &pl, &l);
    const char *det = "regs:16 static_shared:0 dynamic_shared:0 grid:1,1,1 block:32,1,1";
    for (int i = 0; i < 6; i++) {
        tx_event_t *e = tx_event(s, pl, l, "kern", i * 2 * MS, (i + 1) * MS / 2);
        if (i == 2) tx_ev_str(s, pl, e, "kernel_details", det);
        else tx_ev_ref(s, pl, e, "kernel_details", det);
        tx_ev_ref(s, pl, e, "tf_op", i == 5 ? "other/op:Add" : "m/op:Mul");
        tx_ev_int(s, pl, e, "theoretical_occupancy_pct", i == 0 ? 50 : 25);
    }
    xpv_profile *p = tx_decode(s);
    assert_non_null(p);
    xpv_op_metrics *m = om_build1(p);
    assert_int_equal(m->nkernels, 2);
    assert_int_equal(m->kernel_events, 6);
    const xpv_kernel_report *k = &m->kernels[0];
    assert_string_equal(k->op_name, "m/op");
    assert_int_equal(k->occurrences, 5);
    /* 0.5 + 1 + 1.5 + 2 + 2.5 ms */
    assert_int_equal(k->total_duration_ns, 7500000);
    assert_int_equal(k->min_duration_ns, 500000);
    assert_int_equal(k->max_duration_ns, 2500000);
    assert_true(k->occupancy_pct == 50.0); /* the first occurrence's */
    assert_int_equal(k->block[0], 32);
    assert_string_equal(m->kernels[1].op_name, "other/op");
    assert_int_equal(m->kernels[1].occurrences, 1);
    /* Device db: one row per "<tf op>/<kernel>". */
    assert_int_equal(om_find_op(&m->device, "m/op/kern")->occurrences, 5);
    assert_int_equal(om_find_op(&m->device, "other/op/kern")->occurrences, 1);
    xpv_op_metrics_free(m);
    xpv_profile_free(p);
}

static void test_two_hosts_sum(void **state) {
    (void)state;
    xpv_profile *p1 = gpu_profile(), *p2 = gpu_profile();
    const xpv_profile *ps[2] = {p1, p2};
    const char *hn[2] = {"a", "b"};
    xpv_hostset hs = {2, ps, hn};
    xpv_err err;
    xpv_op_metrics *m = xpv_op_metrics_build(&hs, &err);
    assert_non_null(m);
    assert_int_equal(m->nkernels, 3);
    assert_int_equal(m->kernels[1].occurrences, 4);
    assert_int_equal(m->device.total_time_ps, 20 * MS);
    assert_int_equal(om_find_op(&m->device, "model/conv/Conv2D/k1")->occurrences, 4);
    xpv_op_metrics_free(m);
    xpv_profile_free(p1);
    xpv_profile_free(p2);
    /* An empty host set is an error, not a crash. */
    xpv_hostset none = {0, NULL, NULL};
    assert_null(xpv_op_metrics_build(&none, &err));
    assert_int_equal(err.status, 404);
}

static void test_parse_helpers(void **state) {
    (void)state;
    xpv_tf_op o = xpv_parse_tf_op(xpv_cstr("a/b/MatMul:MatMul"));
    assert_int_equal(o.category, XPV_OP_TENSORFLOW);
    assert_true(xpv_str_eq(o.name, "a/b/MatMul") && xpv_str_eq(o.type, "MatMul"));
    o = xpv_parse_tf_op(xpv_cstr("Iterator::Prefetch::Map"));
    assert_int_equal(o.category, XPV_OP_TFDATA);
    assert_true(xpv_str_eq(o.type, "Dataset"));
    assert_true(xpv_str_eq(o.name, "Iterator::Prefetch::Map"));
    o = xpv_parse_tf_op(xpv_cstr("jit(f)/transpose[perm=(1,0)]:"));
    assert_int_equal(o.category, XPV_OP_JAX);
    assert_true(xpv_str_eq(o.type, "transpose"));
    o = xpv_parse_tf_op(xpv_cstr("MEMCPYHToD"));
    assert_int_equal(o.category, XPV_OP_MEMCPY);
    o = xpv_parse_tf_op(xpv_cstr("ExecutorState::Process"));
    assert_int_equal(o.category, XPV_OP_UNKNOWN);
    o = xpv_parse_tf_op(xpv_cstr("scope/relu_3:"));
    assert_int_equal(o.category, XPV_OP_JAX); /* derived type "relu" */
    assert_true(xpv_str_eq(o.type, "relu"));
    o = xpv_parse_tf_op(xpv_cstr(""));
    assert_int_equal(o.category, XPV_OP_UNKNOWN);

    assert_true(xpv_kernel_uses_tensor_core(xpv_cstr("volta_h884gemm_64x64")));
    assert_false(xpv_kernel_uses_tensor_core(xpv_cstr("EigenMetaKernel")));
    assert_true(xpv_op_is_tensor_core_eligible(xpv_cstr("m/dense/MatMul")));
    assert_false(xpv_op_is_tensor_core_eligible(xpv_cstr("m/dense/BiasAdd")));
    assert_true(xpv_op_is_tensor_core_eligible(xpv_cstr("m/BatchMatMulV2")));

    xpv_kernel_report r;
    memset(&r, 0, sizeof r);
    xpv_parse_kernel_details(xpv_cstr(" grid:256,1,1 block:256,1,1 private_mem:0 occ_pct:12.5"),
                             &r);
    assert_int_equal(r.grid[0], 256);
    assert_int_equal(r.block[2], 1);
    assert_true(r.occupancy_pct == 12.5);
    memset(&r, 0, sizeof r);
    /* Garbage (seen in real TF files): unusable values are left at 0 / 1. */
    xpv_parse_kernel_details(xpv_cstr("regs:17179869185 grid:1,210453397508,0 block:x"), &r);
    assert_int_equal(r.registers_per_thread, 0);
    assert_int_equal(r.grid[1], 1);
    assert_int_equal(r.block[0], 1);
}

/* Real TF 2.4 GPU profile: counts match an independent walk of the file. */
/* XProf's xplane_to_op_metrics_db_test DeviceOpMetricsDb: TF-op kernels
 * on two streams of one GPU, named "<tf op>/<kernel>", typed by the TF op.
 * The streams overlap, so their op time (46 us) exceeds the plane's span
 * (100..130 us): XProf's total is the op time (SetTotalTimePs) and IDLE 0,
 * not the span. */
static void test_device_streams_overlap(void **state) {
    (void)state;
    tx_space *s = tx_new();
    int pl = tx_plane(s, "/device:GPU:0");
    int st1 = tx_line(s, pl, 10, "Stream #10", 0), st2 = tx_line(s, pl, 20, "Stream #20", 0);
    static const struct { int line; const char *kernel, *tf_op; int64_t start_ns, dur_ns; } ev[] = {
        {1, "kernel1", "TfOp1:TfOp1", 100000, 8000}, {1, "kernel2", "TfOp1:TfOp1", 110000, 10000},
        {2, "kernel1", "TfOp1:TfOp1", 100000, 8000}, {2, "kernel2", "TfOp1:TfOp1", 110000, 10000},
        {2, "kernel3", "TfOp2:TfOp2", 120000, 10000},
    };
    for (size_t i = 0; i < sizeof ev / sizeof ev[0]; i++) {
        tx_event_t *e = tx_event(s, pl, ev[i].line == 1 ? st1 : st2, ev[i].kernel,
                                 ev[i].start_ns * 1000, ev[i].dur_ns * 1000);
        tx_ev_ref(s, pl, e, "tf_op", ev[i].tf_op);
    }
    xpv_profile *p = tx_decode(s);
    xpv_op_metrics *m = om_build1(p);
    const xpv_op_metrics_db *d = &m->device;
    assert_int_equal(d->n, 4); /* kernel1, kernel2, kernel3, IDLE */
    assert_int_equal(d->total_op_time_ps, (8000 * 2 + 10000 * 2 + 10000) * 1000LL);
    assert_int_equal(d->total_time_ps, d->total_op_time_ps); /* > span 30 us */
    const xpv_op_metric *k1 = om_find_op(d, "TfOp1/kernel1");
    assert_non_null(k1);
    assert_string_equal(k1->category, "TfOp1");
    assert_int_equal(k1->occurrences, 2);
    assert_int_equal(k1->time_ps, 16000 * 1000LL);
    assert_int_equal(om_find_op(d, "TfOp1/kernel2")->occurrences, 2);
    assert_int_equal(om_find_op(d, "TfOp2/kernel3")->time_ps, 10000 * 1000LL);
    const xpv_op_metric *idle = om_find_op(d, "IDLE");
    assert_string_equal(idle->category, "IDLE");
    assert_int_equal(idle->time_ps, 0);
    assert_true(xpv_op_metrics_idle_ratio(d) == 0.0);
    xpv_op_metrics_free(m);
    xpv_profile_free(p);
}

static void eager_kernel(tx_space *s, int pl, int ln, const char *kernel, const char *tf_op,
                         int64_t start, int eager) {
    tx_event_t *e = tx_event(s, pl, ln, kernel, start, MS);
    tx_ev_ref(s, pl, e, "tf_op", tf_op);
    tx_ev_int(s, pl, e, "is_eager", eager);
}

/* Device is_eager as XProf decides it: a device op takes the flag of its
 * first execution on each GPU plane (EnterOpMetadata runs once per op and
 * plane), OR-ed over planes (CombineOpMetrics); the TF-level op takes the
 * flag of the last of its device ops in the device db's order, the order
 * they first ran (UpdateTfOpMetricsWithDeviceOpMetrics sets, not ORs). */
static void test_device_eager(void **state) {
    (void)state;
    for (int planes = 1; planes <= 2; planes++) {
        int g0, l0;
        tx_space *s = tx_new_line("/device:GPU:0", 1, "Stream #1", &g0, &l0);
        eager_kernel(s, g0, l0, "k", "a:MatMul", 0, 0);
        eager_kernel(s, g0, l0, "k", "a:MatMul", 2 * MS, 1); /* not its first on GPU:0 */
        eager_kernel(s, g0, l0, "x1", "b:AddV2", 4 * MS, 1);  /* b/x1 first: eager */
        eager_kernel(s, g0, l0, "x2", "b:AddV2", 6 * MS, 0);  /* b/x2 last: not */
        eager_kernel(s, g0, l0, "y2", "c:Relu", 8 * MS, 0);   /* c/y2 first: not */
        eager_kernel(s, g0, l0, "y1", "c:Relu", 10 * MS, 1);  /* c/y1 last: eager */
        if (planes == 2) {
            int g1 = tx_plane(s, "/device:GPU:1");
            eager_kernel(s, g1, tx_line(s, g1, 1, "Stream #1", 0), "k", "a:MatMul", 0, 1);
        }
        xpv_profile *p = tx_decode(s);
        xpv_op_metrics *m = om_build1(p);
        const xpv_op_metric *k = om_find_op(&m->device, "a/k");
        assert_non_null(k);
        assert_int_equal(k->occurrences, planes == 2 ? 3 : 2);
        assert_int_equal(k->is_eager, planes == 2);
        assert_int_equal(om_find_op(&m->device, "b/x1")->is_eager, 1);
        assert_int_equal(om_find_op(&m->device, "b/x2")->is_eager, 0);
        assert_int_equal(om_find_op(&m->device_tf, "a")->is_eager, planes == 2);
        assert_int_equal(om_find_op(&m->device_tf, "b")->is_eager, 0);
        assert_int_equal(om_find_op(&m->device_tf, "c")->is_eager, 1);
        xpv_op_metrics_free(m);
        xpv_profile_free(p);
    }
}

/* The row named `name` with program id (XProf hlo_module_id) `pid`. */
static const xpv_op_metric *find_op_pid(const xpv_op_metrics_db *db, const char *name,
                                        int64_t pid) {
    for (size_t i = 0; i < db->n; i++)
        if (!strcmp(db->ops[i].name, name) && db->ops[i].program_id == pid) return &db->ops[i];
    return NULL;
}

static tx_event_t *stage_event(tx_space *s, int pl, int ln, const char *name, int64_t off,
                               int64_t dur, int64_t stage, const char *cat) {
    tx_event_t *e = tx_event(s, pl, ln, name, off, dur);
    tx_ev_int(s, pl, e, "input_pipeline_stage_id", stage);
    if (cat) tx_ev_str(s, pl, e, "input_pipeline_stage_category", cat);
    return e;
}

/* XProf's xplane_to_op_metrics_db_test HostXPlaneWithInputPipelineTracemeOps:
 * input-pipeline TraceMes are ops keyed by their stage id (XProf's
 * hlo_module_id), typed by their stage category, even where two share a
 * name; nesting and IDLE as for any host op. */
static void test_host_input_pipeline_stages(void **state) {
    (void)state;
    int pl, ln;
    tx_space *s = tx_new_line("/host:CPU", 10, "tf_data", &pl, &ln);
    stage_event(s, pl, ln, "ShuffleMapDataset", 100000000, 10000000, 1, "preprocessing");
    stage_event(s, pl, ln, "MapMapDataset", 100000000, 8000000, 2, "preprocessing");
    stage_event(s, pl, ln, "ShuffleMapDataset", 120000000, 10000000, 3, "preprocessing");
    stage_event(s, pl, ln, "MapMapDataset", 120000000, 8000000, 4, "preprocessing");
    xpv_profile *p = tx_decode(s);
    xpv_op_metrics *m = om_build1(p);
    const xpv_op_metrics_db *h = &m->host;
    assert_int_equal(h->n, 5); /* 4 stages + IDLE */
    static const struct { const char *name; int64_t pid, time, self; } want[] = {
        {"ShuffleMapDataset", 1, 10000000, 2000000}, {"MapMapDataset", 2, 8000000, 8000000},
        {"ShuffleMapDataset", 3, 10000000, 2000000}, {"MapMapDataset", 4, 8000000, 8000000},
    };
    for (size_t i = 0; i < 4; i++) {
        const xpv_op_metric *o = find_op_pid(h, want[i].name, want[i].pid);
        assert_non_null(o);
        assert_string_equal(o->category, "preprocessing");
        assert_int_equal(o->occurrences, 1);
        assert_int_equal(o->time_ps, want[i].time);
        assert_int_equal(o->self_time_ps, want[i].self);
    }
    assert_int_equal(h->total_time_ps, 30000000);
    assert_int_equal(h->total_op_time_ps, 20000000);
    assert_int_equal(om_find_op(h, "IDLE")->self_time_ps, 10000000);
    xpv_op_metrics_free(m);
    xpv_profile_free(p);
}

/* Stage edge cases (CollectTfOpsFromHostThreadsXPlane,
 * CollectTfActivities): a stage id without a category is no op at all
 * (not even by its name); an empty category parses the name as usual; the
 * first event of a stage id names every event of that id; an empty tf_op
 * stat is no op.  Stage ids and metadata ids share XProf's one map: an
 * event without a stage whose metadata id is a stage id already taken
 * counts as that stage's op. */
static void test_host_input_pipeline_edges(void **state) {
    (void)state;
    int pl, ln;
    tx_space *s = tx_new_line("/host:CPU", 10, "tf_data", &pl, &ln);
    /* Metadata ids 1.. in order of first use below. */
    stage_event(s, pl, ln, "x:MatMul", 0, MS, 105, NULL);                      /* 1: no op */
    stage_event(s, pl, ln, "Iterator::Map", 2 * MS, MS, 106, "");              /* 2: Dataset */
    stage_event(s, pl, ln, "first", 4 * MS, MS, 107, "read");                  /* 3 */
    stage_event(s, pl, ln, "second", 6 * MS, 2 * MS, 107, "preprocessing");  /* 4: "first" */
    tx_event(s, pl, ln, "y:Relu", 9 * MS, MS);                                 /* 5: by name */
    tx_ev_str(s, pl, tx_event(s, pl, ln, "Custom", 11 * MS, MS), "tf_op", ""); /* 6: no op */
    stage_event(s, pl, ln, "st8", 13 * MS, MS, 8, "enqueue");                  /* 7 */
    tx_event(s, pl, ln, "z:Relu", 15 * MS, MS);                  /* 8: id 8 is stage st8's */
    assert_int_equal(tx_event_meta(s, pl, "z:Relu"), 8);
    xpv_profile *p = tx_decode(s);
    xpv_op_metrics *m = om_build1(p);
    const xpv_op_metrics_db *h = &m->host;
    assert_null(om_find_op(h, "x"));
    assert_null(om_find_op(h, "x:MatMul"));
    assert_null(om_find_op(h, "second"));
    assert_null(om_find_op(h, "z"));
    assert_null(om_find_op(h, ""));
    const xpv_op_metric *it = find_op_pid(h, "Iterator::Map", 106);
    assert_non_null(it);
    assert_string_equal(it->category, "Dataset");
    const xpv_op_metric *f = find_op_pid(h, "first", 107);
    assert_non_null(f);
    assert_string_equal(f->category, "read");
    assert_int_equal(f->occurrences, 2);
    assert_int_equal(f->time_ps, 3 * MS);
    const xpv_op_metric *y = find_op_pid(h, "y", 0);
    assert_non_null(y);
    assert_string_equal(y->category, "Relu");
    const xpv_op_metric *st8 = find_op_pid(h, "st8", 8);
    assert_non_null(st8);
    assert_string_equal(st8->category, "enqueue");
    assert_int_equal(st8->occurrences, 2);
    assert_int_equal(h->n, 5); /* Iterator::Map, first, y, st8, IDLE */
    /* Activities span 2..16 ms (neither the category-less stage nor the
     * empty tf_op is one); ops 1 + 3 + 1 + 2 ms. */
    assert_int_equal(h->total_time_ps, 14 * MS);
    assert_int_equal(h->total_op_time_ps, 7 * MS);
    assert_int_equal(om_find_op(h, "IDLE")->self_time_ps, 7 * MS);
    xpv_op_metrics_free(m);
    xpv_profile_free(p);
}

static void test_real_gpu_file(void **state) {
    (void)state;
    TU_SKIP_NO_SHARED();
    xpv_profile *p = tx_decode_real_gpu_file();
    xpv_op_metrics *m = om_build1(p);
    uint64_t events = 0, total_ns = 0;
    for (uint32_t i = 0; i < p->nplanes; i++) {
        const xpv_plane *pl = &p->planes[i];
        if (!xpv_str_has_prefix(pl->name, "/device:GPU:")) continue;
        int32_t kd = xpv_stat_id(pl, "kernel_details");
        for (uint32_t l = 0; l < pl->nlines; l++) {
            const xpv_line *ln = &pl->lines[l];
            if (xpv_line_is_derived(ln)) continue;
            for (uint32_t k = 0; k < ln->nevents; k++) {
                xpv_stat st;
                const xpv_event *ev = &ln->events[k];
                if (ev->dur_ps < 1000 || kd < 0) continue;
                if (!xpv_event_stat(pl, ln, ev, kd, &st) || st.kind != XPV_STAT_STR ||
                    !st.v.s.len)
                    continue;
                events++;
                total_ns += (uint64_t)ev->dur_ps / 1000;
            }
        }
    }
    assert_true(events > 0);
    assert_int_equal(m->kernel_events, events);
    assert_int_equal(m->kernel_total_ns, total_ns);
    assert_true(m->nkernels > 0 && m->nkernels <= 1000);
    for (size_t i = 1; i < m->nkernels; i++)
        assert_true(m->kernels[i - 1].total_duration_ns >= m->kernels[i].total_duration_ns);
    assert_true(m->host.n > 10);
    assert_true(m->device_tf.n > 10);
    assert_true(m->host.total_time_ps > 0 && m->device.total_time_ps > 0);
    for (size_t i = 1; i < m->host.n; i++)
        assert_true(m->host.ops[i - 1].self_time_ps >= m->host.ops[i].self_time_ps);
    xpv_op_metrics_free(m);
    xpv_profile_free(p);
}

/* One HLO op's kernels counted straight from the planes. */
typedef struct hlo_count {
    int64_t program_id;
    char name[256];
    int64_t kernels;
} hlo_count;

/* Every kernel event carrying an hlo_op stat on the GPU planes of `p`,
 * counted per (program_id, op name after its last "::"): the occurrences
 * the device op database must show (issue 29: consecutive kernels of one
 * op were one occurrence).  Returns the number of ops; *out malloc'd. */
static size_t count_hlo_kernels(const xpv_profile *p, hlo_count **out) {
    hlo_count *v = NULL;
    size_t n = 0, cap = 0;
    for (uint32_t i = 0; i < p->nplanes; i++) {
        const xpv_plane *pl = &p->planes[i];
        if (!xpv_str_has_prefix(pl->name, "/device:GPU:")) continue;
        int32_t ho = xpv_stat_id(pl, "hlo_op"), pid = xpv_stat_id(pl, "program_id");
        for (uint32_t l = 0; ho >= 0 && l < pl->nlines; l++) {
            const xpv_line *ln = &pl->lines[l];
            if (xpv_line_is_derived(ln)) continue;
            for (uint32_t k = 0; k < ln->nevents; k++) {
                xpv_stat st, sp;
                const xpv_event *ev = &ln->events[k];
                if (!xpv_event_stat(pl, ln, ev, ho, &st) || st.kind != XPV_STAT_STR ||
                    !st.v.s.len)
                    continue;
                int64_t prog = 0;
                if (pid >= 0 && xpv_event_stat(pl, ln, ev, pid, &sp)) xpv_stat_as_int(&sp, &prog);
                const char *s = st.v.s.ptr;
                size_t len = st.v.s.len;
                for (size_t c = len; c >= 2; c--)
                    if (s[c - 1] == ':' && s[c - 2] == ':') {
                        s += c;
                        len -= c;
                        break;
                    }
                char name[256];
                snprintf(name, sizeof name, "%.*s", (int)len, s);
                size_t j = 0;
                while (j < n && (v[j].program_id != prog || strcmp(v[j].name, name))) j++;
                if (j == n) {
                    if (n == cap) v = realloc(v, (cap = cap ? cap * 2 : 64) * sizeof *v);
                    v[n] = (hlo_count){prog, "", 0};
                    snprintf(v[n].name, sizeof v[n].name, "%s", name);
                    n++;
                }
                v[j].kernels++;
            }
        }
    }
    *out = v;
    return n;
}

static void check_hlo_occurrences(xpv_profile *p, const char *what) {
    hlo_count *c;
    size_t n = count_hlo_kernels(p, &c);
    xpv_op_metrics *m = om_build1(p);
    const xpv_op_metrics_db *d = &m->device;
    int64_t kernels = 0;
    for (size_t j = 0; j < n; j++) {
        const xpv_op_metric *op = NULL;
        for (size_t i = 0; i < d->n && !op; i++)
            if (d->ops[i].program_id == c[j].program_id && !strcmp(d->ops[i].name, c[j].name))
                op = &d->ops[i];
        if (!op) fail_msg("%s: no row for %s of program %lld", what, c[j].name,
                          (long long)c[j].program_id);
        if (op->occurrences != c[j].kernels)
            fail_msg("%s: %s of program %lld: %lld occurrences, the file has %lld kernels", what,
                     c[j].name, (long long)c[j].program_id, (long long)op->occurrences,
                     (long long)c[j].kernels);
        kernels += c[j].kernels;
    }
    print_message("%s: %zu HLO ops, %lld kernels, each op's occurrences = its kernels\n", what,
                  n, (long long)kernels);
    assert_true(n > 0);
    free(c);
    xpv_op_metrics_free(m);
    xpv_profile_free(p);
}

/* Every JAX GPU profile we hold (tests/data/device, ../shared's AMD ones):
 * occurrences per HLO op = the kernels the file has for it. */
static void test_real_hlo_occurrences(void **state) {
    (void)state;
    const char *src = getenv("XPV_SRC");
    char path[4096];
    static const char *const dev[] = {"jax_gpu_mlp.xplane.pb", "jax_gpu_mlp_nocmdbuf.xplane.pb"};
    for (size_t i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/tests/data/device/%s", src ? src : ".", dev[i]);
        check_hlo_occurrences(tx_decode_file(path), dev[i]);
    }
    if (!tu_shared_dir()) {
        print_message("SKIP: ../shared not present (the AMD JAX profiles)\n");
        return;
    }
    char **files = tu_real_files("AMD-AGI-TraceLens/plugins/profile", ".xplane.pb");
    size_t nf = 0;
    for (char **f = files; f && *f; f++, nf++) check_hlo_occurrences(tx_decode_file(*f), *f);
    assert_true(nf >= 4);
    tu_free_list(files);
}

TU_MAIN(cmocka_unit_test(test_host_self_time_and_idle),
        cmocka_unit_test(test_real_hlo_occurrences),
        cmocka_unit_test(test_device_db),
        cmocka_unit_test(test_kernel_reports),
        cmocka_unit_test(test_two_hosts_sum),
        cmocka_unit_test(test_host_event_order),
        cmocka_unit_test(test_kernel_grouping_by_value),
        cmocka_unit_test(test_parse_helpers),
        cmocka_unit_test(test_host_input_pipeline_stages),
        cmocka_unit_test(test_device_streams_overlap),
        cmocka_unit_test(test_device_eager),
        cmocka_unit_test(test_host_input_pipeline_edges),
        cmocka_unit_test(test_real_gpu_file))
