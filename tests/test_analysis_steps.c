/*
 * test_analysis_steps.c - step grouping, step events, breakdown, intersection
 * (analysis/opstats/steps.c) on hand-built profiles and on the real xplanes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "op_metrics.h"
#include "steps.h"
#include "steps_fixture.h"
#include "testutil.h"

/* 10 steps of 30 ms: input 12, kernel launch 1, compute 7 + 8, other 2. */
static void test_golden_breakdown(void **state) {
    (void)state;
    xpv_profile *p = sf_training(0);
    assert_non_null(p);
    xpv_arena a;
    xpv_arena_init(&a, 4096);
    xpv_step_db db;
    xpv_steps_build(p, &a, &db);
    assert_int_equal(db.grouping, XPV_GROUPING_COMPUTED);
    assert_int_equal(db.groups, SF_STEPS);
    assert_int_equal(db.n, SF_STEPS);
    assert_true(db.has_device);
    for (size_t i = 0; i < db.n; i++) {
        const xpv_step *s = &db.steps[i];
        char name[32];
        snprintf(name, sizeof name, "train %zu", i);
        assert_string_equal(s->name, name);
        assert_int_equal(s->step_num, (int64_t)i);
        assert_int_equal(s->begin_ps, (int64_t)i * 30 * SF_MS);
        assert_int_equal(s->dur_ps, 30 * SF_MS);
        assert_int_equal(s->type_ps[XPV_EV_HOST_WAIT_INPUT], 12 * SF_MS);
        assert_int_equal(s->type_ps[XPV_EV_HOST_PREPARE], 1 * SF_MS);
        assert_int_equal(s->type_ps[XPV_EV_DEVICE_COMPUTE_32], 7 * SF_MS);
        assert_int_equal(s->type_ps[XPV_EV_DEVICE_COMPUTE_16], 8 * SF_MS);
        assert_int_equal(s->type_ps[XPV_EV_UNKNOWN], 2 * SF_MS);
        assert_int_equal(xpv_step_input_ps(s), 12 * SF_MS);
        int64_t sum = 0;
        for (int t = 0; t < XPV_EV_NTYPES; t++) sum += s->type_ps[t];
        assert_int_equal(sum, s->dur_ps);
    }
    assert_int_equal(db.compute_16bit_ps, SF_STEPS * 8 * SF_MS);
    assert_int_equal(db.compute_32bit_ps, SF_STEPS * 7 * SF_MS);
    xpv_arena_free(&a);
    xpv_profile_free(p);
}

/* Files that carry group_id are used as they are: groups and the derived
 * Steps line of the file decide the steps, nothing is regrouped. */
static void test_pregrouped_file(void **state) {
    (void)state;
    int host, ln;
    tx_space *s = tx_new_line("/host:CPU", 1, "tf_Compute", &host, &ln);
    int gpu = tx_plane(s, "/device:GPU:0");
    int stream = tx_line(s, gpu, 5, "Stream #5(Compute)", 0);
    int steps = tx_line(s, gpu, -559038737, "Steps", 0);
    for (int g = 0; g < 3; g++) {
        int64_t t = (int64_t)g * 10 * SF_MS;
        /* a `_r` root that must NOT be used: the file is grouped */
        tx_event_t *e = tx_event(s, host, ln, "ExecutorState::Process", t, 9 * SF_MS);
        tx_ev_int(s, host, e, "group_id", 100 + g);
        tx_ev_int(s, host, e, "_r", 1);
        e = tx_event(s, gpu, stream, "kernel", t + 1 * SF_MS, 6 * SF_MS);
        tx_ev_int(s, gpu, e, "correlation_id", g);
        tx_ev_int(s, gpu, e, "group_id", 100 + g);
        if (g < 2) { /* group 102 has no marker: dropped */
            e = tx_event(s, gpu, steps, "step", t, 8 * SF_MS);
            tx_ev_int(s, gpu, e, "group_id", 100 + g);
        }
    }
    xpv_profile *p = tx_decode(s);
    assert_non_null(p);
    xpv_arena a;
    xpv_arena_init(&a, 4096);
    xpv_step_db db;
    xpv_steps_build(p, &a, &db);
    assert_int_equal(db.grouping, XPV_GROUPING_FILE);
    assert_int_equal(db.n, 2);
    for (int g = 0; g < 2; g++) {
        const xpv_step *st = &db.steps[g];
        assert_int_equal(st->step_num, 100 + g);
        /* host marker? none (ExecutorState::Process is prepare work); the
         * device marker gives the step time */
        assert_int_equal(st->dur_ps, 8 * SF_MS);
        assert_int_equal(st->type_ps[XPV_EV_DEVICE_COMPUTE_32], 6 * SF_MS);
        /* ExecutorState::Process covers [t, t+9]: kernel launch where the
         * device does not compute, clipped to the step */
        assert_int_equal(st->type_ps[XPV_EV_HOST_PREPARE], 2 * SF_MS);
    }
    xpv_arena_free(&a);
    xpv_profile_free(p);
}

