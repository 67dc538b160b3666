/*
 * overview_page.c - the `overview_page` tool (xprof-reference.md §2.5).
 *
 * Output: a JSON array of 7 DataTables, as XProf writes it:
 *   [analysis, step_time, run_environment, recommendation,
 *    inference_latency, {}, diagnostics]
 * analysis has the GPU columns (TensorCore flags) when the device type
 * names a GPU, XProf's TPU/other columns otherwise.  step_time is the input
 * pipeline analyzer's generic step table (opstats.c).  Reads the op_stats
 * derived data only.
 */
#include <stdio.h>
#include <string.h>

#include "opstats.h"
#include "tool.h"

#define TOP_OPS 10
#define LOW_PRECISION_PERCENT 10.0

static void pct(char *out, size_t n, double v) {
    if (v >= 0) snprintf(out, n, "%.1f%%", v);
    else snprintf(out, n, "unknown");
}

static void prop_pct(xpv_dt *t, const char *key, double v) {
    char tmp[64];
    pct(tmp, sizeof tmp, v);
    xpv_dt_prop(t, key, tmp);
}

static double safe_div(double a, double b) { return b != 0 ? a / b : 0; }

/* ---- analysis table ---- */

static void analysis_table(xpv_dt_doc *doc, const xpv_op_stats *os) {
    const xpv_op_metrics *m = os->ops;
    int gpu = strstr(os->device_type, "GPU") != NULL;
    int tpu_analysis = xpv_parse_hardware_type(os->device_type) == XPV_HW_TPU;

    /* Host / device op counts and eager shares. */
    double host_occ = 0, host_self = 0, host_eager = 0;
    for (size_t i = 0; i < m->host.n; i++) {
        const xpv_op_metric *op = &m->host.ops[i];
        host_occ += (double)op->occurrences;
        if (op->is_idle) continue;
        host_self += (double)op->self_time_ps;
        if (op->is_eager) host_eager += (double)op->self_time_ps;
    }
    double dev_occ = 0, dev_self = 0, dev_eager = 0;
    for (size_t i = 0; i < m->device_tf.n; i++) {
        const xpv_op_metric *op = &m->device_tf.ops[i];
        if (op->is_idle) continue;
        dev_occ += (double)op->occurrences;
        dev_self += (double)op->self_time_ps;
        if (op->is_eager) dev_eager += (double)op->self_time_ps;
    }
    double c16 = (double)os->steps.compute_16bit_ps, c32 = (double)os->steps.compute_32bit_ps;

    xpv_dt *t = xpv_dt_doc_table(doc, 0);
    if (gpu) {
        static const xpv_dt_col cols[] = {
            {"selfTimePercent", "Time (%)", "number", NULL},
            {"cumulativeTimePercent", "Cumulative time (%)", "number", NULL},
            {"category", "Category", "string", NULL},
            {"operation", "Operation", "string", NULL},
            {"flopRate", "GFLOPs/Sec", "number", NULL},
            {"tcEligibility", "TensorCore eligibility", "boolean", NULL},
            {"tcUtilization", "Op is using TensorCore", "boolean", NULL},
        };
        xpv_dt_add_cols(t, cols, sizeof cols / sizeof cols[0]);
    } else {
        static const xpv_dt_col cols[] = {
            {"selfTimePercent", "Time (%)", "number", NULL},
            {"cumulativeTimePercent", "Cumulative time (%)", "number", NULL},
            {"category", "Category", "string", NULL},
            {"operation", "Operation", "string", NULL},
            {"flopRate", "Bf16 Normalized Flop Rate(GFLOPs/Sec)", "number", NULL},
        };
        xpv_dt_add_cols(t, cols, sizeof cols / sizeof cols[0]);
    }
    if (gpu) {
        prop_pct(t, "device_compute_16bit_percent", 100.0 * safe_div(c16, c16 + c32));
        prop_pct(t, "device_compute_32bit_percent", 100.0 * safe_div(c32, c16 + c32));
    } else {
        /* XProf fills these (ComputeTpuAnalysisResult) only when the device
         * type names a TPU; on CPU, or a TPU plane without
         * device_type_string, they stay 0. */
        const xpv_op_metrics_db *d = &m->device;
        double busy = (double)d->total_op_time_ps;
        double idle = (double)(d->total_time_ps - d->total_op_time_ps);
        if (m->has_tpu) {
            /* The duty-cycle tracker's busy and idle time. */
            busy = (double)m->tpu_busy_ps;
            idle = (double)m->tpu_idle_ps;
        }
        prop_pct(t, "device_duty_cycle_percent",
                 tpu_analysis ? 100.0 * safe_div(busy, busy + idle) : 0);
        prop_pct(t, "device_idle_time_percent",
                 tpu_analysis ? 100.0 * xpv_op_metrics_idle_ratio(d) : 0);
    }
    prop_pct(t, "device_op_time_eager_percent", 100.0 * safe_div(dev_eager, dev_self));
    prop_pct(t, "device_tf_op_percent", 100.0 * safe_div(dev_occ, host_occ + dev_occ));
    if (!gpu) {
        prop_pct(t, "flop_rate_utilization_relative_to_roofline", 0);
        prop_pct(t, "host_idle_time_percent",
                 tpu_analysis ? 100.0 * xpv_op_metrics_idle_ratio(&m->host) : 0);
    }
    prop_pct(t, "hbm_utilization_percent", os->hbm_utilization_percent);
    prop_pct(t, "host_op_time_eager_percent", 100.0 * safe_div(host_eager, host_self));
    prop_pct(t, "host_tf_op_percent", 100.0 * safe_div(host_occ, host_occ + dev_occ));
    xpv_dt_prop(t, "host_trace_level", "0");
    if (!gpu) prop_pct(t, "memory_bw_utilization_relative_to_hw_limit", 0);
    prop_pct(t, "mxu_utilization_percent", os->mxu_utilization_percent);
    xpv_dt_prop(t, "remark_color", "");
    xpv_dt_prop(t, "remark_text", "");

    /* Top device ops of the TF-level db without idle; fractions of the
     * total device op time. */
    double total = (double)m->device.total_op_time_ps;
    double cum = 0;
    int nrow = 0;
    for (size_t i = 0; i < m->device_tf.n && nrow < TOP_OPS; i++) {
        const xpv_op_metric *op = &m->device_tf.ops[i];
        if (op->is_idle) continue;
        double frac = safe_div((double)op->self_time_ps, total);
        cum += frac;
        nrow++;
        xpv_dt_row(t);
        xpv_dt_num(t, frac);
        xpv_dt_num(t, cum);
        xpv_dt_str(t, op->category);
        xpv_dt_str(t, op->name);
        xpv_dt_num(t, safe_div(op->flops, (double)op->time_ps / 1000.0));
        if (gpu) {
            int eligible = 0;
            uint64_t tc_ns = 0;
            for (size_t k = 0; k < m->nkernels; k++) {
                const xpv_kernel_report *kr = &m->kernels[k];
                if (!kr->op_name || strcmp(kr->op_name, op->name)) continue;
                eligible |= kr->is_op_tensor_core_eligible;
                if (kr->is_kernel_using_tensor_core) tc_ns += kr->total_duration_ns;
            }
            xpv_dt_bool(t, eligible);
            xpv_dt_bool(t, tc_ns != 0);
        }
    }
}

