/*
 * test_analysis_group_events.c - the grouping pass (analysis/
 * group_events.c) on hand-built XSpaces carrying the facts of XLA's
 * group_events_test.cc, and on the real JAX GPU captures in
 * tests/data/device.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "group_events.h"
#include "steps.h"
#include "testutil.h"
#include "tool_xspace.h"

#define TF_EXECUTOR 2 /* a context type */

/* Group id of event `ev` of line `ln` in the plane named `plane`. */
static int32_t gid_of(const xpv_profile *p, const xpv_groups *g, const char *plane, uint32_t ln,
                      uint32_t ev) {
    for (uint32_t k = 0; k < p->nplanes; k++)
        if (xpv_str_eq(p->planes[k].name, plane)) return xpv_group_of(g, k, ln, ev);
    fail_msg("no plane %s", plane);
    return -2;
}

/* Host: a root (made by `root`) over FunctionRun producing for an
 * ExecutorState::Process on another thread, which launches "matmul"; the
 * device runs the kernel of the same correlation id. */
static xpv_profile *gpu_trace(int legacy, int64_t consumer_id) {
    tx_space *s = tx_new();
    int h = tx_plane(s, "/host:CPU");
    tx_plane_int(s, h, "process_id", 1);
    int main_thread = tx_line(s, h, 0, "main", 0);
    tx_event_t *e;
    if (legacy) {
        e = tx_event(s, h, main_thread, "TraceContext", 0, 100);
        tx_ev_str(s, h, e, "graph_type", "train");
        tx_ev_int(s, h, e, "step_num", 123);
    } else {
        e = tx_event(s, h, main_thread, "train", 0, 100);
        tx_ev_int(s, h, e, "step_num", 123);
        tx_ev_int(s, h, e, "_r", 1);
    }
    e = tx_event(s, h, main_thread, "FunctionRun", 10, 90);
    tx_ev_int(s, h, e, "id", 0);
    tx_ev_int(s, h, e, "_pt", TF_EXECUTOR);
    tx_ev_int(s, h, e, "_p", 0);
    int exec_thread = tx_line(s, h, 1, "executor", 0);
    e = tx_event(s, h, exec_thread, "ExecutorState::Process", 20, 80);
    tx_ev_int(s, h, e, "id", 0);
    tx_ev_int(s, h, e, "_ct", TF_EXECUTOR);
    tx_ev_int(s, h, e, "_c", consumer_id);
    e = tx_event(s, h, exec_thread, "matmul", 30, 70);
    tx_ev_int(s, h, e, "correlation_id", 100);
    int d = tx_plane(s, "/device:GPU:0");
    int stream = tx_line(s, d, 0, "stream", 0);
    e = tx_event(s, d, stream, "matmul", 200, 300);
    tx_ev_int(s, d, e, "correlation_id", 100);
    return tx_decode(s);
}

/* GroupGpuTraceTest: `_r` root, nesting, producer/consumer, launch ->
 * kernel through correlation_id; one group "train 123". */
static void test_gpu_trace_root(void **state) {
    (void)state;
    xpv_profile *p = gpu_trace(0, 0);
    xpv_groups *g = xpv_group_events(p);
    assert_int_equal(g->source, XPV_GROUPS_COMPUTED);
    assert_int_equal(g->ngroups, 1);
    assert_string_equal(g->groups[0].name, "train 123");
    assert_true(g->groups[0].step_name);
    assert_int_equal(gid_of(p, g, "/host:CPU", 0, 0), 0);
    assert_int_equal(gid_of(p, g, "/host:CPU", 0, 1), 0);
    assert_int_equal(gid_of(p, g, "/host:CPU", 1, 0), 0); /* through _p/_c */
    assert_int_equal(gid_of(p, g, "/host:CPU", 1, 1), 0); /* nested */
    assert_int_equal(gid_of(p, g, "/device:GPU:0", 0, 0), 0); /* correlation_id */
    assert_string_equal(xpv_groups_step_name(g, 0, 0, 0), "train 123");
    assert_null(xpv_groups_step_name(g, 0, 0, 1));
    xpv_groups_free(g);
    xpv_profile_free(p);
}

/* GroupGpuTraceLegacyRootTest: TraceContext is a level-1 root; the name
 * takes graph_type. */
static void test_gpu_trace_legacy_root(void **state) {
    (void)state;
    xpv_profile *p = gpu_trace(1, 0);
    xpv_groups *g = xpv_group_events(p);
    assert_int_equal(g->ngroups, 1);
    assert_string_equal(g->groups[0].name, "train 123");
    assert_int_equal(gid_of(p, g, "/device:GPU:0", 0, 0), 0);
    xpv_groups_free(g);
    xpv_profile_free(p);
}