/* No `_r` roots: no steps, grouping NONE. */
static void test_no_step_markers(void **state) {
    (void)state;
    int host, ln;
    tx_space *s = tx_new_line("/host:CPU", 1, "main", &host, &ln);
    tx_event(s, host, ln, "SomeWork", 0, 5 * SF_MS);
    tx_event(s, host, ln, "MatMul:MatMul", SF_MS, SF_MS);
    xpv_profile *p = tx_decode(s);
    xpv_arena a;
    xpv_arena_init(&a, 4096);
    xpv_step_db db;
    xpv_steps_build(p, &a, &db);
    assert_int_equal(db.n, 0);
    assert_int_equal(db.grouping, XPV_GROUPING_NONE);
    assert_false(db.has_device);
    xpv_arena_free(&a);
    xpv_profile_free(p);
}

/* TF loop ops disable grouping. */
static void test_loop_ops_skip_grouping(void **state) {
    (void)state;
    int host, ln;
    tx_space *s = tx_new_line("/host:CPU", 1, "main", &host, &ln);
    tx_event_t *e = tx_event(s, host, ln, "train", 0, 5 * SF_MS);
    tx_ev_int(s, host, e, "_r", 1);
    tx_event(s, host, ln, "WhileOp-EvalCond", SF_MS, SF_MS);
    xpv_profile *p = tx_decode(s);
    xpv_arena a;
    xpv_arena_init(&a, 4096);
    xpv_step_db db;
    xpv_steps_build(p, &a, &db);
    assert_int_equal(db.grouping, XPV_GROUPING_LOOPS);
    assert_int_equal(db.n, 0);
    xpv_arena_free(&a);
    xpv_profile_free(p);
}

/* CPU only: host markers and host compute; producer/consumer edges carry
 * the group to another thread. */
static void test_cpu_only_and_context_edges(void **state) {
    (void)state;
    int host, main_ln;
    tx_space *s = tx_new_line("/host:CPU", 1, "main", &host, &main_ln);
    int worker = tx_line(s, host, 2, "worker", 0);
    for (int i = 0; i < 4; i++) {
        int64_t t = (int64_t)i * 10 * SF_MS;
        tx_event_t *e = tx_event(s, host, main_ln, "train_function", t, 10 * SF_MS);
        tx_ev_int(s, host, e, "_r", 1);
        tx_ev_int(s, host, e, "step_num", 40 + i);
        e = tx_event(s, host, main_ln, "Schedule", t, SF_MS);
        tx_ev_int(s, host, e, "_pt", 3);
        tx_ev_int(s, host, e, "_p", 1000 + i);
        /* consumer on another thread: 6 ms of host compute */
        e = tx_event(s, host, worker, "Run", t + 2 * SF_MS, 6 * SF_MS);
        tx_ev_int(s, host, e, "_ct", 3);
        tx_ev_int(s, host, e, "_c", 1000 + i);
        tx_event(s, host, worker, "Conv2D:Conv2D", t + 3 * SF_MS, 2 * SF_MS);
    }
    xpv_profile *p = tx_decode(s);
    xpv_arena a;
    xpv_arena_init(&a, 4096);
    xpv_step_db db;
    xpv_steps_build(p, &a, &db);
    assert_int_equal(db.n, 4);
    assert_false(db.has_device);
    for (int i = 0; i < 4; i++) {
        const xpv_step *st = &db.steps[i];
        char name[32];
        snprintf(name, sizeof name, "train_function %d", 40 + i);
        assert_string_equal(st->name, name);
        assert_int_equal(st->dur_ps, 10 * SF_MS);
        /* Schedule [0,1] + Run [2,8] are host compute; the rest unknown */
        assert_int_equal(st->type_ps[XPV_EV_HOST_COMPUTE], 7 * SF_MS);
        assert_int_equal(st->type_ps[XPV_EV_UNKNOWN], 3 * SF_MS);
    }
    xpv_arena_free(&a);
    xpv_profile_free(p);
}

