/*
 * legacy_serve.h - serving TF 2.2-era per-tool files (run->legacy, found
 * by discovery) on the normal routes.  Chrome traces are hosts and go
 * through the loader instead (server/model/chrome_trace.h).
 *
 * XProf's old rule: when a run holds a per-tool file for a tool, that file
 * wins over anything computed from an xplane.
 */
#ifndef XPV_LEGACY_SERVE_H
#define XPV_LEGACY_SERVE_H

#include "buf.h"
#include "discovery.h"
#include "loader.h"
#include "tool.h"
#include "util.h"

/* Canonical tool name for `tag` ("tensorflow_stats" -> "framework_op_stats",
 * "input_pipeline" -> "input_pipeline_analyzer", trailing ^ @ # dropped)
 * into `out` (cap bytes). */
void xpv_legacy_tool_name(const char *tag, char *out, size_t cap);

/* Whether the run has per-tool files for canonical tool `tool`. */
int xpv_legacy_run_has_tool(const xpv_run *run, const char *tool);

/* The per-tool file of `tool` for `host` (NULL, "" or ALL_HOSTS: the
 * first host that has one), or NULL. */
const xpv_host *xpv_legacy_find(const xpv_run *run, const char *tool, const char *host);

/* The run's tool list as JSON: the tools in `tools` order that either
 * appear in `xplane_list` (the JSON list computed from the first host
 * profile; NULL when the run has no host) or have per-tool files, then
 * per-tool-file tools the server has no converter for.  For a Chrome-trace
 * host only trace_viewer, kernel_stats and framework_op_stats (TF traces,
 * or traces with kernels) are taken from `xplane_list`. */
void xpv_legacy_tool_list(const xpv_run *run, const xpv_tool *const *tools,
                          const char *xplane_list, xpv_buf *out);

/* The JSON host list for `tool` (hosts having its file), `[{"hostname":..}]`. */
void xpv_legacy_host_list(const xpv_run *run, const char *tool, xpv_buf *out);

/* Read `f` (size-capped by lim->max_file) and render its tool JSON into
 * `out`.  Returns 0, or -1 with `err` filled (file named). */
int xpv_legacy_serve(const xpv_host *f, const xpv_load_limits *lim, xpv_buf *out,
                     xpv_err *err);

#endif