/* Producer and consumer ids differ: no edge, the executor's thread stays
 * ungrouped (and so does the kernel it launches). */
static void test_context_mismatch(void **state) {
    (void)state;
    xpv_profile *p = gpu_trace(0, 7);
    xpv_groups *g = xpv_group_events(p);
    assert_int_equal(g->ngroups, 1);
    assert_int_equal(gid_of(p, g, "/host:CPU", 0, 1), 0);
    assert_int_equal(gid_of(p, g, "/host:CPU", 1, 0), -1);
    assert_int_equal(gid_of(p, g, "/host:CPU", 1, 1), -1);
    assert_int_equal(gid_of(p, g, "/device:GPU:0", 0, 0), -1);
    xpv_groups_free(g);
    xpv_profile_free(p);
}

/* Producer and consumer in processes of different process_id: no edge. */
static void test_context_other_process(void **state) {
    (void)state;
    tx_space *s = tx_new();
    int a = tx_plane(s, "/host:CPU");
    tx_plane_int(s, a, "process_id", 1);
    int la = tx_line(s, a, 0, "main", 0);
    tx_event_t *e = tx_event(s, a, la, "train", 0, 100);
    tx_ev_int(s, a, e, "_r", 1);
    e = tx_event(s, a, la, "produce", 10, 10);
    tx_ev_int(s, a, e, "_pt", 5);
    tx_ev_int(s, a, e, "_p", 9);
    int b = tx_plane(s, "/host:other");
    tx_plane_int(s, b, "process_id", 2);
    int lb = tx_line(s, b, 0, "worker", 0);
    e = tx_event(s, b, lb, "consume", 30, 10);
    tx_ev_int(s, b, e, "_ct", 5);
    tx_ev_int(s, b, e, "_c", 9);
    int lc = tx_line(s, a, 1, "worker", 0);
    e = tx_event(s, a, lc, "consume", 30, 10);
    tx_ev_int(s, a, e, "_ct", 5);
    tx_ev_int(s, a, e, "_c", 9);
    xpv_profile *p = tx_decode(s);
    xpv_groups *g = xpv_group_events(p);
    assert_int_equal(gid_of(p, g, "/host:CPU", 1, 0), 0);
    assert_int_equal(gid_of(p, g, "/host:other", 0, 0), -1);
    xpv_groups_free(g);
    xpv_profile_free(p);
}

/* GroupTensorFlowLoopTest: the iterations of a TF loop are the groups; the
 * name of an ExecutorState::Process root is its iter_num. */
static void test_tf_loop(void **state) {
    (void)state;
    tx_space *s = tx_new();
    int h = tx_plane(s, "/host:CPU");
    tx_plane_int(s, h, "process_id", 1);
    int ln = tx_line(s, h, 0, "executor", 0);
    tx_event_t *e = tx_event(s, h, ln, "ExecutorState::Process", 5, 10);
    tx_ev_int(s, h, e, "id", 0);
    tx_ev_int(s, h, e, "iter_num", 10);
    tx_ev_int(s, h, e, "_ct", TF_EXECUTOR);
    tx_ev_int(s, h, e, "_c", 0);
    e = tx_event(s, h, ln, "ExecutorState::Process", 20, 80);
    tx_ev_int(s, h, e, "id", 0);
    tx_ev_int(s, h, e, "iter_num", 10);
    tx_ev_int(s, h, e, "_ct", TF_EXECUTOR);
    tx_ev_int(s, h, e, "_c", 0);
    e = tx_event(s, h, ln, "matmul", 30, 70);
    tx_ev_int(s, h, e, "correlation_id", 100);
    int d = tx_plane(s, "/device:GPU:0");
    int stream = tx_line(s, d, 0, "stream", 0);
    e = tx_event(s, d, stream, "matmul", 200, 300);
    tx_ev_int(s, d, e, "correlation_id", 100);
    xpv_profile *p = tx_decode(s);
    xpv_groups *g = xpv_group_events(p);
    assert_int_equal(g->ngroups, 1);
    assert_string_equal(g->groups[0].name, "10");
    assert_false(g->groups[0].step_name); /* implicit root */
    assert_int_equal(gid_of(p, g, "/host:CPU", 0, 0), 0);
    assert_int_equal(gid_of(p, g, "/host:CPU", 0, 1), 0);
    assert_int_equal(gid_of(p, g, "/host:CPU", 0, 2), 0);
    assert_int_equal(gid_of(p, g, "/device:GPU:0", 0, 0), 0);
    xpv_groups_free(g);
    xpv_profile_free(p);
}

