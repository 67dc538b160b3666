/*
 * test_ingest_legacy.c - TF 2.2-2.x per-tool files -> tool JSON: constructed
 * messages with known answers, file-name rules, and every real legacy file
 * in ../shared/testdata/real with the values listed in
 * legacy-and-pytorch.md §3 / §5 (skipped when absent).
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "testutil.h"

#include "chrome_trace.h"
#include "datatable_json.h"
#include "legacy.h"
#include "legacy_tools.pb-c.h"
#include "op_metrics.h"
#include "op_metrics_fixture.h"
#include "opstats.h"
#include "srv_fixture.h"
#include "tool.h"
#include "tool_xspace.h"

static json_t *render(enum xpv_legacy_kind kind, const void *data, size_t len) {
    xpv_buf out;
    xpv_buf_init(&out);
    xpv_err err;
    memset(&err, 0, sizeof err);
    int rc = xpv_legacy_render(kind, data, len, 0, &out, &err);
    if (rc) print_message("render failed: %d %s\n", err.status, err.msg);
    assert_int_equal(rc, 0);
    json_error_t je;
    json_t *j = json_loadb(out.data, out.len, 0, &je);
    if (!j) print_message("invalid JSON: %s at %d\n", je.text, je.position);
    assert_non_null(j);
    xpv_buf_free(&out);
    return j;
}

static json_t *render_file(const char *rel, enum xpv_legacy_kind kind) {
    char path[4096];
    snprintf(path, sizeof path, "%s/testdata/real/%s", tu_shared_dir(), rel);
    size_t len;
    void *data = tu_read_file(path, &len);
    if (!data) print_message("missing %s\n", path);
    assert_non_null(data);
    json_t *j = render(kind, data, len);
    free(data);
    return j;
}

/* Table with a column of this id in an array of tables. */
static json_t *table_with(json_t *arr, const char *col) {
    size_t i, k;
    json_t *t, *c;
    json_array_foreach(arr, i, t) {
        json_array_foreach(json_object_get(t, "cols"), k, c)
            if (!strcmp(json_string_value(json_object_get(c, "id")), col)) return t;
    }
    return NULL;
}

static size_t nrows(json_t *t) { return json_array_size(json_object_get(t, "rows")); }

static double num(json_t *t, size_t row, const char *col) {
    return json_number_value(dt_cell_by_id(t, row, col));
}

static const char *str(json_t *t, size_t row, const char *col) {
    return json_string_value(dt_cell_by_id(t, row, col));
}

static const char *pstr(json_t *t, const char *key) {
    return json_string_value(json_object_get(json_object_get(t, "p"), key));
}

#define assert_near(a, b, eps) assert_true(fabs((double)(a) - (double)(b)) <= (eps))

/* ---- constructed -------------------------------------------------------- */

static void test_names(void **state) {
    (void)state;
    size_t h;
    const xpv_legacy_suffix *s = xpv_legacy_match("10.240.1.50.tensorflow_stats.pb", &h);
    assert_non_null(s);
    assert_int_equal(s->kind, XPV_LEGACY_TF_STATS_PB);
    assert_string_equal(s->tool, "framework_op_stats");
    assert_int_equal(h, strlen("10.240.1.50"));
    s = xpv_legacy_match("localhost.memory_profile.json.gz", &h);
    assert_non_null(s);
    assert_int_equal(s->kind, XPV_LEGACY_MEMORY_PROFILE_JSON_GZ);
    assert_null(xpv_legacy_match("host.xplane.pb", &h));
    assert_null(xpv_legacy_match("worker0.pt.trace.json.gz", &h));
    s = xpv_legacy_match("host.trace.json.gz", &h);
    assert_non_null(s);
    assert_int_equal(s->kind, XPV_LEGACY_TRACE_JSON_GZ);
    assert_null(xpv_legacy_match(".overview_page.pb", &h));   /* no host */

    assert_true(xpv_legacy_is_trace_file("worker0.pt.trace.json.gz", 0, &h));
    assert_int_equal(h, 7);
    assert_true(xpv_legacy_is_trace_file("worker0.3.pt.trace.json", 0, &h));
    assert_int_equal(h, 9);
    assert_true(xpv_legacy_is_trace_file("rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz", 0, &h));
    assert_int_equal(h, strlen("rank-0.Apr_03_18_51_38.1102"));
    assert_true(xpv_legacy_is_trace_file("h.trace.json.gz", 1, &h));   /* TF trace */
    assert_false(xpv_legacy_is_trace_file("trace.json.gz", 0, &h));
    assert_true(xpv_legacy_is_trace_file("trace.json.gz", 1, &h));
    assert_int_equal(h, 5);
    assert_false(xpv_legacy_is_trace_file("h.memory_profile.json.gz", 1, &h));
    assert_false(xpv_legacy_is_trace_file("notes.txt", 1, &h));
}

