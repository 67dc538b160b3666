/*
 * roofline_model.c - the Roofline Model tool (XProf roofline_model,
 * xprof/convert/op_stats_to_roofline_model.cc; the page it feeds is
 * frontend/app/components/roofline_model).
 *
 * Output: `[roofline DataTable, diagnostics DataTable]`.  The roofline
 * table holds XProf's records twice, first counting infeed / outfeed ops
 * (include_infeed_outfeed true), then without them (XProf's
 * RooflineModelProcessor merges the two databases in that order):
 *   - "Total" / rank 0 / category "Program": the whole device op database
 *     as one record: FLOPs and bytes summed over the innermost ops (not
 *     call / while / conditional / megacore fusion), time = the database's
 *     total time (idle included) minus the infeed / outfeed time when those
 *     are excluded, one occurrence, no self time;
 *   - "Total" / rank 1.. : the ops of the database by self time, at most
 *     1000 database entries (IDLE, which has no occurrence, is skipped),
 *     self-time fractions of the program time, cumulated.
 * Each record: times in µs, FLOP rates in GFLOP/s, bandwidths in GiB/s,
 * operational intensities, bound_by and the efficiencies of
 * analysis/ops/roofline.h (fractions, as XProf writes them).  GPU profiles get
 * XProf's GPU column set (device_type contains "GPU").  Table properties:
 * device_type, the peaks (GFLOP/s, GiB/s) and ridge points (FLOP/byte).
 * The diagnostics table is the step diagnostics (no step marker ...).
 *
 * Not done: XProf's "Average" and per-step "Program" records come from
 * per-step op databases (TPU step lines); our device op database is not
 * split by step (op_metrics.h), so they are absent.  DMA stall, CMEM / VMEM
 * bandwidths and DVFS time scaling are 0 (no such data read).  Source info
 * is "file:line" text (XProf wraps it in an HTML <div>).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hlo.h"
#include "op_metrics.h"
#include "opstats.h"
#include "roofline.h"
#include "tool.h"

#define MAX_RECORDS 1000

static double safe_div(double a, double b) { return b != 0 ? a / b : 0.0; }

/* One record, as XProf's RooflineModelRecord. */
typedef struct rec {
    const char *step, *category, *source;
    xpv_str name;
    int64_t rank;
    uint64_t program_id;
    double occurrences, total_us, self_us, self_frac, cum_frac;
    double per_core_us, time_frac;
    int infeed;
    xpv_roofline rl;
} rec;

enum field {
    F_STEP, F_RANK, F_CATEGORY, F_OPERATION, F_OCC, F_TOTAL, F_AVG, F_SELF, F_AVG_SELF,
    F_SELF_PCT, F_CUM_PCT, F_ZERO, F_FLOP_RATE, F_MODEL_RATE, F_MEM_BW, F_HBM_BW, F_OI,
    F_HBM_OI, F_BOTTLENECK_OI, F_BOUND_BY, F_PER_CORE, F_TIME_PCT, F_OPTIMAL, F_EFFICIENCY,
    F_COMPUTE_EFF, F_MEM_UTIL, F_INFEED, F_MODULE, F_SOURCE,
};

enum { TPU = 1, GPU = 2, ALL = TPU | GPU };

typedef struct col {
    xpv_dt_col c;
    int field;
    int tables;   /* TPU, GPU or ALL: the tables that have the column */
} col;

#define GF "(GFLOP/s)"
/* XProf GetRooflineModelDataTable (TPU and the rest) and
 * GetRooflineModelDataTableForGpu in one list: each column says which of
 * the two tables has it. */