/* ---- run environment ---- */

static void run_environment_table(xpv_dt_doc *doc, const xpv_op_stats *os) {
    static const xpv_dt_col cols[] = {
        {"host_id", "host_id", "string", NULL},
        {"command_line", "command_line", "string", NULL},
        {"start_time", "start_time", "string", NULL},
        {"bns_address", "bns_address", "string", NULL},
    };
    xpv_dt *t = xpv_dt_doc_table(doc, 0);
    xpv_dt_add_cols(t, cols, sizeof cols / sizeof cols[0]);
    xpv_dt_propf(t, "device_core_count", "%d", os->device_core_count);
    xpv_dt_prop(t, "device_type", os->device_type);
    xpv_dt_propf(t, "host_count", "%d", os->host_count);
    /* The same verdict TF stats shows (task_type), so the pages agree. */
    xpv_dt_prop(t, "is_training", xpv_op_metrics_is_training(os->ops) ? "true" : "false");
    if (os->task_count > 0 && os->host_count > 0)
        xpv_dt_propf(t, "task_count", "%d (num tasks per host = %d)", os->task_count,
                   os->task_count / os->host_count);
    else
        xpv_dt_propf(t, "task_count", "%d", os->task_count);
}

/* ---- recommendation ---- */

static void tip_row(xpv_dt *t, const char *type, const char *link, const char *desc) {
    xpv_dt_row(t);
    xpv_dt_str(t, type);
    xpv_dt_str(t, link);
    xpv_dt_str(t, desc);
}

