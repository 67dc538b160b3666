/*
 * derived_lines.h - XProf's derived timeline lines (xprof/utils/
 * derived_timeline.cc, GenerateDerivedTimeLines) for GPU and TPU planes,
 * built from a const profile and its grouping into a separate structure
 * (the profile is never modified).  Run once per profile by the
 * enrichment pass (enrich.h), after the grouping.
 *
 * GPU (DeriveStepEventsFromGroups, DeriveEventsFromAnnotations):
 *   - `Steps` (id kThreadIdStepInfo = 0xdeadbeef as int32): every event of
 *     the plane with a group id, in time order (start, longer first), one
 *     event per run of a group, named by the group id and shown as the
 *     group's name (XProf's step_name).  Group ids: the computed grouping
 *     (after xpv_groups_fill_gpu, XProf's ProcessUngroupedEvents), else the
 *     file's `group_id` stat.
 *   - per stream line (every non-derived line), from its kernel events
 *     (events with a `kernel_details` stat) and CUDA graph executions
 *     (a `cuda_graph_exec_id` stat), in (start asc, duration desc) order:
 *     `XLA Modules - from #<line id>`: one event per `hlo_module`, named
 *     `module(program_id)` (just `module` without program_id);
 *     `XLA Ops - from #<line id>`: one level per `::` part of `hlo_op`,
 *     metadata name `<program_id>/<part>` (or `<module>/<part>`), shown as
 *     `<part>`; a kernel that is an inner node of a CUDA graph (non-zero
 *     `cuda_graph_id`) gives the innermost level's open event the stats
 *     `cuda_graph_id` (uint64) and its `correlation_id` (int64), the
 *     latest kernel's values winning (AddStatToLevelEvent);
 *     `Framework Name Scope` / `Framework Ops - from #<line id>`: for XLA
 *     kernels (with `hlo_op` and `program_id`) the `op_name` of their HLO
 *     instruction's metadata in the profile's HLO protos (hlo.h), else the
 *     kernel's `tf_op` stat; name scopes only for TF and JAX ops, the op
 *     event shown as the op type (TfOpEventName);
 *     `Source code - from #<line id>`: `file:line` of that instruction's
 *     metadata (a new XLA Modules event ends the current one, as it ends
 *     the name scopes).
 * TPU TensorCore planes (`/device:TPU:<n>`, DeriveLinesFromStats): every
 * event of the plane in time order with a `tf_op` or `source` stat (its
 * own over its metadata's; `_a` events left out) gives `Framework Name
 * Scope` (kThreadIdTfNameScope), `Framework Ops` (kThreadIdTfOp) and
 * `Source code` (kThreadIdSource) events; no display ids (the trace shows
 * them by id, above the file's lines), the host offload rows after them.
 * Merge (ExpandOrAddLevelEvent): the previous event of the same level is
 * extended when it has the same metadata, the same group_id (both absent
 * or equal), a compatible scope_range_id (either absent or equal) and, on
 * a TPU plane without a group id, starts within twice the
 * previous event's duration of its end; otherwise it and the deeper levels
 * are closed (stacked events with equal spans are shrunk by 1 ns per
 * level, AdjustDurationForTraceViewer) and a new event starts.  Closing
 * level 0 of XLA Modules also closes XLA Ops and the name scopes; closing
 * the name scopes closes Framework Ops.
 *
 * GPU line ids: kThreadIdDeviceDerivedMin (0xdeadbeef + 290, as int32) + 6
 * per stream, in XProf's stream order (names containing "Compute" first,
 * then by event count descending; ties keep file order), + 0 name scope, 1
 * framework ops, 2 modules, 3 ops, 4 source.  Display ids (the trace viewer's tid)
 * are re-numbered as XProf does: 1.. over [stream, name scope, framework
 * ops, modules, ops, source] per stream in that order; empty derived lines
 * are dropped after numbering.
 *
 * Launch Stats (DeriveEventsFromHostTrace), after the planes: on
 * `/host:CPU`, every event of a non-derived line whose name does not start
 * with "cu", with `device_id` and `correlation_id` stats and a group, is a
 * launch on the device_id-th GPU plane (profile order; ids past the last
 * plane are dropped).  Per device, a line `Launch Stats` (id
 * kThreadIdKernelLaunch = 0xdeadbeef + 1, shown by its id as Steps) with
 * one event per group, "Launch Stats for <group name>", spanning its
 * launches, with stats group_id, num_launches, max_launch_time_us and
 * avg_launch_time_us (ps / 1e6).  Events are in start order (XProf: hash
 * order).  Without a grouping there are no groups, hence no rows (XProf
 * needs the group in its group map too).
 *
 * scope_range_id: a kernel's chain is its own id, then its parents in the
 * `/host:__ScopeRangeCallStack__` tree (plane stats: the stat's metadata
 * id as written, which names no metadata, -> its parent; a repeated id
 * keeps its first parent), stopping at the first parent seen before (a
 * cycle; also after 4096 ids).  XLA Modules events key on the chain's root
 * (one per module execution); XLA Ops levels take the chain root first
 * when it has exactly one id per level, else none.
 *
 * Planes that already hold derived lines (ids 0xdeadbeef ..
 * 0xdeadbeef + 389 as int32: TF 2.4 GPU profiles) get no annotation or
 * Steps lines (XProf would derive them again beside the file's), but get
 * Launch Stats.  Planes are derived on two threads (halves by event count,
 * joined in plane order: the result does not depend on it).
 * Host offload rows (XProf's HostOffloadEventProcessor, in
 * DeriveLinesFromStats): on TensorCore planes, host-memory (`S(5)`)
 * copy / dynamic-slice / dynamic-update-slice -start and -done pairs as
 * events "offload-<op>.<id>" on rows "Host Offload Ops row <k>" (ids
 * 0xdeadbeef + 8 + k); the rules are in derived_offload.c.
 *
 * Stats (XProf's DerivedXLineBuilder::ExpandOrAddLevelEvent): every
 * derived event created for a kernel or op with a group id carries a
 * `group_id` stat (XLA Ops of CUDA graph nodes also the two above) (a merge needs equal groups, so it holds for the whole
 * event); Steps events also carry `step_name`, the group's name, when the
 * grouping named it (AddGroupMetadataToStepEvents; their metadata is named
 * by the group id, without a display name: the trace shows the step_name).
 * They are stored as XEvent wire bytes of the synthesized lines, so the
 * model's stat functions and the trace viewer's args read them as they
 * read a file's.  XProf adds nothing else (no `level`, no hlo_text: its
 * symbol resolver leaves that empty).
 */
