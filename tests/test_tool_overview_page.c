/*
 * test_tool_overview_page.c - the overview_page converter: golden numbers on
 * a hand-built profile, XProf's JSON shape (7 DataTables, column ids and p
 * keys as in XProf's golden output), no-step / CPU-only / multi-host pages
 * and every real xplane.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "datatable_json.h"
#include "opstats.h"
#include "steps_fixture.h"
#include "testutil.h"

extern const xpv_tool xpv_tool_overview_page;
extern const xpv_tool xpv_tool_framework_op_stats;

static void test_golden(void **state) {
    (void)state;
    xpv_profile *p = sf_training(0);
    json_t *j = dt_render_one(&xpv_tool_overview_page, p);
    assert_true(json_is_array(j));
    assert_int_equal(json_array_size(j), 7);
    char ids[1024];

    /* 0: analysis, GPU variant (compute capability 8.0 = Ampere). */
    json_t *an = json_array_get(j, 0);
    dt_col_ids(an, ids, sizeof ids);
    assert_string_equal(ids, "selfTimePercent,cumulativeTimePercent,category,operation,flopRate,"
                             "tcEligibility,tcUtilization");
    assert_string_equal(dt_pstr(an, "device_compute_16bit_percent"), "53.3%");
    assert_string_equal(dt_pstr(an, "device_compute_32bit_percent"), "46.7%");
    assert_string_equal(dt_pstr(an, "host_op_time_eager_percent"), "0.0%");
    assert_int_equal(dt_nrows(an), 2);
    assert_string_equal(dt_cell_str(an, 0, 3), "model/relu/Relu");
    assert_string_equal(dt_cell_str(an, 0, 2), "Relu");
    assert_true(dt_near(dt_cell_num(an, 0, 0), 80.0 / 150.0));
    assert_true(dt_near(dt_cell_num(an, 1, 1), 1.0));

    /* 1: step table. */
    json_t *st = json_array_get(j, 1);
    dt_col_ids(st, ids, sizeof ids);
    assert_string_equal(ids, "stepnum,deviceComputeTimeMs,deviceToDeviceTimeMs,"
                             "deviceCollectivesTimeMs,hostComputeTimeMs,kernelLaunchTimeMs,"
                             "infeedTimeMs,outfeedTimeMs,compileTimeMs,otherTimeMs,tooltip,"
                             "stepTimeMs");
    assert_int_equal(dt_nrows(st), SF_STEPS);
    assert_string_equal(dt_cell_str(st, 3, 0), "train 3");
    assert_true(dt_near(dt_cell_num(st, 3, 1), 15.0));
    assert_true(dt_near(dt_cell_num(st, 3, 5), 1.0));
    assert_true(dt_near(dt_cell_num(st, 3, 6), 12.0));
    assert_true(dt_near(dt_cell_num(st, 3, 9), 2.0));
    assert_true(dt_near(dt_cell_num(st, 3, 11), 30.0));
    assert_non_null(strstr(dt_cell_str(st, 3, 10), "Step train 3, duration: 30.00 ms"));
    assert_string_equal(dt_pstr(st, "hardware_type"), "GPU");
    assert_string_equal(dt_pstr(st, "steptime_ms_average"), "30.0");
    assert_string_equal(dt_pstr(st, "steptime_ms_standard_deviation"), "0.0");
    assert_string_equal(dt_pstr(st, "infeed_time_ms_avg"), "12.0");
    assert_string_equal(dt_pstr(st, "device_compute_time_ms_avg"), "15.0");
    assert_string_equal(dt_pstr(st, "input_conclusion"),
                        "Your program is HIGHLY input-bound because 40.0% of the total step "
                        "time sampled is waiting for input. Therefore, you should first focus "
                        "on reducing the input time.");
    assert_string_equal(dt_pstr(st, "kernel_launch_statement"),
                        "3.3 % of the total step time sampled is spent on 'Kernel Launch'.");
    assert_string_equal(dt_pstr(st, "all_other_statement"),
                        "6.7 % of the total step time sampled is spent on 'All Others' time. "
                        "This could be due to Python execution overhead.");

    /* 2: run environment. */
    json_t *re = json_array_get(j, 2);
    assert_string_equal(dt_pstr(re, "device_type"), "Nvidia GPU (Ampere)");
    assert_string_equal(dt_pstr(re, "host_count"), "1");
    assert_string_equal(dt_pstr(re, "device_core_count"), "1");
    assert_string_equal(dt_pstr(re, "task_count"), "1 (num tasks per host = 1)");

    /* 3: recommendation. */
    json_t *rc = json_array_get(j, 3);
    assert_string_equal(dt_pstr(rc, "bottleneck"), "host");
    assert_string_equal(dt_pstr(rc, "non_bottleneck_tip_types"), "device");
    assert_string_equal(dt_pstr(rc, "kernel_launch_bottleneck"), "moderate");
    assert_string_equal(dt_pstr(rc, "all_other_bottleneck"), "moderate");
    assert_string_equal(dt_pstr(rc, "precision_statement"), "");
    assert_int_equal(dt_nrows(rc), 7);
    assert_string_equal(dt_cell_str(rc, 0, 0), "faq");
    assert_string_equal(dt_cell_str(rc, 3, 1),
                        "framework_op_stats (identify the time-consuming operations executed "
                        "on the GPU)");

    /* 5: the empty placeholder; 6: no diagnostics. */
    assert_true(json_is_object(json_array_get(j, 5)));
    assert_int_equal(json_object_size(json_array_get(j, 5)), 0);
    assert_int_equal(dt_nrows(json_array_get(j, 6)), 0);
    json_decref(j);
    xpv_profile_free(p);
}

