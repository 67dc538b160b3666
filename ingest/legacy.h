/*
 * legacy.h - TensorFlow 2.2-2.x per-tool files -> the JSON our XPlane
 * converters emit for the same tool, so the same pages render them.
 *
 *   <host>.overview_page.pb        -> overview_page (7 DataTables)
 *   <host>.overview_page.json      -> overview_page (stored DataTables)
 *   <host>.input_pipeline.pb       -> input_pipeline_analyzer (5 tables)
 *   <host>.input_pipeline.json     -> input_pipeline_analyzer (stored)
 *   <host>.tensorflow_stats.pb     -> framework_op_stats [with, without idle]
 *   <host>.kernel_stats.pb         -> kernel_stats: ONE DataTable, as the
 *                                     XPlane converter (0 bytes = no rows)
 *   <host>.memory_profile.json.gz  -> memory_profile (timeline normalized)
 *   <host>.pod_viewer.json         -> pod_viewer (2020/2021 -> current names)
 *   <host>.trace.json.gz           -> trace_viewer etc. through
 *                                     chrome_trace.h (not handled here)
 *
 * Pure functions of the stored bytes (spec: legacy-and-pytorch.md §2-5).
 */
#ifndef XPV_LEGACY_H
#define XPV_LEGACY_H

#include <stddef.h>

#include "buf.h"
#include "datatable.h"
#include "err.h"

enum xpv_legacy_kind {
    XPV_LEGACY_NONE = 0,
    XPV_LEGACY_OVERVIEW_PB,
    XPV_LEGACY_OVERVIEW_JSON,
    XPV_LEGACY_INPUT_PIPELINE_PB,
    XPV_LEGACY_INPUT_PIPELINE_JSON,
    XPV_LEGACY_TF_STATS_PB,
    XPV_LEGACY_KERNEL_STATS_PB,
    XPV_LEGACY_MEMORY_PROFILE_JSON_GZ,
    XPV_LEGACY_POD_VIEWER_JSON,
    XPV_LEGACY_TRACE_JSON_GZ,     /* a Chrome trace: see chrome_trace.h */
    XPV_LEGACY_PYTORCH_TRACE,     /* *.pt.trace.json[.gz] and the like */
};

typedef struct xpv_legacy_suffix {
    const char *suffix;           /* ".overview_page.pb" */
    enum xpv_legacy_kind kind;
    const char *tool;             /* the tool it feeds, e.g. "overview_page" */
} xpv_legacy_suffix;

/* The per-tool file suffixes of a TF run directory (NULL-terminated by an
 * entry with suffix NULL), in XProf's tool display order. */
extern const xpv_legacy_suffix xpv_legacy_suffixes[];

/* The entry whose suffix ends `fname` (the host is the part before it,
 * *host_len bytes, at least 1), or NULL. */
const xpv_legacy_suffix *xpv_legacy_match(const char *fname, size_t *host_len);

/* Whether `fname` names a PyTorch / Chrome trace by torch-tb-profiler's
 * rule (<worker>[.<span>].pt.trace.json[.gz]); with `any_json` also any
 * *.json / *.json.gz (run folders known to hold traces).  Sets *host_len
 * to the length of the host name: the file name minus ".pt.trace.json"
 * (the span number stays, so each span is a host) or minus ".json". */
int xpv_legacy_is_trace_file(const char *fname, int any_json, size_t *host_len);

/* Render the tool JSON of one stored file.  `data` is the file as stored
 * (gzip is inflated here, capped at `max_inflated` bytes, 0 = 1 GiB).
 * Returns 0, or -1 with err (422 unreadable / not this format, 413 over
 * the cap, 400 wrong kind). */
int xpv_legacy_render(enum xpv_legacy_kind kind, const void *data, size_t len,
                      size_t max_inflated, xpv_buf *out, xpv_err *err);

/* The DataTables of one stored file (overview, input pipeline, TF stats,
 * kernel stats; protobuf or the old JSON), appended to `doc` (initialised
 * as an array by the caller; a bare-table answer sets doc->array = 0):
 * what data_csv exports.  Returns 0, or -1 with err as above (400 for a
 * kind without tables). */
int xpv_legacy_tables(enum xpv_legacy_kind kind, const void *data, size_t len,
                      size_t max_inflated, xpv_dt_doc *doc, xpv_err *err);

#endif
