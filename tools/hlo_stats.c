/*
 * hlo_stats.c - the HLO Op Stats tool (XProf hlo_stats,
 * xprof/convert/op_stats_to_hlo_stats.cc).
 *
 * Output: one DataTable, one row per op of the device op database (the
 * same rows framework_op_stats regroups, IDLE included as XProf's sorted
 * db holds it), sorted by self time.  Category, HLO text, framework op and
 * source come from the op's HLO instruction when its program's proto is in
 * the profile (GPU; TPU rows keep the hlo_category / tf_op stats and the
 * HLO text of their event metadata).  Columns are XProf's, in its order.
 * Rates and "bound by" come from analysis/ops/roofline.h (shared with
 * roofline_model).  Not done: dma_stall (no DMA stall stats read), the
 * memory breakdown (HBM BW = measured BW, CMEM 0), autotuned and VDD energy
 * (always No / 0).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "hlo.h"
#include "op_metrics.h"
#include "opstats.h"
#include "roofline.h"
#include "tool.h"

static double safe_div(double a, double b) { return b != 0 ? a / b : 0.0; }

static int contains(const char *s, const char *needle) { return s && strstr(s, needle); }

static void add_row(xpv_dt *t, const xpv_op_metrics *m, const xpv_op_metric *op,
                      const xpv_hlo_op *h, int rank, double total_us, double *cum) {
    double time_us = (double)op->time_ps / 1e6, self_us = (double)op->self_time_ps / 1e6;
    double occ = (double)op->occurrences;
    double frac = safe_div(self_us, total_us);
    *cum += frac;
    xpv_roofline rl;   /* GFLOP/s, GiB/s, FLOP/byte, bound by */
    xpv_roofline_compute(&m->perf, m->has_gpu, op->flops, op->model_flops, op->bytes_accessed,
                         (double)op->time_ps, &rl);

    xpv_buf expr;
    xpv_buf_init(&expr);
    if (op->long_name[0]) xpv_buf_puts(&expr, op->long_name);
    else if (h->in.ins) xpv_hlo_expression(&expr, h->prog, h->in);
    else xpv_buf_puts(&expr, op->name);
    xpv_buf_putc(&expr, 0);
    const char *category = xpv_hlo_op_category(m->has_tpu, op, h);
    const char *prov = op->provenance;
    const Xla__OpMetadata *md = h->in.ins ? h->in.ins->metadata : NULL;
    if (!prov[0] && md && md->op_name) prov = md->op_name;
    char src[512];
    xpv_hlo_op_source(h, src, sizeof src);
    xpv_str hname = xpv_hlo_op_name(op);
    char pid[32];
    snprintf(pid, sizeof pid, "%llu", (unsigned long long)(uint64_t)op->program_id);

    xpv_dt_row(t);
    xpv_dt_num(t, rank);
    xpv_dt_str(t, pid);
    xpv_dt_str(t, category);
    xpv_dt_strn(t, hname.ptr, hname.len);
    xpv_dt_str(t, expr.data);
    xpv_dt_str(t, prov);
    xpv_dt_num(t, occ);
    xpv_dt_num(t, time_us);
    xpv_dt_num(t, safe_div(time_us, occ));
    xpv_dt_num(t, self_us);
    xpv_dt_num(t, safe_div(self_us, occ));
    xpv_dt_num(t, frac * 100.0);
    xpv_dt_num(t, *cum * 100.0);
    xpv_dt_num(t, 0);                 /* dma_stall_percent */
    xpv_dt_num(t, rl.model_flop_rate);
    xpv_dt_num(t, rl.flop_rate);
    xpv_dt_num(t, rl.memory_bw);
    xpv_dt_num(t, rl.hbm_bw);
    xpv_dt_num(t, 0);                 /* cmem_read_bw */
    xpv_dt_num(t, 0);                 /* cmem_write_bw */
    xpv_dt_num(t, rl.operational_intensity);
    xpv_dt_str(t, op->is_idle ? "Unknown" : rl.bound_by);
    int remat = contains(expr.data, "remat") || contains(prov, "remat");
    int outside = contains(prov, "outside_compilation") || contains(prov, "OutsideCompilation");
    xpv_dt_str(t, remat ? "Yes" : "No");
    xpv_dt_str(t, outside ? "Yes" : "No");
    xpv_dt_str(t, "No");              /* autotuned */
    xpv_dt_str(t, src);
    xpv_dt_str(t, m->has_tpu && !op->is_idle ? "TensorCore" : "");
    xpv_dt_str(t, "");                /* parent_op_name */
    xpv_dt_num(t, 0);                 /* vdd_energy */
    xpv_buf_free(&expr);
}

