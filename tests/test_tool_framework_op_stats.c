/*
 * test_tool_framework_op_stats.c - TensorFlow stats JSON (two DataTables)
 * on a profile built in the test, with hand-computed ranks and fractions,
 * plus column ids checked against XProf's golden output.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "datatable_json.h"
#include "testutil.h"
#include "op_metrics.h"
#include "tool.h"
#include "tool_xspace.h"

#define MS 1000000000LL

static xpv_profile *profile(int with_gpu) {
    int pl, l1;
    tx_space *s = tx_new_line("/host:CPU", 1, "main", &pl, &l1);
    tx_event_t *e = tx_event(s, pl, l1, "a:MatMul", 0, 10 * MS);
    tx_ev_int(s, pl, e, "is_eager", 1);
    tx_event(s, pl, l1, "gradient_tape/b:Relu", 2 * MS, 4 * MS);
    int l2 = tx_line(s, pl, 2, "worker", 0);
    tx_event(s, pl, l2, "c:Identity", 0, 1 * MS);
    tx_event(s, pl, l2, "d:Identity", 3 * MS, 1 * MS);
    if (with_gpu) {
        int g = tx_plane(s, "/device:GPU:0");
        int l = tx_line(s, g, 7, "Stream #7(Kernel)", 0);
        e = tx_event(s, g, l, "conv_kernel", 0, 3 * MS);
        tx_ev_ref(s, g, e, "kernel_details", "regs:8 grid:1,1,1 block:32,1,1");
        tx_ev_ref(s, g, e, "tf_op", "m/conv:Conv2D");
        e = tx_event(s, g, l, "volta_h884gemm", 5 * MS, 1 * MS);
        tx_ev_ref(s, g, e, "kernel_details", "regs:8 grid:1,1,1 block:32,1,1");
        tx_ev_ref(s, g, e, "tf_op", "m/mm:MatMul");
    }
    xpv_profile *p = tx_decode(s);
    assert_non_null(p);
    return p;
}

static json_t *render_json(const xpv_profile *p, const char *tool_name) {
    const xpv_profile *ps[1] = {p};
    const char *hn[1] = {"host"};
    xpv_hostset hs = {1, ps, hn};
    const xpv_tool *t = xpv_tool_find(tool_name);
    assert_ptr_equal(t, xpv_tool_find("framework_op_stats"));
    return dt_render_hs(t, &hs);
}

static double num(json_t *table, size_t row, const char *id) {
    return json_number_value(dt_cell_by_id(table, row, id));
}
static const char *str(json_t *table, size_t row, const char *id) {
    return json_string_value(dt_cell_by_id(table, row, id));
}

#define NEAR(a, b) assert_true(fabs((a) - (b)) < 1e-9)

static void test_gpu_tables(void **state) {
    (void)state;
    xpv_profile *p = profile(1);
    json_t *j = render_json(p, "tensorflow_stats"); /* the alias works */
    assert_true(json_is_array(j));
    assert_int_equal(json_array_size(j), 2);
    json_t *w = json_array_get(j, 0), *wo = json_array_get(j, 1);
    assert_int_equal(json_array_size(json_object_get(w, "cols")), 20);
    assert_true(dt_col_index(w, "gpu_tensorcore_utilization") >= 0);

    /* With idle: device conv 3, IDLE 2, mm 1 (of 6 ms); host a 6, b 4,
     * IDLE 2, c 1, d 1 (of 14 ms). */
    assert_int_equal(json_array_size(json_object_get(w, "rows")), 8);
    static const char *const names[] = {"m/conv", "IDLE", "m/mm", "a",
                                        "gradient_tape/b", "IDLE", "c", "d"};
    for (size_t i = 0; i < 8; i++) {
        assert_string_equal(str(w, i, "operation"), names[i]);
        NEAR(num(w, i, "rank"), (double)(i + 1));
        assert_string_equal(str(w, i, "host_or_device"), i < 3 ? "Device" : "Host");
    }
    NEAR(num(w, 0, "device_total_self_time_percent"), 0.5);
    NEAR(num(w, 1, "device_cumulative_total_self_time_percent"), 5.0 / 6);
    NEAR(num(w, 2, "device_cumulative_total_self_time_percent"), 1.0);
    NEAR(num(w, 2, "gpu_tensorcore_utilization"), 1.0);
    NEAR(num(w, 0, "gpu_tensorcore_utilization"), 0.0);
    assert_string_equal(str(w, 0, "type"), "Conv2D");
    NEAR(num(w, 0, "total_time"), 3000.0);
    NEAR(num(w, 3, "total_time"), 10000.0);
    NEAR(num(w, 3, "total_self_time"), 6000.0);
    NEAR(num(w, 3, "host_total_self_time_percent"), 6.0 / 14);
    NEAR(num(w, 3, "device_total_self_time_percent"), 0.0);
    NEAR(num(w, 7, "Host_cumulative_total_self_time_percent"), 1.0);
    assert_string_equal(str(w, 3, "eager"), "Eager");
    assert_string_equal(str(w, 4, "eager"), "Function");
    assert_string_equal(str(w, 5, "type"), "IDLE");
    NEAR(num(w, 5, "occurrences"), 0.0);
    assert_string_equal(str(w, 0, "bound_by"), "Unknown");

    /* Without idle: fractions over op time (4 ms device, 12 ms host). */
    assert_int_equal(json_array_size(json_object_get(wo, "rows")), 6);
    assert_string_equal(str(wo, 1, "operation"), "m/mm");
    NEAR(num(wo, 0, "device_total_self_time_percent"), 0.75);
    NEAR(num(wo, 1, "device_cumulative_total_self_time_percent"), 1.0);
    assert_string_equal(str(wo, 2, "operation"), "a");
    NEAR(num(wo, 2, "rank"), 3.0);
    NEAR(num(wo, 2, "host_total_self_time_percent"), 0.5);
    NEAR(num(wo, 5, "Host_cumulative_total_self_time_percent"), 1.0);

    json_t *pp = json_object_get(w, "p");
    assert_string_equal(json_string_value(json_object_get(pp, "task_type")), "Training");
    assert_string_equal(json_string_value(json_object_get(pp, "architecture_type")), "Unknown");
    json_decref(j);
    xpv_profile_free(p);
}