/* GroupMultipleTensorFlowLoopsTest: group ids follow the first event of
 * each iteration in time. */
static void test_multiple_tf_loops(void **state) {
    (void)state;
    tx_space *s = tx_new();
    int h = tx_plane(s, "/host:CPU");
    tx_plane_int(s, h, "process_id", 1);
    int l0 = tx_line(s, h, 0, "first", 0);
    const int64_t starts0[2] = {220, 320}, iters0[2] = {0, 1};
    for (int i = 0; i < 2; i++) {
        tx_event_t *e = tx_event(s, h, l0, "ExecutorState::Process", starts0[i], 80);
        tx_ev_int(s, h, e, "id", 1);
        tx_ev_int(s, h, e, "iter_num", iters0[i]);
    }
    int l1 = tx_line(s, h, 1, "second", 0);
    const int64_t starts1[2] = {20, 120}, iters1[2] = {10, 11};
    for (int i = 0; i < 2; i++) {
        tx_event_t *e = tx_event(s, h, l1, "ExecutorState::Process", starts1[i], 80);
        tx_ev_int(s, h, e, "id", 0);
        tx_ev_int(s, h, e, "iter_num", iters1[i]);
    }
    xpv_profile *p = tx_decode(s);
    xpv_groups *g = xpv_group_events(p);
    assert_int_equal(g->ngroups, 4);
    assert_string_equal(g->groups[0].name, "10");
    assert_string_equal(g->groups[1].name, "11");
    assert_string_equal(g->groups[2].name, "0");
    assert_string_equal(g->groups[3].name, "1");
    assert_int_equal(gid_of(p, g, "/host:CPU", 0, 1), 3);
    xpv_groups_free(g);
    xpv_profile_free(p);
}

/* A TF function or session run only (iteration 0 of one id) is no loop. */
static void test_no_loop_for_iteration_zero(void **state) {
    (void)state;
    int h, ln;
    tx_space *s = tx_new_line("/host:CPU", 0, "t", &h, &ln);
    tx_event_t *e = tx_event(s, h, ln, "ExecutorState::Process", 0, 80);
    tx_ev_int(s, h, e, "id", 3);
    tx_ev_int(s, h, e, "iter_num", 0);
    xpv_profile *p = tx_decode(s);
    xpv_groups *g = xpv_group_events(p);
    assert_int_equal(g->ngroups, 0);
    assert_int_equal(g->source, XPV_GROUPS_NONE);
    assert_int_equal(gid_of(p, g, "/host:CPU", 0, 0), -1);
    xpv_groups_free(g);
    xpv_profile_free(p);
}

/* AsyncEventTest: an `_a` event is neither grouped nor a parent. */
static void test_async_event(void **state) {
    (void)state;
    int h, ln;
    tx_space *s = tx_new_line("/host:CPU", 0, "t", &h, &ln);
    tx_event_t *e = tx_event(s, h, ln, "parent", 0, 100);
    tx_ev_int(s, h, e, "_r", 1);
    e = tx_event(s, h, ln, "async", 10, 200);
    tx_ev_int(s, h, e, "_a", 1);
    tx_event(s, h, ln, "child", 20, 80);
    xpv_profile *p = tx_decode(s);
    xpv_groups *g = xpv_group_events(p);
    assert_int_equal(gid_of(p, g, "/host:CPU", 0, 0), 0);
    assert_int_equal(gid_of(p, g, "/host:CPU", 0, 1), -1);
    assert_int_equal(gid_of(p, g, "/host:CPU", 0, 2), 0);
    xpv_groups_free(g);
    xpv_profile_free(p);
}

/* BatchingSessionTest: the level-2 ProcessBatch root groups first; the
 * two level-1 requests still get their own groups. */