/* Two identical hosts (ALL_HOSTS): same steps, host and device counts add. */
static void test_multi_host(void **state) {
    (void)state;
    xpv_profile *ps[2] = {sf_training(0), sf_training(0)};
    sf_hosts h;
    sf_hosts_init(&h, ps, 2);
    json_t *j = dt_render_hs(&xpv_tool_overview_page, &h.hs);
    json_t *st = json_array_get(j, 1), *re = json_array_get(j, 2);
    assert_int_equal(dt_nrows(st), SF_STEPS);
    assert_string_equal(dt_pstr(st, "steptime_ms_average"), "30.0");
    assert_string_equal(dt_pstr(re, "host_count"), "2");
    assert_string_equal(dt_pstr(re, "device_core_count"), "2");
    assert_string_equal(dt_pstr(re, "task_count"), "2 (num tasks per host = 1)");
    json_decref(j);
    xpv_profile_free(ps[0]);
    xpv_profile_free(ps[1]);
}

/* Hosts with different step sets: host h0 has steps 0..9, h1 steps 2..11.
 * The page shows the 8 common steps and warns that 4 were dropped. */
static void test_multi_host_steps_dropped(void **state) {
    (void)state;
    xpv_profile *ps[2] = {sf_training_steps(0, 0, SF_STEPS), sf_training_steps(0, 2, SF_STEPS)};
    sf_hosts h;
    sf_hosts_init(&h, ps, 2);
    json_t *j = dt_render_hs(&xpv_tool_overview_page, &h.hs);
    json_t *st = json_array_get(j, 1);
    assert_int_equal(dt_nrows(st), 8);
    json_t *dg = json_array_get(j, 6);
    assert_int_equal(dt_nrows(dg), 1);
    assert_string_equal(dt_cell_str(dg, 0, 0), "WARNING");
    assert_non_null(strstr(dt_cell_str(dg, 0, 1), "4 steps dropped."));
    json_decref(j);
    xpv_profile_free(ps[0]);
    xpv_profile_free(ps[1]);
}

/* CPU only, no step marker: a page with diagnostics, not an error. */
static void test_no_steps_cpu(void **state) {
    (void)state;
    tx_space *s = tx_new();
    int host = tx_plane(s, "/host:CPU");
    int ln = tx_line(s, host, 1, "main", 0);
    tx_event(s, host, ln, "MatMul:MatMul", 0, 5 * SF_MS);
    tx_ev_str(s, host, tx_event(s, host, ln, "Add:AddV2", 6 * SF_MS, SF_MS), "x", "y");
    xpv_profile *p = tx_decode(s);
    json_t *j = dt_render_one(&xpv_tool_overview_page, p);
    assert_int_equal(json_array_size(j), 7);
    char ids[1024];
    json_t *an = json_array_get(j, 0);
    dt_col_ids(an, ids, sizeof ids);
    assert_string_equal(ids, "selfTimePercent,cumulativeTimePercent,category,operation,flopRate");
    assert_string_equal(dt_pstr(an, "host_tf_op_percent"), "100.0%");
    json_t *st = json_array_get(j, 1);
    assert_int_equal(dt_nrows(st), 0);
    assert_string_equal(dt_pstr(st, "hardware_type"), "CPU_ONLY");
    assert_string_equal(dt_pstr(st, "input_conclusion"),
                        "No step time measured. Therefore we cannot tell where the performance "
                        "bottleneck is.");
    assert_string_equal(dt_pstr(json_array_get(j, 2), "device_type"), "CPU");
    assert_string_equal(dt_pstr(json_array_get(j, 3), "bottleneck"), "unknown");
    json_t *dg = json_array_get(j, 6);
    assert_int_equal(dt_nrows(dg), 1);
    assert_string_equal(dt_cell_str(dg, 0, 0), "WARNING");
    assert_non_null(strstr(dt_cell_str(dg, 0, 1), "No step marker observed"));
    json_decref(j);
    xpv_profile_free(p);
}