static void test_kernel_stats_constructed(void **state) {
    (void)state;
    Tensorflow__Profiler__LegacyKernelReport k = TENSORFLOW__PROFILER__LEGACY_KERNEL_REPORT__INIT;
    uint32_t block[3] = {256, 1, 1}, grid[3] = {80, 2, 1};
    k.name = "volta_sgemm_128x64_nn";
    k.registers_per_thread = 126;
    k.static_shmem_bytes = 1024;
    k.dynamic_shmem_bytes = 4096;
    k.n_block_dim = 3;
    k.block_dim = block;
    k.n_grid_dim = 3;
    k.grid_dim = grid;
    k.total_duration_ns = 10001;
    k.min_duration_ns = 3000;
    k.max_duration_ns = 4001;
    k.occurrences = 3;
    k.op_name = "model/dense/MatMul";
    k.is_op_tensor_core_eligible = 1;
    k.occupancy_pct = 50;
    Tensorflow__Profiler__LegacyKernelReport *reps[1] = {&k};
    Tensorflow__Profiler__LegacyKernelStatsDb db = TENSORFLOW__PROFILER__LEGACY_KERNEL_STATS_DB__INIT;
    db.n_reports = 1;
    db.reports = reps;
    size_t n = tensorflow__profiler__legacy_kernel_stats_db__get_packed_size(&db);
    uint8_t *buf = malloc(n);
    tensorflow__profiler__legacy_kernel_stats_db__pack(&db, buf);
    json_t *j = render(XPV_LEGACY_KERNEL_STATS_PB, buf, n);
    free(buf);
    assert_true(json_is_object(j));   /* one table, as kernel_stats.c */
    json_t *t = j;
    assert_int_equal(json_array_size(json_object_get(t, "cols")), 15);
    assert_int_equal(nrows(t), 1);
    assert_near(num(t, 0, "rank"), 1, 0);
    assert_string_equal(str(t, 0, "kernel_name"), "volta_sgemm_128x64_nn");
    assert_near(num(t, 0, "shmem_bytes"), 5120, 0);
    assert_string_equal(str(t, 0, "block_dim"), "256,1,1");
    assert_string_equal(str(t, 0, "grid_dim"), "80,2,1");
    assert_near(num(t, 0, "total_duration_us"), 10.001, 1e-9);
    assert_near(num(t, 0, "avg_duration_us"), 3.333, 1e-9);   /* integer ns division */
    assert_near(num(t, 0, "max_duration_us"), 4.001, 1e-9);
    assert_true(json_is_true(dt_cell_by_id(t, 0, "is_op_tensor_core_eligible")));
    assert_true(json_is_false(dt_cell_by_id(t, 0, "is_kernel_using_tensor_core")));
    assert_near(num(t, 0, "occupancy_pct"), 50, 0);
    json_decref(j);

    /* 0 bytes = an empty KernelStatsDb: one empty table, not an error. */
    j = render(XPV_LEGACY_KERNEL_STATS_PB, "", 0);
    assert_int_equal(nrows(j), 0);
    json_decref(j);

    /* Garbage is a 422, never a crash. */
    static const uint8_t bad[] = {0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x01};
    for (int kind = XPV_LEGACY_OVERVIEW_PB; kind <= XPV_LEGACY_POD_VIEWER_JSON; kind++) {
        xpv_buf out;
        xpv_buf_init(&out);
        xpv_err err;
        memset(&err, 0, sizeof err);
        assert_int_equal(xpv_legacy_render(kind, bad, sizeof bad, 0, &out, &err), -1);
        assert_int_equal(err.status, 422);
        xpv_buf_free(&out);
    }
}