static void test_batching_session(void **state) {
    (void)state;
    tx_space *s = tx_new();
    int h = tx_plane(s, "/host:CPU");
    tx_plane_int(s, h, "process_id", 1);
    int req = tx_line(s, h, 0, "request", 0);
    for (int i = 0; i < 2; i++) {
        tx_event_t *e = tx_event(s, h, req, "BatchingSessionRun", 200 * i, 100);
        tx_ev_int(s, h, e, "_r", 1);
        e = tx_event(s, h, req, "Schedule", 200 * i, 100);
        tx_ev_int(s, h, e, "_pt", 7);
        tx_ev_int(s, h, e, "_p", 123);
    }
    int batch = tx_line(s, h, 1, "batch", 0);
    tx_event_t *e = tx_event(s, h, batch, "ProcessBatch", 200, 100);
    tx_ev_int(s, h, e, "_ct", 7);
    tx_ev_int(s, h, e, "_c", 123);
    tx_ev_int(s, h, e, "_r", 2);
    xpv_profile *p = tx_decode(s);
    xpv_groups *g = xpv_group_events(p);
    assert_int_equal(g->ngroups, 3);
    assert_int_equal(gid_of(p, g, "/host:CPU", 1, 0), 0);
    assert_int_equal(gid_of(p, g, "/host:CPU", 0, 0), 1);
    assert_int_equal(gid_of(p, g, "/host:CPU", 0, 1), 1);
    assert_int_equal(gid_of(p, g, "/host:CPU", 0, 2), 2);
    assert_int_equal(gid_of(p, g, "/host:CPU", 0, 3), 2);
    xpv_groups_free(g);
    xpv_profile_free(p);
}

/* Implicit roots (FunctionRun, SessionRun, RunGraph) are named by their
 * number only and get no step_name; a nested root of the same level is
 * not a group of its own. */
static void test_implicit_root_names(void **state) {
    (void)state;
    int h, ln;
    tx_space *s = tx_new_line("/host:CPU", 0, "t", &h, &ln);
    tx_event_t *e = tx_event(s, h, ln, "SessionRun", 0, 100);
    tx_ev_int(s, h, e, "_r", 1);
    tx_ev_int(s, h, e, "step_num", 5);
    e = tx_event(s, h, ln, "RunGraph", 10, 50);
    tx_ev_int(s, h, e, "_r", 1);
    e = tx_event(s, h, ln, "FunctionRun", 200, 100);
    tx_ev_int(s, h, e, "_r", 1);
    e = tx_event(s, h, ln, "user_step", 400, 100);
    tx_ev_int(s, h, e, "_r", 1);
    xpv_profile *p = tx_decode(s);
    xpv_groups *g = xpv_group_events(p);
    assert_int_equal(g->ngroups, 3);
    assert_string_equal(g->groups[0].name, "5");
    assert_false(g->groups[0].step_name);
    assert_int_equal(gid_of(p, g, "/host:CPU", 0, 1), 0);
    assert_string_equal(g->groups[1].name, "1"); /* the group id */
    assert_false(g->groups[1].step_name);
    assert_string_equal(g->groups[2].name, "user_step 2");
    assert_true(g->groups[2].step_name);
    xpv_groups_free(g);
    xpv_profile_free(p);
}

/* The kernel takes the group of the last host event with its
 * correlation_id; a root on a higher level groups first. */
static void test_launch_kernel_levels(void **state) {
    (void)state;
    int h, ln;
    tx_space *s = tx_new_line("/host:CPU", 0, "t", &h, &ln);
    tx_event_t *e = tx_event(s, h, ln, "train", 0, 100);
    tx_ev_int(s, h, e, "_r", 1);
    tx_ev_int(s, h, e, "step_num", 1);
    e = tx_event(s, h, ln, "cuLaunchKernel", 10, 10);
    tx_ev_int(s, h, e, "correlation_id", 7);
    e = tx_event(s, h, ln, "train", 200, 100);
    tx_ev_int(s, h, e, "_r", 1);
    tx_ev_int(s, h, e, "step_num", 2);
    e = tx_event(s, h, ln, "cuLaunchKernel", 210, 10);
    tx_ev_int(s, h, e, "correlation_id", 7);
    int d = tx_plane(s, "/device:GPU:0");
    int stream = tx_line(s, d, 0, "stream", 0);
    e = tx_event(s, d, stream, "kernel", 400, 10);
    tx_ev_int(s, d, e, "correlation_id", 7);
    xpv_profile *p = tx_decode(s);
    xpv_groups *g = xpv_group_events(p);
    assert_int_equal(g->ngroups, 2);
    assert_string_equal(g->groups[0].name, "train 1");
    assert_string_equal(g->groups[1].name, "train 2");
    assert_int_equal(gid_of(p, g, "/device:GPU:0", 0, 0), 1);
    xpv_groups_free(g);
    xpv_profile_free(p);
}

/* ModuleRootEventTest: a TPU core groups by its Steps line; the events of
 * its other lines take the overlapping step's group. */
