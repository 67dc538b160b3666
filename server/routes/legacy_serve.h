/*
 * legacy_serve.h - serving TF 2.2-era per-tool files (run->legacy, found
 * by discovery) on the normal routes.  Chrome traces are hosts and go
 * through the loader instead (ingest/chrome_trace.h).
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
 * host only these are taken from `xplane_list`: trace_viewer; kernel_stats
 * when the trace has kernel events; framework_op_stats when it has host
 * ops (cpu_op / Operator) or kernels, and for every TF trace.  Without a
 * note of the trace's contents (xpv_legacy_note_trace): kernel_stats when
 * `xplane_list` has it, framework_op_stats for TF traces or with it. */
void xpv_legacy_tool_list(const xpv_run *run, const xpv_tool *const *tools,
                          const char *xplane_list, xpv_buf *out);

/* What a Chrome-trace host holds (its profile's trace_facts), noted by the
 * routes when the loader has converted it and read back by
 * xpv_legacy_tool_list, which
 * sees tool names only, not the profile.  Keyed by the file's identity
 * (inode, size, mtime in ns, as discovery records them); a small fixed
 * table, so an entry can be overwritten, and then the list falls back to
 * guessing from the tool names.  Thread-safe. */
void xpv_legacy_note_trace(uint64_t ino, uint64_t size, int64_t mtime_ns, unsigned facts);

/* The JSON host list for `tool` (hosts having its file), `[{"hostname":..}]`. */
void xpv_legacy_host_list(const xpv_run *run, const char *tool, xpv_buf *out);

/* Read `f` (size-capped by lim->max_file) and render its tool JSON into
 * `out`, or with csv_table >= 0 that DataTable of it as CSV.  Returns 0,
 * or -1 with `err` filled (file named). */
int xpv_legacy_serve(const xpv_host *f, const xpv_load_limits *lim, long csv_table,
                     xpv_buf *out, xpv_err *err);

#endif
