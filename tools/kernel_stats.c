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
#include <string.h>

#include "op_metrics.h"
#include "checked.h"
#include "opstats.h"
#include "tool.h"

static void num_cell(xpv_buf *b, double v) {
    xpv_buf_puts(b, "{\"v\":");
    xpv_buf_double(b, v);
    xpv_buf_puts(b, "},");
}

static void ns_cell(xpv_buf *b, uint64_t ns, int last) {
    xpv_buf_puts(b, "{\"v\":");
    xpv_buf_ps_as_us(b, xpv_ns_to_ps_u64(ns, NULL));
    xpv_buf_puts(b, last ? "}" : "},");
}

static void str_cell(xpv_buf *b, const char *s) {
    xpv_buf_puts(b, "{\"v\":");
    xpv_buf_json_cstr(b, s);
    xpv_buf_puts(b, "},");
}

static void bool_cell(xpv_buf *b, int v) {
    xpv_buf_puts(b, v ? "{\"v\":true}," : "{\"v\":false},");
}

static void dims_cell(xpv_buf *b, const uint32_t d[3]) {
    xpv_buf_printf(b, "{\"v\":\"%u,%u,%u\"},", d[0], d[1], d[2]);
}

/* The occupancy column's label for the kernels of `m` (see the top). */
static const char *occupancy_label(const xpv_op_metrics *m) {
    if (m->occupancy_achieved)
        return m->occupancy_theoretical ? "Occupancy %" : "Est. Achieved Occupancy %";
    return "Theoretical Occupancy %";
}

/* Write the kernel stats DataTable of `m` into `b`. */
static void write_kernel_table(xpv_buf *b, const xpv_op_metrics *m, const char *occ_label) {
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
    xpv_buf_puts(b, "{\"cols\":[");
    for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++) {
        if (i) xpv_buf_putc(b, ',');
        xpv_buf_puts(b, "{\"id\":");
        xpv_buf_json_cstr(b, cols[i][0]);
        xpv_buf_puts(b, ",\"label\":");
        xpv_buf_json_cstr(b, cols[i][2]);
        xpv_buf_puts(b, ",\"type\":");
        xpv_buf_json_cstr(b, cols[i][1]);
        xpv_buf_putc(b, '}');
    }
    xpv_buf_puts(b, "],\"rows\":[");
    for (size_t i = 0; i < m->nkernels; i++) {
        const xpv_kernel_report *k = &m->kernels[i];
        if (i) xpv_buf_putc(b, ',');
        xpv_buf_puts(b, "{\"c\":[");
        num_cell(b, (double)(i + 1));
        str_cell(b, k->name);
        num_cell(b, k->registers_per_thread);
        num_cell(b, (double)k->static_shmem_bytes + (double)k->dynamic_shmem_bytes);
        dims_cell(b, k->block);
        dims_cell(b, k->grid);
        /* KernelReport.occupancy_pct is a proto float. */
        num_cell(b, (double)(float)k->occupancy_pct);
        bool_cell(b, k->is_op_tensor_core_eligible);
        bool_cell(b, k->is_kernel_using_tensor_core);
        str_cell(b, k->op_name);
        num_cell(b, (double)k->occurrences);
        ns_cell(b, k->total_duration_ns, 0);
        ns_cell(b, k->occurrences ? k->total_duration_ns / k->occurrences : 0, 0);
        ns_cell(b, k->min_duration_ns, 0);
        ns_cell(b, k->max_duration_ns, 1);
        xpv_buf_puts(b, "]}");
    }
    xpv_buf_puts(b, "]}");
}

static int render(const xpv_hostset *hs, const void *derived, const xpv_params *q,
                  xpv_buf *out, xpv_err *err) {
    /* The shared OpStats intermediate (steps + op metrics), built once
     * per (run, host set) for all four stats tools. */
    const xpv_op_metrics *m = ((const xpv_op_stats *)derived)->ops;
    xpv_op_metrics *own = NULL;
    if (!m) m = own = xpv_op_metrics_build(hs, err);
    if (!m) return -1;
    write_kernel_table(out, m, occupancy_label(m));
    xpv_op_metrics_free(own);
    return 0;
}

/* Offered only for hosts with a GPU plane. */
static int available(const xpv_profile *p) {
    for (uint32_t i = 0; i < p->nplanes; i++)
        if (xpv_str_has_prefix(p->planes[i].name, "/device:GPU:")) return 1;
    return 0;
}

const xpv_tool xpv_tool_kernel_stats = {
    .name = "kernel_stats",
    .alias = NULL,
    .title = "GPU Kernel Stats",
    .flags = XPV_TOOL_ALL_HOSTS_OK | XPV_TOOL_TABLE,
    .available = available,
    .derived = &xpv_derived_op_stats,
    .render = render,
};
