/*
 * kernel_stats.c - the GPU kernel stats tool (XProf kernel_stats).
 *
 * Output (xprof-reference.md §2.9): ONE DataTable, one row per kernel
 * report (kernel name + launch dims + registers + shared memory +
 * TensorCore flags + op name), sorted by total duration, top 1000.
 * Durations are whole nanoseconds printed as microseconds; the average is
 * an integer-ns division, as XProf does.
 *
 * Occupancy: XProf's column is the CUPTI collector's theoretical occupancy
 * ("Theoretical Occupancy %").  PyTorch traces carry Kineto's "est.
 * achieved occupancy %" instead (the chrome-trace converter marks their
 * GPU planes occupancy_kind = "achieved"), a different quantity: the
 * column keeps its id and values, its label says which one it holds
 * ("Est. Achieved Occupancy %", or "Occupancy %" when hosts mix both).
 */
#include <stdio.h>
#include <string.h>

#include "op_metrics.h"
#include "checked.h"
#include "opstats.h"
#include "tool.h"

/* Whole nanoseconds as microseconds, exact (fixed decimals); `tmp` is
 * scratch space. */
static void ns_cell(xpv_dt *t, uint64_t ns, xpv_buf *tmp) {
    xpv_buf_reset(tmp);
    xpv_buf_ps_as_us(tmp, xpv_ns_to_ps_u64(ns, NULL));
    xpv_buf_putc(tmp, '\0');
    xpv_dt_num_text(t, tmp->data);
}

static void dims_cell(xpv_dt *t, const uint32_t d[3]) {
    char tmp[48];
    snprintf(tmp, sizeof tmp, "%u,%u,%u", d[0], d[1], d[2]);
    xpv_dt_str(t, tmp);
}

/* The occupancy column's label for the kernels of `m` (see the top). */
static const char *occupancy_label(const xpv_op_metrics *m) {
    if (m->occupancy_achieved)
        return m->occupancy_theoretical ? "Occupancy %" : "Est. Achieved Occupancy %";
    return "Theoretical Occupancy %";
}

/* Write the kernel stats DataTable of `m` into `b`. */
static void kernel_table(xpv_dt *t, const xpv_op_metrics *m, const char *occ_label) {
    const char *const cols[][3] = {
        {"rank", "number", "Rank"},
        {"kernel_name", "string", "Kernel Name"},
        {"registers_per_thread", "number", "Registers per thread"},
        {"shmem_bytes", "number", "Shared Mem bytes"},
        {"block_dim", "string", "Block dim"},
        {"grid_dim", "string", "Grid dim"},
        {"occupancy_pct", "number", occ_label},
        {"is_op_tensor_core_eligible", "boolean", "Op is TensorCore eligible"},
        {"is_kernel_using_tensor_core", "boolean", "Kernel uses TensorCore"},
        {"op_name", "string", "Op Name"},
        {"occurrences", "number", "Occurrences"},
        {"total_duration_us", "number", "Total Duration (\xce\xbcs)"},
        {"avg_duration_us", "number", "Avg Duration (\xce\xbcs)"},
        {"min_duration_us", "number", "Min Duration (\xce\xbcs)"},
        {"max_duration_us", "number", "Max Duration (\xce\xbcs)"},
    };
    for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++)
        xpv_dt_add_col(t, cols[i][0], cols[i][2], cols[i][1], NULL);
    xpv_buf tmp;
    xpv_buf_init(&tmp);
    for (size_t i = 0; i < m->nkernels; i++) {
        const xpv_kernel_report *k = &m->kernels[i];
        xpv_dt_row(t);
        xpv_dt_num(t, (double)(i + 1));
        xpv_dt_str(t, k->name);
        xpv_dt_num(t, k->registers_per_thread);
        xpv_dt_num(t, (double)k->static_shmem_bytes + (double)k->dynamic_shmem_bytes);
        dims_cell(t, k->block);
        dims_cell(t, k->grid);
        /* KernelReport.occupancy_pct is a proto float. */
        xpv_dt_num(t, (double)(float)k->occupancy_pct);
        xpv_dt_bool(t, k->is_op_tensor_core_eligible);
        xpv_dt_bool(t, k->is_kernel_using_tensor_core);
        xpv_dt_str(t, k->op_name);
        xpv_dt_num(t, (double)k->occurrences);
        ns_cell(t, k->total_duration_ns, &tmp);
        ns_cell(t, k->occurrences ? k->total_duration_ns / k->occurrences : 0, &tmp);
        ns_cell(t, k->min_duration_ns, &tmp);
        ns_cell(t, k->max_duration_ns, &tmp);
    }
    xpv_buf_free(&tmp);
}

int xpv_kernel_stats_tables(const xpv_hostset *hs, const void *derived, const xpv_params *q,
                            xpv_dt_doc *doc, xpv_err *err) {
    (void)q;
    /* The shared OpStats intermediate (steps + op metrics), built once
     * per (run, host set) for all four stats tools. */
    const xpv_op_metrics *m = ((const xpv_op_stats *)derived)->ops;
    xpv_op_metrics *own = NULL;
    if (!m) m = own = xpv_op_metrics_build(hs, err);
    if (!m) return -1;
    doc->array = 0;
    kernel_table(xpv_dt_doc_table(doc, 0), m, occupancy_label(m));
    xpv_op_metrics_free(own);
    return 0;
}

/* Offered only for hosts with a GPU plane. */
int xpv_kernel_stats_available(const xpv_profile *p) {
    for (uint32_t i = 0; i < p->nplanes; i++)
        if (xpv_str_has_prefix(p->planes[i].name, "/device:GPU:")) return 1;
    return 0;
}
