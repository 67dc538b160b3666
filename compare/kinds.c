/*
 * kinds.c - the compare kinds: one entry per tool, in XProf's display
 * order, and the extractors that turn a tool's result into rows.
 *
 *   overview_page       typed: OpStats' input pipeline analysis (average
 *                       step time and its categories, µs; the bottleneck
 *                       and idle percentages as rows of unit "%"); the
 *                       per-step times for the overlaid step graph
 *   framework_op_stats  typed: the op metrics dbs (every op, not only the
 *                       table's top 500 per half), IDLE left out
 *   kernel_stats        typed: the kernel reports (top 1000), summed per
 *                       kernel name + op name over launch shapes
 *   memory_profile      the tool's JSON: per allocator the summary figures
 *                       and the breakdown of the live allocations at the
 *                       peak, in bytes
 *
 * A DataTable tool needs only an entry with xpv_cmp_extract_datatable and
 * its column ids (hlo_stats: program + op).
 */
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare.h"
#include "op_metrics.h"
#include "opstats.h"

/* ==== Helpers =========================================================== */

/* The op metrics of `derived` (OpStats), built here when the cache had
 * none.  *own is set to what the caller frees. */
static const xpv_op_metrics *op_metrics(const xpv_hostset *hs, const void *derived,
                                        xpv_op_metrics **own, xpv_err *err) {
    *own = NULL;
    const xpv_op_metrics *m = derived ? ((const xpv_op_stats *)derived)->ops : NULL;
    if (!m) m = *own = xpv_op_metrics_build(hs, err);
    return m;
}

/* The tool's rendered JSON, parsed. */
static json_t *render_json(const char *tool, const xpv_hostset *hs, const void *derived,
                           xpv_err *err) {
    const xpv_tool *t = xpv_tool_find(tool);
    if (!t) {
        xpv_err_set(err, XPV_E_NOT_FOUND, "unknown tool: %s", tool);
        return NULL;
    }
    xpv_buf out;
    xpv_buf_init(&out);
    xpv_params q = {0, NULL, NULL, NULL};
    xpv_err terr;
    memset(&terr, 0, sizeof terr);
    if (xpv_tool_render(t, hs, derived, &q, &out, &terr) != 0) {
        xpv_err_set(err, terr.status ? terr.status : XPV_E_INTERNAL, "%s: %s", tool,
                    terr.msg[0] ? terr.msg : "the tool failed");
        xpv_buf_free(&out);
        return NULL;
    }
    json_error_t jerr;
    json_t *j = json_loadb(out.data ? out.data : "", out.len, 0, &jerr);
    xpv_buf_free(&out);
    if (!j) xpv_err_set(err, XPV_E_INTERNAL, "%s: unreadable output: %s", tool, jerr.text);
    return j;
}

/* A JSON number, or a numeric string (protobuf JSON int64). */
static double jnum(const json_t *v) {
    if (json_is_number(v)) return json_number_value(v);
    if (json_is_string(v)) return strtod(json_string_value(v), NULL);
    if (json_is_true(v)) return 1;
    return 0;
}

static const char *jstr(const json_t *v) {
    return json_is_string(v) ? json_string_value(v) : "";
}

/* ==== overview_page ===================================================== */

static const char *const cat_names[XPV_IPA_NCATS] = {
    "Device compute", "Device to device", "Device collective communication",
    "Host compute", "Kernel launch", "Input", "Output", "Compilation", "All others",
};

static void pct_row(xpv_cmp_side *s, const char *name, double v) {
    xpv_cmp_row *r = xpv_cmp_side_add(s, name);
    r->labels[0] = "analysis";
    r->v[0] = v;
    r->unit = "%";
}