static void test_input_pipeline_constructed(void **state) {
    (void)state;
    /* Two steps in Any wrappers, a breakdown, a bottleneck analysis. */
    Tensorflow__Profiler__LegacyPerGenericStepDetails s0 =
        TENSORFLOW__PROFILER__LEGACY_PER_GENERIC_STEP_DETAILS__INIT;
    s0.step_number = 0;
    s0.step_time_ms = 10;
    s0.device_compute_ms = 6;
    s0.host_wait_input_ms = 3;
    s0.host_to_device_ms = 0.5;
    s0.unknown_time_ms = 0.5;
    Tensorflow__Profiler__LegacyPerGenericStepDetails s1 = s0;
    s1.step_number = 1;
    s1.step_name = "train 1";
    s1.step_time_ms = 20;
    Tensorflow__Profiler__LegacyAny a0 = TENSORFLOW__PROFILER__LEGACY_ANY__INIT,
                                    a1 = TENSORFLOW__PROFILER__LEGACY_ANY__INIT,
                                    ab = TENSORFLOW__PROFILER__LEGACY_ANY__INIT;
    uint8_t b0[256], b1[256], bb[512];
    a0.type_url = "type.googleapis.com/tensorflow.profiler.PerGenericStepDetails";
    a0.value.len = tensorflow__profiler__legacy_per_generic_step_details__pack(&s0, b0);
    a0.value.data = b0;
    a1.type_url = a0.type_url;
    a1.value.len = tensorflow__profiler__legacy_per_generic_step_details__pack(&s1, b1);
    a1.value.data = b1;
    Tensorflow__Profiler__LegacyBottleneckAnalysis ba =
        TENSORFLOW__PROFILER__LEGACY_BOTTLENECK_ANALYSIS__INIT;
    ba.input_classification = "host";
    ba.input_statement = "HIGHLY input-bound";
    ba.kernel_launch_classification = "no";
    ab.type_url = "type.googleapis.com/tensorflow.profiler.BottleneckAnalysis";
    ab.value.len = tensorflow__profiler__legacy_bottleneck_analysis__pack(&ba, bb);
    ab.value.data = bb;
    Tensorflow__Profiler__LegacyAny *steps[2] = {&a0, &a1};
    Tensorflow__Profiler__LegacyStepSummary sum = TENSORFLOW__PROFILER__LEGACY_STEP_SUMMARY__INIT;
    sum.average = 15;
    sum.standard_deviation = 7.0711;
    sum.minimum = 10;
    sum.maximum = 20;
    Tensorflow__Profiler__LegacyInputPipelineAnalysisRecommendation rec =
        TENSORFLOW__PROFILER__LEGACY_INPUT_PIPELINE_ANALYSIS_RECOMMENDATION__INIT;
    char *details[1] = {"<b>use prefetch</b>"};
    rec.n_details = 1;
    rec.details = details;
    rec.bottleneck_analysis = &ab;
    rec.summary_next_step = "Look at Section 3";
    Tensorflow__Profiler__LegacyInputOpDetails op = TENSORFLOW__PROFILER__LEGACY_INPUT_OP_DETAILS__INIT;
    op.op_name = "Iterator::Model::Map";
    op.count = 7;
    op.time_in_ms = 2;
    op.time_in_percent = 40;
    op.self_time_in_ms = 1;
    op.self_time_in_percent = 25;
    op.category = "Preprocessing";
    Tensorflow__Profiler__LegacyInputOpDetails *ops[1] = {&op};
    Tensorflow__Profiler__LegacyInputPipelineAnalysisResult r =
        TENSORFLOW__PROFILER__LEGACY_INPUT_PIPELINE_ANALYSIS_RESULT__INIT;
    r.hardware_type = "GPU";
    r.step_time_summary = &sum;
    r.n_step_details = 2;
    r.step_details = steps;
    r.recommendation = &rec;
    r.n_input_op_details = 1;
    r.input_op_details = ops;
    size_t n = tensorflow__profiler__legacy_input_pipeline_analysis_result__get_packed_size(&r);
    uint8_t *buf = malloc(n);
    tensorflow__profiler__legacy_input_pipeline_analysis_result__pack(&r, buf);
    json_t *j = render(XPV_LEGACY_INPUT_PIPELINE_PB, buf, n);
    free(buf);
    assert_int_equal(json_array_size(j), 5);
    json_t *st = table_with(j, "stepnum");
    assert_non_null(st);
    assert_int_equal(nrows(st), 2);
    assert_string_equal(str(st, 0, "stepnum"), "0");
    assert_string_equal(str(st, 1, "stepnum"), "train 1");
    assert_near(num(st, 0, "infeedTimeMs"), 3.5, 1e-12);
    assert_near(num(st, 1, "stepTimeMs"), 20, 0);
    assert_non_null(strstr(str(st, 0, "tooltip"), "Step 0, duration: 10.00 ms"));
    assert_string_equal(pstr(st, "steptime_ms_average"), "15.0");
    assert_string_equal(pstr(st, "steptime_ms_standard_deviation"), "7.1");
    assert_string_equal(pstr(st, "hardware_type"), "GPU");
    assert_string_equal(pstr(st, "input_conclusion"), "HIGHLY input-bound");
    assert_string_equal(pstr(st, "kernel_launch_bottleneck"), "no");
    assert_string_equal(pstr(st, "summary_nextstep"), "Look at Section 3");
    json_t *ot = table_with(j, "opName");
    assert_int_equal(nrows(ot), 1);
    assert_near(num(ot, 0, "timeInPercent"), 0.4, 1e-12);
    assert_near(num(ot, 0, "count"), 7, 0);
    json_t *lt = table_with(j, "link");
    assert_string_equal(str(lt, 0, "link"), "<b>use prefetch</b>");
    assert_non_null(table_with(j, "severity"));
    json_decref(j);
}