/* A copy's bytes come from its memcpy_details (TF 2.x "size:" and XProf's
 * "num_bytes:" formats): 1 GiB in 1 ms is 1000 GiB/s of measured bandwidth. */
static void test_memcpy_bandwidth(void **state) {
    (void)state;
    static const char *const details[] = {"size:1073741824 dest:0 async:1",
                                          "kind_src:pinned kind_dst:device\nnum_bytes:1073741824"};
    for (int k = 0; k < 2; k++) {
        int g, l;
        tx_space *s = tx_new_line("/device:GPU:0", 7, "Stream #7(MemcpyH2D)", &g, &l);
        tx_event_t *e = tx_event(s, g, l, "MemcpyH2D", 0, 1 * MS);
        tx_ev_ref(s, g, e, "tf_op", "m/copy:Identity");
        tx_ev_ref(s, g, e, "memcpy_details", details[k]);
        xpv_profile *p = tx_decode(s);
        json_t *j = render_json(p, "framework_op_stats");
        json_t *wo = json_array_get(j, 1);
        assert_string_equal(str(wo, 0, "operation"), "m/copy");
        assert_true(fabs(num(wo, 0, "measured_memory_bw") - 1000.0) < 1e-6);
        json_decref(j);
        xpv_profile_free(p);
    }
}

/* Column ids, labels and types of a non-GPU profile equal XProf's golden
 * output (a TPU run: no gpu_tensorcore_utilization column). */
static void test_cpu_columns_match_golden(void **state) {
    (void)state;
    xpv_profile *p = profile(0);
    json_t *j = render_json(p, "framework_op_stats");
    json_t *w = json_array_get(j, 0);
    /* CPU only: no device rows at all. */
    assert_int_equal(json_array_size(json_object_get(w, "rows")), 5);
    assert_string_equal(str(w, 0, "host_or_device"), "Host");
    assert_int_equal(dt_col_index(w, "gpu_tensorcore_utilization"), -1);

    json_t *g = dt_xprof_golden("tpu-training_framework_op_stats_tpu_training");
    for (size_t t = 0; g && t < 2; t++) {
        json_t *gc = json_object_get(json_array_get(g, t), "cols");
        json_t *oc = json_object_get(json_array_get(j, t), "cols");
        assert_int_equal(json_array_size(gc), json_array_size(oc));
        for (size_t i = 0; i < json_array_size(gc); i++) {
            json_t *a = json_array_get(gc, i), *b = json_array_get(oc, i);
            assert_true(json_equal(a, b));
        }
        json_t *gp = json_object_get(json_array_get(g, t), "p");
        json_t *op = json_object_get(json_array_get(j, t), "p");
        assert_int_equal(json_object_size(gp), json_object_size(op));
    }
    json_decref(g);
    json_decref(j);
    xpv_profile_free(p);
}