static void test_classify(void **state) {
    (void)state;
    xpv_str none = {"", 0};
    assert_int_equal(xpv_steps_classify_gpu(xpv_cstr("MemcpyH2D"), none), XPV_EV_HOST_TO_DEVICE);
    assert_int_equal(xpv_steps_classify_gpu(xpv_cstr("MEMCPYHToD"), none), XPV_EV_HOST_TO_DEVICE);
    assert_int_equal(xpv_steps_classify_gpu(xpv_cstr("MemcpyD2H"), none), XPV_EV_DEVICE_TO_HOST);
    assert_int_equal(xpv_steps_classify_gpu(xpv_cstr("MEMCPYDToH"), none), XPV_EV_DEVICE_TO_HOST);
    assert_int_equal(xpv_steps_classify_gpu(xpv_cstr("MemcpyD2D"), none), XPV_EV_DEVICE_TO_DEVICE);
    assert_int_equal(xpv_steps_classify_gpu(xpv_cstr("MemcpyP2P"), none), XPV_EV_DEVICE_TO_DEVICE);
    assert_int_equal(xpv_steps_classify_gpu(xpv_cstr("ncclAllReduceRingLLKernel"), none),
                     XPV_EV_DEVICE_COLLECTIVES);
    assert_int_equal(xpv_steps_classify_gpu(xpv_cstr("volta_fp16_sgemm"), none),
                     XPV_EV_DEVICE_COMPUTE_16);
    assert_int_equal(xpv_steps_classify_gpu(xpv_cstr("volta_fp16_sgemm"), xpv_cstr("(float[2])")),
                     XPV_EV_DEVICE_COMPUTE_32);
    assert_int_equal(xpv_steps_classify_gpu(xpv_cstr("k"), xpv_cstr("(half[2])")),
                     XPV_EV_DEVICE_COMPUTE_16);
    assert_int_equal(xpv_steps_classify_cpu(xpv_cstr("IteratorGetNext:IteratorGetNext"), 1, 0),
                     XPV_EV_HOST_WAIT_INPUT);
    assert_int_equal(xpv_steps_classify_cpu(xpv_cstr("cuLaunchKernel"), 1, 1), XPV_EV_HOST_PREPARE);
    assert_int_equal(xpv_steps_classify_cpu(xpv_cstr("cuLaunchKernel"), 0, 1), XPV_EV_HOST_COMPUTE);
    assert_int_equal(xpv_steps_classify_cpu(xpv_cstr("ExecutorState::Process"), 1, 0),
                     XPV_EV_HOST_PREPARE);
    assert_int_equal(xpv_steps_classify_cpu(xpv_cstr("InfeedEnqueueTuple:InfeedEnqueueTuple"), 1, 0),
                     XPV_EV_HOST_TO_DEVICE);
    assert_int_equal(xpv_steps_classify_cpu(xpv_cstr("MEMCPYHToH"), 1, 0), XPV_EV_HOST_TO_HOST);
}

/* memcpy_details, both formats: XLA's memory kinds ("kind_src:pinned
 * kind_dst:device size:..") and TF 2.x / XProf's ("size:.. dest:.. async:..",
 * "num_bytes:N" pairs split by newlines), plus ROCm's "kind:Unknown". */
