/*
 * test_tool_roofline_model.c - the roofline_model tool (XProf
 * op_stats_to_roofline_model.cc) and the peaks it reads (analysis/
 * roofline.h):
 *   - a constructed TPU core with known peaks, FLOPs, bytes and times:
 *     exact rates, bound_by, efficiencies, the Program records with and
 *     without infeed, table properties; the same output against the golden
 *     JSON tests/golden/roofline_model/tpu_constructed.json (XPV_UPDATE_
 *     GOLDEN=1 rewrites it);
 *   - GPU peaks from device capabilities (H100, MI300X, fallbacks), also
 *     read from a constructed GPU plane;
 *   - every JAX profile of ../shared and tests/data/device: the tool
 *     answers; its op records' occurrences and self times equal hlo_stats'
 *     and the device op database's; on TPU they equal a count made straight
 *     from the file (tpu_count.h); the Program time is the ops' self time
 *     plus IDLE.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "datatable_json.h"
#include "loader.h"
#include "op_metrics.h"
#include "opstats.h"
#include "roofline.h"
#include "testutil.h"
#include "tool_xspace.h"
#include "tpu_count.h"

#define MS 1000000000LL /* ps per ms */
#define PID 5

static int near(double a, double b) { return fabs(a - b) <= 1e-9 * (fabs(b) > 1 ? fabs(b) : 1); }
#define assert_near(a, b)                                                          \
    do {                                                                           \
        double a_ = (a), b_ = (b);                                                 \
        if (!near(a_, b_)) fail_msg("%s = %.12g, want %.12g", #a, a_, b_);         \
    } while (0)

static void plane_double(tx_space *s, int pl, const char *name, double v) {
    Tensorflow__Profiler__XPlane *p = s->space.planes[pl];
    tx_stat_t *st = tx_new_stat(s, pl, &p->n_stats, &p->stats, name);
    st->value_case = TENSORFLOW__PROFILER__XSTAT__VALUE_DOUBLE_VALUE;
    st->double_value = v;
}

static void op(tx_space *s, int pl, const char *name, int64_t sym, const char *cat, double flops,
               double bytes) {
    tx_meta_int(s, pl, name, "program_id", PID);
    tx_meta_int(s, pl, name, "symbol_id", sym);
    tx_meta_str(s, pl, name, "hlo_category", cat);
    if (flops > 0) tx_meta_int(s, pl, name, "flops", (int64_t)flops);
    if (bytes > 0) tx_meta_int(s, pl, name, "bytes_accessed", (int64_t)bytes);
}

/* One TPU core: 100 TFLOP/s, 1000 GB/s HBM, merged VMEM 4000 / 2000 GB/s.
 * XLA Ops, per occurrence: conv [0,1) [1,2) ms 5e10 FLOPs 1e8 bytes;
 * fusion.1 [2,3) 1e9 FLOPs 1e9 bytes; infeed.2 [3,5) nothing; while.3
 * [7,8) 7e11 FLOPs (a while: not summed into the program).  Span 8 ms,
 * 1 ms idle. */
static xpv_profile *tpu_profile(void) {
    tx_space *s = tx_new();
    int pl = tx_plane(s, "/device:TPU:0");
    tx_plane_str(s, pl, "device_type_string", "TPU v4");
    plane_double(s, pl, "peak_teraflops_per_second", 100);
    plane_double(s, pl, "peak_hbm_bw_gigabytes_per_second", 1000);
    plane_double(s, pl, "peak_vmem_rd_bw_gigabytes_per_second", 4000);
    plane_double(s, pl, "peak_vmem_wr_bw_gigabytes_per_second", 2000);
    tx_plane_int(s, pl, "has_merged_vmem", 1);
    op(s, pl, "conv", 1, "convolution", 5e10, 1e8);
    op(s, pl, "fusion.1", 2, "loop fusion", 1e9, 1e9);
    op(s, pl, "infeed.2", 3, "infeed", 0, 0);
    op(s, pl, "while.3", 4, "while", 7e11, 0);
    int ln = tx_line(s, pl, 3, "XLA Ops", 0);
    tx_event(s, pl, ln, "conv", 0, 1 * MS);
    tx_event(s, pl, ln, "conv", 1 * MS, 1 * MS);
    tx_event(s, pl, ln, "fusion.1", 2 * MS, 1 * MS);
    tx_event(s, pl, ln, "infeed.2", 3 * MS, 2 * MS);
    tx_event(s, pl, ln, "while.3", 7 * MS, 1 * MS);
    xpv_profile *p = tx_decode(s);
    assert_non_null(p);
    return p;
}

static json_t *render(const xpv_tool *t, xpv_profile *p) { return dt_render_one(t, p); }

static int col(json_t *dt, const char *id) {
    int c = dt_col_index(dt, id);
    if (c < 0) fail_msg("no column %s", id);
    return c;
}

static json_t *cellv(json_t *dt, size_t r, const char *id) {
    json_t *row = json_array_get(json_object_get(dt, "rows"), r);
    return json_object_get(json_array_get(json_object_get(row, "c"), (size_t)col(dt, id)), "v");
}
static double num(json_t *dt, size_t r, const char *id) { return json_number_value(cellv(dt, r, id)); }
static const char *str(json_t *dt, size_t r, const char *id) { return json_string_value(cellv(dt, r, id)); }

/* Row of (include_infeed, operation), or -1. */
static long find_row(json_t *dt, int infeed, const char *name) {
    for (size_t r = 0; r < dt_nrows(dt); r++)
        if (json_is_true(cellv(dt, r, "include_infeed_outfeed")) == infeed &&
            !strcmp(str(dt, r, "operation"), name))
            return (long)r;
    return -1;
}

static void test_constructed_tpu(void **state) {
    (void)state;
    xpv_profile *p = tpu_profile();
    json_t *j = render(xpv_tool_find("roofline_model"), p);
    assert_int_equal(json_array_size(j), 2);
    json_t *t = json_array_get(j, 0);
    assert_int_equal(json_array_size(json_object_get(t, "cols")), 37);
    /* Program + conv, infeed, fusion, while; then without infeed. */
    assert_int_equal(dt_nrows(t), 5 + 4);
    assert_string_equal(dt_pstr(t, "device_type"), "TPU v4");
    assert_string_equal(dt_pstr(t, "peak_flop_rate"), "100000");
    assert_string_equal(dt_pstr(t, "peak_hbm_bw"), "931.323");   /* 1000 GB/s in GiB/s */
    assert_string_equal(dt_pstr(t, "hbm_ridge_point"), "100");    /* 1e5 GFLOP/s / 1e3 GB/s */
    assert_string_equal(dt_pstr(t, "vmem_read_ridge_point"), "25");
    assert_string_equal(dt_pstr(t, "vmem_write_ridge_point"), "50");
    assert_string_equal(dt_pstr(t, "has_merged_vmem"), "1");
    assert_string_equal(dt_pstr(t, "has_cmem"), "0");

    /* conv: 1e11 FLOPs, 2e8 bytes in 2 ms: 5e4 GFLOP/s (half the peak),
     * 100 GB/s (a tenth of HBM): compute bound, efficiency 0.5. */
    long r = find_row(t, 1, "conv");
    assert_true(r == 1);
    assert_string_equal(str(t, r, "step"), "Total");
    assert_near(num(t, r, "rank"), 1);
    assert_string_equal(str(t, r, "category"), "convolution");
    assert_near(num(t, r, "occurrences"), 2);
    assert_near(num(t, r, "total_time"), 2000);
    assert_near(num(t, r, "avg_time"), 1000);
    assert_near(num(t, r, "total_self_time"), 2000);
    assert_near(num(t, r, "total_self_time_percent"), 0.25);
    assert_near(num(t, r, "measured_flop_rate"), 5e4);
    assert_near(num(t, r, "measured_memory_bw"), 100 / XPV_GIB_PER_GB);
    assert_near(num(t, r, "operational_intensity"), 500);
    assert_near(num(t, r, "bottleneck_operational_intensity"), 500);
    assert_string_equal(str(t, r, "bound_by"), "Compute");
    assert_near(num(t, r, "roofline_efficiency"), 0.5);
    assert_near(num(t, r, "compute_efficiency"), 0.5);
    assert_near(num(t, r, "max_mem_bw_utilization"), 0.1);
    assert_near(num(t, r, "optimal_flop_rate"), 1e5);
    assert_near(num(t, r, "total_time_in_percentage"), 0.25);
    assert_string_equal(str(t, r, "hlo_module_id"), "5");
    /* fusion.1: 1e9 FLOPs and bytes in 1 ms: 1000 GB/s = the HBM peak. */
    r = find_row(t, 1, "fusion.1");
    assert_string_equal(str(t, r, "bound_by"), "HBM");
    assert_near(num(t, r, "roofline_efficiency"), 1.0);
    assert_near(num(t, r, "compute_efficiency"), 0.01);
    assert_near(num(t, r, "bottleneck_operational_intensity"), 1);
    assert_near(num(t, r, "cumulative_total_self_time_percent"), 0.25 + 0.25 + 0.125);
    r = find_row(t, 1, "infeed.2");
    assert_string_equal(str(t, r, "bound_by"), "Unknown");
    assert_near(num(t, r, "roofline_efficiency"), 0);

    /* Program with infeed: 1.01e11 FLOPs (the while's not counted), 1.2e9
     * bytes over the 8 ms span: 12625 GFLOP/s, 150 GB/s: HBM bound. */
    r = find_row(t, 1, "Program");
    assert_true(r == 0);
    assert_string_equal(str(t, r, "category"), "Program");
    assert_near(num(t, r, "rank"), 0);
    assert_near(num(t, r, "occurrences"), 1);
    assert_near(num(t, r, "total_time"), 8000);
    assert_near(num(t, r, "total_self_time"), 0);
    assert_near(num(t, r, "measured_flop_rate"), 12625);
    assert_near(num(t, r, "roofline_efficiency"), 0.15);
    assert_string_equal(str(t, r, "bound_by"), "HBM");
    assert_near(num(t, r, "total_time_in_percentage"), 1);
    /* Without infeed: 6 ms, 200 GB/s; infeed.2 is gone and fractions are
     * of 6 ms. */
    r = find_row(t, 0, "Program");
    assert_true(r == 5);
    assert_near(num(t, r, "total_time"), 6000);
    assert_near(num(t, r, "measured_flop_rate"), 1.01e11 / 6e6);
    assert_near(num(t, r, "roofline_efficiency"), 0.2);
    assert_true(find_row(t, 0, "infeed.2") < 0);
    r = find_row(t, 0, "conv");
    assert_near(num(t, r, "total_self_time_percent"), 2.0 / 6.0);
    r = find_row(t, 0, "while.3");
    assert_near(num(t, r, "rank"), 3);

    /* Diagnostics: no step marker. */
    json_t *d = json_array_get(j, 1);
    assert_int_equal(dt_nrows(d), 1);
    assert_string_equal(dt_cell_str(d, 0, 0), "WARNING");
    json_decref(j);
    xpv_profile_free(p);
}

static void test_golden(void **state) {
    (void)state;
    xpv_profile *p = tpu_profile();
    json_t *got = render(xpv_tool_find("roofline_model"), p);
    char *g = json_dumps(got, JSON_INDENT(1) | JSON_REAL_PRECISION(17));
    tu_check_golden("roofline_model", "tpu_constructed.json", g, 1);
    free(g);
    json_decref(got);
    xpv_profile_free(p);
}

static void test_gpu_peaks(void **state) {
    (void)state;
    double tf, shm;
    /* H100 SXM: 132 SMs at 1.98 GHz, 4096 FLOP/cycle/SM (fp16 tensor). */
    xpv_gpu_peaks(0, 9, 0, 132, 1.98, NULL, &tf, &shm);
    assert_near(tf, 132 * 4096 * 1.98 / 1000);
    assert_near(shm, 132 * 256 * 1.98);
    /* MI300X: cc 9.4 = gfx942, 304 CUs at 2.1 GHz. */
    xpv_gpu_peaks(1, 9, 4, 304, 2.1, NULL, &tf, &shm);
    assert_near(tf, 304 * 2048 * 2.1 / 1000);
    assert_near(shm, 304 * 128 * 2.1);
    xpv_gpu_peaks(1, 9, 4, 10, 1.0, "gfx950:sramecc+:xnack-", &tf, &shm);
    assert_near(tf, 10 * 4096 / 1000.0);
    /* An unknown capability backs off to the highest known one below it;
     * one older than all to the oldest; an unknown AMD part has none. */
    xpv_gpu_peaks(0, 8, 7, 1, 1.0, NULL, &tf, &shm);
    assert_near(tf, 1024 / 1000.0);
    xpv_gpu_peaks(0, 1, 0, 1, 1.0, NULL, &tf, &shm);
    assert_near(tf, 64 / 1000.0);
    assert_near(shm, 64);
    xpv_gpu_peaks(1, 11, 0, 1, 1.0, NULL, &tf, &shm);
    assert_near(tf, 0);

    /* The same from a GPU plane's capabilities. */
    tx_space *s = tx_new();
    int pl = tx_plane(s, "/device:GPU:0");
    tx_plane_int(s, pl, "clock_rate", 1980000); /* kHz */
    tx_plane_int(s, pl, "core_count", 132);
    tx_plane_int(s, pl, "compute_cap_major", 9);
    tx_plane_int(s, pl, "compute_cap_minor", 0);
    tx_plane_int(s, pl, "memory_bandwidth", 3352320000000LL);
    tx_plane_str(s, pl, "device_vendor", "Nvidia");
    xpv_profile *p = tx_decode(s);
    assert_non_null(p);
    const xpv_profile *ps[1] = {p};
    const char *hn[1] = {"h"};
    xpv_hostset hs = {1, ps, hn};
    xpv_err err;
    xpv_op_metrics *m = xpv_op_metrics_build(&hs, &err);
    assert_near(m->perf.peak_tera_flops_per_second, 132 * 4096 * 1.98 / 1000);
    assert_near(m->perf.peak_hbm_bw_giga_bytes_per_second, 3352.32);
    assert_near(xpv_perf_peak_bw(&m->perf, XPV_BW_SRAM_WR), 132 * 256 * 1.98);
    /* GPU envs have 3 bandwidths: the others read as HBM (XProf). */
    assert_near(xpv_perf_peak_bw(&m->perf, XPV_BW_VMEM_RD), 3352.32);
    xpv_op_metrics_free(m);
    xpv_profile_free(p);
}

/* ---- real profiles -------------------------------------------------------- */

typedef struct sums {
    double occ, self_us;
    size_t rows;
} sums;

static void check_file(const char *path, int tpu) {
    if (access(path, R_OK) != 0) {
        print_message("SKIP: %s not present\n", path);
        return;
    }
    xpv_err err;
    xpv_profile *p = xpv_load_profile(path, NULL, NULL, &err); /* .pb or .pb.gz */
    if (!p) fail_msg("%s: %s", path, err.msg);
    json_t *j = render(xpv_tool_find("roofline_model"), p);
    json_t *t = json_array_get(j, 0);
    assert_int_equal(json_array_size(j), 2);
    /* op records with infeed, and the program */
    sums rl = {0, 0, 0};
    double prog_us = -1;
    for (size_t r = 0; r < dt_nrows(t); r++) {
        if (!json_is_true(cellv(t, r, "include_infeed_outfeed"))) continue;
        if (!strcmp(str(t, r, "category"), "Program")) {
            prog_us = num(t, r, "total_time");
            continue;
        }
        rl.rows++;
        rl.occ += num(t, r, "occurrences");
        rl.self_us += num(t, r, "total_self_time");
    }
    /* hlo_stats and the device op db */
    json_t *h = render(xpv_tool_find("hlo_stats"), p);
    sums hs = {0, 0, 0};
    double idle_us = 0;
    for (size_t r = 0; r < dt_nrows(h); r++) {
        if (!strcmp(str(h, r, "category"), "IDLE")) {
            idle_us += num(h, r, "total_self_time");
            continue;
        }
        hs.rows++;
        hs.occ += num(h, r, "occurrences");
        hs.self_us += num(h, r, "total_self_time");
    }
    assert_true(rl.rows > 0);
    assert_int_equal(rl.rows, hs.rows);
    assert_near(rl.occ, hs.occ);
    assert_near(rl.self_us, hs.self_us);
    /* the program spans the ops' self time plus the idle time */
    assert_near(prog_us, hs.self_us + idle_us);
    if (tpu) {
        int64_t occ, self_ps;
        tc_count_tpu(p, &occ, &self_ps);
        assert_near(rl.occ, (double)occ);
        assert_near(rl.self_us, (double)self_ps / 1e6);
        assert_true(atof(dt_pstr(t, "peak_flop_rate")) > 0);
    } else {
        assert_non_null(strstr(dt_pstr(t, "device_type"), "GPU"));
        assert_int_equal(json_array_size(json_object_get(t, "cols")), 30);
    }
    print_message("%s: %zu op records, %.0f occurrences, self %.3f us, program %.3f us, "
                  "peak %s GFLOP/s, HBM %s GiB/s\n",
                  strrchr(path, '/') + 1, rl.rows, rl.occ, rl.self_us, prog_us,
                  dt_pstr(t, "peak_flop_rate"), dt_pstr(t, "peak_hbm_bw"));
    json_decref(h);
    json_decref(j);
    xpv_profile_free(p);
}

static void test_real_tpu(void **state) {
    (void)state;
    TU_SKIP_NO_SHARED();
    char path[4096];
    check_file(tx_real_tpu_path(path, sizeof path), 1);
}

static void test_real_gpu(void **state) {
    (void)state;
    const char *src = getenv("XPV_SRC");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/tests/data/device", src ? src : ".");
    char **files = tu_find_files(dir, ".xplane.pb");
    char **gz = tu_find_files(dir, ".xplane.pb.gz");
    size_t n = 0;
    for (char **f = files; f && *f; f++, n++) check_file(*f, 0);
    for (char **f = gz; f && *f; f++, n++) check_file(*f, 0);
    tu_free_list(files);
    tu_free_list(gz);
    assert_true(n >= 2);
    if (tu_shared_dir()) {
        snprintf(dir, sizeof dir, "%s/testdata/real/AMD-AGI-TraceLens/plugins/profile",
                 tu_shared_dir());
        files = tu_find_files(dir, ".xplane.pb");
        for (char **f = files; f && *f; f++) check_file(*f, 0);
        tu_free_list(files);
    }
}

TU_MAIN(cmocka_unit_test(test_constructed_tpu),
        cmocka_unit_test(test_golden),
        cmocka_unit_test(test_gpu_peaks),
        cmocka_unit_test(test_real_tpu),
        cmocka_unit_test(test_real_gpu))
