/*
 * framework_op_stats.c - the "TensorFlow stats" tool (XProf
 * framework_op_stats, older name tensorflow_stats).
 *
 * Output (xprof-reference.md §2.8): a JSON array of two DataTables,
 * [with idle, without idle].  Rows: the TF-level device ops first (at most
 * 500, IDLE included in that count), then the host ops (at most 500); each
 * half sorted by self time.  Rank runs across both halves.  Percent columns
 * hold fractions 0..1 as XProf writes them.
 */
#include <math.h>
#include <string.h>

#include "op_metrics.h"
#include "opstats.h"
#include "tool.h"

#define MAX_OPS 500

/* TensorCore utilization of a device op: kernel time using TensorCores /
 * kernel time, over the kernel reports whose op name matches. */
static double tensorcore_util(const xpv_op_metrics *m, const char *op) {
    double tc = 0, total = 0;
    for (size_t i = 0; i < m->nkernels; i++) {
        const xpv_kernel_report *k = &m->kernels[i];
        if (strcmp(k->op_name, op)) continue;
        total += (double)k->total_duration_ns;
        if (k->is_kernel_using_tensor_core) tc += (double)k->total_duration_ns;
    }
    return total > 0 ? tc / total : 0.0;
}

static double safe_div(double a, double b) { return b != 0 ? a / b : 0.0; }

#define GIB_PER_GB (1073741824.0 / 1e9)

static const char *bound_by(const xpv_op_metrics *m, double flop_rate, double hbm_bw_gib) {
    const char *res = "Unknown";
    double best = 0;
    double u = safe_div(flop_rate, m->perf.peak_tera_flops_per_second * 1000.0);
    if (u > best) {
        best = u;
        res = "Compute";
    }
    u = safe_div(hbm_bw_gib, m->perf.peak_hbm_bw_giga_bytes_per_second / GIB_PER_GB);
    if (u > best) {
        best = u;
        res = "HBM";
    }
    if (m->has_gpu && m->perf.peak_shm_l1_bw_giga_bytes_per_second > 0) {
        u = safe_div(hbm_bw_gib, m->perf.peak_shm_l1_bw_giga_bytes_per_second / GIB_PER_GB);
        if (u > best) res = "Shm/L1";
    }
    return res;
}

/* A number cell; XProf's table has no NaN or infinities. */
static void num_cell(xpv_dt *t, double v) { xpv_dt_num(t, isfinite(v) ? v : 0.0); }

static void add_cols(xpv_dt *t, int gpu) {
    static const char *const cols[][3] = {
        {"rank", "number", "Rank"},
        {"host_or_device", "string", "Host/device"},
        {"type", "string", "Operation Type"},
        {"operation", "string", "Operation Name"},
        {"occurrences", "number", "#Occurrences"},
        {"total_time", "number", "Total time (us)"},
        {"avg_time", "number", "Avg. time (us)"},
        {"total_self_time", "number", "Total self-time (us)"},
        {"avg_self_time", "number", "Avg. self-time (us)"},
        {"device_total_self_time_percent", "number", "Total self-time on Device (%)"},
        {"device_cumulative_total_self_time_percent", "number",
         "Cumulative total-self time on Device (%)"},
        {"host_total_self_time_percent", "number", "Total self-time on Host (%)"},
        {"Host_cumulative_total_self_time_percent", "number",
         "Cumulative total-self time on Host (%)"},
        {"measured_flop_rate", "number", "Normalized FLOP Rate (FLOPs/s)"},
        {"model_flop_rate", "number", "Model FLOP Rate (GFLOP/s)"},
        {"measured_memory_bw", "number", "Measured Memory BW (GBytes/Sec)"},
        {"operational_intensity", "number", "Operational Intensity (FLOPs/Byte)"},
        {"gpu_tensorcore_utilization", "number", "GPU TensorCore utilization"},
        {"bound_by", "string", "Bound by"},
        {"eager", "string", "Execution mode"},
    };
    for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++) {
        if (!gpu && !strcmp(cols[i][0], "gpu_tensorcore_utilization")) continue;
        xpv_dt_add_col(t, cols[i][0], cols[i][2], cols[i][1], NULL);
    }
}

typedef struct table_state {
    int rank;
    double dev_cum, host_cum;
} table_state;

