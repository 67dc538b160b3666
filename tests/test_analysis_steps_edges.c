/*
 * test_analysis_steps_edges.c - step analysis cases the fast paths of
 * analysis/opstats/steps.c must keep: a host line written out of start order, `_a`
 * events that do not nest, overlapping kernels of one type on two streams,
 * zero-length events (dropped from a GPU breakdown, never compute on a
 * CPU-only one), correlation ids far apart (hash map instead of the dense
 * array) and a stat given twice.  Expected numbers are worked out by hand
 * in the comments.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#include "steps.h"
#include "tool_xspace.h"

#define MS INT64_C(1000000000)

typedef struct hev {
    const char *name;
    int64_t b, d, corr;        /* corr < 0: none */
    int root, async;
} hev;

/* Two steps of 20 ms (T = 20 ms * i), host line written in REVERSE order:
 *   train [T, T+20] _r=1 step_num=i                       host marker
 *   cuLaunchKernel [T+1, T+2] corr c1  -> HOST_PREPARE   (launch of A)
 *   cuLaunchKernel [T+2, T+3] corr c2                     (launch of B)
 *   cuLaunchKernel [T+3, T+3] corr c3  zero length        (launch of C)
 *   cuLaunchKernel [T+4, T+5] corr c4  `_a`: not nested, so not grouped
 * GPU: stream 7: A sgemm [T+2, T+8] (32-bit), C [T+9, T+9] zero length,
 *                D sgemm [T+9, T+14] corr c4 (its launch is ungrouped; XProf's
 *                ProcessUngroupedEvents gives it the group of B, the last
 *                grouped event before it in the plane's time order)
 *      stream 8: B gemm [T+6, T+10] shape "(half[4])" (16-bit)
 * Device marker = span of A, B, C, D = [T+2, T+14], inside the host
 * marker, so the step is [T, T+20].  Sweep: [1,2] prepare; [2,6] 32-bit (A
 * beats the launch); [6,10] 16-bit (B beats A and D); [10,14] 32-bit (D);
 * the rest unknown (7 ms). */
static xpv_profile *gpu_profile(int64_t corr_stride) {
    int host, main_ln;
    tx_space *s = tx_new_line("/host:CPU", 1, "main", &host, &main_ln);
    int gpu = tx_plane(s, "/device:GPU:0");
    int s7 = tx_line(s, gpu, 7, "Stream #7(Kernel)", 0);
    int s8 = tx_line(s, gpu, 8, "Stream #8(Kernel)", 0);
    hev evs[2][5];
    for (int i = 0; i < 2; i++) {
        int64_t T = i * 20 * MS, c = 1 + i * 4 * corr_stride;
        hev row[5] = {
            {"train", T, 20 * MS, -1, 1, 0},
            {"cuLaunchKernel", T + 1 * MS, MS, c, 0, 0},
            {"cuLaunchKernel", T + 2 * MS, MS, c + corr_stride, 0, 0},
            {"cuLaunchKernel", T + 3 * MS, 0, c + 2 * corr_stride, 0, 0},
            {"cuLaunchKernel", T + 4 * MS, MS, c + 3 * corr_stride, 0, 1},
        };
        memcpy(evs[i], row, sizeof row);
    }
    for (int k = 9; k >= 0; k--) {
        const hev *h = &evs[k / 5][k % 5];
        tx_event_t *e = tx_event(s, host, main_ln, h->name, h->b, h->d);
        if (h->root) {
            tx_ev_int(s, host, e, "_r", 1);
            tx_ev_int(s, host, e, "step_num", k / 5);
        }
        if (h->corr >= 0) tx_ev_int(s, host, e, "correlation_id", h->corr);
        if (h->async) tx_ev_int(s, host, e, "_a", 1);
    }
    for (int i = 0; i < 2; i++) {
        int64_t T = i * 20 * MS, c = 1 + i * 4 * corr_stride;
        tx_event_t *e = tx_event(s, gpu, s7, "volta_sgemm_128x64_nn", T + 2 * MS, 6 * MS);
        tx_ev_int(s, gpu, e, "correlation_id", c);
        e = tx_event(s, gpu, s7, "volta_sgemm_128x64_nn", T + 9 * MS, 0);
        tx_ev_int(s, gpu, e, "correlation_id", c + 2 * corr_stride);
        e = tx_event(s, gpu, s7, "volta_sgemm_128x64_nn", T + 9 * MS, 5 * MS);
        tx_ev_int(s, gpu, e, "correlation_id", c + 3 * corr_stride);
        e = tx_event(s, gpu, s8, "gemm_kernel", T + 6 * MS, 4 * MS);
        tx_ev_int(s, gpu, e, "correlation_id", 999); /* overridden: last one wins */
        tx_ev_ref(s, gpu, e, "shape", "(half[4])");
        tx_ev_int(s, gpu, e, "correlation_id", c + corr_stride);
    }
    return tx_decode(s);
}