static void test_memory_profile_constructed(void **state) {
    (void)state;
    const char *js =
        "{\"memoryProfilePerAllocator\":{\"GPU_0_bfc\":{\"memoryProfileSnapshots\":"
        "[{\"timeOffsetPs\":\"5\",\"aggregationStats\":{\"heapAllocatedBytes\":\"1024\"}}],"
        "\"profileSummary\":{\"peakBytesUsageLifetime\":\"1024\"}}},\"numHosts\":1,"
        "\"memoryIds\":[\"GPU_0_bfc\"]}";
    size_t n;
    unsigned char *gz = fx_gzip(js, strlen(js), &n);
    json_t *j = render(XPV_LEGACY_MEMORY_PROFILE_JSON_GZ, gz, n);
    json_t *a = json_object_get(json_object_get(j, "memoryProfilePerAllocator"), "GPU_0_bfc");
    json_t *tl = json_object_get(a, "sampledTimelineSnapshots");
    assert_int_equal(json_array_size(tl), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(tl, 0), "timeOffsetPs")),
                        "5");
    json_decref(j);
    /* Truncated gzip is a 422. */
    xpv_buf out;
    xpv_buf_init(&out);
    xpv_err err;
    assert_int_equal(xpv_legacy_render(XPV_LEGACY_MEMORY_PROFILE_JSON_GZ, gz, n / 2, 0, &out,
                                       &err), -1);
    assert_int_equal(err.status, 422);
    /* And the inflate cap holds. */
    assert_int_equal(xpv_legacy_render(XPV_LEGACY_MEMORY_PROFILE_JSON_GZ, gz, n, 16, &out,
                                       &err), -1);
    assert_int_equal(err.status, 413);
    xpv_buf_free(&out);
    free(gz);
}

/* ---- real files --------------------------------------------------------- */

#define TFP "tensorflow-profiler/plugins/profile/"
#define SGM "awslabs-sagemaker-debugger/plugins/profile/2020_08_05_13_37_44/8c859046be41.ant.amazon.com"

static void test_real_overview(void **state) {
    (void)state;
    TU_SKIP_NO_SHARED();
    json_t *j = render_file(TFP "GPU-compute-bound/localhost.overview_page.pb",
                            XPV_LEGACY_OVERVIEW_PB);
    assert_int_equal(json_array_size(j), 7);
    json_t *an = json_array_get(j, 0), *st = json_array_get(j, 1), *env = json_array_get(j, 2),
           *rec = json_array_get(j, 3);
    assert_string_equal(str(an, 0, "operation"), "replica_1/model/tf_op_layer_Pad/Pad/_2775");
    assert_string_equal(str(an, 0, "category"), "_Send");
    assert_near(num(an, 0, "selfTimePercent"), 0.0369, 0.00005);
    assert_string_equal(pstr(an, "device_compute_16bit_percent"), "46.3%");
    assert_string_equal(pstr(an, "device_compute_32bit_percent"), "53.7%");
    assert_int_equal(nrows(st), 11);
    assert_string_equal(pstr(st, "steptime_ms_average"), "1805.1");
    assert_string_equal(pstr(st, "steptime_ms_standard_deviation"), "66.7");
    assert_string_equal(pstr(st, "steptime_ms_minimum"), "1696.6");
    assert_string_equal(pstr(st, "steptime_ms_maximum"), "1921.6");
    assert_string_equal(pstr(st, "hardware_type"), "GPU");
    assert_string_equal(pstr(env, "device_type"), "GPU");
    assert_string_equal(pstr(env, "host_count"), "1");
    assert_string_equal(pstr(env, "device_core_count"), "8");
    assert_string_equal(pstr(rec, "bottleneck"), "device");
    assert_string_equal(pstr(rec, "kernel_launch_bottleneck"), "high");
    assert_string_equal(pstr(rec, "all_other_bottleneck"), "high");
    json_decref(j);

    j = render_file(TFP "GPU-input-bound/localhost.overview_page.pb", XPV_LEGACY_OVERVIEW_PB);
    st = json_array_get(j, 1);
    rec = json_array_get(j, 3);
    assert_int_equal(nrows(st), 11);
    assert_string_equal(pstr(st, "steptime_ms_average"), "1114.5");
    assert_string_equal(pstr(rec, "bottleneck"), "host");
    assert_non_null(strstr(pstr(rec, "statement"), "HIGHLY input-bound because 81.4%"));
    assert_non_null(strstr(pstr(rec, "precision_statement"), "Only 0.0% of device computation"));
    assert_string_equal(str(json_array_get(j, 0), 0, "operation"),
                        "gradient_tape/replica_1/resnet50/res3a_branch2b/Conv2DBackpropInput");
    json_decref(j);

    j = render_file(TFP "profile_demo/profile_demo.overview_page.pb", XPV_LEGACY_OVERVIEW_PB);
    st = json_array_get(j, 1);
    assert_int_equal(nrows(st), 9);
    assert_string_equal(pstr(st, "steptime_ms_average"), "652.3");
    assert_string_equal(str(st, 0, "stepnum"), "0");
    assert_near(num(st, 0, "stepTimeMs"), 221.8678, 0.00005);
    assert_near(num(st, 0, "deviceComputeTimeMs"), 217.1752, 0.00005);
    json_decref(j);

    j = render_file(SGM ".overview_page.pb", XPV_LEGACY_OVERVIEW_PB);
    assert_int_equal(nrows(json_array_get(j, 0)), 0);
    assert_string_equal(pstr(json_array_get(j, 2), "device_type"), "CPU");
    assert_string_equal(pstr(json_array_get(j, 2), "device_core_count"), "0");
    st = json_array_get(j, 1);
    assert_string_equal(pstr(st, "hardware_type"), "CPU_ONLY");
    assert_int_equal(nrows(st), 1);
    json_decref(j);
}

