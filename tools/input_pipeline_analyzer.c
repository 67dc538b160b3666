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

int xpv_input_pipeline_analyzer_tables(const xpv_hostset *hs, const void *derived,
                                       const xpv_params *q, xpv_dt_doc *doc, xpv_err *err) {
    (void)hs;
    (void)q;
    const xpv_op_stats *os = xpv_op_stats_need(derived, "input_pipeline_analyzer", err);
    if (!os) return -1;
    static const xpv_dt_col core_cols[] = {{"index", "Index", "string", NULL}};
    xpv_ipa ipa;
    xpv_ipa_compute(os, &ipa);
    xpv_dt_add_cols(xpv_dt_doc_table(doc, 0), core_cols, 1);
    xpv_ipa_step_table(doc, &ipa);
    xpv_ipa_input_ops_table(doc, &ipa);
    xpv_ipa_recommendation_table(doc);
    xpv_ipa_diagnostics_table(doc, os, 0);
    return 0;
}