static const xpv_dt_col cols[] = {
    {"rank", "Rank", "number", NULL},
    {"program_id", "Program id", "string", NULL},
    {"category", "HLO op category", "string", NULL},
    {"hlo_op_name", "HLO op name", "string", NULL},
    {"hlo_op_expression", "HLO op text", "string", NULL},
    {"tf_op_name", "Framework op name", "string", NULL},
    {"occurrences", "#Occurrences", "number", NULL},
    {"total_time", "Total time (us)", "number", NULL},
    {"avg_time", "Avg. time (us)", "number", NULL},
    {"total_self_time", "Total self time (us)", "number", NULL},
    {"avg_self_time", "Avg. self time (us)", "number", NULL},
    {"total_self_time_percent", "Total self time (%)", "number", NULL},
    {"cumulative_total_self_time_percent", "Cumulative total self time (%)", "number", NULL},
    {"dma_stall_percent", "%time stalled by DMA", "number", NULL},
    {"model_flop_rate", "Model GFLOP/s", "number", NULL},
    {"normalized_flop_rate", "Normalized GFLOP/s", "number", NULL},
    {"measured_memory_bw", "Measured memory BW (GiB/s)", "number", NULL},
    {"hbm_bw", "HBM BW (GiB/s)", "number", NULL},
    {"cmem_read_bw", "CMEM Read BW (GiB/s)", "number", NULL},
    {"cmem_write_bw", "CMEM Write BW (GiB/s)", "number", NULL},
    {"operational_intensity", "Operational intensity (FLOPS/Byte)", "number", NULL},
    {"bound_by", "Bound by", "string", NULL},
    {"hlo_rematerialization", "Rematerialization", "string", NULL},
    {"outside_compilation", "Outside Compilation", "string", NULL},
    {"autotuned", "Autotuned", "string", NULL},
    {"source_info", "Source Info", "string", NULL},
    {"core_type", "TPU core type", "string", NULL},
    {"parent_op_name", "Parent op name", "string", NULL},
    {"vdd_energy", "VDD Energy (J)", "number", NULL},
};

int xpv_hlo_stats_tables(const xpv_hostset *hs, const void *derived, const xpv_params *q,
                         xpv_dt_doc *doc, xpv_err *err) {
    (void)q;
    const xpv_op_stats *os = derived;
    const xpv_op_metrics *m = os->ops;
    const xpv_op_metrics_db *db = &m->device;
    doc->array = 0;
    xpv_dt *t = xpv_dt_doc_table(doc, 0);
    xpv_dt_add_cols(t, cols, sizeof cols / sizeof cols[0]);
    double total_us = (double)db->total_time_ps / 1e6, cum = 0;
    int rank = 0;
    /* XProf's device db is empty (no IDLE either) without device planes. */
    for (size_t i = 0; (m->has_gpu || m->has_tpu) && i < db->n; i++) {
        const xpv_op_metric *op = &db->ops[i];
        if (op->occurrences == 0 && !op->is_idle) continue;
        xpv_hlo_op h;
        if (xpv_hlo_resolve(os->hlo, hs, op, &h, err) < 0) return -1;
        add_row(t, m, op, &h, ++rank, total_us, &cum);
    }
    return 0;
}