static void test_real_input_pipeline(void **state) {
    (void)state;
    TU_SKIP_NO_SHARED();
    json_t *j = render_file(TFP "GPU-compute-bound/localhost.input_pipeline.pb",
                            XPV_LEGACY_INPUT_PIPELINE_PB);
    json_t *st = table_with(j, "stepnum"), *ops = table_with(j, "opName");
    assert_int_equal(nrows(st), 11);
    assert_int_equal(nrows(ops), 216);
    assert_string_equal(str(ops, 0, "opName"),
                        "Iterator::Model::Shard::Prefetch::Rebatch::Map::ParallelMap::Prefetch");
    assert_string_equal(str(ops, 0, "category"), "Preprocessing");
    assert_near(num(ops, 0, "selfTimeInPercent"), 0.44112, 0.000005);
    assert_string_equal(pstr(st, "infeed_time_ms_avg"), "0.3");
    assert_string_equal(pstr(st, "device_compute_time_ms_avg"), "753.3");
    assert_string_equal(pstr(st, "kernel_launch_time_ms_avg"), "327.3");
    assert_string_equal(pstr(st, "other_time_ms_avg"), "717.5");
    assert_string_equal(pstr(st, "host_compute_time_ms_avg"), "6.7");
    assert_string_equal(pstr(st, "kernel_launch_bottleneck"), "high");
    json_decref(j);

    j = render_file(TFP "GPU-input-bound/localhost.input_pipeline.pb",
                    XPV_LEGACY_INPUT_PIPELINE_PB);
    st = table_with(j, "stepnum");
    assert_int_equal(nrows(table_with(j, "opName")), 90);
    assert_string_equal(pstr(st, "infeed_time_ms_avg"), "907.2");
    assert_non_null(strstr(pstr(st, "input_conclusion"), "HIGHLY input-bound because 81.4%"));
    json_decref(j);

    j = render_file(TFP "profile_demo/profile_demo.input_pipeline.pb",
                    XPV_LEGACY_INPUT_PIPELINE_PB);
    st = table_with(j, "stepnum");
    assert_int_equal(nrows(st), 9);
    assert_int_equal(nrows(table_with(j, "opName")), 131);
    assert_near(num(st, 0, "infeedTimeMs"), 0.6455, 0.00005);
    json_decref(j);

    j = render_file(SGM ".input_pipeline.pb", XPV_LEGACY_INPUT_PIPELINE_PB);
    st = table_with(j, "stepnum");
    ops = table_with(j, "opName");
    assert_int_equal(nrows(st), 1);
    assert_near(num(st, 0, "stepTimeMs"), 84.553, 0.0005);
    assert_near(num(st, 0, "infeedTimeMs"), 51.555, 0.0005);
    assert_near(num(st, 0, "hostComputeTimeMs"), 32.03, 0.0005);
    assert_near(num(st, 0, "otherTimeMs"), 0.968, 0.0005);
    assert_string_equal(pstr(st, "hardware_type"), "CPU_ONLY");
    assert_non_null(strstr(pstr(st, "input_conclusion"), "HIGHLY input-bound because 61.0%"));
    assert_int_equal(nrows(ops), 10);
    assert_string_equal(str(ops, 0, "opName"), "Iterator::Model::ParallelMap");
    assert_near(num(ops, 0, "selfTimeInPercent"), 0.90758, 0.000005);
    assert_string_equal(pstr(ops, "preprocessing_us"), "55864.000");
    json_decref(j);
}