static void recommendation_table(xpv_dt_doc *doc, const xpv_op_stats *os,
                                 const xpv_ipa *ipa) {
    static const xpv_dt_col cols[] = {
        {"tip_type", "tip_type", "string", NULL},
        {"link", "link", "string", NULL},
        {"description", "description", "string", NULL},
    };
    char precision[256] = "";
    double c16 = (double)os->steps.compute_16bit_ps, c32 = (double)os->steps.compute_32bit_ps;
    if (c16 + c32 > 0) {
        double p16 = 100.0 * c16 / (c16 + c32);
        if (p16 < LOW_PRECISION_PERCENT)
            snprintf(precision, sizeof precision,
                     "Only %.1f%% of device computation is 16 bit. So you might want to "
                     "replace more 32-bit Ops by 16-bit Ops to improve performance (if the "
                     "reduced accuracy is acceptable).",
                     p16);
    }
    const char *bn = ipa->input_classification;
    xpv_dt *t = xpv_dt_doc_table(doc, 0);
    xpv_dt_add_cols(t, cols, sizeof cols / sizeof cols[0]);
    xpv_dt_prop(t, "all_other_bottleneck", ipa->all_other_classification);
    xpv_dt_prop(t, "all_other_statement", ipa->all_other_statement);
    xpv_dt_prop(t, "bottleneck", bn);
    xpv_dt_prop(t, "device_collectives_bottleneck", ipa->collectives_classification);
    xpv_dt_prop(t, "device_collectives_statement", ipa->collectives_statement);
    xpv_dt_prop(t, "kernel_launch_bottleneck", ipa->kernel_launch_classification);
    xpv_dt_prop(t, "kernel_launch_statement", ipa->kernel_launch_statement);
    xpv_dt_prop(t, "non_bottleneck_tip_types",
              !strcmp(bn, "host") ? "device" : !strcmp(bn, "device") ? "host" : "");
    xpv_dt_prop(t, "precision_statement", precision);
    xpv_dt_prop(t, "statement", ipa->input_statement);
    /* XProf names the device in the tips by ParseHardwareType of the
     * device type string (not by the planes). */
    int hwt = xpv_parse_hardware_type(os->device_type);
    const char *hw = xpv_hardware_type_name(hwt);
    int tpu = hwt == XPV_HW_TPU;
    char tip[256];
    tip_row(t, "faq", "Refer to the TF2 Profiler FAQ", "Tool troubleshooting / FAQ");
    tip_row(t, "host",
            "input_pipeline_analyzer (especially Section 3 for the breakdown of input "
            "operations on the Host)",
            "Next steps for reducing the Host time");
    tip_row(t, "host",
            "trace_viewer (look at the activities on the timeline of each Host Thread near the "
            "bottom of the trace view)",
            "Next steps for reducing the Host time");
    snprintf(tip, sizeof tip,
             "%s (identify the time-consuming operations executed on the %s)",
             tpu ? "op_profile" : "framework_op_stats", hw);
    tip_row(t, "device", tip, "Next steps for reducing the Device time");
    snprintf(tip, sizeof tip,
             "trace_viewer (look at the activities on the timeline of each %s in the trace "
             "view)",
             tpu ? "TPU core" : hw);
    tip_row(t, "device", tip, "Next steps for reducing the Device time");
    tip_row(t, "doc",
            "<a href=\"https://www.tensorflow.org/guide/data_performance_analysis\" "
            "target=\"_blank\">Analyze tf.data performance with the TF Profiler</a>",
            "Other useful resources");
    tip_row(t, "doc",
            "<a href=\"https://www.tensorflow.org/guide/data_performance\" "
            "target=\"_blank\">Better performance with the tf.data API</a>",
            "Other useful resources");
}

static void inference_latency_table(xpv_dt_doc *doc) {
    static const xpv_dt_col cols[] = {
        {"percentile", "percentile", "string", NULL},
        {"hostTimeMs", "Host time (in ms)", "number", NULL},
        {"deviceTimeMs", "Device time (in ms)", "number", NULL},
        {"communicationTimeMs", "Host-device communication time (in ms)", "number", NULL},
        {"totalTimeMs", "Total latency (in ms)", "number", NULL},
    };
    xpv_dt_add_cols(xpv_dt_doc_table(doc, 0), cols, sizeof cols / sizeof cols[0]);
}

int xpv_overview_page_tables(const xpv_hostset *hs, const void *derived, const xpv_params *q,
                             xpv_dt_doc *doc, xpv_err *err) {
    (void)hs;
    (void)q;
    const xpv_op_stats *os = xpv_op_stats_need(derived, "overview_page", err);
    if (!os) return -1;
    xpv_ipa ipa;
    xpv_ipa_compute(os, &ipa);
    analysis_table(doc, os);
    xpv_ipa_step_table(doc, &ipa);
    run_environment_table(doc, os);
    recommendation_table(doc, os, &ipa);
    inference_latency_table(doc);
    xpv_dt_doc_raw(doc, "{}");
    xpv_ipa_diagnostics_table(doc, os, 1);
    return 0;
}