static void add_row(xpv_dt *t, const xpv_op_metrics *m, const xpv_op_metric *op,
                      int on_device, double total_us, table_state *ts, int gpu) {
    double total_time_us = (double)op->time_ps / 1e6;
    double self_us = (double)op->self_time_ps / 1e6;
    double occ = (double)op->occurrences;
    double frac = safe_div(self_us, total_us);
    double dev_frac = 0, dev_cum = 0, host_frac = 0, host_cum = 0;
    if (on_device) {
        dev_frac = frac;
        ts->dev_cum += frac;
        dev_cum = ts->dev_cum;
    } else {
        host_frac = frac;
        ts->host_cum += frac;
        host_cum = ts->host_cum;
    }
    double time_ns = (double)op->time_ps / 1000.0;
    double flop_rate = safe_div(op->flops, time_ns);
    double model_rate = safe_div(op->model_flops, time_ns);
    double bw_gib = safe_div(op->bytes_accessed, time_ns) / GIB_PER_GB;
    double intensity = safe_div(op->flops, op->bytes_accessed);

    xpv_dt_row(t);
    num_cell(t, ++ts->rank);
    xpv_dt_str(t, on_device ? "Device" : "Host");
    xpv_dt_str(t, op->category);
    xpv_dt_str(t, op->name);
    num_cell(t, occ);
    num_cell(t, total_time_us);
    num_cell(t, safe_div(total_time_us, occ));
    num_cell(t, self_us);
    num_cell(t, safe_div(self_us, occ));
    num_cell(t, dev_frac);
    num_cell(t, dev_cum);
    num_cell(t, host_frac);
    num_cell(t, host_cum);
    num_cell(t, flop_rate);
    num_cell(t, model_rate);
    num_cell(t, bw_gib);
    num_cell(t, intensity);
    if (gpu) num_cell(t, on_device ? tensorcore_util(m, op->name) : 0.0);
    xpv_dt_str(t, bound_by(m, flop_rate, bw_gib));
    xpv_dt_str(t, op->is_eager ? "Eager" : "Function");
}

/* `device_type`: XProf's run-environment device type; the TensorCore
 * utilization column is there when it names a GPU (TfStatsToDataTable). */
static void op_table(xpv_dt *t, const xpv_op_metrics *m, const char *device_type,
                     int exclude_idle) {
    int gpu = strstr(device_type, "GPU") != NULL;
    table_state ts = {0, 0, 0};
    add_cols(t, gpu);
    const xpv_op_metrics_db *dbs[2] = {&m->device_tf, &m->host};
    for (int half = 0; half < 2; half++) {
        const xpv_op_metrics_db *db = dbs[half];
        int on_device = half == 0;
        /* Without GPU or TPU planes XProf's device db is empty (not even
         * IDLE). */
        if (on_device && !m->has_gpu && !m->has_tpu) continue;
        double total_us = (double)(exclude_idle ? db->total_op_time_ps : db->total_time_ps) / 1e6;
        size_t limit = db->n < MAX_OPS ? db->n : MAX_OPS;
        for (size_t i = 0; i < limit; i++) {
            const xpv_op_metric *op = &db->ops[i];
            if (exclude_idle && op->is_idle) continue;
            add_row(t, m, op, on_device, total_us, &ts, gpu);
        }
    }
    xpv_dt_prop(t, "architecture_type", "Unknown");
    xpv_dt_prop(t, "task_type", xpv_op_metrics_is_training(m) ? "Training" : "Inference");
}

int xpv_framework_op_stats_tables(const xpv_hostset *hs, const void *derived, const xpv_params *q,
                                  xpv_dt_doc *doc, xpv_err *err) {
    /* The shared OpStats intermediate (steps + op metrics), built once
     * per (run, host set) for all four stats tools. */
    const xpv_op_stats *os = derived;
    const xpv_op_metrics *m = os->ops;
    xpv_op_metrics *own = NULL;
    if (!m) m = own = xpv_op_metrics_build(hs, err);
    if (!m) return -1;
    const char *dt = own ? m->device_type : os->device_type;
    op_table(xpv_dt_doc_table(doc, XPV_DT_PROPS_LAST), m, dt, 0);
    op_table(xpv_dt_doc_table(doc, XPV_DT_PROPS_LAST), m, dt, 1);
    xpv_op_metrics_free(own);
    return 0;
}