static const col COLS[] = {
    {{"step", "Step", "string", NULL}, F_STEP, ALL},
    {{"rank", "Rank", "number", NULL}, F_RANK, ALL},
    {{"category", "Category", "string", NULL}, F_CATEGORY, ALL},
    {{"operation", "Operation", "string", NULL}, F_OPERATION, ALL},
    {{"occurrences", "# Occurrences", "number", NULL}, F_OCC, ALL},
    {{"total_time", "Total Time (us)", "number", NULL}, F_TOTAL, ALL},
    {{"avg_time", "Avg. time (us)", "number", NULL}, F_AVG, ALL},
    {{"total_self_time", "Total self time (us)", "number", NULL}, F_SELF, ALL},
    {{"avg_self_time", "Avg. self time (us)", "number", NULL}, F_AVG_SELF, ALL},
    {{"total_self_time_percent", "Total self time (%)", "number", NULL}, F_SELF_PCT, ALL},
    {{"cumulative_total_self_time_percent", "Cumulative total self time (%)", "number", NULL},
     F_CUM_PCT, ALL},
    {{"dma_stall_percent", "%time stalled by DMA", "number", NULL}, F_ZERO, TPU},
    {{"measured_flop_rate", "Normalized FLOP Rate " GF, "number", NULL}, F_FLOP_RATE, ALL},
    {{"model_flop_rate", "Model FLOP Rate " GF, "number", NULL}, F_MODEL_RATE, ALL},
    {{"measured_memory_bw", "Memory BW (GiB/s)", "number", NULL}, F_MEM_BW, ALL},
    {{"hbm_bw", "HBM BW (GiB/s)", "number", NULL}, F_HBM_BW, ALL},
    {{"cmem_read_bw", "CMEM Read BW (GiB/s)", "number", NULL}, F_ZERO, TPU},
    {{"cmem_write_bw", "CMEM Write BW (GiB/s)", "number", NULL}, F_ZERO, TPU},
    {{"vmem_read_bw", "VMEM Read BW (GiB/s)", "number", NULL}, F_ZERO, TPU},
    {{"vmem_write_bw", "VMEM Write BW (GiB/s)", "number", NULL}, F_ZERO, TPU},
    {{"vmem_write_bw", "SHM/L1 BW (GiB/s)", "number", NULL}, F_ZERO, GPU},
    {{"operational_intensity", "Operational Intensity (FLOP/Byte)", "number", NULL}, F_OI, ALL},
    {{"hbm_operational_intensity", "HBM Operational Intensity (FLOP/Byte)", "number", NULL},
     F_HBM_OI, ALL},
    {{"cmem_read_operational_intensity", "CMEM Read Operational Intensity (FLOP/Byte)",
      "number", NULL}, F_ZERO, TPU},
    {{"cmem_write_operational_intensity", "CMEM Write Operational Intensity (FLOP/Byte)",
      "number", NULL}, F_ZERO, TPU},
    {{"vmem_read_operational_intensity", "VMEM Read Operational Intensity (FLOP/Byte)",
      "number", NULL}, F_ZERO, TPU},
    {{"vmem_write_operational_intensity", "VMEM Write Operational Intensity (FLOP/Byte)",
      "number", NULL}, F_ZERO, TPU},
    {{"vmem_write_operational_intensity", "SHM/L1 Operational Intensity (FLOP/Byte)", "number",
      NULL}, F_ZERO, GPU},
    {{"bottleneck_operational_intensity", "Bottleneck Operational Intensity (FLOP/Byte)",
      "number", NULL}, F_BOTTLENECK_OI, ALL},
    {{"bound_by", "Bound by", "string", NULL}, F_BOUND_BY, ALL},
    {{"total_time_per_core", "Total Time per core (us)", "number", NULL}, F_PER_CORE, ALL},
    {{"total_time_in_percentage", "Total Time (%)", "number", NULL}, F_TIME_PCT, ALL},
    {{"optimal_flop_rate", "Optimal FLOP Rate " GF, "number", NULL}, F_OPTIMAL, ALL},
    {{"roofline_efficiency", "Roofline efficiency (%)", "number", NULL}, F_EFFICIENCY, ALL},
    {{"compute_efficiency", "FLOP Rate / Peak (%)", "number", NULL}, F_COMPUTE_EFF, ALL},
    {{"max_mem_bw_utilization", "Max memory BW utilization (among supported memories) (%)",
      "number", NULL}, F_MEM_UTIL, ALL},
    {{"include_infeed_outfeed", "Include Infeed/Outfeed", "boolean", NULL}, F_INFEED, ALL},
    {{"hlo_module_id", "Program ID", "string", NULL}, F_MODULE, ALL},
    {{"source_info", "Source Info", "string", NULL}, F_SOURCE, ALL},
};

#define NCOLS (sizeof COLS / sizeof COLS[0])

static double field_num(const rec *r, int f) {
    switch (f) {
    case F_RANK: return (double)r->rank;
    case F_OCC: return r->occurrences;
    case F_TOTAL: return r->total_us;
    case F_AVG: return safe_div(r->total_us, r->occurrences);
    case F_SELF: return r->self_us;
    case F_AVG_SELF: return safe_div(r->self_us, r->occurrences);
    case F_SELF_PCT: return r->self_frac;
    case F_CUM_PCT: return r->cum_frac;
    case F_FLOP_RATE: return r->rl.flop_rate;
    case F_MODEL_RATE: return r->rl.model_flop_rate;
    case F_MEM_BW: return r->rl.memory_bw;
    case F_HBM_BW: return r->rl.hbm_bw;
    case F_OI: return r->rl.operational_intensity;
    case F_HBM_OI: return r->rl.hbm_operational_intensity;
    case F_BOTTLENECK_OI: return r->rl.bottleneck_operational_intensity;
    case F_PER_CORE: return r->per_core_us;
    case F_TIME_PCT: return r->time_frac;
    case F_OPTIMAL: return r->rl.optimal_flop_rate;
    case F_EFFICIENCY: return r->rl.roofline_efficiency;
    case F_COMPUTE_EFF: return r->rl.flops_utilization;
    case F_MEM_UTIL: return r->rl.max_mem_utilization;
    default: return 0;
    }
}