static void test_real_tf_stats(void **state) {
    (void)state;
    TU_SKIP_NO_SHARED();
    json_t *j = render_file(SGM ".tensorflow_stats.pb", XPV_LEGACY_TF_STATS_PB);
    json_t *w = json_array_get(j, 0), *wo = json_array_get(j, 1);
    assert_int_equal(nrows(w), 81);
    assert_int_equal(nrows(wo), 80);
    assert_string_equal(str(w, 0, "operation"), "IDLE");
    assert_string_equal(str(w, 0, "host_or_device"), "Host");
    assert_near(num(w, 0, "total_self_time"), 189116, 0.5);
    assert_near(num(w, 0, "host_total_self_time_percent"), 0.4254, 0.00005);
    assert_string_equal(str(wo, 0, "type"), "GatherV2");
    assert_near(num(wo, 0, "total_self_time"), 158479, 0.5);
    assert_near(num(wo, 0, "host_total_self_time_percent"), 0.6204, 0.00005);
    assert_int_equal(dt_col_index(w, "gpu_tensorcore_utilization"), -1);
    json_decref(j);

    j = render_file(TFP "Cloud-TPU/10.240.1.50.tensorflow_stats.pb", XPV_LEGACY_TF_STATS_PB);
    w = json_array_get(j, 0);
    assert_int_equal(nrows(w), 731);
    assert_int_equal(nrows(json_array_get(j, 1)), 729);
    int memory = 0, device = 0;
    for (size_t i = 0; i < nrows(w); i++) {
        memory += !strcmp(str(w, i, "bound_by"), "Memory");
        device += !strcmp(str(w, i, "host_or_device"), "Device");
    }
    assert_int_equal(memory, 436);
    assert_int_equal(device, 519);
    assert_string_equal(str(w, 0, "operation"),
                        "while/body/_1/gradient_tape/resnet50/res2b_branch2a/Conv2DBackpropInput");
    assert_near(num(w, 0, "occurrences"), 32, 0);
    assert_near(num(w, 0, "total_self_time"), 256554.211, 0.001);
    json_decref(j);

    j = render_file(TFP "GPU-input-bound/localhost.tensorflow_stats.pb", XPV_LEGACY_TF_STATS_PB);
    w = json_array_get(j, 0);
    assert_int_equal(nrows(w), 9749);
    assert_int_equal(nrows(json_array_get(j, 1)), 9747);
    assert_string_equal(str(w, 0, "operation"), "IDLE");
    assert_near(num(w, 0, "total_self_time"), 82285503.313, 0.001);
    assert_near(num(w, 0, "device_total_self_time_percent"), 0.8390, 0.00005);
    json_decref(j);

    j = render_file(TFP "profile_demo/profile_demo.tensorflow_stats.pb", XPV_LEGACY_TF_STATS_PB);
    wo = json_array_get(j, 1);
    assert_int_equal(nrows(json_array_get(j, 0)), 27);
    assert_int_equal(nrows(wo), 25);
    assert_string_equal(str(wo, 0, "type"), "_Recv");
    assert_string_equal(str(wo, 0, "operation"), "average_loss/Mean/_23");
    assert_near(num(wo, 0, "occurrences"), 1010, 0);
    assert_near(num(wo, 0, "total_self_time"), 7690.081, 0.001);
    json_decref(j);

    j = render_file(SGM ".kernel_stats.pb", XPV_LEGACY_KERNEL_STATS_PB);
    assert_true(json_is_object(j));
    assert_int_equal(nrows(j), 0);
    json_decref(j);
}

static void test_real_json_files(void **state) {
    (void)state;
    TU_SKIP_NO_SHARED();
    json_t *j = render_file(TFP "Cloud-TPU/10.240.1.50.overview_page.json",
                            XPV_LEGACY_OVERVIEW_JSON);
    assert_int_equal(json_array_size(j), 6);
    assert_string_equal(pstr(table_with(j, "stepnum"), "steptime_ms_average"), "313.8");
    json_decref(j);
    j = render_file(TFP "Cloud-TPU/10.240.1.50.input_pipeline.json",
                    XPV_LEGACY_INPUT_PIPELINE_JSON);
    assert_int_equal(json_array_size(j), 5);
    assert_non_null(table_with(j, "opName"));
    json_decref(j);

    static const struct { const char *file; size_t steps, cores; const char *type; } pods[] = {
        {TFP "profile_demo/profile_demo.pod_viewer.json", 2, 32, "TPU v3"},
        {TFP "Cloud-TPU_2020-pod_viewer/10.240.1.50.pod_viewer.json", 3, 8, "TPU v2"},
        {TFP "Cloud-TPU/10.240.1.50.pod_viewer.json", 3, 8, "TPU v2"},
    };
    for (size_t i = 0; i < sizeof pods / sizeof pods[0]; i++) {
        j = render_file(pods[i].file, XPV_LEGACY_POD_VIEWER_JSON);
        json_t *seq = json_object_get(json_object_get(j, "podStatsSequence"), "podStatsMap");
        assert_int_equal(json_array_size(seq), pods[i].steps);
        json_t *cores = json_object_get(json_array_get(seq, 0), "podStatsPerCore");
        assert_int_equal(json_object_size(cores), pods[i].cores);
        json_t *events = json_object_get(j, "stepBreakdownEvents");
        assert_true(json_array_size(events) >= 3);
        /* Every core has a breakdown keyed by those ids. */
        const char *k;
        json_t *c;
        json_object_foreach(cores, k, c) {
            json_t *bd = json_object_get(c, "stepBreakdownUs");
            assert_int_equal(json_object_size(bd), json_array_size(events));
        }
        assert_string_equal(json_string_value(json_object_get(j, "deviceType")), pods[i].type);
        assert_true(json_is_integer(json_object_get(json_object_get(j, "topology"), "xDimension")));
        /* All-reduce groups are readable under the 2020 name in all shapes. */
        json_t *ar = json_object_get(json_array_get(seq, 0), "allReduceOpDb");
        assert_true(json_array_size(ar) > 0);
        assert_non_null(json_object_get(json_array_get(ar, 0), "replicaGroups"));
        json_decref(j);
    }
}

