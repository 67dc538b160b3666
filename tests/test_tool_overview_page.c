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

static void test_golden(void **state) {
    (void)state;
    xpv_profile *p = sf_training(0);
    json_t *j = dt_render_one(xpv_tool_find("overview_page"), p);
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
    json_t *j = dt_render_hs(xpv_tool_find("overview_page"), &h.hs);
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
    json_t *j = dt_render_hs(xpv_tool_find("overview_page"), &h.hs);
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
    int host, ln;
    tx_space *s = tx_new_line("/host:CPU", 1, "main", &host, &ln);
    tx_event(s, host, ln, "MatMul:MatMul", 0, 5 * SF_MS);
    tx_ev_str(s, host, tx_event(s, host, ln, "Add:AddV2", 6 * SF_MS, SF_MS), "x", "y");
    xpv_profile *p = tx_decode(s);
    json_t *j = dt_render_one(xpv_tool_find("overview_page"), p);
    assert_int_equal(json_array_size(j), 7);
    char ids[1024];
    json_t *an = json_array_get(j, 0);
    dt_col_ids(an, ids, sizeof ids);
    assert_string_equal(ids, "selfTimePercent,cumulativeTimePercent,category,operation,flopRate");
    assert_string_equal(dt_pstr(an, "host_tf_op_percent"), "100.0%");
    /* Not a TPU device type: XProf leaves its TPU analysis fields at 0
     * (the host is idle 1 ms of 7 here, the device has no op at all). */
    assert_string_equal(dt_pstr(an, "host_idle_time_percent"), "0.0%");
    assert_string_equal(dt_pstr(an, "device_idle_time_percent"), "0.0%");
    assert_string_equal(dt_pstr(an, "device_duty_cycle_percent"), "0.0%");
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
    json_t *j = dt_render_one(xpv_tool_find("overview_page"), p);
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

/* A profile with TF loop ops: XLA's GroupTfEvents skips grouping
 * (CheckLoopOp), so there is no step and XProf's diagnostics are its one
 * no-step-marker warning (PopulateStepDiagnostics), nothing of our own. */
static void test_loop_ops_diagnostics(void **state) {
    (void)state;
    int host, ln;
    tx_space *s = tx_new_line("/host:CPU", 1, "main", &host, &ln);
    tx_ev_int(s, host, tx_event(s, host, ln, "train", 0, 5 * SF_MS), "_r", 1);
    tx_event(s, host, ln, "WhileOp-EvalCond", SF_MS, SF_MS);
    xpv_profile *p = tx_decode(s);
    json_t *j = dt_render_one(xpv_tool_find("overview_page"), p);
    json_t *dg = json_array_get(j, 6);
    assert_int_equal(dt_nrows(dg), 1);
    assert_string_equal(dt_cell_str(dg, 0, 0), "WARNING");
    assert_true(!strncmp(dt_cell_str(dg, 0, 1), "No step marker observed", 23));
    json_decref(j);
    xpv_profile_free(p);
}

/* XProf PropagateXSpaceDiagnosticsToOpStats keeps each error / warning
 * text once per XSpace; CombineDiagnostics appends the hosts' lists as
 * they are (a text two hosts report is shown twice). */
static void test_capture_diagnostics_dedup(void **state) {
    (void)state;
    static char *errs[] = {"b GPU events dropped", "a CUPTI error", "b GPU events dropped"};
    static char *warns[] = {"buffer nearly full", "buffer nearly full"};
    xpv_profile *ps[2];
    for (int i = 0; i < 2; i++) {
        tx_space *s = tx_new();
        int host = tx_plane(s, "/host:CPU");
        tx_line(s, host, 1, "main", 0);
        s->space.n_errors = 3;
        s->space.errors = errs;
        s->space.n_warnings = 2;
        s->space.warnings = warns;
        ps[i] = tx_decode(s);
        assert_non_null(ps[i]);
    }
    /* One host: 1 warning, the no-step warning, 2 errors (sorted). */
    json_t *j = dt_render_one(xpv_tool_find("overview_page"), ps[0]);
    json_t *dg = json_array_get(j, 6);
    assert_int_equal(dt_nrows(dg), 4);
    assert_string_equal(dt_cell_str(dg, 0, 1), "buffer nearly full");
    assert_non_null(strstr(dt_cell_str(dg, 1, 1), "No step marker observed"));
    assert_string_equal(dt_cell_str(dg, 2, 1), "a CUPTI error");
    assert_string_equal(dt_cell_str(dg, 3, 1), "b GPU events dropped");
    json_decref(j);
    /* Two hosts: each host's distinct texts, both hosts' kept. */
    sf_hosts h;
    sf_hosts_init(&h, ps, 2);
    j = dt_render_hs(xpv_tool_find("overview_page"), &h.hs);
    dg = json_array_get(j, 6);
    assert_int_equal(dt_nrows(dg), 2 + 1 + 4);
    assert_string_equal(dt_cell_str(dg, 0, 1), "buffer nearly full");
    assert_string_equal(dt_cell_str(dg, 1, 1), "buffer nearly full");
    assert_string_equal(dt_cell_str(dg, 3, 1), "a CUPTI error");
    assert_string_equal(dt_cell_str(dg, 4, 1), "a CUPTI error");
    assert_string_equal(dt_cell_str(dg, 6, 1), "b GPU events dropped");
    json_decref(j);
    xpv_profile_free(ps[0]);
    xpv_profile_free(ps[1]);
}

/* XProf CombineRunEnvironment counts hosts by the XSpaces' hostnames
 * (a set) and tasks by XSpace: files of one embedded hostname are one
 * host; a file without one is a host of its own. */
static void test_host_and_task_count(void **state) {
    (void)state;
    static char *w0[] = {"w0"}, *w1[] = {"w1"};
    char **names[4] = {w0, w0, w1, NULL};
    xpv_profile *ps[4];
    for (int i = 0; i < 4; i++) {
        tx_space *s = tx_new();
        tx_line(s, tx_plane(s, "/host:CPU"), 1, "main", 0);
        if (names[i]) {
            s->space.n_hostnames = 1;
            s->space.hostnames = names[i];
        }
        ps[i] = tx_decode(s);
        assert_non_null(ps[i]);
    }
    static const struct { size_t n; const char *hosts, *tasks; } want[] = {
        {1, "1", "1 (num tasks per host = 1)"},
        {2, "1", "2 (num tasks per host = 2)"},
        {3, "2", "3 (num tasks per host = 1)"},
        {4, "3", "4 (num tasks per host = 1)"},
    };
    for (size_t k = 0; k < 4; k++) {
        sf_hosts h;
        sf_hosts_init(&h, ps, want[k].n);
        json_t *j = dt_render_hs(xpv_tool_find("overview_page"), &h.hs);
        json_t *re = json_array_get(j, 2);
        assert_string_equal(dt_pstr(re, "host_count"), want[k].hosts);
        assert_string_equal(dt_pstr(re, "task_count"), want[k].tasks);
        json_decref(j);
    }
    for (int i = 0; i < 4; i++) xpv_profile_free(ps[i]);
}

static void host_plane_double(tx_space *s, int pl, const char *name, double v) {
    tx_stat_t *st = tx_new_stat(s, pl, &s->space.planes[pl]->n_stats,
                                &s->space.planes[pl]->stats, name);
    st->value_case = TENSORFLOW__PROFILER__XSTAT__VALUE_DOUBLE_VALUE;
    st->double_value = v;
}

/* XProf's performance counter result: the host plane's
 * matrix_unit_utilization_percent and hbm_utilization_percent (double
 * values; an int stat reads as 0).  Over hosts CombineAllOpStats averages
 * MXU over every host and leaves HBM at 0. */
static void test_mxu_hbm_utilization(void **state) {
    (void)state;
    xpv_profile *ps[3];
    for (int i = 0; i < 3; i++) {
        tx_space *s = tx_new();
        int host = tx_plane(s, "/host:CPU");
        tx_line(s, host, 1, "main", 0);
        if (i < 2) {
            host_plane_double(s, host, "matrix_unit_utilization_percent", 20.0 * (i + 1));
            host_plane_double(s, host, "hbm_utilization_percent", 50.0);
        } else {
            tx_plane_int(s, host, "hbm_utilization_percent", 70);
        }
        ps[i] = tx_decode(s);
        assert_non_null(ps[i]);
    }
    static const struct { size_t n; const char *mxu, *hbm; } want[] = {
        {1, "20.0%", "50.0%"}, {2, "30.0%", "0.0%"}, {3, "20.0%", "0.0%"},
    };
    for (size_t k = 0; k < 3; k++) {
        sf_hosts h;
        sf_hosts_init(&h, ps, want[k].n);
        json_t *j = dt_render_hs(xpv_tool_find("overview_page"), &h.hs);
        assert_string_equal(dt_pstr(json_array_get(j, 0), "mxu_utilization_percent"), want[k].mxu);
        assert_string_equal(dt_pstr(json_array_get(j, 0), "hbm_utilization_percent"), want[k].hbm);
        json_decref(j);
    }
    json_t *j = dt_render_one(xpv_tool_find("overview_page"), ps[2]);
    assert_string_equal(dt_pstr(json_array_get(j, 0), "hbm_utilization_percent"), "0.0%");
    json_decref(j);
    for (int i = 0; i < 3; i++) xpv_profile_free(ps[i]);
}

/* A profile with one GPU plane carrying the given device capabilities
 * (NULL vendor / name: stat absent; major < 0: no compute capability). */
static xpv_profile *gpu_caps(const char *vendor, int major, int minor, const char *name) {
    tx_space *s = tx_new();
    tx_line(s, tx_plane(s, "/host:CPU"), 1, "main", 0);
    int gpu = tx_plane(s, "/device:GPU:0");
    if (major >= 0) {
        tx_plane_int(s, gpu, "compute_cap_major", major);
        tx_plane_int(s, gpu, "compute_cap_minor", minor);
    }
    if (vendor) tx_plane_str(s, gpu, "device_vendor", vendor);
    if (name) tx_plane_str(s, gpu, "gpu_device_name", name);
    tx_plane(s, "/device:GPU:1"); /* a second, bare plane: only the first is read */
    return tx_decode(s);
}

static const char *run_env(xpv_profile *p, const char *key, char *out, size_t n) {
    json_t *j = dt_render_one(xpv_tool_find("overview_page"), p);
    snprintf(out, n, "%s", dt_pstr(json_array_get(j, 2), key));
    json_decref(j);
    xpv_profile_free(p);
    return out;
}

/* XProf SetRunEnvironment + GpuModelName (cuda_type_utils.cc,
 * rocm_type_utils.cc): the first GPU plane's vendor picks the table; an
 * unknown or missing vendor gives "GPU"; AMD names its gfx architecture
 * from a well-formed gpu_device_name, else from compute capability 9.4 /
 * 9.5, else the family. */
static void test_gpu_device_type_names(void **state) {
    (void)state;
    static const struct {
        const char *vendor;
        int major, minor;
        const char *name, *want;
    } cases[] = {
        {"Nvidia", 7, 0, NULL, "Nvidia GPU (Volta)"},
        {"Nvidia", 7, 5, NULL, "Nvidia GPU (Turing)"},
        {"Nvidia", 8, 9, NULL, "Nvidia GPU (Ada Lovelace)"},
        {"Nvidia", 10, 0, NULL, "Nvidia GPU (Blackwell)"},
        {"Nvidia", 12, 0, NULL, "Nvidia GPU"},
        {"Nvidia", -1, 0, NULL, "Nvidia GPU"},
        {NULL, 7, 0, NULL, "GPU"},          /* TF 2.4: no vendor stat */
        {"Intel", 7, 0, NULL, "GPU"},
        {"AMD", 9, 4, NULL, "AMD GPU - gfx942"},
        {"AMD", 9, 5, NULL, "AMD GPU - gfx950"},
        {"AMD", 9, 0, NULL, "AMD GPU - gfx-9XX series"},
        {"AMD", 9, 0, "gfx90a", "AMD GPU - gfx90a"},
        {"AMD", 9, 4, "gfx90a:sramecc+:xnack-", "AMD GPU - gfx942"}, /* not well formed */
        {"AMD", 11, 0, "gfx11", "AMD GPU - gfx-11XX series"},       /* too short */
        {"AMD", 12, 0, NULL, "AMD GPU"},
    };
    char buf[64];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *got = run_env(gpu_caps(cases[i].vendor, cases[i].major, cases[i].minor,
                                           cases[i].name),
                                  "device_type", buf, sizeof buf);
        if (strcmp(got, cases[i].want)) print_message("case %zu: %s\n", i, got);
        assert_string_equal(got, cases[i].want);
    }
    assert_string_equal(run_env(gpu_caps(NULL, 7, 0, NULL), "device_core_count", buf, sizeof buf),
                        "2");
}

