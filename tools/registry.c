/*
 * registry.c - the table of tools, in XProf's display order.
 *
 * Each converter file defines one `const xpv_tool xpv_tool_<name>`.
 */
#include <string.h>

#include "tool.h"

extern const xpv_tool xpv_tool_overview_page __attribute__((weak));
extern const xpv_tool xpv_tool_trace_viewer __attribute__((weak));
extern const xpv_tool xpv_tool_graph_viewer __attribute__((weak));
extern const xpv_tool xpv_tool_input_pipeline_analyzer __attribute__((weak));
extern const xpv_tool xpv_tool_kernel_stats __attribute__((weak));
extern const xpv_tool xpv_tool_memory_profile __attribute__((weak));
extern const xpv_tool xpv_tool_memory_viewer __attribute__((weak));
extern const xpv_tool xpv_tool_pod_viewer __attribute__((weak));
extern const xpv_tool xpv_tool_framework_op_stats __attribute__((weak));
extern const xpv_tool xpv_tool_tf_data_bottleneck_analysis __attribute__((weak));
extern const xpv_tool xpv_tool_op_profile __attribute__((weak));
extern const xpv_tool xpv_tool_hlo_stats __attribute__((weak));
extern const xpv_tool xpv_tool_roofline_model __attribute__((weak));

const xpv_tool *const *xpv_tools(void) {
    static const xpv_tool *list[32];
    static int done;
    if (!done) {
        const xpv_tool *all[] = {
            &xpv_tool_overview_page, &xpv_tool_trace_viewer, &xpv_tool_graph_viewer,
            &xpv_tool_input_pipeline_analyzer, &xpv_tool_kernel_stats,
            &xpv_tool_memory_profile, &xpv_tool_memory_viewer, &xpv_tool_roofline_model,
            &xpv_tool_pod_viewer,
            &xpv_tool_framework_op_stats, &xpv_tool_tf_data_bottleneck_analysis,
            &xpv_tool_op_profile, &xpv_tool_hlo_stats,
        };
        size_t k = 0;
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
            if (all[i]) list[k++] = all[i];
        list[k] = NULL;
        done = 1;
    }
    return list;
}

const xpv_tool *xpv_tool_find(const char *name) {
    size_t n = strlen(name);
    if (n && name[n - 1] == '^') n--;
    for (const xpv_tool *const *t = xpv_tools(); *t; t++) {
        const xpv_tool *tl = *t;
        if (strlen(tl->name) == n && !strncmp(tl->name, name, n)) return tl;
        if (tl->alias && strlen(tl->alias) == n && !strncmp(tl->alias, name, n)) return tl;
    }
    return NULL;
}

int xpv_tool_has_accelerator(const xpv_profile *p) {
    for (uint32_t i = 0; i < p->nplanes; i++)
        if (xpv_str_has_prefix(p->planes[i].name, "/device:GPU:") ||
            xpv_str_has_prefix(p->planes[i].name, "/device:TPU:"))
            return 1;
    return 0;
}

const char *xpv_param(const xpv_params *q, const char *key) {
    if (!q) return NULL;
    for (size_t i = 0; i < q->n; i++)
        if (!strcmp(q->keys[i], key)) return q->vals[i];
    return NULL;
}

int xpv_tool_render(const xpv_tool *t, const xpv_hostset *hs, const void *derived,
                    const xpv_params *q, xpv_buf *out, xpv_err *err) {
    if (!t->tables) return t->render(hs, derived, q, out, err);
    xpv_dt_doc doc;
    xpv_dt_doc_init(&doc, 1);
    int rc = t->tables(hs, derived, q, &doc, err);
    if (rc == 0) xpv_dt_doc_write_json(&doc, out);
    xpv_dt_doc_release(&doc);
    return rc;
}

int xpv_tool_csv(const xpv_tool *t, const xpv_hostset *hs, const void *derived,
                 const xpv_params *q, size_t index, xpv_buf *out, xpv_err *err) {
    if (!t->tables)
        return xpv_err_set(err, XPV_E_BAD_REQUEST,
                           "%s has no tables: data_csv serves table tools only", t->name);
    xpv_dt_doc doc;
    xpv_dt_doc_init(&doc, 1);
    int rc = t->tables(hs, derived, q, &doc, err);
    if (rc == 0) rc = xpv_dt_doc_write_csv(&doc, index, out, err);
    xpv_dt_doc_release(&doc);
    return rc;
}