/* A PyTorch trace through chrome_trace -> the normal op metrics: the
 * device time of each op (kernels linked by External id) equals
 * torch-tb-profiler's "device self duration" (spec §9: 149670 µs for
 * aten::cudnn_convolution_backward_weight in resnet50_num_workers_0). */
/* The DataTables of a stored JSON file as data_csv exports them: cells as
 * a JSON reader sees them (-0.0 and 1e16 stay reals, an object cell is
 * its JSON, a bare cell is its value, a missing one empty), elements
 * without "cols" not counted, and the protobuf kinds' tables the ones
 * render() writes. */
static void test_tables_csv(void **state) {
    (void)state;
    static const char json[] =
        "[{},{\"cols\":[{\"id\":\"a\",\"label\":\"\",\"type\":\"number\"},"
        "{\"id\":\"b\",\"label\":\"B, b\",\"type\":\"string\"},{\"id\":\"c\"}],"
        "\"rows\":[{\"c\":[{\"v\":-0.0},{\"v\":{\"x\":[1,true]}},{\"v\":null}]},"
        "{\"c\":[{\"v\":1e16},\"bare\"]},{\"c\":[{\"v\":12},{\"v\":\"q\\\"\"},{\"v\":2.5}]}]}]";
    xpv_dt_doc doc;
    xpv_dt_doc_init(&doc, 1);
    xpv_err err;
    memset(&err, 0, sizeof err);
    assert_int_equal(xpv_legacy_tables(XPV_LEGACY_OVERVIEW_JSON, json, strlen(json), 0, &doc,
                                       &err), 0);
    xpv_buf b;
    xpv_buf_init(&b);
    assert_int_equal(xpv_dt_doc_write_csv(&doc, 0, &b, &err), 0);
    xpv_buf_putc(&b, '\0');
    assert_string_equal(b.data, "a,\"B, b\",c\r\n-0,\"{\"\"x\"\":[1,true]}\",\r\n"
                                "1e+16,bare,\r\n12,\"q\"\"\",2.5\r\n");
    assert_int_equal(xpv_dt_doc_write_csv(&doc, 1, &b, &err), -1);
    assert_int_equal(err.status, 400);
    xpv_dt_doc_release(&doc);
    xpv_buf_free(&b);

    /* Pod viewer files hold no DataTables. */
    xpv_dt_doc_init(&doc, 1);
    assert_int_equal(xpv_legacy_tables(XPV_LEGACY_POD_VIEWER_JSON, "{}", 2, 0, &doc, &err), -1);
    assert_int_equal(err.status, 400);
    xpv_dt_doc_release(&doc);

    /* An empty KernelStatsDb: one bare table, the one render() writes. */
    xpv_dt_doc_init(&doc, 1);
    assert_int_equal(xpv_legacy_tables(XPV_LEGACY_KERNEL_STATS_PB, "", 0, 0, &doc, &err), 0);
    assert_int_equal(doc.array, 0);
    xpv_buf_init(&b);
    xpv_dt_doc_write_json(&doc, &b);
    xpv_buf r;
    xpv_buf_init(&r);
    assert_int_equal(xpv_legacy_render(XPV_LEGACY_KERNEL_STATS_PB, "", 0, 0, &r, &err), 0);
    assert_int_equal(b.len, r.len);
    assert_memory_equal(b.data, r.data, r.len);
    xpv_buf_free(&b);
    xpv_buf_free(&r);
    xpv_dt_doc_release(&doc);
}

static void test_real_pytorch_op_metrics(void **state) {
    (void)state;
    TU_SKIP_NO_SHARED();
    char path[4096];
    snprintf(path, sizeof path, "%s/testdata/real/pytorch-kineto/pytorch/"
             "resnet50_num_workers_0/worker0.pt.trace.json.gz", tu_shared_dir());
    size_t len;
    void *data = tu_read_file(path, &len);
    assert_non_null(data);
    xpv_buf xs;
    xpv_buf_init(&xs);
    xpv_ct_error cerr;
    assert_int_equal(xpv_ct_convert_mem(data, len, NULL, &xs, NULL, &cerr), 0);
    free(data);
    xpv_profile *p = tu_decode_buf(&xs);
    xpv_op_metrics *m = om_build1(p);
    assert_true(m->has_gpu);
    const xpv_op_metric *top = NULL;
    for (size_t i = 0; i < m->device_tf.n && !top; i++)
        if (!m->device_tf.ops[i].is_idle) top = &m->device_tf.ops[i];
    assert_non_null(top);
    assert_string_equal(top->name, "aten::cudnn_convolution_backward_weight");
    assert_int_equal((top->self_time_ps + 500000) / 1000000, 149670);
    assert_true(m->nkernels >= 60);
    /* Host side: cpu_op ("Operator" in 2021 Kineto) events are ops with
     * their name as type, self time = time - direct children. */
    const xpv_op_metric *add = om_find_op(&m->host, "aten::add_");
    assert_non_null(add);
    assert_string_equal(add->category, "aten::add_");
    assert_true(add->occurrences > 1000);
    assert_true(add->self_time_ps > 0 && add->self_time_ps <= add->time_ps);
    xpv_op_metrics_free(m);
    xpv_profile_free(p);
}

