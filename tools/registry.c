/*
 * registry.c - the table of tools, in XProf's display order.
 *
 * Each converter file (tools/<name>.c) defines its tool's hooks, declared
 * in tool.h; the table below names them.
 */
#include <string.h>

#include "opstats.h"
#include "tool.h"
#include "trace_index.h"

enum { ALL_ONLY = XPV_TOOL_ALL_HOSTS_ONLY, ALL_OK = XPV_TOOL_ALL_HOSTS_OK };

/* One row a tool: what the server lists and routes by, and the converter's
 * hooks (tools/<name>.c).  Aliases are the older names XProf still
 * accepts (xprof-reference.md §1.5). */
static const xpv_tool table[] = {
    {.name = "overview_page", .title = "Overview Page", .flags = ALL_ONLY,
     .derived = &xpv_derived_op_stats, .tables = xpv_overview_page_tables},
    {.name = "trace_viewer", .alias = "trace_viewer@", .title = "Trace Viewer",
     .derived = &xpv_derived_trace_index, .render = xpv_trace_viewer_render,
     .stream = &xpv_trace_viewer_stream},
    {.name = "graph_viewer", .title = "Graph Viewer", .flags = ALL_OK,
     .available = xpv_graph_viewer_available, .derived = &xpv_derived_op_stats,
     .render = xpv_graph_viewer_render, .content_type = xpv_graph_viewer_content_type},
    {.name = "input_pipeline_analyzer", .alias = "input_pipeline",
     .title = "Input Pipeline Analyzer", .flags = ALL_OK, .derived = &xpv_derived_op_stats,
     .tables = xpv_input_pipeline_analyzer_tables},
    {.name = "kernel_stats", .title = "GPU Kernel Stats", .flags = ALL_OK,
     .available = xpv_kernel_stats_available, .derived = &xpv_derived_op_stats,
     .tables = xpv_kernel_stats_tables},
    {.name = "memory_profile", .title = "Memory Profile",
     .available = xpv_memory_profile_available, .render = xpv_memory_profile_render},
    {.name = "memory_viewer", .title = "Memory Viewer", .available = xpv_memory_viewer_available,
     .derived = &xpv_derived_op_stats, .render = xpv_memory_viewer_render},
    {.name = "roofline_model", .title = "Roofline Model", .flags = ALL_OK,
     .available = xpv_tool_has_accelerator, .derived = &xpv_derived_op_stats,
     .tables = xpv_roofline_model_tables},
    {.name = "pod_viewer", .title = "Pod Viewer", .flags = ALL_ONLY,
     .available = xpv_tool_has_accelerator, .derived = &xpv_derived_op_stats,
     .render = xpv_pod_viewer_render},
    {.name = "framework_op_stats", .alias = "tensorflow_stats", .title = "Framework Op Stats",
     .flags = ALL_OK, .derived = &xpv_derived_op_stats,
     .tables = xpv_framework_op_stats_tables},
    {.name = "tf_data_bottleneck_analysis", .title = "tf.data Bottleneck Analysis",
     .flags = ALL_ONLY, .available = xpv_tf_data_bottleneck_analysis_available,
     .derived = &xpv_derived_tf_data, .tables = xpv_tf_data_bottleneck_analysis_tables},
    {.name = "op_profile", .title = "HLO Op Profile", .flags = ALL_OK,
     .available = xpv_tool_has_accelerator, .derived = &xpv_derived_op_stats,
     .render = xpv_op_profile_render},
    {.name = "hlo_stats", .title = "HLO Op Stats", .flags = ALL_OK,
     .available = xpv_tool_has_accelerator, .derived = &xpv_derived_op_stats,
     .tables = xpv_hlo_stats_tables},
};

#define NTOOLS (sizeof table / sizeof table[0])

const xpv_tool *const *xpv_tools(void) {
    static const xpv_tool *list[NTOOLS + 1];
    static int done;
    if (!done) {
        for (size_t i = 0; i < NTOOLS; i++) list[i] = &table[i];
        list[NTOOLS] = NULL;
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

/* Every parameter a tool reads: the server keys rendered answers by these
 * alone, so a request with made-up parameters (&junk=N) shares the answer
 * instead of building and caching a new one (issue 26, item 13).  A tool
 * that reads a new parameter adds it here (test_tool_params checks every
 * parameter literal read in tools/ and analysis/ is listed). */
static const char *const known_params[] = {
    "end_time_ms", "expand", "format", "graph_width", "group_by", "max_events",
    "max_nodes", "memory_space", "merge_fusion", "module_name", "node_name", "program_id",
    "resolution", "search", "search_limit", "search_prefix", "search_start_ms",
    "start_time_ms", "type", "uid", "unique_id", NULL};

/* Of those, the ones read as plain numbers: "00" and "0" are one value. */
static const char *const numeric_params[] = {"graph_width", "max_events", "max_nodes",
                                             "memory_space", "program_id", "resolution",
                                             NULL};

static int in_list(const char *const *l, const char *key) {
    for (; *l; l++)
        if (!strcmp(*l, key)) return 1;
    return 0;
}

/* Parameters of tools registered at run time (the tests' own tools). */
static const char *extra_params[16];

void xpv_param_register(const char *key) {
    for (size_t i = 0; i < 15; i++)
        if (!extra_params[i]) {
            extra_params[i] = key;
            return;
        }
}

int xpv_param_known(const char *key) {
    return in_list(known_params, key) || in_list(extra_params, key);
}
int xpv_param_numeric(const char *key) { return in_list(numeric_params, key); }

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