#ifndef XPV_DERIVED_LINES_H
#define XPV_DERIVED_LINES_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"

#define XPV_DL_BASE ((int64_t)(int32_t)0xdeadbeefu)
#define XPV_DL_DEVICE_MIN (XPV_DL_BASE + 290)
#define XPV_DL_PER_STREAM 6
enum { XPV_DL_NAME_SCOPE = 0, XPV_DL_TF_OP = 1, XPV_DL_MODULE = 2, XPV_DL_HLO_OP = 3,
       XPV_DL_SOURCE = 4 };

typedef struct xpv_dl_plane {
    uint32_t plane;            /* index of the GPU plane in the profile */
    /* The derived lines (non-empty ones, in display order), the event
     * metadata their events refer to and the stat metadata of their stats
     * (group_id, step_name; see above).  Events without stats have
     * wire == XPV_NO_STATS. */
    xpv_plane synth;
    int64_t *line_display_id;  /* per line of the source plane: XProf's display id */
} xpv_dl_plane;

typedef struct xpv_derived_lines {
    xpv_dl_plane *planes;      /* only planes that got derived lines */
    uint32_t nplanes;
    size_t bytes;
    xpv_arena arena, arena2;   /* names and events (two builder threads) */
} xpv_derived_lines;

/* 1 when the line id is in XProf's derived range (host or device). */
static inline int xpv_dl_is_derived_id(int64_t id) {
    int64_t v = (int64_t)(int32_t)(uint32_t)id;
    if (v != id && id != (int64_t)(uint32_t)v) return 0;  /* not a 32-bit value */
    return v >= XPV_DL_BASE && v < XPV_DL_DEVICE_MIN + 100;
}

/* Derive the lines of every GPU plane of `p` that lacks derived lines.
 * Never fails; returns an empty structure when nothing is derived. */
struct xpv_groups;
/* `groups`: the profile's event grouping (group_events.h; may be NULL). */
xpv_derived_lines *xpv_derived_lines_build(const xpv_profile *p, const struct xpv_groups *groups);
void xpv_derived_lines_free(xpv_derived_lines *d);
/* The derived lines of plane `plane`, or NULL. */
const xpv_dl_plane *xpv_derived_lines_plane(const xpv_derived_lines *d, uint32_t plane);

#endif