static int extract_overview(const xpv_compare_kind *k, const xpv_hostset *hs,
                            const void *derived, xpv_cmp_side *out, xpv_err *err) {
    (void)k;
    xpv_op_stats *own = NULL;
    const xpv_op_stats *os = derived;
    if (!os || !os->ops) os = own = xpv_op_stats_build(hs, err);
    if (!os) return -1;
    xpv_ipa ipa;
    xpv_ipa_compute(os, &ipa);
    xpv_cmp_row *r = xpv_cmp_side_add(out, "Step time");
    r->labels[0] = "step_time";
    r->v[0] = ipa.step_time.avg * 1000.0;
    r->v[1] = ipa.step_time.max * 1000.0;
    r->v[2] = ipa.step_time.min * 1000.0;
    r->v[3] = (double)os->steps.n;
    out->total = r->v[0];
    for (int c = 0; c < XPV_IPA_NCATS; c++) {
        r = xpv_cmp_side_add(out, cat_names[c]);
        r->labels[0] = "step_time";
        r->v[0] = ipa.cat[c].avg * 1000.0;
        r->v[1] = ipa.cat[c].max * 1000.0;
        r->v[2] = ipa.cat[c].min * 1000.0;
        r->v[3] = (double)os->steps.n;
    }
    pct_row(out, "Input share of step time", ipa.input_pct);
    pct_row(out, "Output share of step time", ipa.output_pct);
    pct_row(out, "Compute share of step time", ipa.compute_pct);
    pct_row(out, "Idle share of step time", ipa.idle_pct);
    pct_row(out, "Kernel launch share of step time", ipa.kernel_launch_pct);
    pct_row(out, "All others share of step time", ipa.all_other_pct);
    pct_row(out, "Collectives share of step time", ipa.collectives_pct);
    pct_row(out, "Device idle time", 100.0 * xpv_op_metrics_idle_ratio(&os->ops->device));
    pct_row(out, "Host idle time", 100.0 * xpv_op_metrics_idle_ratio(&os->ops->host));
    const xpv_step_db *db = &os->steps;
    out->steps = xpv_xcalloc(db->n + 1, sizeof *out->steps);
    out->nsteps = db->n;
    for (size_t i = 0; i < db->n; i++)
        out->steps[i] = (double)(db->max_dur_ps ? db->max_dur_ps[i] : db->steps[i].dur_ps) / 1e9;
    xpv_op_stats_free(own);
    return 0;
}

/* ==== framework_op_stats ================================================ */

static int extract_op_stats(const xpv_compare_kind *k, const xpv_hostset *hs,
                            const void *derived, xpv_cmp_side *out, xpv_err *err) {
    (void)k;
    xpv_op_metrics *own;
    const xpv_op_metrics *m = op_metrics(hs, derived, &own, err);
    if (!m) return -1;
    const xpv_op_metrics_db *dbs[2] = {&m->device_tf, &m->host};
    for (int half = 0; half < 2; half++) {
        /* As the tool: without GPU or TPU planes there is no device db. */
        if (half == 0 && !m->has_gpu && !m->has_tpu) continue;
        const xpv_op_metrics_db *db = dbs[half];
        for (size_t i = 0; i < db->n; i++) {
            const xpv_op_metric *op = &db->ops[i];
            if (op->is_idle) continue;
            xpv_cmp_row *r = xpv_cmp_side_add(out, op->name);
            r->labels[0] = half == 0 ? "Device" : "Host";
            r->labels[1] = xpv_cmp_side_str(out, op->category);
            r->v[0] = (double)op->self_time_ps / 1e6;
            r->v[1] = (double)op->occurrences;
            r->v[2] = (double)op->time_ps / 1e6;
            out->total += r->v[0];
        }
    }
    xpv_op_metrics_free(own);
    return 0;
}

/* ==== kernel_stats ====================================================== */

static int extract_kernels(const xpv_compare_kind *k, const xpv_hostset *hs,
                           const void *derived, xpv_cmp_side *out, xpv_err *err) {
    (void)k;
    xpv_op_metrics *own;
    const xpv_op_metrics *m = op_metrics(hs, derived, &own, err);
    if (!m) return -1;
    for (size_t i = 0; i < m->nkernels; i++) {
        const xpv_kernel_report *kr = &m->kernels[i];
        xpv_cmp_row *r = xpv_cmp_side_add(out, kr->name);
        r->labels[0] = xpv_cmp_side_str(out, kr->op_name);
        r->v[0] = (double)kr->total_duration_ns / 1e3;
        r->v[1] = (double)kr->occurrences;
        out->total += r->v[0];
    }
    xpv_op_metrics_free(own);
    return 0;
}

/* ==== memory_profile ==================================================== */

static void mem_summary_row(xpv_cmp_side *out, const char *alloc, const char *name,
                            double bytes) {
    xpv_cmp_row *r = xpv_cmp_side_add(out, name);
    r->labels[0] = xpv_cmp_side_str(out, alloc);
    r->labels[1] = "summary";
    r->v[0] = bytes;
}