/* TPU: the device type is the first TensorCore plane's device_type_string
 * ("" without it); only "/device:TPU:<n>" planes are cores.  XProf fills
 * the TPU analysis fields and names the device "TPU" in the tips only when
 * ParseHardwareType(device type) is TPU. */
static void test_tpu_device_type(void **state) {
    (void)state;
    for (int with_type = 0; with_type < 2; with_type++) {
        int host, ln;
        tx_space *s = tx_new_line("/host:CPU", 1, "main", &host, &ln);
        tx_event(s, host, ln, "MatMul:MatMul", 0, 5 * SF_MS);
        tx_event(s, host, ln, "Add:AddV2", 6 * SF_MS, 4 * SF_MS); /* 1 ms of 10 idle */
        int tc0 = tx_plane(s, "/device:TPU:0");
        if (with_type) tx_plane_str(s, tc0, "device_type_string", "TPU v5 lite");
        tx_plane(s, "/device:TPU:1");
        tx_plane_str(s, tx_plane(s, "/device:TPU:0 SparseCore 0"), "device_type_string", "SC");
        tx_plane(s, "/device:TPU_NON_CORE:0");
        xpv_profile *p = tx_decode(s);
        json_t *j = dt_render_one(xpv_tool_find("overview_page"), p);
        json_t *an = json_array_get(j, 0), *re = json_array_get(j, 2);
        json_t *rec = json_array_get(j, 3);
        assert_string_equal(dt_pstr(re, "device_type"), with_type ? "TPU v5 lite" : "");
        assert_string_equal(dt_pstr(re, "device_core_count"), "2");
        assert_string_equal(dt_pstr(an, "host_idle_time_percent"), with_type ? "10.0%" : "0.0%");
        assert_string_equal(dt_pstr(an, "device_idle_time_percent"),
                            with_type ? "100.0%" : "0.0%");
        const char *tip = NULL;
        for (size_t r = 0; r < dt_nrows(rec); r++)
            if (!strcmp(dt_cell_str(rec, r, 0), "device")) {
                tip = dt_cell_str(rec, r, 1);
                break;
            }
        assert_non_null(tip);
        assert_string_equal(tip, with_type ? "op_profile (identify the time-consuming operations "
                                             "executed on the TPU)"
                                           : "framework_op_stats (identify the time-consuming "
                                             "operations executed on the UNKNOWN_HARDWARE)");
        json_decref(j);
        xpv_profile_free(p);
    }
}

