/*
 * input_pipeline_analyzer.c - the `input_pipeline_analyzer` tool
 * (xprof-reference.md §2.6).
 *
 * Output: a JSON array of 5 DataTables, as XProf writes it:
 *   [max_infeed_core, step_table, host_input_ops_table,
 *    recommendation_table, diagnostics_table]
 * max_infeed_core is TPU-only in XProf; here it is always the empty table
 * (one `index` column, no rows) because TPU step analysis is not done.  The
 * other tables are the generic (GPU / CPU) ones, computed by opstats.c from
 * the op_stats derived data.
 */
#include <stdio.h>

#include "opstats.h"
#include "tool.h"

static int render(const xpv_hostset *hs, const void *derived, const xpv_params *q,
                  xpv_buf *out, xpv_err *err) {
    (void)hs;
    (void)q;
    const xpv_op_stats *os = derived;
    if (!os || !os->ops) {
        err->status = XPV_E_INTERNAL;
        snprintf(err->msg, sizeof err->msg, "input_pipeline_analyzer: op_stats missing");
        return -1;
    }
    static const xpv_dt_col core_cols[] = {{"index", "Index", "string", NULL}};
    xpv_ipa ipa;
    xpv_ipa_compute(os, &ipa);
    xpv_buf_puts(out, "[{");
    xpv_dt_cols(out, core_cols, 1);
    xpv_buf_puts(out, ",\"rows\":[]},");
    xpv_ipa_write_step_table(out, &ipa);
    xpv_buf_putc(out, ',');
    xpv_ipa_write_input_ops_table(out, &ipa);
    xpv_buf_putc(out, ',');
    xpv_ipa_write_recommendation_table(out);
    xpv_buf_putc(out, ',');
    xpv_ipa_write_diagnostics_table(out, os, 0);
    xpv_buf_putc(out, ']');
    return 0;
}

const xpv_tool xpv_tool_input_pipeline_analyzer = {
    .name = "input_pipeline_analyzer",
    .alias = "input_pipeline", /* the old name XProf still accepts (§1.5) */
    .title = "Input Pipeline Analyzer",
    .flags = XPV_TOOL_ALL_HOSTS_OK | XPV_TOOL_TABLE,
    .available = NULL,
    .derived = &xpv_derived_op_stats,
    .render = render,
};