/* A row of `r` in the columns of COLS that `table` (TPU or GPU) has. */
static void add_rec(xpv_dt *t, int table, const rec *r) {
    char pid[32];
    snprintf(pid, sizeof pid, "%llu", (unsigned long long)r->program_id);
    xpv_dt_row(t);
    for (size_t i = 0; i < NCOLS; i++) {
        if (!(COLS[i].tables & table)) continue;
        switch (COLS[i].field) {
        case F_STEP: xpv_dt_str(t, r->step); break;
        case F_CATEGORY: xpv_dt_str(t, r->category); break;
        case F_OPERATION: xpv_dt_strn(t, r->name.ptr, r->name.len); break;
        case F_BOUND_BY: xpv_dt_str(t, r->rl.bound_by); break;
        case F_INFEED: xpv_dt_bool(t, r->infeed); break;
        case F_MODULE: xpv_dt_str(t, pid); break;
        case F_SOURCE: xpv_dt_str(t, r->source); break;
        default: xpv_dt_num(t, field_num(r, COLS[i].field)); break;
        }
    }
}

/* What one render needs. */
typedef struct ctx {
    const xpv_op_stats *os;
    const xpv_op_metrics *m;
    const xpv_op_metrics_db *db;
    const xpv_hlo_op *hlo;      /* per db op */
    const char **category;      /* per db op */
    int gpu;                    /* GPU table (device_type contains "GPU") */
} ctx;

static void fill_rates(const ctx *c, rec *r, double flops, double model_flops, double bytes,
                       double time_ps) {
    xpv_roofline_compute(&c->m->perf, c->m->has_gpu, flops, model_flops, bytes, time_ps, &r->rl);
    r->per_core_us = safe_div(r->total_us, c->os->device_core_count);
}

/* XProf GenerateRooflineModelProgramRecord over the whole database. */
static void add_program(xpv_dt *t, const ctx *c, int infeed, int64_t io_ps) {
    double flops = 0, model = 0, bytes = 0;
    for (size_t i = 0; i < c->db->n; i++) {
        const xpv_op_metric *op = &c->db->ops[i];
        if (xpv_category_may_have_inner_ops(c->category[i])) continue;
        if (!infeed && xpv_category_is_infeed_outfeed(c->category[i])) continue;
        flops += op->flops;
        model += op->model_flops;
        bytes += op->bytes_accessed;
    }
    int64_t total_ps = c->db->total_time_ps - io_ps;
    rec r;
    memset(&r, 0, sizeof r);
    r.step = "Total";
    r.category = "Program";
    r.name = xpv_cstr("Program");
    r.source = "";
    r.occurrences = 1;
    r.total_us = (double)total_ps / 1e6;
    r.time_frac = total_ps != 0 ? 1.0 : 0.0;
    r.infeed = infeed;
    fill_rates(c, &r, flops, model, bytes, (double)total_ps);
    add_rec(t, c->gpu ? GPU : TPU, &r);
}

/* XProf ConvertOpMetricsDbToRooflineModelRecords for one infeed choice. */
static void add_records(xpv_dt *t, const ctx *c, int infeed) {
    int64_t io_ps = 0;
    for (size_t i = 0; !infeed && i < c->db->n; i++)
        if (xpv_category_is_infeed_outfeed(c->category[i])) io_ps += c->db->ops[i].time_ps;
    add_program(t, c, infeed, io_ps);
    double total_us = (double)(c->db->total_time_ps - io_ps) / 1e6, cum = 0;
    int64_t rank = 0;
    size_t lim = c->db->n < MAX_RECORDS ? c->db->n : MAX_RECORDS;
    for (size_t i = 0; i < lim; i++) {
        const xpv_op_metric *op = &c->db->ops[i];
        if (op->occurrences == 0) continue;
        if (!infeed && xpv_category_is_infeed_outfeed(c->category[i])) continue;
        char src[512];
        xpv_hlo_op_source(&c->hlo[i], src, sizeof src);
        rec r;
        memset(&r, 0, sizeof r);
        r.step = "Total";
        r.rank = ++rank;
        r.category = c->category[i];
        r.name = xpv_hlo_op_name(op);
        r.source = src;
        r.program_id = (uint64_t)op->program_id;
        r.occurrences = (double)op->occurrences;
        r.total_us = (double)op->time_ps / 1e6;
        r.self_us = (double)op->self_time_ps / 1e6;
        r.self_frac = safe_div(r.self_us, total_us);
        cum += r.self_frac;
        r.cum_frac = cum;
        r.time_frac = safe_div((double)op->time_ps, (double)(c->db->total_time_ps - io_ps));
        r.infeed = infeed;
        fill_rates(c, &r, op->flops, op->model_flops, op->bytes_accessed, (double)op->time_ps);
        add_rec(t, c->gpu ? GPU : TPU, &r);
    }
}