static int extract_memory(const xpv_compare_kind *k, const xpv_hostset *hs,
                          const void *derived, xpv_cmp_side *out, xpv_err *err) {
    json_t *root = render_json(k->tool, hs, derived, err);
    if (!root) return -1;
    json_t *per = json_object_get(root, "memoryProfilePerAllocator");
    const char *id;
    json_t *a;
    json_object_foreach(per, id, a) {
        json_t *sum = json_object_get(a, "profileSummary");
        json_t *peak = json_object_get(sum, "peakStats");
        double in_use = jnum(json_object_get(peak, "peakBytesInUse"));
        mem_summary_row(out, id, "Peak memory usage", in_use);
        mem_summary_row(out, id, "Peak memory usage (lifetime)",
                        jnum(json_object_get(sum, "peakBytesUsageLifetime")));
        mem_summary_row(out, id, "Heap allocated at peak",
                        jnum(json_object_get(peak, "heapAllocatedBytes")));
        mem_summary_row(out, id, "Stack reserved at peak",
                        jnum(json_object_get(peak, "stackReservedBytes")));
        mem_summary_row(out, id, "Free memory at peak",
                        jnum(json_object_get(peak, "freeMemoryBytes")));
        mem_summary_row(out, id, "Memory capacity",
                        jnum(json_object_get(sum, "memoryCapacity")));
        out->total += in_use;
        /* Breakdown at the peak: the active allocations, by op, region,
         * type and shape. */
        json_t *snaps = json_object_get(a, "memoryProfileSnapshots");
        json_t *special = json_object_get(a, "specialAllocations");
        json_t *act = json_object_get(a, "activeAllocations");
        size_t i;
        json_t *e;
        json_array_foreach(act, i, e) {
            long long si = (long long)jnum(json_object_get(e, "snapshotIndex"));
            long long sp = (long long)jnum(json_object_get(e, "specialIndex"));
            json_t *snap = si >= 0 ? json_array_get(snaps, (size_t)si)
                                   : sp >= 0 ? json_array_get(special, (size_t)sp) : NULL;
            json_t *md = json_object_get(snap, "activityMetadata");
            if (!md) continue;
            double occ = jnum(json_object_get(e, "numOccurrences"));
            if (occ <= 0) occ = 1;
            char name[1024];
            const char *op = jstr(json_object_get(md, "tfOpName"));
            const char *shape = jstr(json_object_get(md, "tensorShape"));
            snprintf(name, sizeof name, "%s%s%s", op, shape[0] ? " " : "", shape);
            xpv_cmp_row *r = xpv_cmp_side_add(out, name);
            r->labels[0] = xpv_cmp_side_str(out, id);
            r->labels[1] = xpv_cmp_side_str(out, jstr(json_object_get(md, "regionType")));
            r->labels[2] = xpv_cmp_side_str(out, jstr(json_object_get(md, "dataType")));
            r->v[0] = jnum(json_object_get(md, "allocationBytes")) * occ;
            r->v[1] = jnum(json_object_get(md, "requestedBytes")) * occ;
            r->v[2] = occ;
        }
    }
    json_decref(root);
    return 0;
}

/* ==== Any DataTable tool ================================================ */

static int col_index(const xpv_dt *t, const char *id) {
    const xpv_dt_col *c = t->cols.p;
    if (!id) return -1;
    for (size_t i = 0; i < t->cols.n; i++)
        if (!strcmp(c[i].id, id)) return (int)i;
    return -1;
}

/* A cell as text: strings as they are, numbers with 17 digits (NaN and
 * the infinities by name, as the JSON answer spells them). */
