/*
 * tool.h - the contract between the server and the per-tool converters.
 *
 * A tool (one XProf analysis view) is a pure function of one or more
 * decoded, const profiles (one per host) plus the request's query
 * parameters, writing its JSON into an xpv_buf.  Tools never touch files or
 * sockets.  Work shared by several tools (XProf's OpStats, the trace index)
 * is a "derived kind": built once per (run, host set) by the server's cache
 * and handed to render() as `derived`.
 */
#ifndef XPV_TOOL_H
#define XPV_TOOL_H

#include <stddef.h>

#include "analysis.h"
#include "buf.h"
#include "datatable.h"
#include "err.h"
#include "model.h"

/* Query parameters of the request (already URL-decoded).  The tool's own
 * options (a viewport, a node name) are read by key with xpv_param; what
 * the server has already parsed comes typed. */
typedef struct xpv_params {
    size_t n;
    const char *const *keys;
    const char *const *vals;
    /* The tool as the request named it (XProf's `tag`: "trace_viewer@"
     * asks for the streaming trace viewer), or NULL when absent or empty.
     * Borrowed. */
    const char *tag;
} xpv_params;

/* Value of `key`, or NULL when absent.  A tool's keys must be in the
 * known list (registry.c): rendered answers are cached by those alone. */
const char *xpv_param(const xpv_params *q, const char *key);
/* Whether tools read parameter `key`; whether they read it as a number. */
int xpv_param_known(const char *key);
int xpv_param_numeric(const char *key);
/* Add a known parameter (for tools registered at run time: tests). */
void xpv_param_register(const char *key);

/* A resumable writer for outputs too big to hold in memory at once (the
 * full trace: gigabytes of JSON).  The bytes it writes, chunk after chunk,
 * are exactly what render() writes for the same query. */
typedef struct xpv_tool_stream {
    /* Whether this query is answered by the stream (else by render()). */
    int (*wants)(const xpv_params *q);
    /* A writer positioned at the start of the output.  It borrows `hs`'s
     * arrays, `derived` and the profiles: the caller keeps them alive until
     * free().  `hs` itself is copied.  Returns NULL with `err` filled. */
    void *(*open)(const xpv_hostset *hs, const void *derived, const xpv_params *q,
                  xpv_err *err);
    /* Append the next bytes to `out`: about `max` of them (it stops at the
     * first item boundary past `max`; 0 = everything left).  Returns 1 while
     * more remains, 0 once the output is complete (later calls add
     * nothing). */
    int (*next)(void *st, xpv_buf *out, size_t max);
    void (*free)(void *st);
} xpv_tool_stream;

enum {
    XPV_TOOL_ALL_HOSTS_ONLY = 1 << 0, /* multi-host runs: only ALL_HOSTS */
    XPV_TOOL_ALL_HOSTS_OK = 1 << 1,   /* ALL_HOSTS offered besides hosts */
};

/* A table tool's answer: its DataTables, built into `doc`, which the
 * caller initialised as an array (xpv_dt_doc_init(doc, 1)) and releases
 * whatever the result; a tool answering one bare table sets doc->array to
 * 0.  Returns 0, or fills err and returns -1. */
typedef int xpv_tool_tables_hook(const xpv_hostset *hs, const void *derived,
                                 const xpv_params *q, xpv_dt_doc *doc, xpv_err *err);
typedef xpv_tool_tables_hook *xpv_tool_tables_fn;
/* A tool's own JSON writer (see render below). */
typedef int xpv_tool_render_hook(const xpv_hostset *hs, const void *derived,
                                 const xpv_params *q, xpv_buf *out, xpv_err *err);
/* Whether a tool has something to show for a host (see available below). */
typedef int xpv_tool_available_hook(const xpv_profile *p);

typedef struct xpv_tool {
    const char *name;           /* XProf tool name, e.g. "overview_page" */
    const char *alias;          /* older name still accepted, or NULL */
    const char *title;          /* "Overview Page" */
    unsigned flags;
    /* Whether the tool has something to show for this (first) host; NULL
     * means always. */
    xpv_tool_available_hook *available;
    const xpv_derived_kind *derived;  /* NULL when render needs none */
    /* Write the JSON.  Returns 0, or fills err and returns -1.  NULL for
     * table tools: call xpv_tool_render, which writes their tables. */
    xpv_tool_render_hook *render;
    /* Table tools (data_csv works): their tables, written as JSON by
     * xpv_tool_render and as CSV by xpv_tool_csv; NULL for the others. */
    xpv_tool_tables_fn tables;
    const xpv_tool_stream *stream;  /* NULL: render() answers every query */
    /* Content type of render()'s answer to this query; NULL (function or
     * result) means application/json. */
    const char *(*content_type)(const xpv_params *q);
} xpv_tool;

/* The JSON answer of tool `t`: its render(), or a table tool's tables as
 * DataTable JSON.  Returns 0, or fills err and returns -1. */
int xpv_tool_render(const xpv_tool *t, const xpv_hostset *hs, const void *derived,
                    const xpv_params *q, xpv_buf *out, xpv_err *err);
/* Table `index` of table tool `t`'s answer as CSV.  Returns 0, or -1 with
 * `err` (the tool's error, or a 400 when it has no such table). */
int xpv_tool_csv(const xpv_tool *t, const xpv_hostset *hs, const void *derived,
                 const xpv_params *q, size_t index, xpv_buf *out, xpv_err *err);

/* available() of the tools XProf offers for profiles with a GPU or TPU
 * plane (hlo_stats, op_profile, roofline_model, pod_viewer). */
int xpv_tool_has_accelerator(const xpv_profile *p);

/* The converters' hooks, one group per tools/<tool>.c, which registry.c
 * gathers into its table of tools (name, title, flags and derived kind). */
xpv_tool_tables_hook xpv_overview_page_tables, xpv_input_pipeline_analyzer_tables,
    xpv_kernel_stats_tables, xpv_roofline_model_tables, xpv_framework_op_stats_tables,
    xpv_tf_data_bottleneck_analysis_tables, xpv_hlo_stats_tables;
xpv_tool_render_hook xpv_trace_viewer_render, xpv_graph_viewer_render, xpv_memory_profile_render,
    xpv_memory_viewer_render, xpv_pod_viewer_render, xpv_op_profile_render;
xpv_tool_available_hook xpv_graph_viewer_available, xpv_kernel_stats_available,
    xpv_memory_profile_available, xpv_memory_viewer_available,
    xpv_tf_data_bottleneck_analysis_available;
const char *xpv_graph_viewer_content_type(const xpv_params *q);
extern const xpv_tool_stream xpv_trace_viewer_stream;
/* tf_data_bottleneck_analysis's own derived kind: the per-host pipelines. */
extern const xpv_derived_kind xpv_derived_tf_data;

/* All tools in XProf's display order, NULL-terminated. */
extern const xpv_tool *const *xpv_tools(void);
/* Tool by name or alias (a trailing '^' is ignored, as XProf does), or NULL. */
const xpv_tool *xpv_tool_find(const char *name);

#endif