static void prop_num(xpv_dt *t, const char *key, double v) { xpv_dt_propf(t, key, "%g", v); }

/* XProf InitializeRooflineModelDatabaseFromOpStats + the table's custom
 * properties. */
static void add_props(xpv_dt *t, const ctx *c) {
    const xpv_perf_env *pe = &c->m->perf;
    double flop = pe->peak_tera_flops_per_second * 1000.0;
    double hbm = xpv_perf_peak_bw(pe, XPV_BW_HBM) / XPV_GIB_PER_GB;
    double cr = 0, cw = 0, vr = 0, vw = 0;
    if (c->gpu) {
        vr = xpv_perf_peak_bw(pe, XPV_BW_SRAM_RD) / XPV_GIB_PER_GB;
        vw = xpv_perf_peak_bw(pe, XPV_BW_SRAM_WR) / XPV_GIB_PER_GB;
    } else if (pe->has_cmem) {
        cr = xpv_perf_peak_bw(pe, XPV_BW_CMEM_RD) / XPV_GIB_PER_GB;
        cw = xpv_perf_peak_bw(pe, XPV_BW_CMEM_WR) / XPV_GIB_PER_GB;
    } else if (pe->has_merged_vmem) {
        vr = xpv_perf_peak_bw(pe, XPV_BW_VMEM_RD) / XPV_GIB_PER_GB;
        vw = xpv_perf_peak_bw(pe, XPV_BW_VMEM_WR) / XPV_GIB_PER_GB;
    }
    xpv_dt_prop(t, "device_type", c->os->device_type);
    if (!c->gpu) {
        xpv_dt_propf(t, "megacore", "%d", pe->has_megacore);
        xpv_dt_propf(t, "has_cmem", "%d", pe->has_cmem);
        xpv_dt_propf(t, "has_merged_vmem", "%d", pe->has_merged_vmem);
    }
    prop_num(t, "peak_flop_rate", flop);
    prop_num(t, "peak_hbm_bw", hbm);
    if (!c->gpu) {
        prop_num(t, "peak_cmem_read_bw", cr);
        prop_num(t, "peak_cmem_write_bw", cw);
        prop_num(t, "peak_vmem_read_bw", vr);
    }
    prop_num(t, "peak_vmem_write_bw", vw);
    prop_num(t, "hbm_ridge_point", xpv_ridge_point(flop, hbm));
    if (!c->gpu) {
        prop_num(t, "cmem_read_ridge_point", xpv_ridge_point(flop, cr));
        prop_num(t, "cmem_write_ridge_point", xpv_ridge_point(flop, cw));
        prop_num(t, "vmem_read_ridge_point", xpv_ridge_point(flop, vr));
    }
    prop_num(t, "vmem_write_ridge_point", xpv_ridge_point(flop, vw));
    /* DVFS normalised op time is not read: XProf's ratio of it is 0. */
    if (!c->gpu) prop_num(t, "time_scale_multiplier", 0);
}

int xpv_roofline_model_tables(const xpv_hostset *hs, const void *derived, const xpv_params *q,
                              xpv_dt_doc *doc, xpv_err *err) {
    (void)q;
    const xpv_op_stats *os = derived;
    ctx c = {.os = os, .m = os->ops, .db = &os->ops->device};
    c.gpu = strstr(os->device_type, "GPU") != NULL;
    /* XProf answers an empty database for hosts without GPU / TPU. */
    int device = c.m->has_gpu || c.m->has_tpu;
    size_t n = device ? c.db->n : 0;
    xpv_hlo_op *hlo = xpv_xcalloc(n + 1, sizeof *hlo);
    const char **cat = xpv_xcalloc(n + 1, sizeof *cat);
    for (size_t i = 0; i < n; i++) {
        if (xpv_hlo_resolve(os->hlo, hs, &c.db->ops[i], &hlo[i], err) < 0) {
            free(hlo);
            free(cat);
            return -1;
        }
        cat[i] = xpv_hlo_op_category(c.m->has_tpu, &c.db->ops[i], &hlo[i]);
    }
    c.hlo = hlo;
    c.category = cat;
    xpv_dt *t = xpv_dt_doc_table(doc, 0);
    for (size_t i = 0; i < NCOLS; i++)
        if (COLS[i].tables & (c.gpu ? GPU : TPU)) xpv_dt_add_cols(t, &COLS[i].c, 1);
    add_props(t, &c);
    if (device)
        for (int infeed = 1; infeed >= 0; infeed--) add_records(t, &c, infeed);
    xpv_ipa_diagnostics_table(doc, os, 0);
    free(hlo);
    free(cat);
    return 0;
}