static const char *cell_str(const xpv_dt_cell *c, char *tmp, size_t n) {
    if (!c) return "";
    double v;
    switch (c->kind) {
    case XPV_DT_STR: return c->v.s;
    case XPV_DT_INT: v = (double)c->v.i; break;
    case XPV_DT_NUMTEXT: v = strtod(c->v.s, NULL); break;
    case XPV_DT_NUM:
        v = c->v.d;
        if (isnan(v)) return "NaN";
        if (isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
        break;
    default: return "";
    }
    snprintf(tmp, n, "%.17g", v);
    return tmp;
}

/* A cell as a number (numeric strings parsed, true = 1). */
static double cell_num(const xpv_dt_cell *c) {
    if (!c) return 0;
    switch (c->kind) {
    case XPV_DT_NUM: return c->v.d;
    case XPV_DT_INT: return (double)c->v.i;
    case XPV_DT_NUMTEXT:
    case XPV_DT_STR: return strtod(c->v.s, NULL);
    case XPV_DT_BOOL: return c->v.b ? 1 : 0;
    default: return 0;
    }
}

/* Element `index` of the tool's answer (-1: the answer itself) when it is
 * a DataTable, else NULL. */
static const xpv_dt *answer_table(const xpv_dt_doc *d, int index) {
    if (index < 0) return d->array ? NULL : xpv_dt_doc_get(d, 0);
    if (!d->array || (size_t)index >= d->items.n) return NULL;
    return ((const xpv_dt_item *)d->items.p)[index].table;
}

int xpv_cmp_extract_datatable(const xpv_compare_kind *k, const xpv_hostset *hs,
                              const void *derived, xpv_cmp_side *out, xpv_err *err) {
    const xpv_tool *tool = xpv_tool_find(k->tool);
    if (!tool) return xpv_err_set(err, XPV_E_NOT_FOUND, "unknown tool: %s", k->tool);
    xpv_dt_doc doc;
    xpv_dt_doc_init(&doc, 1);
    xpv_params q = {0, NULL, NULL, NULL};
    xpv_err terr;
    memset(&terr, 0, sizeof terr);
    if (tool->tables && tool->tables(hs, derived, &q, &doc, &terr) != 0) {
        xpv_dt_doc_release(&doc);
        return xpv_err_set(err, terr.status ? terr.status : XPV_E_INTERNAL, "%s: %s", k->tool,
                           terr.msg[0] ? terr.msg : "the tool failed");
    }
    const xpv_dt *t = answer_table(&doc, k->table);
    int ret = 0;
    int name_i = t ? col_index(t, k->name_col) : -1, li[XPV_CMP_MAXL], vi[XPV_CMP_MAXV];
    if (!t) {
        ret = xpv_err_set(err, XPV_E_INTERNAL, "%s: no DataTable at index %d", k->tool, k->table);
    } else if (name_i < 0) {
        ret = xpv_err_set(err, XPV_E_INTERNAL, "%s: no column %s", k->tool, k->name_col);
    } else {
        for (int j = 0; j < XPV_CMP_MAXL; j++) li[j] = col_index(t, k->labels[j]);
        for (int j = 0; j < XPV_CMP_MAXV; j++) vi[j] = col_index(t, k->values[j]);
        double scale = k->scale != 0 ? k->scale : 1.0;
        char tmp[64];
        for (size_t i = 0; i < xpv_dt_nrows(t); i++) {
            const char *name = cell_str(xpv_dt_cell_at(t, i, (size_t)name_i), tmp, sizeof tmp);
            if (!strcmp(name, "IDLE")) continue;
            xpv_cmp_row *r = xpv_cmp_side_add(out, name);
            for (int j = 0; j < XPV_CMP_MAXL; j++)
                if (li[j] >= 0)
                    r->labels[j] = xpv_cmp_side_str(
                        out, cell_str(xpv_dt_cell_at(t, i, (size_t)li[j]), tmp, sizeof tmp));
            for (int j = 0; j < XPV_CMP_MAXV; j++)
                if (vi[j] >= 0) r->v[j] = scale * cell_num(xpv_dt_cell_at(t, i, (size_t)vi[j]));
            out->total += r->v[0];
        }
    }
    xpv_dt_doc_release(&doc);
    return ret;
}

/* ==== The table ========================================================= */

static const xpv_compare_kind kinds[] = {
    {"overview_page", "us", "average step time (us)",
     {"section"}, {"avg_us", "max_us", "min_us", "steps"}, extract_overview, 0, NULL, 0},
    {"kernel_stats", "us", "total kernel duration (us)",
     {"op_name"}, {"total_duration_us", "occurrences"}, extract_kernels, 0, NULL, 0},
    {"memory_profile", "bytes", "peak memory in use, summed over allocators (bytes)",
     {"allocator", "region_type", "data_type"}, {"bytes", "requested_bytes", "occurrences"},
     extract_memory, 0, NULL, 0},
    {"framework_op_stats", "us", "total self time without IDLE (us)",
     {"host_or_device", "type"}, {"total_self_time", "occurrences", "total_time"},
     extract_op_stats, 0, NULL, 0},
    {"hlo_stats", "us", "total self time without IDLE (us)",
     {"program_id", "category"}, {"total_self_time", "occurrences"},
     xpv_cmp_extract_datatable, -1, "hlo_op_name", 1},
};

static const xpv_compare_kind *kind_list[sizeof kinds / sizeof kinds[0] + 1];
static pthread_once_t kind_once = PTHREAD_ONCE_INIT;

/* The kinds whose tool is built in (the server may run without some). */
static void init_kinds(void) {
    size_t n = 0;
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (xpv_tool_find(kinds[i].tool)) kind_list[n++] = &kinds[i];
    kind_list[n] = NULL;
}

const xpv_compare_kind *const *xpv_compare_kinds(void) {
    pthread_once(&kind_once, init_kinds);
    return kind_list;
}

const xpv_compare_kind *xpv_compare_find(const char *tool) {
    const xpv_tool *t = xpv_tool_find(tool);
    if (!t) return NULL;
    for (const xpv_compare_kind *const *k = xpv_compare_kinds(); *k; k++)
        if (!strcmp((*k)->tool, t->name)) return *k;
    return NULL;
}