/* XProf CombineRunEnvironment over hosts: "CPU" never replaces a device
 * type; the last device host's type wins and device cores add. */
static void test_combined_device_type(void **state) {
    (void)state;
    char buf[64];
    for (int order = 0; order < 2; order++) {
        tx_space *s = tx_new();
        tx_line(s, tx_plane(s, "/host:CPU"), 1, "main", 0);
        xpv_profile *cpu = tx_decode(s);
        xpv_profile *gpu = gpu_caps("Nvidia", 8, 0, NULL);
        xpv_profile *ps[2] = {order ? gpu : cpu, order ? cpu : gpu};
        sf_hosts h;
        sf_hosts_init(&h, ps, 2);
        json_t *j = dt_render_hs(xpv_tool_find("overview_page"), &h.hs);
        json_t *re = json_array_get(j, 2);
        assert_string_equal(dt_pstr(re, "device_type"), "Nvidia GPU (Ampere)");
        assert_string_equal(dt_pstr(re, "device_core_count"), "2");
        json_decref(j);
        xpv_profile_free(cpu);
        xpv_profile_free(gpu);
    }
    /* A TPU host then a GPU host: the GPU's name (the last device host). */
    tx_space *s = tx_new();
    tx_plane_str(s, tx_plane(s, "/device:TPU:0"), "device_type_string", "TPU v4");
    xpv_profile *ps[2] = {tx_decode(s), gpu_caps("AMD", 9, 4, NULL)};
    sf_hosts h;
    sf_hosts_init(&h, ps, 2);
    json_t *j = dt_render_hs(xpv_tool_find("overview_page"), &h.hs);
    snprintf(buf, sizeof buf, "%s", dt_pstr(json_array_get(j, 2), "device_type"));
    assert_string_equal(buf, "AMD GPU - gfx942");
    assert_string_equal(dt_pstr(json_array_get(j, 2), "device_core_count"), "3");
    json_decref(j);
    /* The other order: the TPU's name, so TF stats (TfStatsToDataTable)
     * has no GPU TensorCore column although a host has GPU planes. */
    xpv_profile *rev[2] = {ps[1], ps[0]};
    sf_hosts_init(&h, rev, 2);
    j = dt_render_hs(xpv_tool_find("overview_page"), &h.hs);
    assert_string_equal(dt_pstr(json_array_get(j, 2), "device_type"), "TPU v4");
    json_decref(j);
    char ids[1024];
    j = dt_render_hs(xpv_tool_find("framework_op_stats"), &h.hs);
    dt_col_ids(json_array_get(j, 0), ids, sizeof ids);
    assert_non_null(strstr(ids, "eager")); /* the whole list was written */
    assert_null(strstr(ids, "gpu_tensorcore_utilization"));
    json_decref(j);
    sf_hosts_init(&h, ps, 2);
    j = dt_render_hs(xpv_tool_find("framework_op_stats"), &h.hs);
    dt_col_ids(json_array_get(j, 0), ids, sizeof ids);
    assert_non_null(strstr(ids, "gpu_tensorcore_utilization"));
    json_decref(j);
    xpv_profile_free(ps[0]);
    xpv_profile_free(ps[1]);
}