static void test_memcpy_details(void **state) {
    (void)state;
    xpv_memcpy_info mi;
    assert_true(xpv_parse_memcpy_details(
        xpv_cstr("kind_src:pinned kind_dst:device size:4096 dest:0 async:1"), &mi));
    assert_int_equal(mi.kind, XPV_MEMCPY_H2D);
    assert_int_equal(mi.bytes, 4096);
    assert_int_equal(mi.dest, 0);
    assert_int_equal(mi.async, 1);
    xpv_parse_memcpy_details(xpv_cstr("kind_src:device kind_dst:pageable size:8 dest:1 async:0"),
                             &mi);
    assert_int_equal(mi.kind, XPV_MEMCPY_D2H);
    assert_int_equal(mi.async, 0);
    xpv_parse_memcpy_details(xpv_cstr("kind_src:device kind_dst:device_static size:8"), &mi);
    assert_int_equal(mi.kind, XPV_MEMCPY_D2D);
    xpv_parse_memcpy_details(xpv_cstr("kind_src:pageable kind_dst:pinned size:8"), &mi);
    assert_int_equal(mi.kind, XPV_MEMCPY_H2H);
    /* managed memory: either side, direction unknown */
    xpv_parse_memcpy_details(xpv_cstr("kind_src:managed kind_dst:device size:8"), &mi);
    assert_int_equal(mi.kind, XPV_MEMCPY_UNKNOWN);
    /* TF 2.x GPU capture (the real GPU-multi-worker files). */
    assert_true(xpv_parse_memcpy_details(xpv_cstr("size:112 dest:4 async:0"), &mi));
    assert_int_equal(mi.kind, XPV_MEMCPY_UNKNOWN);
    assert_int_equal(mi.bytes, 112);
    assert_int_equal(mi.dest, 4);
    /* XProf's parser format and a kind that names the direction. */
    xpv_parse_memcpy_details(xpv_cstr("kind:HtoD\nnum_bytes:256\n"), &mi);
    assert_int_equal(mi.kind, XPV_MEMCPY_H2D);
    assert_int_equal(mi.bytes, 256);
    xpv_parse_memcpy_details(xpv_cstr("kind:PeerToPeer size:1"), &mi);
    assert_int_equal(mi.kind, XPV_MEMCPY_P2P);
    /* ROCm */
    xpv_parse_memcpy_details(xpv_cstr("kind:Unknown size:0 dest:512 async:1"), &mi);
    assert_int_equal(mi.kind, XPV_MEMCPY_UNKNOWN);
    assert_int_equal(mi.bytes, 0);
    assert_false(xpv_parse_memcpy_details(xpv_cstr("garbage"), &mi));
    assert_int_equal(mi.bytes, -1);
    assert_int_equal(xpv_steps_classify_memcpy(xpv_cstr("kind_src:device kind_dst:pinned")),
                     XPV_EV_DEVICE_TO_HOST);
    assert_int_equal(xpv_steps_classify_memcpy(xpv_cstr("size:4 dest:0 async:1")),
                     XPV_EV_UNKNOWN);

    /* In a step: a copy named "Memcpy" (no direction in the name) counts
     * as host-to-device input because its details say pinned -> device;
     * the same copy without details stays device compute, as XProf's
     * name-only test would have it. */
    for (int with_details = 0; with_details < 2; with_details++) {
        int host, py;
        tx_space *s = tx_new_line("/host:CPU", 1, "python", &host, &py);
        int gpu = tx_plane(s, "/device:GPU:0");
        int stream = tx_line(s, gpu, 7, "Stream #7", 0);
        tx_event_t *e = tx_event(s, host, py, "train", 0, 30 * SF_MS);
        tx_ev_int(s, host, e, "_r", 1);
        tx_ev_int(s, host, e, "step_num", 0);
        e = tx_event(s, host, py, "cuLaunchKernel", 1 * SF_MS, SF_MS);
        tx_ev_int(s, host, e, "correlation_id", 1);
        e = tx_event(s, host, py, "cuMemcpyHtoDAsync", 2 * SF_MS, SF_MS);
        tx_ev_int(s, host, e, "correlation_id", 2);
        e = tx_event(s, gpu, stream, "volta_sgemm", 5 * SF_MS, 10 * SF_MS);
        tx_ev_int(s, gpu, e, "correlation_id", 1);
        e = tx_event(s, gpu, stream, "Memcpy", 15 * SF_MS, 5 * SF_MS);
        tx_ev_int(s, gpu, e, "correlation_id", 2);
        if (with_details)
            tx_ev_ref(s, gpu, e, "memcpy_details",
                      "kind_src:pinned kind_dst:device size:1048576 dest:0 async:1");
        xpv_profile *p = tx_decode(s);
        xpv_arena a;
        xpv_arena_init(&a, 4096);
        xpv_step_db db;
        xpv_steps_build(p, &a, &db);
        assert_int_equal(db.n, 1);
        assert_int_equal(db.steps[0].type_ps[XPV_EV_HOST_TO_DEVICE], with_details ? 5 * SF_MS : 0);
        assert_int_equal(db.steps[0].type_ps[XPV_EV_DEVICE_COMPUTE_32],
                         with_details ? 10 * SF_MS : 15 * SF_MS);
        xpv_arena_free(&a);
        xpv_profile_free(p);
    }
}