static void test_tpu_module_root(void **state) {
    (void)state;
    int d, steps;
    tx_space *s = tx_new_line("/device:TPU:0", 0, "Steps", &d, &steps);
    tx_event_t *e = tx_event(s, d, steps, "1", 100, 200);
    tx_ev_int(s, d, e, "step_num", 1);
    int mods = tx_line(s, d, 1, "XLA Modules", 0);
    tx_event(s, d, mods, "module", 105, 194);
    int ops = tx_line(s, d, 2, "XLA Ops", 0);
    tx_event(s, d, ops, "matmul", 110, 190);
    tx_event(s, d, ops, "late", 400, 10);
    xpv_profile *p = tx_decode(s);
    xpv_groups *g = xpv_group_events(p);
    assert_int_equal(g->ngroups, 1);
    assert_string_equal(g->groups[0].name, "1");
    assert_false(g->groups[0].step_name);
    assert_int_equal(gid_of(p, g, "/device:TPU:0", 0, 0), 0);
    assert_int_equal(gid_of(p, g, "/device:TPU:0", 1, 0), 0);
    assert_int_equal(gid_of(p, g, "/device:TPU:0", 2, 0), 0);
    assert_int_equal(gid_of(p, g, "/device:TPU:0", 2, 1), -1);
    xpv_groups_free(g);
    xpv_profile_free(p);
}

/* Without a Steps line the XLA Modules line groups. */
static void test_tpu_module_line(void **state) {
    (void)state;
    int d, mods;
    tx_space *s = tx_new_line("/device:TPU:0", 1, "XLA Modules", &d, &mods);
    tx_event(s, d, mods, "jit_f(1)", 0, 100);
    tx_event(s, d, mods, "jit_f(1)", 200, 100);
    int ops = tx_line(s, d, 2, "XLA Ops", 0);
    tx_event(s, d, ops, "a", 10, 10);
    tx_event(s, d, ops, "b", 250, 10);
    xpv_profile *p = tx_decode(s);
    xpv_groups *g = xpv_group_events(p);
    assert_int_equal(g->ngroups, 2);
    assert_string_equal(g->groups[1].name, "1");
    assert_int_equal(gid_of(p, g, "/device:TPU:0", 1, 0), 0);
    assert_int_equal(gid_of(p, g, "/device:TPU:0", 1, 1), 1);
    assert_int_equal(gid_of(p, g, "/device:TPU:0", 0, 0), 0);
    assert_int_equal(gid_of(p, g, "/device:TPU:0", 0, 1), 1);
    xpv_groups_free(g);
    xpv_profile_free(p);
}

/* Cores share ids: the k-th grouping event of every core is group k.
 * A later core's root renames the group (XProf's ProcessRootEvent), so a
 * group's root and step number are its last core's; a group only the
 * first core reaches keeps that core's. */
static void test_tpu_cores_share_ids(void **state) {
    (void)state;
    int d0, steps0;
    tx_space *s = tx_new_line("/device:TPU:0", 0, "Steps", &d0, &steps0);
    for (int k = 0; k < 3; k++) {
        tx_event_t *e = tx_event(s, d0, steps0, "step", 100 * k, 50);
        tx_ev_int(s, d0, e, "step_num", 10 + k);
    }
    int d1 = tx_plane(s, "/device:TPU:1");
    int steps1 = tx_line(s, d1, 0, "Steps", 0);
    for (int k = 0; k < 2; k++) {
        tx_event_t *e = tx_event(s, d1, steps1, "step", 100 * k + 5, 50);
        tx_ev_int(s, d1, e, "step_num", 20 + k);
    }
    int ops = tx_line(s, d1, 1, "XLA Ops", 0);
    tx_event(s, d1, ops, "fusion", 110, 10);
    xpv_profile *p = tx_decode(s);
    xpv_groups *g = xpv_group_events(p);
    assert_int_equal(g->ngroups, 3);
    const char *want[3] = {"20", "21", "12"};
    const char *core[3] = {"/device:TPU:1", "/device:TPU:1", "/device:TPU:0"};
    for (uint32_t k = 0; k < 3; k++) {
        assert_string_equal(g->groups[k].name, want[k]);
        assert_true(xpv_str_eq(p->planes[g->groups[k].plane].name, core[k]));
        assert_int_equal(g->groups[k].event, k);
        assert_int_equal(gid_of(p, g, core[k], 0, k), (int32_t)k);
    }
    assert_int_equal(gid_of(p, g, "/device:TPU:0", 0, 0), 0);
    assert_int_equal(gid_of(p, g, "/device:TPU:1", 1, 0), 1);
    xpv_groups_free(g);
    xpv_profile_free(p);
}