/* XProf ComputeAnalysisResult: the host's eager share is the self time of
 * host rows whose is_eager is set (an op is eager when any of its
 * executions was, OpMetricsDbBuilder::EnterOp), IDLE excluded; ops named
 * by a tf_op stat are never eager (CollectTfActivities). TF stats shows
 * the same flag per row as "Eager" / "Function". */
static void test_host_eager_share(void **state) {
    (void)state;
    int host, ln;
    tx_space *s = tx_new_line("/host:CPU", 1, "main", &host, &ln);
    tx_ev_int(s, host, tx_event(s, host, ln, "a:MatMul", 0, 4 * SF_MS), "is_eager", 1);
    tx_ev_int(s, host, tx_event(s, host, ln, "b:AddV2", 5 * SF_MS, 6 * SF_MS), "is_eager", 0);
    tx_ev_int(s, host, tx_event(s, host, ln, "a:MatMul", 12 * SF_MS, 2 * SF_MS), "is_eager", 0);
    tx_event_t *e = tx_event(s, host, ln, "k", 15 * SF_MS, 2 * SF_MS);
    tx_ev_str(s, host, e, "tf_op", "c:Relu");
    tx_ev_int(s, host, e, "is_eager", 1);
    xpv_profile *p = tx_decode(s);
    json_t *j = dt_render_one(xpv_tool_find("overview_page"), p);
    /* a: 6 ms eager; b 6 ms, c 2 ms not: 6 / 14. */
    assert_string_equal(dt_pstr(json_array_get(j, 0), "host_op_time_eager_percent"), "42.9%");
    assert_string_equal(dt_pstr(json_array_get(j, 0), "device_op_time_eager_percent"), "0.0%");
    json_decref(j);
    j = dt_render_one(xpv_tool_find("framework_op_stats"), p);
    json_t *t = json_array_get(j, 0);
    int seen = 0;
    for (size_t r = 0; r < dt_nrows(t); r++) {
        const char *op = dt_cell_str(t, r, 3);
        const char *mode = dt_cell_str(t, r, 18);
        if (!strcmp(op, "a")) assert_string_equal(mode, "Eager"), seen++;
        if (!strcmp(op, "b") || !strcmp(op, "c")) assert_string_equal(mode, "Function"), seen++;
    }
    assert_int_equal(seen, 3);
    json_decref(j);
    xpv_profile_free(p);
}

