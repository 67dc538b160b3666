/*
 * test_tool_pod_viewer.c - pod viewer: per-step, per-worker breakdown in
 * the nine generic categories, bottleneck, core ids, diagnostics, the
 * protobuf-JSON shape, and the real multi-worker run.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "testutil.h"
#include "opstats.h"
#include "steps_fixture.h"

static json_t *run(const xpv_hostset *hs) {
    const xpv_tool *t = xpv_tool_find("pod_viewer");
    assert_non_null(t);
    assert_true(t->flags & XPV_TOOL_ALL_HOSTS_ONLY);
    xpv_err err = {0};
    void *d = t->derived->build(hs, &err);
    assert_non_null(d);
    xpv_buf out;
    xpv_buf_init(&out);
    assert_int_equal(t->render(hs, d, NULL, &out, &err), 0);
    json_error_t jerr;
    json_t *j = json_loadb(out.data, out.len, 0, &jerr);
    if (!j) fail_msg("invalid JSON: %s", jerr.text);
    xpv_buf_free(&out);
    t->derived->free(d);
    return j;
}

static double num(json_t *o, const char *k) {
    json_t *v = json_object_get(o, k);
    if (!json_is_number(v)) fail_msg("%s is not a number", k);
    return json_number_value(v);
}

static void check_record(json_t *rec, const char *host, long long step) {
    assert_string_equal(json_string_value(json_object_get(rec, "hostName")), host);
    assert_int_equal((long long)num(rec, "stepNum"), step);
    assert_true(fabs(num(rec, "totalDurationUs") - 30000) < 1e-6);
    json_t *bd = json_object_get(rec, "stepBreakdownUs");
    assert_int_equal(json_object_size(bd), 9);
    /* sf_training: compute 7+8 ms, kernel launch 1 ms, input 12 ms,
     * all others 2 ms. */
    static const double want[9] = {15000, 0, 0, 0, 1000, 12000, 0, 0, 2000};
    for (int i = 0; i < 9; i++) {
        char k[4];
        snprintf(k, sizeof k, "%d", i + 1);
        double got = num(bd, k);
        if (fabs(got - want[i]) > 1e-6) fail_msg("category %s: %g, want %g", k, got, want[i]);
    }
    assert_string_equal(json_string_value(json_object_get(rec, "bottleneck")), "Device compute");
    assert_int_equal((long long)num(rec, "chipId"), 0);
}

static void test_two_workers(void **state) {
    (void)state;
    xpv_profile *a = sf_training(0), *b = sf_training(0);
    xpv_profile *ps[2] = {a, b};
    sf_hosts h;
    sf_hosts_init(&h, ps, 2);
    json_t *j = run(&h.hs);
    json_t *seq = json_object_get(json_object_get(j, "podStatsSequence"), "podStatsMap");
    assert_int_equal(json_array_size(seq), SF_STEPS);
    for (size_t i = 0; i < SF_STEPS; i++) {
        json_t *m = json_array_get(seq, i);
        assert_int_equal((long long)num(m, "stepNum"), (long long)i);
        json_t *cores = json_object_get(m, "podStatsPerCore");
        assert_int_equal(json_object_size(cores), 2);
        check_record(json_object_get(cores, "1"), "h0", (long long)i);
        check_record(json_object_get(cores, "1001"), "h1", (long long)i);
        assert_true(json_is_array(json_object_get(m, "channelDb")));
        assert_true(json_is_object(json_object_get(m, "coreIdToReplicaIdMap")));
        assert_true(json_is_array(json_object_get(m, "allReduceOpDb")));
    }
    json_t *ev = json_object_get(j, "stepBreakdownEvents");
    assert_int_equal(json_array_size(ev), 9);
    static const char *const names[9] = {
        "Device compute", "Device to device", "Device collective communication",
        "Host compute", "Kernel launch", "Input", "Output", "Compilation", "All others",
    };
    for (size_t i = 0; i < 9; i++) {
        json_t *e = json_array_get(ev, i);
        assert_int_equal((long long)num(e, "id"), (long long)i + 1);
        assert_string_equal(json_string_value(json_object_get(e, "name")), names[i]);
    }
    json_t *diag = json_object_get(j, "diagnostics");
    assert_int_equal(json_array_size(json_object_get(diag, "warnings")), 0);
    assert_int_equal(json_array_size(json_object_get(diag, "errors")), 0);
    assert_true(json_is_array(json_object_get(diag, "info")));
    assert_non_null(json_string_value(json_object_get(j, "deviceType")));
    json_decref(j);
    xpv_profile_free(a);
    xpv_profile_free(b);
}

static void test_one_host_and_no_steps(void **state) {
    (void)state;
    xpv_profile *a = sf_training(1);
    xpv_profile *ps[1] = {a};
    sf_hosts h;
    sf_hosts_init(&h, ps, 1);
    json_t *j = run(&h.hs);
    json_t *seq = json_object_get(json_object_get(j, "podStatsSequence"), "podStatsMap");
    assert_int_equal(json_array_size(seq), SF_STEPS);
    json_t *cores = json_object_get(json_array_get(seq, 3), "podStatsPerCore");
    assert_int_equal(json_object_size(cores), 1);
    check_record(json_object_get(cores, "1"), "h0", 3);
    const xpv_tool *t = xpv_tool_find("pod_viewer");
    assert_true(t->available(a));
    json_decref(j);
    xpv_profile_free(a);

    /* No step markers: empty sequence and the "no step marker" warning. */
    int pl, ln;
    tx_space *s = tx_new_line("/host:CPU", 1, "t", &pl, &ln);
    tx_event(s, pl, ln, "a:B", 0, 10);
    xpv_profile *p = tx_decode(s);
    ps[0] = p;
    sf_hosts_init(&h, ps, 1);
    j = run(&h.hs);
    seq = json_object_get(json_object_get(j, "podStatsSequence"), "podStatsMap");
    assert_int_equal(json_array_size(seq), 0);
    json_t *w = json_object_get(json_object_get(j, "diagnostics"), "warnings");
    assert_int_equal(json_array_size(w), 1);
    assert_non_null(strstr(json_string_value(json_array_get(w, 0)), "No step marker observed"));
    assert_false(t->available(p));
    json_decref(j);
    xpv_profile_free(p);
}