/* A pod's host holds many TensorCore planes: every one's lines take its
 * modules' groups (the per-plane jobs are more than the threads). */
static void test_tpu_many_cores(void **state) {
    (void)state;
    enum { CORES = 70 };
    tx_space *s = tx_new();
    for (int k = 0; k < CORES; k++) {
        char name[32];
        snprintf(name, sizeof name, "/device:TPU:%d", k);
        int d = tx_plane(s, name);
        int mods = tx_line(s, d, 1, "XLA Modules", 0);
        tx_event(s, d, mods, "jit_f(1)", 0, 100);
        tx_event(s, d, mods, "jit_f(1)", 200, 100);
        int ops = tx_line(s, d, 2, "XLA Ops", 0);
        tx_event(s, d, ops, "a", 10, 10);
        tx_event(s, d, ops, "b", 250, 10);
        tx_event(s, d, ops, "gap", 150, 10);
    }
    xpv_profile *p = tx_decode(s);
    xpv_groups *g = xpv_group_events(p);
    assert_int_equal(g->ngroups, 2);
    for (uint32_t k = 0; k < p->nplanes; k++) {
        assert_int_equal(xpv_group_of(g, k, 1, 0), 0);
        assert_int_equal(xpv_group_of(g, k, 1, 1), 1);
        assert_int_equal(xpv_group_of(g, k, 1, 2), -1);
    }
    xpv_groups_free(g);
    xpv_profile_free(p);
}

/* A TPU module consuming a host producer's context (`_pt/_p` -> an XLA
 * Ops event's `_ct/_c`, held by the module event that covers it).
 * host_stat: 0 none, 1 `step_num` 42 on the producer, 2 a `_r` root
 * "train" over the producer. */
static xpv_profile *tpu_with_host_producer(int host_stat) {
    int h, t;
    tx_space *s = tx_new_line("/host:CPU", 0, "python", &h, &t);
    tx_event_t *e;
    if (host_stat == 2) {
        e = tx_event(s, h, t, "train", 0, 100);
        tx_ev_int(s, h, e, "_r", 1);
        tx_ev_int(s, h, e, "step_num", 3);
    }
    e = tx_event(s, h, t, "ExecuteHelper", 10, 50);
    tx_ev_int(s, h, e, "_pt", 5);
    tx_ev_int(s, h, e, "_p", 77);
    if (host_stat == 1) tx_ev_int(s, h, e, "step_num", 42);
    tx_event(s, h, t, "nested", 20, 5);
    int d = tx_plane(s, "/device:TPU:0");
    int mods = tx_line(s, d, 1, "XLA Modules", 0);
    tx_event(s, d, mods, "jit_f(1)", 200, 100);
    int ops = tx_line(s, d, 2, "XLA Ops", 0);
    e = tx_event(s, d, ops, "fusion", 210, 10);
    tx_ev_int(s, d, e, "_ct", 5);
    tx_ev_int(s, d, e, "_c", 77);
    tx_event(s, d, ops, "copy", 230, 10); /* no stats */
    int other = tx_line(s, d, 3, "XLA TraceMe", 0);
    e = tx_event(s, d, other, "trace", 240, 10);
    tx_ev_int(s, d, e, "run_id", 1);      /* a stat, not a context */
    return tx_decode(s);
}

/* The host plane takes part in a TPU profile's grouping only where it can
 * change it: a producer's step_num names the TPU group it feeds (XProf's
 * GetContextStat walks to the producer), a host root groups the module
 * through the context; without either the host is not scanned and its
 * events stay ungrouped, the module a group of its own id. */
static void test_tpu_host_producer(void **state) {
    (void)state;
    for (int host_stat = 0; host_stat < 3; host_stat++) {
        xpv_profile *p = tpu_with_host_producer(host_stat);
        xpv_groups *g = xpv_group_events(p);
        assert_int_equal(g->source, XPV_GROUPS_COMPUTED);
        assert_int_equal(g->ngroups, 1);
        const char *want[3] = {"0", "42", "train 3"};
        assert_string_equal(g->groups[0].name, want[host_stat]);
        int32_t host = host_stat == 2 ? 0 : -1;
        uint32_t first = host_stat == 2 ? 1 : 0; /* the producer's index */
        assert_int_equal(gid_of(p, g, "/host:CPU", 0, first), host);
        assert_int_equal(gid_of(p, g, "/host:CPU", 0, first + 1), host);
        for (uint32_t l = 0; l < 3; l++) assert_int_equal(gid_of(p, g, "/device:TPU:0", l, 0), 0);
        assert_int_equal(gid_of(p, g, "/device:TPU:0", 1, 1), 0);
        xpv_groups_free(g);
        xpv_profile_free(p);
    }
}