/* Input-pipeline stages (`_ipl_stage_name`) are input time (§2.3), on a
 * CPU-only profile grouped here (`_r` root) and on a pre-grouped file. */
static void test_ipl_stage_is_input(void **state) {
    (void)state;
    for (int pregrouped = 0; pregrouped < 2; pregrouped++) {
        for (int staged = 0; staged < 2; staged++) {
            int host, ln;
            tx_space *s = tx_new_line("/host:CPU", 1, "python", &host, &ln);
            tx_event_t *ev[4];
            ev[0] = tx_event(s, host, ln, "train", 0, 10 * SF_MS);
            if (!pregrouped) {
                tx_ev_int(s, host, ev[0], "_r", 1);
                tx_ev_int(s, host, ev[0], "step_num", 7);
            }
            ev[1] = tx_event(s, host, ln, "_BatchDatasetIterator.__next__", 1 * SF_MS, 3 * SF_MS);
            ev[2] = tx_event(s, host, ln, "PrefetchDatasetIterator.__next__", 2 * SF_MS, SF_MS);
            ev[3] = tx_event(s, host, ln, "MatMul:MatMul", 5 * SF_MS, 4 * SF_MS);
            if (staged) {
                tx_ev_str(s, host, ev[1], "_ipl_stage_name", "Batch");
                tx_ev_str(s, host, ev[2], "_ipl_stage_name", "Prefetch");
            }
            if (pregrouped)
                for (int i = 0; i < 4; i++) tx_ev_int(s, host, ev[i], "group_id", 7);
            xpv_profile *p = tx_decode(s);
            xpv_arena a;
            xpv_arena_init(&a, 4096);
            xpv_step_db db;
            xpv_steps_build(p, &a, &db);
            assert_int_equal(db.n, 1);
            const xpv_step *st = &db.steps[0];
            assert_int_equal(st->dur_ps, 10 * SF_MS);
            assert_int_equal(st->type_ps[XPV_EV_HOST_WAIT_INPUT], staged ? 3 * SF_MS : 0);
            assert_int_equal(st->type_ps[XPV_EV_HOST_COMPUTE], staged ? 4 * SF_MS : 7 * SF_MS);
            assert_int_equal(st->type_ps[XPV_EV_UNKNOWN], 3 * SF_MS);
            xpv_arena_free(&a);
            xpv_profile_free(p);
        }
    }
}

/* Multi-host: host B's steps are host A's shifted by two; the common range
 * is 8 steps and the step time is the longest over the hosts. */
static void fill_db(xpv_step_db *db, xpv_step *steps, int64_t *maxd, int n, int shift,
                    int64_t dur) {
    memset(db, 0, sizeof *db);
    for (int i = 0; i < n; i++) {
        memset(&steps[i], 0, sizeof steps[i]);
        steps[i].step_num = i;
        steps[i].name = "";
        steps[i].begin_ps = (int64_t)(i + shift) * 100;
        steps[i].dur_ps = dur;
        steps[i].type_ps[XPV_EV_DEVICE_COMPUTE_32] = dur;
        maxd[i] = dur;
    }
    db->steps = steps;
    db->max_dur_ps = maxd;
    db->n = (size_t)n;
    db->has_device = 1;
}