/* Convert Chrome-trace JSON and decode it (fails the test on errors). */
static xpv_profile *trace_profile(const char *json) {
    xpv_buf xs;
    xpv_buf_init(&xs);
    xpv_ct_error cerr;
    assert_int_equal(xpv_ct_convert_mem(json, strlen(json), NULL, &xs, NULL, &cerr), 0);
    xpv_profile *p = tu_decode_buf(&xs);
    return p;
}

/* kernel_stats over `n` profiles; returns its one table. */
static json_t *kernel_table(const xpv_profile *const *ps, size_t n) {
    const char *names[2] = {"a", "b"};
    xpv_hostset hs = {n, ps, names};
    xpv_op_stats none;
    memset(&none, 0, sizeof none);
    xpv_buf out;
    xpv_buf_init(&out);
    xpv_err err;
    memset(&err, 0, sizeof err);
    const xpv_tool *ks = xpv_tool_find("kernel_stats");
    assert_int_equal(xpv_tool_render(ks, &hs, &none, NULL, &out, &err), 0);
    json_error_t je;
    json_t *j = json_loadb(out.data, out.len, 0, &je);
    xpv_buf_free(&out);
    assert_non_null(j);
    return j;
}

static const char *occ_label(json_t *t) {
    json_t *c = json_array_get(json_object_get(t, "cols"), (size_t)dt_col_index(t, "occupancy_pct"));
    return json_string_value(json_object_get(c, "label"));
}

/* Kineto's "est. achieved occupancy %" is not XProf's theoretical
 * occupancy: the kernel_stats column keeps its id and the value, and its
 * label says which quantity it is (spec §7.5 / §8 vs xprof-reference §2.9). */
static void test_pytorch_occupancy_label(void **state) {
    (void)state;
    const char *json =
        "{\"traceEvents\":["
        "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"sgemm\",\"pid\":0,\"tid\":7,\"ts\":20,"
        "\"dur\":30,\"args\":{\"device\":0,\"correlation\":8,\"registers per thread\":32,"
        "\"grid\":[4,1,1],\"block\":[64,1,1],\"est. achieved occupancy %\":40}}]}";
    xpv_profile *kineto = trace_profile(json);
    const xpv_profile *one[1] = {kineto};
    json_t *t = kernel_table(one, 1);
    assert_string_equal(occ_label(t), "Est. Achieved Occupancy %");
    assert_int_equal(nrows(t), 1);
    assert_near(num(t, 0, "occupancy_pct"), 40, 0);
    json_decref(t);

    /* An XPlane (CUPTI collector: theoretical occupancy). */
    int g, l;
    tx_space *s = tx_new_line("/device:GPU:0", 3, "Stream #3(Kernel)", &g, &l);
    tx_event_t *e = tx_event(s, g, l, "sgemm", 0, 1000000);
    tx_ev_ref(s, g, e, "kernel_details", "regs:40 grid:4,2,1 block:64,1,1 occ_pct:37.5");
    xpv_profile *xplane = tx_decode(s);
    assert_non_null(xplane);
    const xpv_profile *x1[1] = {xplane};
    t = kernel_table(x1, 1);
    assert_string_equal(occ_label(t), "Theoretical Occupancy %");
    json_decref(t);

    /* Both in one host set: a neutral label. */
    const xpv_profile *both[2] = {kineto, xplane};
    t = kernel_table(both, 2);
    assert_string_equal(occ_label(t), "Occupancy %");
    json_decref(t);
    xpv_profile_free(xplane);   /* tx_decode freed the builder */
    xpv_profile_free(kineto);
}

TU_MAIN(cmocka_unit_test(test_names),
        cmocka_unit_test(test_kernel_stats_constructed),
        cmocka_unit_test(test_input_pipeline_constructed),
        cmocka_unit_test(test_memory_profile_constructed),
        cmocka_unit_test(test_real_overview),
        cmocka_unit_test(test_real_input_pipeline),
        cmocka_unit_test(test_real_tf_stats),
        cmocka_unit_test(test_real_json_files),
        cmocka_unit_test(test_tables_csv),
        cmocka_unit_test(test_real_pytorch_op_metrics),
        cmocka_unit_test(test_pytorch_occupancy_label))