/* Stats of the event metadata count as the event's (XProf's visitor sees
 * both): a root by a metadata-level `_r`. */
static void test_metadata_stats(void **state) {
    (void)state;
    int h, ln;
    tx_space *s = tx_new_line("/host:CPU", 0, "t", &h, &ln);
    tx_event(s, h, ln, "step", 0, 100);
    tx_event(s, h, ln, "op", 10, 10);
    tx_event(s, h, ln, "step", 200, 100);
    tx_meta_int(s, h, "step", "_r", 1);
    xpv_profile *p = tx_decode(s);
    xpv_groups *g = xpv_group_events(p);
    assert_int_equal(g->ngroups, 2);
    assert_string_equal(g->groups[1].name, "step 1");
    assert_int_equal(gid_of(p, g, "/host:CPU", 0, 1), 0);
    assert_int_equal(gid_of(p, g, "/host:CPU", 0, 2), 1);
    xpv_groups_free(g);
    xpv_profile_free(p);
}

/* Files with `group_id` stats (TF 2.4 GPU) are grouped already: kept. */
static void test_file_grouped(void **state) {
    (void)state;
    int h, ln;
    tx_space *s = tx_new_line("/host:CPU", 0, "t", &h, &ln);
    tx_event_t *e = tx_event(s, h, ln, "train", 0, 100);
    tx_ev_int(s, h, e, "_r", 1);
    tx_ev_int(s, h, e, "group_id", 4);
    xpv_profile *p = tx_decode(s);
    xpv_groups *g = xpv_group_events(p);
    assert_int_equal(g->source, XPV_GROUPS_FILE);
    assert_int_equal(g->ngroups, 0);
    assert_int_equal(xpv_group_of(g, 0, 0, 0), -1);
    xpv_groups_free(g);
    xpv_profile_free(p);
}

/* TF loop ops in the space: XProf does not group. */
static void test_loop_ops(void **state) {
    (void)state;
    int h, ln;
    tx_space *s = tx_new_line("/host:CPU", 0, "t", &h, &ln);
    tx_event_t *e = tx_event(s, h, ln, "train", 0, 100);
    tx_ev_int(s, h, e, "_r", 1);
    tx_event(s, h, ln, "WhileOp-EvalCond", 10, 10);
    xpv_profile *p = tx_decode(s);
    xpv_groups *g = xpv_group_events(p);
    assert_int_equal(g->source, XPV_GROUPS_LOOP_OPS);
    assert_int_equal(xpv_group_of(g, 0, 0, 0), -1);
    xpv_groups_free(g);
    xpv_profile_free(p);
}

/* ==== Real JAX GPU captures ============================================= */

static int64_t stat_int(const xpv_plane *pl, const xpv_line *ln, const xpv_event *ev,
                        const char *name, int *found) {
    int32_t sid = xpv_stat_id(pl, name);
    xpv_stat st;
    int64_t v = 0;
    *found = sid >= 0 && xpv_event_stat(pl, ln, ev, sid, &st) && xpv_stat_as_int(&st, &v);
    return v;
}