static void check_gpu_steps(int64_t corr_stride) {
    xpv_profile *p = gpu_profile(corr_stride);
    assert_non_null(p);
    xpv_arena a;
    xpv_arena_init(&a, 4096);
    xpv_step_db db;
    xpv_steps_build(p, &a, &db);
    assert_int_equal(db.grouping, XPV_GROUPING_COMPUTED);
    assert_true(db.has_device);
    assert_int_equal(db.n, 2);
    for (int i = 0; i < 2; i++) {
        const xpv_step *st = &db.steps[i];
        char name[16];
        snprintf(name, sizeof name, "train %d", i);
        assert_string_equal(st->name, name);
        assert_true(st->begin_ps == i * 20 * MS);
        assert_true(st->dur_ps == 20 * MS);
        assert_true(st->type_ps[XPV_EV_HOST_PREPARE] == 1 * MS);
        assert_true(st->type_ps[XPV_EV_DEVICE_COMPUTE_32] == 8 * MS);
        assert_true(st->type_ps[XPV_EV_DEVICE_COMPUTE_16] == 4 * MS);
        assert_true(st->type_ps[XPV_EV_UNKNOWN] == 7 * MS);
    }
    assert_true(db.compute_16bit_ps == 8 * MS);
    assert_true(db.compute_32bit_ps == 16 * MS);
    xpv_arena_free(&a);
    xpv_profile_free(p);
}

static void test_gpu_unsorted_async_overlap(void **state) {
    (void)state;
    check_gpu_steps(1);
}

/* The same with correlation ids 10^12 apart. */
static void test_gpu_sparse_correlation_ids(void **state) {
    (void)state;
    check_gpu_steps(INT64_C(1000000000000));
}

/* CPU only, steps of 10 ms:
 *   step 0: Conv2D [2, 4] host compute, a zero-length Conv2D at 6
 *   step 1: IteratorGetNext [1, 9] (input) and a zero-length Conv2D at 5:
 *           no instant of host compute, so the step is not well formed. */
static void test_cpu_zero_length_compute(void **state) {
    (void)state;
    int host, ln;
    tx_space *s = tx_new_line("/host:CPU", 1, "main", &host, &ln);
    tx_event_t *e = tx_event(s, host, ln, "train_function", 0, 10 * MS);
    tx_ev_int(s, host, e, "_r", 1);
    tx_ev_int(s, host, e, "step_num", 0);
    tx_event(s, host, ln, "Conv2D:Conv2D", 2 * MS, 2 * MS);
    tx_event(s, host, ln, "Conv2D:Conv2D", 6 * MS, 0);
    e = tx_event(s, host, ln, "train_function", 10 * MS, 10 * MS);
    tx_ev_int(s, host, e, "_r", 1);
    tx_ev_int(s, host, e, "step_num", 1);
    tx_event(s, host, ln, "IteratorGetNext:IteratorGetNext", 11 * MS, 8 * MS);
    tx_event(s, host, ln, "Conv2D:Conv2D", 15 * MS, 0);
    xpv_profile *p = tx_decode(s);
    assert_non_null(p);
    xpv_arena a;
    xpv_arena_init(&a, 4096);
    xpv_step_db db;
    xpv_steps_build(p, &a, &db);
    assert_false(db.has_device);
    assert_int_equal(db.groups, 2);
    assert_int_equal(db.n, 1);
    assert_string_equal(db.steps[0].name, "train_function 0");
    assert_true(db.steps[0].type_ps[XPV_EV_HOST_COMPUTE] == 2 * MS);
    assert_true(db.steps[0].type_ps[XPV_EV_UNKNOWN] == 8 * MS);
    xpv_arena_free(&a);
    xpv_profile_free(p);
}

TU_MAIN(cmocka_unit_test(test_gpu_unsorted_async_overlap),
        cmocka_unit_test(test_gpu_sparse_correlation_ids),
        cmocka_unit_test(test_cpu_zero_length_compute))
