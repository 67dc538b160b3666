/*
 * test_tool_input_pipeline.c - the input_pipeline_analyzer converter:
 * golden numbers on a hand-built profile, host input op categories and
 * breakdown, no-step diagnostics, XProf's JSON shape, every real xplane.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "datatable_json.h"
#include "opstats.h"
#include "steps_fixture.h"
#include "testutil.h"

#define IPA xpv_tool_find("input_pipeline_analyzer")

static void test_golden(void **state) {
    (void)state;
    xpv_profile *p = sf_training(0);
    json_t *j = dt_render_one(IPA, p);
    assert_true(json_is_array(j));
    assert_int_equal(json_array_size(j), 5);
    char ids[1024];
    dt_col_ids(json_array_get(j, 0), ids, sizeof ids);
    assert_string_equal(ids, "index");
    assert_int_equal(dt_nrows(json_array_get(j, 0)), 0);

    json_t *st = json_array_get(j, 1);
    assert_int_equal(dt_nrows(st), SF_STEPS);
    assert_string_equal(dt_pstr(st, "steptime_ms_average"), "30.0");
    assert_string_equal(dt_pstr(st, "steptime_ms_minimum"), "30.0");
    assert_string_equal(dt_pstr(st, "steptime_ms_maximum"), "30.0");
    assert_string_equal(dt_pstr(st, "kernel_launch_time_ms_avg"), "1.0");
    assert_string_equal(dt_pstr(st, "other_time_ms_avg"), "2.0");
    assert_non_null(strstr(dt_pstr(st, "input_conclusion"), "HIGHLY input-bound because 40.0%"));
    /* No tf.data ops: the next step points to the tf.data API. */
    assert_non_null(strstr(dt_pstr(st, "summary_nextstep"), "Consider using <a href="));

    /* The overview embeds exactly this table. */
    json_t *ov = dt_render_one(xpv_tool_find("overview_page"), p);
    char *a = json_dumps(st, JSON_SORT_KEYS), *b = json_dumps(json_array_get(ov, 1), JSON_SORT_KEYS);
    assert_string_equal(a, b);
    free(a);
    free(b);
    json_decref(ov);

    json_t *in = json_array_get(j, 2);
    assert_int_equal(dt_nrows(in), 0);
    assert_string_equal(dt_pstr(in, "enqueue_us"), "0.000");
    json_t *rc = json_array_get(j, 3);
    assert_int_equal(dt_nrows(rc), 5);
    assert_non_null(strstr(dt_cell_str(rc, 0, 0), "Enqueuing data"));
    assert_int_equal(dt_nrows(json_array_get(j, 4)), 0);
    json_decref(j);
    xpv_profile_free(p);
}

/* tf.data iterators: host input op table, categories, breakdown. */
static void test_host_input_ops(void **state) {
    (void)state;
    xpv_profile *p = sf_training(1);
    json_t *j = dt_render_one(IPA, p);
    json_t *in = json_array_get(j, 2);
    char ids[1024];
    dt_col_ids(in, ids, sizeof ids);
    assert_string_equal(ids, "opName,count,timeInMs,timeInPercent,selfTimeInMs,"
                             "selfTimeInPercent,category");
    assert_int_equal(dt_nrows(in), 3);
    /* self time desc, then name: Model 2 ms, Map 2 ms, TFRecord 1 ms */
    assert_string_equal(dt_cell_str(in, 0, 0), "Iterator::Model");
    assert_string_equal(dt_cell_str(in, 0, 6), "Preprocessing");
    assert_true(dt_near(dt_cell_num(in, 0, 2), 5.0));
    assert_true(dt_near(dt_cell_num(in, 0, 3), 1.0));
    assert_true(dt_near(dt_cell_num(in, 0, 4), 2.0));
    assert_true(dt_near(dt_cell_num(in, 0, 5), 0.4));
    assert_string_equal(dt_cell_str(in, 1, 0), "Iterator::Model::Map");
    assert_string_equal(dt_cell_str(in, 2, 0), "Iterator::Model::Map::TFRecord");
    assert_string_equal(dt_cell_str(in, 2, 6), "Demanded file read");
    assert_true(dt_near(dt_cell_num(in, 2, 1), 1.0));
    /* no host-to-device time: the raw read / preprocessing time is used */
    assert_string_equal(dt_pstr(in, "demanded_file_read_us"), "1000.000");
    assert_string_equal(dt_pstr(in, "preprocessing_us"), "4000.000");
    assert_string_equal(dt_pstr(in, "advanced_file_read_us"), "0.000");
    assert_string_equal(dt_pstr(in, "enqueue_us"), "0.000");
    assert_string_equal(dt_pstr(in, "unclassified_nonequeue_us"), "0.000");
    json_t *st = json_array_get(j, 1);
    assert_string_equal(dt_pstr(st, "summary_nextstep"),
                        "Look at Section 3 for the breakdown of input time on the host.");
    /* tf.data in use: the kernel launch statement names the contention */
    assert_non_null(strstr(dt_pstr(st, "kernel_launch_statement"), "TF_GPU_THREAD_MODE=gpu_private"));
    json_decref(j);
    xpv_profile_free(p);
}