/* Column ids (and recommendation p keys) as XProf's own golden output. */
static void test_shape_matches_xprof_golden(void **state) {
    (void)state;
    json_t *g = dt_xprof_golden("tpu-training_overview_page_tpu_training");
    if (!g) skip();
    xpv_profile *p = sf_training(0);
    json_t *j = dt_render_one(xpv_tool_find("overview_page"), p);
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
    json_t *j = dt_render_one(xpv_tool_find("overview_page"), p);
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
    json_t *tf = dt_render_one(xpv_tool_find("framework_op_stats"), p);
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

TU_MAIN(cmocka_unit_test(test_golden),
        cmocka_unit_test(test_multi_host),
        cmocka_unit_test(test_no_steps_cpu),
        cmocka_unit_test(test_capture_diagnostics),
        cmocka_unit_test(test_capture_diagnostics_dedup),
        cmocka_unit_test(test_loop_ops_diagnostics),
        cmocka_unit_test(test_host_eager_share),
        cmocka_unit_test(test_host_and_task_count),
        cmocka_unit_test(test_mxu_hbm_utilization),
        cmocka_unit_test(test_gpu_device_type_names),
        cmocka_unit_test(test_tpu_device_type),
        cmocka_unit_test(test_combined_device_type),
        cmocka_unit_test(test_multi_host_steps_dropped),
        cmocka_unit_test(test_shape_matches_xprof_golden),
        cmocka_unit_test(test_real_files))