/* XSpace errors and warnings reach the diagnostics table. */
static void test_capture_diagnostics(void **state) {
    (void)state;
    tx_space *s = tx_new();
    int host = tx_plane(s, "/host:CPU");
    tx_line(s, host, 1, "main", 0);
    static char *errs[] = {"zz dropped 12 GPU events", "aa CUPTI error"};
    static char *warns[] = {"profiler buffer nearly full"};
    s->space.n_errors = 2;
    s->space.errors = errs;
    s->space.n_warnings = 1;
    s->space.warnings = warns;
    xpv_profile *p = tx_decode(s);
    assert_non_null(p);
    json_t *j = dt_render_one(&xpv_tool_overview_page, p);
    json_t *dg = json_array_get(j, 6);
    assert_int_equal(dt_nrows(dg), 4);
    assert_string_equal(dt_cell_str(dg, 0, 0), "WARNING");
    assert_string_equal(dt_cell_str(dg, 0, 1), "profiler buffer nearly full");
    /* errors sorted */
    assert_string_equal(dt_cell_str(dg, 2, 0), "ERROR");
    assert_string_equal(dt_cell_str(dg, 2, 1), "aa CUPTI error");
    assert_string_equal(dt_cell_str(dg, 3, 1), "zz dropped 12 GPU events");
    json_decref(j);
    xpv_profile_free(p);
}

/* Column ids (and recommendation p keys) as XProf's own golden output. */
static void test_shape_matches_xprof_golden(void **state) {
    (void)state;
    json_t *g = dt_xprof_golden("tpu-training_overview_page_tpu_training");
    if (!g) skip();
    xpv_profile *p = sf_training(0);
    json_t *j = dt_render_one(&xpv_tool_overview_page, p);
    assert_int_equal(json_array_size(j), json_array_size(g));
    static const size_t same[] = {2, 3, 4, 6};
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) dt_assert_same_col_ids(j, g, same[i]);
    /* Every recommendation / run environment p key XProf writes. */
    dt_assert_has_p_keys(j, g, 2);
    dt_assert_has_p_keys(j, g, 3);
    /* Common analysis p keys. */
    static const char *const common[] = {"host_tf_op_percent", "device_tf_op_percent",
                                         "host_op_time_eager_percent",
                                         "device_op_time_eager_percent", "host_trace_level",
                                         "mxu_utilization_percent", "remark_text",
                                         "remark_color"};
    dt_assert_both_have_p(j, g, 0, common, sizeof common / sizeof common[0]);
    json_decref(j);
    json_decref(g);
    xpv_profile_free(p);
}

/* Every real xplane converts; the step table has one row per step. */
static void check_real_file(const char *path, xpv_profile *p, void *ctx) {
    (void)ctx;
    json_t *j = dt_render_one(&xpv_tool_overview_page, p);
    assert_int_equal(json_array_size(j), 7);
    xpv_arena a;
    xpv_arena_init(&a, 4096);
    xpv_step_db db;
    xpv_steps_build(p, &a, &db);
    assert_int_equal(dt_nrows(json_array_get(j, 1)), db.n);
    /* no steps -> the diagnostics say so */
    if (db.n == 0) assert_true(dt_nrows(json_array_get(j, 6)) >= 1);
    print_message("%s: %zu steps, device %s\n", path, db.n,
                  dt_pstr(json_array_get(j, 2), "device_type"));
    /* Training or not: the overview and TF stats give one answer. */
    json_t *tf = dt_render_one(&xpv_tool_framework_op_stats, p);
    const char *task = dt_pstr(json_array_get(tf, 0), "task_type");
    const char *training = dt_pstr(json_array_get(j, 2), "is_training");
    print_message("  task_type %s, is_training %s\n", task, training);
    assert_string_equal(training, !strcmp(task, "Training") ? "true" : "false");
    json_decref(tf);
    xpv_arena_free(&a);
    json_decref(j);
}

static void test_real_files(void **state) {
    (void)state;
    TU_SKIP_NO_SHARED();
    assert_true(tx_each_real_profile(0, check_real_file, NULL) > 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden),
        cmocka_unit_test(test_multi_host),
        cmocka_unit_test(test_no_steps_cpu),
        cmocka_unit_test(test_capture_diagnostics),
        cmocka_unit_test(test_multi_host_steps_dropped),
        cmocka_unit_test(test_shape_matches_xprof_golden),
        cmocka_unit_test(test_real_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