static void check_jax_file(const char *file) {
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/data/device/%s", getenv("XPV_SRC"), file);
    xpv_profile *p = tx_decode_file(path);
    uint32_t host = UINT32_MAX, dev = UINT32_MAX;
    for (uint32_t k = 0; k < p->nplanes; k++) {
        if (xpv_str_eq(p->planes[k].name, "/host:CPU")) host = k;
        if (xpv_str_eq(p->planes[k].name, "/device:GPU:0")) dev = k;
    }
    assert_true(host != UINT32_MAX && dev != UINT32_MAX);
    xpv_groups *g = xpv_group_events(p);
    assert_int_equal(g->source, XPV_GROUPS_COMPUTED);
    assert_int_equal(g->ngroups, 5);
    const xpv_plane *hp = &p->planes[host], *dp = &p->planes[dev];
    int ntrain = 0;
    for (uint32_t l = 0; l < hp->nlines; l++) {
        const xpv_line *ln = &hp->lines[l];
        for (uint32_t i = 0; i < ln->nevents; i++) {
            const xpv_event *tr = &ln->events[i];
            if (!xpv_str_eq(hp->event_meta[tr->meta].name, "train")) continue;
            int found;
            int64_t step = stat_int(hp, ln, tr, "step_num", &found);
            assert_true(found);
            assert_int_equal(step, ntrain);
            int32_t gid = xpv_group_of(g, host, l, i);
            assert_true(gid >= 0);
            char want[32];
            snprintf(want, sizeof want, "train %d", ntrain);
            assert_string_equal(g->groups[gid].name, want);
            assert_string_equal(xpv_groups_step_name(g, host, l, i), want);
            /* Independent count: kernels whose correlation_id is that of a
             * host event inside this train event on its line. */
            int64_t corrs[64];
            int nc = 0;
            for (uint32_t j = 0; j < ln->nevents; j++) {
                const xpv_event *x = &ln->events[j];
                if (x->start_ps < tr->start_ps ||
                    x->start_ps + x->dur_ps > tr->start_ps + tr->dur_ps)
                    continue;
                int64_t c = stat_int(hp, ln, x, "correlation_id", &found);
                if (found && nc < 64) corrs[nc++] = c;
            }
            assert_true(nc >= 1);
            int counted = 0, grouped = 0;
            for (uint32_t dl = 0; dl < dp->nlines; dl++) {
                const xpv_line *dln = &dp->lines[dl];
                for (uint32_t j = 0; j < dln->nevents; j++) {
                    int64_t c = stat_int(dp, dln, &dln->events[j], "correlation_id", &found);
                    for (int q = 0; found && q < nc; q++)
                        if (corrs[q] == c) {
                            counted++;
                            break;
                        }
                    if (xpv_group_of(g, dev, dl, j) == gid) grouped++;
                }
            }
            assert_int_equal(counted, 15);
            assert_int_equal(grouped, counted);
            ntrain++;
        }
    }
    assert_int_equal(ntrain, 5);

    /* The step db: 5 steps "train 0".."train 4" with device compute. */
    xpv_arena a;
    xpv_arena_init(&a, 4096);
    xpv_step_db db;
    xpv_steps_build_grouped(p, g, &a, &db);
    assert_int_equal(db.grouping, XPV_GROUPING_COMPUTED);
    assert_int_equal(db.n, 5);
    assert_true(db.has_device);
    for (size_t i = 0; i < db.n; i++) {
        char want[32];
        snprintf(want, sizeof want, "train %zu", i);
        assert_string_equal(db.steps[i].name, want);
        assert_true(xpv_step_device_compute_ps(&db.steps[i]) > 0);
    }
    xpv_arena_free(&a);
    xpv_groups_free(g);
    xpv_profile_free(p);
}

static void test_jax_gpu_mlp(void **state) {
    (void)state;
    check_jax_file("jax_gpu_mlp.xplane.pb");
}

static void test_jax_gpu_mlp_nocmdbuf(void **state) {
    (void)state;
    check_jax_file("jax_gpu_mlp_nocmdbuf.xplane.pb");
}

/* The real TF 2.4 file carries group_id: used as it is. */
static void test_real_tf_file(void **state) {
    (void)state;
    xpv_profile *p = tx_decode_real_gpu_file();
    xpv_groups *g = xpv_group_events(p);
    assert_int_equal(g->source, XPV_GROUPS_FILE);
    xpv_groups_free(g);
    xpv_profile_free(p);
}

TU_MAIN(cmocka_unit_test(test_gpu_trace_root),
        cmocka_unit_test(test_gpu_trace_legacy_root),
        cmocka_unit_test(test_context_mismatch),
        cmocka_unit_test(test_context_other_process),
        cmocka_unit_test(test_tf_loop),
        cmocka_unit_test(test_multiple_tf_loops),
        cmocka_unit_test(test_no_loop_for_iteration_zero),
        cmocka_unit_test(test_async_event),
        cmocka_unit_test(test_batching_session),
        cmocka_unit_test(test_implicit_root_names),
        cmocka_unit_test(test_launch_kernel_levels),
        cmocka_unit_test(test_tpu_module_root),
        cmocka_unit_test(test_tpu_module_line),
        cmocka_unit_test(test_tpu_cores_share_ids),
        cmocka_unit_test(test_tpu_many_cores),
        cmocka_unit_test(test_tpu_host_producer),
        cmocka_unit_test(test_metadata_stats),
        cmocka_unit_test(test_file_grouped),
        cmocka_unit_test(test_loop_ops),
        cmocka_unit_test(test_jax_gpu_mlp),
        cmocka_unit_test(test_jax_gpu_mlp_nocmdbuf),
        cmocka_unit_test(test_real_tf_file))