static void test_intersection(void **state) {
    (void)state;
    xpv_step sa[10], sb[12];
    int64_t ma[10], mb[12];
    xpv_step_db a, b, c;
    fill_db(&a, sa, ma, 10, 0, 90);
    fill_db(&b, sb, mb, 10, 2, 95);
    const xpv_step_db *dbs[2] = {&a, &b};
    xpv_arena ar;
    xpv_arena_init(&ar, 4096);
    xpv_steps_intersect(dbs, 2, &ar, &c);
    assert_int_equal(c.n, 8);
    assert_false(c.empty_intersect);
    /* host A (listed first) reports its steps 2..9 */
    assert_int_equal(c.steps[0].step_num, 2);
    assert_int_equal(c.steps[7].step_num, 9);
    assert_int_equal(c.max_dur_ps[0], 95);
    /* A's steps 0, 1 and B's steps 8, 9 are outside the common range. */
    assert_int_equal(c.num_steps_dropped, 4);

    assert_false(c.use_incomplete_step);

    /* A coordinator (no device) is left out. */
    xpv_step_db coord;
    memset(&coord, 0, sizeof coord);
    const xpv_step_db *dbs2[2] = {&coord, &a};
    xpv_steps_intersect(dbs2, 2, &ar, &c);
    assert_int_equal(c.n, 10);
    assert_int_equal(c.num_steps_dropped, 0);
    /* XProf CombineStepDatabase: one host's use_incomplete_step marks the
     * combined db, even a host whose steps are left out. */
    coord.use_incomplete_step = 1;
    xpv_steps_intersect(dbs2, 2, &ar, &c);
    assert_true(c.use_incomplete_step);
    assert_int_equal(c.n, 10);
    coord.use_incomplete_step = 0;

    /* Disjoint in time: empty intersection is reported. */
    fill_db(&b, sb, mb, 3, 1000, 95);
    xpv_steps_intersect(dbs, 2, &ar, &c);
    assert_int_equal(c.n, 0);
    assert_true(c.empty_intersect);
    assert_int_equal(c.num_steps_dropped, 0);
    xpv_arena_free(&ar);
}

static void check_real_file(const char *path, xpv_profile *p, void *ctx) {
    (void)ctx;
    xpv_arena a;
    xpv_arena_init(&a, 4096);
    xpv_step_db db;
    xpv_steps_build(p, &a, &db);
    /* Expected: distinct group ids on GPU "Steps" lines (pre-grouped
     * files), or the number of `_r` roots. */
    int64_t seen[1024];
    size_t nseen = 0;
    size_t roots = 0;
    for (uint32_t k = 0; k < p->nplanes; k++) {
        const xpv_plane *pl = &p->planes[k];
        int32_t gid = xpv_stat_id(pl, "group_id"), rid = xpv_stat_id(pl, "_r");
        for (uint32_t l = 0; l < pl->nlines; l++) {
            const xpv_line *ln = &pl->lines[l];
            for (uint32_t e = 0; e < ln->nevents; e++) {
                xpv_stat st;
                int64_t v;
                if (rid >= 0 && xpv_event_stat(pl, ln, &ln->events[e], rid, &st) &&
                    xpv_stat_as_int(&st, &v) && v > 0)
                    roots++;
                if ((int32_t)ln->id != (int32_t)0xdeadbeef || gid < 0) continue;
                if (!xpv_event_stat(pl, ln, &ln->events[e], gid, &st) ||
                    !xpv_stat_as_int(&st, &v))
                    continue;
                size_t j = 0;
                while (j < nseen && seen[j] != v) j++;
                if (j == nseen && nseen < 1024) seen[nseen++] = v;
            }
        }
    }
    if (db.grouping == XPV_GROUPING_FILE) {
        print_message("%s: %zu steps, %zu marked groups\n", path, db.n, nseen);
        assert_int_equal(db.n, nseen);
    } else {
        print_message("%s: %zu steps, %zu roots\n", path, db.n, roots);
        assert_true(db.n <= roots);
        if (roots == 0) assert_int_equal(db.n, 0);
    }
    for (size_t i = 0; i < db.n; i++) {
        int64_t sum = 0;
        for (int t = 0; t < XPV_EV_NTYPES; t++) {
            assert_true(db.steps[i].type_ps[t] >= 0);
            sum += db.steps[i].type_ps[t];
        }
        assert_int_equal(sum, db.steps[i].dur_ps);
    }
    xpv_arena_free(&a);
}

/* Real files: steps match the file's step markers. */
static void test_real_files(void **state) {
    (void)state;
    TU_SKIP_NO_SHARED();
    int checked = tx_each_real_profile(0, check_real_file, NULL);
    assert_true(checked > 0);
}

TU_MAIN(cmocka_unit_test(test_golden_breakdown),
        cmocka_unit_test(test_pregrouped_file),
        cmocka_unit_test(test_no_step_markers),
        cmocka_unit_test(test_loop_ops_skip_grouping),
        cmocka_unit_test(test_cpu_only_and_context_edges),
        cmocka_unit_test(test_classify),
        cmocka_unit_test(test_memcpy_details),
        cmocka_unit_test(test_ipl_stage_is_input),
        cmocka_unit_test(test_intersection),
        cmocka_unit_test(test_real_files))