/* The step diagnostics' warnings (as text, in order). */
static json_t *step_warnings(const xpv_op_stats *os) {
    xpv_dt_doc doc;
    xpv_dt_doc_init(&doc, 0);
    xpv_ipa_diagnostics_table(&doc, os, 0);
    xpv_buf out;
    xpv_buf_init(&out);
    xpv_dt_doc_write_json(&doc, &out);
    xpv_dt_doc_release(&doc);
    json_error_t jerr;
    json_t *j = json_loadb(out.data, out.len, 0, &jerr);
    xpv_buf_free(&out);
    assert_non_null(j);
    json_t *w = json_array();
    json_t *rows = json_object_get(j, "rows");
    for (size_t i = 0; i < json_array_size(rows); i++) {
        json_t *c = json_object_get(json_array_get(rows, i), "c");
        json_array_append(w, json_object_get(json_array_get(c, 1), "v"));
    }
    json_decref(j);
    return w;
}

/* XProf's OpStatsToPodViewer.Diagnostics: a step db with
 * use_incomplete_step gives one warning, the incomplete-step one (not the
 * no-step-marker one its empty step sequence would give otherwise). */
static void test_incomplete_step_diagnostics(void **state) {
    (void)state;
    xpv_op_stats os;
    memset(&os, 0, sizeof os);
    snprintf(os.device_type, sizeof os.device_type, "CPU");
    json_t *w = step_warnings(&os);
    assert_int_equal(json_array_size(w), 1);
    assert_non_null(strstr(json_string_value(json_array_get(w, 0)), "No step marker observed"));
    json_decref(w);
    os.steps.use_incomplete_step = 1;
    w = step_warnings(&os);
    assert_int_equal(json_array_size(w), 1);
    assert_string_equal(json_string_value(json_array_get(w, 0)),
                        "Incomplete step observed and hence the step time is unknown.Instead, "
                        "we use the trace duration as the step time. This may happen if your "
                        "profiling duration is shorter than the step time. In this case, you "
                        "may try to profile longer.");
    json_decref(w);
}

/* The real 2-worker run (the same file under two host names). */
static void test_real_multi_worker(void **state) {
    (void)state;
    TU_SKIP_NO_SHARED();
    const char *names[2] = {"34.83.195.179_6003", "34.83.195.180_6003"};
    xpv_profile *ps[2];
    void *bufs[2];
    for (int i = 0; i < 2; i++) {
        char path[4096];
        snprintf(path, sizeof path,
                 "%s/testdata/real/tensorflow-profiler/plugins/profile/GPU-multi-worker/%s.xplane.pb",
                 tu_shared_dir(), names[i]);
        size_t len;
        bufs[i] = tu_read_file(path, &len);
        if (!bufs[i]) {
            print_message("SKIP: %s not present\n", path);
            skip();
        }
        xpv_decode_error err;
        ps[i] = xpv_decode(bufs[i], len, NULL, &err);
        assert_non_null(ps[i]);
    }
    const xpv_profile *cps[2] = {ps[0], ps[1]};
    xpv_hostset hs = {2, cps, names};
    json_t *j = run(&hs);
    json_t *seq = json_object_get(json_object_get(j, "podStatsSequence"), "podStatsMap");
    assert_true(json_array_size(seq) >= 1);
    for (size_t i = 0; i < json_array_size(seq); i++) {
        json_t *cores = json_object_get(json_array_get(seq, i), "podStatsPerCore");
        assert_int_equal(json_object_size(cores), 2);
        json_t *r0 = json_object_get(cores, "1"), *r1 = json_object_get(cores, "1001");
        assert_string_equal(json_string_value(json_object_get(r1, "hostName")), names[1]);
        /* Identical files: identical breakdowns; categories sum to at most
         * the step time. */
        double sum = 0;
        for (int k = 1; k <= 9; k++) {
            char key[4];
            snprintf(key, sizeof key, "%d", k);
            double v0 = num(json_object_get(r0, "stepBreakdownUs"), key);
            assert_true(fabs(v0 - num(json_object_get(r1, "stepBreakdownUs"), key)) < 1e-9);
            sum += v0;
        }
        assert_true(sum <= num(r0, "totalDurationUs") + 1e-6);
    }
    /* TF 2.4 wrote no device_vendor stat: XProf's GpuModelName knows no
     * vendor and the device type is plain "GPU". */
    assert_string_equal(json_string_value(json_object_get(j, "deviceType")), "GPU");
    json_decref(j);
    for (int i = 0; i < 2; i++) {
        xpv_profile_free(ps[i]);
        free(bufs[i]);
    }
}

TU_MAIN(cmocka_unit_test(test_two_workers),
        cmocka_unit_test(test_one_host_and_no_steps),
        cmocka_unit_test(test_incomplete_step_diagnostics),
        cmocka_unit_test(test_real_multi_worker))