static void test_categories(void **state) {
    (void)state;
    xpv_op_metric m;
    memset(&m, 0, sizeof m);
    m.category = "Dataset";
    m.name = "Iterator::Prefetch::Interleave::TFRecord";
    assert_string_equal(xpv_input_op_category(&m), "Advanced file read");
    m.name = "Iterator::Batch::TextLine";
    assert_string_equal(xpv_input_op_category(&m), "Demanded file read");
    m.name = "Iterator::Batch::Map";
    assert_string_equal(xpv_input_op_category(&m), "Preprocessing");
    m.category = "MemcpyHToD";
    assert_string_equal(xpv_input_op_category(&m), "Enqueue");
    m.category = "InfeedEnqueueTuple";
    assert_string_equal(xpv_input_op_category(&m), "Enqueue");
    m.category = "InfeedEnqueuePrelinearizedBuffer"; /* tsl: a prefix */
    assert_string_equal(xpv_input_op_category(&m), "Enqueue");
    m.category = "READ";
    assert_string_equal(xpv_input_op_category(&m), "Demanded file read");
    m.category = "MatMul";
    assert_null(xpv_input_op_category(&m));
    m.category = "IDLE";
    m.is_idle = 1;
    assert_null(xpv_input_op_category(&m));
}

/* No steps: empty step table, the diagnostics explain why. */
static void test_no_steps(void **state) {
    (void)state;
    int host, ln;
    tx_space *s = tx_new_line("/host:CPU", 1, "main", &host, &ln);
    tx_event(s, host, ln, "Iterator::Batch", 0, 5 * SF_MS);
    xpv_profile *p = tx_decode(s);
    json_t *j = dt_render_one(IPA, p);
    assert_int_equal(json_array_size(j), 5);
    assert_int_equal(dt_nrows(json_array_get(j, 1)), 0);
    assert_string_equal(dt_pstr(json_array_get(j, 1), "steptime_ms_average"), "0.0");
    assert_int_equal(dt_nrows(json_array_get(j, 2)), 1);
    json_t *dg = json_array_get(j, 4);
    assert_int_equal(dt_nrows(dg), 1);
    assert_non_null(strstr(dt_cell_str(dg, 0, 1), "No step marker observed"));
    json_decref(j);
    xpv_profile_free(p);
}

static void test_shape_matches_xprof_golden(void **state) {
    (void)state;
    json_t *g = dt_xprof_golden("tpu-training_input_pipeline_analyzer_tpu_training");
    if (!g) skip();
    xpv_profile *p = sf_training(1);
    json_t *j = dt_render_one(IPA, p);
    assert_int_equal(json_array_size(j), json_array_size(g));
    for (size_t i = 2; i < 5; i++) {
        dt_assert_same_col_ids(j, g, i);
        dt_assert_has_p_keys(j, g, i);
    }
    /* Step-table p keys common to the TPU and generic variants. */
    static const char *const common[] = {"hardware_type", "steptime_ms_average",
                                         "steptime_ms_standard_deviation", "steptime_ms_minimum",
                                         "steptime_ms_maximum", "input_conclusion",
                                         "summary_nextstep", "step_time_graph_column_ids"};
    dt_assert_both_have_p(j, g, 1, common, sizeof common / sizeof common[0]);
    json_decref(j);
    json_decref(g);
    xpv_profile_free(p);
}

static void check_real_file(const char *path, xpv_profile *p, void *ctx) {
    (void)ctx;
    json_t *j = dt_render_one(IPA, p);
    assert_int_equal(json_array_size(j), 5);
    print_message("%s: %zu steps, %zu input ops\n", path, dt_nrows(json_array_get(j, 1)),
                  dt_nrows(json_array_get(j, 2)));
    json_decref(j);
}

static void test_real_files(void **state) {
    (void)state;
    TU_SKIP_NO_SHARED();
    assert_true(tx_each_real_profile(0, check_real_file, NULL) > 0);
}

/* `input_pipeline`, the tool's old name, is still accepted (§1.5); a
 * trailing '^' too. */
static void test_old_name(void **state) {
    (void)state;
    assert_ptr_equal(xpv_tool_find("input_pipeline"), IPA);
    assert_ptr_equal(xpv_tool_find("input_pipeline^"), IPA);
    assert_string_equal(IPA->name, "input_pipeline_analyzer");
    assert_null(xpv_tool_find("input_pipelin"));
}

TU_MAIN(cmocka_unit_test(test_golden),
        cmocka_unit_test(test_host_input_ops),
        cmocka_unit_test(test_categories),
        cmocka_unit_test(test_no_steps),
        cmocka_unit_test(test_shape_matches_xprof_golden),
        cmocka_unit_test(test_real_files),
        cmocka_unit_test(test_old_name))