/* Invariants of both tables of one real file: device rows first, ranks
 * 1..n, at most 500 rows per side, self <= total time, each side's
 * cumulative fraction rising over its rows to at most 1 (exactly 1 on an
 * uncut side of the table without idle that has op time). */
static void check_real_file(const char *path) {
    xpv_decode_error derr;
    xpv_profile *p = tx_try_decode_file(path, &derr);
    if (!p) return; /* the deliberately corrupt file */
    json_t *j = render_json(p, "framework_op_stats");
    assert_int_equal(json_array_size(j), 2);
    size_t ndev[2] = {0, 0}, nhost[2] = {0, 0};
    for (size_t t = 0; t < 2; t++) {
        json_t *tab = json_array_get(j, t);
        size_t n = json_array_size(json_object_get(tab, "rows"));
        double prev_rank = 0, prev_dev = 0, prev_host = 0, self_dev = 0, self_host = 0;
        for (size_t i = 0; i < n; i++) {
            const char *hd = str(tab, i, "host_or_device");
            if (!strcmp(hd, "Device")) {
                assert_int_equal(nhost[t], 0); /* device rows first */
                ndev[t]++;
            } else {
                assert_string_equal(hd, "Host");
                nhost[t]++;
            }
            assert_true(num(tab, i, "rank") == prev_rank + 1);
            prev_rank = num(tab, i, "rank");
            assert_true(num(tab, i, "total_self_time") <= num(tab, i, "total_time") + 1e-6);
            assert_true(num(tab, i, "occurrences") >= 0);
            /* each side's cumulative fraction rises over its own rows */
            int dev = !strcmp(hd, "Device");
            double c = num(tab, i, dev ? "device_cumulative_total_self_time_percent"
                                       : "Host_cumulative_total_self_time_percent");
            double *prev = dev ? &prev_dev : &prev_host;
            *(dev ? &self_dev : &self_host) += num(tab, i, "total_self_time");
            if (!(c >= *prev - 1e-12 && c <= 1.0 + 1e-9))
                fail_msg("%s table %zu row %zu: cumulative %g after %g", path, t, i, c, *prev);
            *prev = c;
        }
        assert_true(ndev[t] <= 500 && nhost[t] <= 500);
        /* uncut (the table with idle did not reach 500 rows on that side)
         * and some op time to share */
        if (t == 1 && ((self_dev > 0 && ndev[0] < 500 && fabs(prev_dev - 1.0) > 1e-9) ||
                       (self_host > 0 && nhost[0] < 500 && fabs(prev_host - 1.0) > 1e-9)))
            fail_msg("%s: cumulative fractions end at %.12g (device, %zu rows) and %.12g "
                     "(host, %zu rows), want 1",
                     path, prev_dev, ndev[t], prev_host, nhost[t]);
    }
    /* the table without idle has at most one row less per side */
    assert_true(ndev[1] <= ndev[0] && ndev[0] <= ndev[1] + 1);
    assert_true(nhost[1] <= nhost[0] && nhost[0] <= nhost[1] + 1);
    print_message("%s: %zu device, %zu host rows\n", path, ndev[0], nhost[0]);
    json_decref(j);
    xpv_profile_free(p);
}

static void test_real_files(void **state) {
    (void)state;
    tu_each_real_file(".xplane.pb", check_real_file);
}

/* The GPU training file: both sides well filled. */
static void test_real_gpu_file(void **state) {
    (void)state;
    TU_SKIP_NO_SHARED();
    xpv_profile *p = tx_decode_real_gpu_file();
    json_t *j = render_json(p, "framework_op_stats");
    for (size_t t = 0; t < 2; t++) {
        json_t *tab = json_array_get(j, t);
        size_t n = json_array_size(json_object_get(tab, "rows"));
        assert_true(n > 100 && n <= 1000);
        size_t dev = 0, host = 0;
        for (size_t i = 0; i < n; i++) {
            if (!strcmp(str(tab, i, "host_or_device"), "Device")) dev++;
            else host++;
        }
        assert_true(dev > 0 && host > 0);
    }
    json_decref(j);
    xpv_profile_free(p);
}

TU_MAIN(cmocka_unit_test(test_gpu_tables),
        cmocka_unit_test(test_memcpy_bandwidth),
        cmocka_unit_test(test_cpu_columns_match_golden),
        cmocka_unit_test(test_real_gpu_file),
        cmocka_unit_test(test_real_files))
