/*
 * group_events.h - XLA's event grouping (xla/tsl/profiler/utils/
 * group_events.cc, spec modern-profiles.md §2) as a pure function of a
 * const profile.
 *
 * The result gives every event of the profile a group id (or -1) and every
 * group a name, without touching the profile:
 *
 *   roots        events with `_r` > 0 (the value is the root level), the
 *                legacy `TraceContext` (level 1); TF loops (every
 *                `ExecutorState::Process` with `id` and `iter_num`, in a
 *                loop that is not just iteration 0) replace them when
 *                present: the first event of each iteration is the root,
 *                the other events of the iteration its children.  Roots
 *                go highest level first, then by start time; a root is
 *                skipped when grouped already or when an ancestor has its
 *                level; roots tied to tf.data step ids are skipped.
 *   edges        nesting on a line (`_a` events neither nest nor hold),
 *                `_pt/_p` -> `_ct/_c` on equal (type, id, process_id)
 *                (skipped when both sides have 64 or more events),
 *                `ExecutorState::Process` -> `IteratorGetNext*::DoCompute`
 *                on (id, iter_num), and a `/host:CPU` event with a
 *                `correlation_id` -> the events of other planes with that
 *                id (the last such host event wins).
 *   propagation  breadth first from each root to every ungrouped event.
 *   names        "<graph_type (self or ancestor) | root name> <iter_num |
 *                step_num (self or ancestor) | group id>"; implicit roots
 *                (`FunctionRun`, `SessionRun`, `RunGraph`,
 *                `ExecutorState::Process`, TPU grouping-line events) leave
 *                out the event name and get no `step_name`.
 *   TPU          on `/device:TPU:N` planes only the events of the grouping
 *                line (`Steps` when not empty, else `XLA Modules`) are
 *                graph nodes, holding the context stats of the events they
 *                cover; when no such event is grouped from the host, each
 *                core's grouping events become groups in order (ids from
 *                the next free id, the same on every core).  Events of the
 *                plane's other lines take the group of the overlapping
 *                grouping event.
 *
 * Files that already hold `group_id` stat metadata in some plane are
 * grouped (XProf's IsXSpaceGrouped): nothing is computed, the stats are the
 * group ids (source XPV_GROUPS_FILE).  Files with TF loop ops (`WhileOp-*`,
 * `ForOp`, ...) are not grouped (XPV_GROUPS_LOOP_OPS), as XProf.
 *
 * Storage: one int32 per event (flat over planes and lines), the groups,
 * and an arena for the names.  Temporary memory while building: about 13
 * bytes per event.  The per-event scan runs on two threads over halves of
 * the lines (outputs joined in line order); producer/consumer keys are
 * matched by hash and only the linkable ones sorted.  Neither changes the
 * result.  Run once per profile by the enrichment pass (enrich.h).
 */
#ifndef XPV_GROUP_EVENTS_H
#define XPV_GROUP_EVENTS_H

#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "model.h"

enum xpv_group_source {
    XPV_GROUPS_NONE = 0,       /* computed; no root found */
    XPV_GROUPS_FILE,           /* `group_id` stats in the file: used as is */
    XPV_GROUPS_COMPUTED,       /* computed here */
    XPV_GROUPS_LOOP_OPS,       /* TF loop ops present: not grouped */
};

typedef struct xpv_group_info {
    const char *name;          /* "train 12", "10" (implicit root) */
    uint32_t plane, line, event; /* root event (event index in its line) */
    uint8_t step_name;         /* 1: the root carries `step_name` = name
                                * (not an implicit root) */
} xpv_group_info;

typedef struct xpv_groups {
    int source;                /* enum xpv_group_source */
    uint32_t nplanes;
    uint32_t *plane_line0;     /* [nplanes + 1]: first line's index */
    uint64_t *line_off;        /* per line: its first event's index in gid;
                                * XPV_GROUPS_NO_IDS: every event -1, no
                                * ids stored (xpv_groups_line: NULL) */
    int32_t *gid;              /* per event: group id or -1; NULL unless
                                * computed */
    uint64_t nevents;
    xpv_group_info *groups;    /* by group id */
    uint32_t ngroups;
    xpv_arena arena;           /* names */
} xpv_groups;

/* Group the profile's events.  Never fails (out of memory aborts). */
xpv_groups *xpv_group_events(const xpv_profile *p);
void xpv_groups_free(xpv_groups *g);
/* XProf's ProcessUngroupedEvents (derived_timeline.cc), run before the
 * derived lines: on each GPU plane holding computed group ids, an event
 * without one takes the group of the last grouped event before it in the
 * plane's time order (start, longer first).  No-op unless computed. */
void xpv_groups_fill_gpu(xpv_groups *g, const xpv_profile *p);
/* Bytes held, for cache budgets. */
size_t xpv_groups_size(const xpv_groups *g);

#define XPV_GROUPS_NO_IDS UINT64_MAX

/* The line's group ids (index = event index), or NULL when nothing was
 * computed (file grouping, no grouping) or every event of the line is
 * ungrouped with no ids stored. */
static inline const int32_t *xpv_groups_line(const xpv_groups *g, uint32_t plane,
                                             uint32_t line) {
    if (!g || !g->gid || plane >= g->nplanes) return NULL;
    /* Lines past the plane's own (the trace index's derived rows) have
     * no computed groups. */
    if (line >= g->plane_line0[plane + 1] - g->plane_line0[plane]) return NULL;
    uint64_t off = g->line_off[g->plane_line0[plane] + line];
    return off == XPV_GROUPS_NO_IDS ? NULL : g->gid + off;
}

/* Group id of one event, or -1. */
static inline int32_t xpv_group_of(const xpv_groups *g, uint32_t plane, uint32_t line,
                                   uint32_t ev) {
    const int32_t *l = xpv_groups_line(g, plane, line);
    return l ? l[ev] : -1;
}

/* The root event of group `gid` when it carries a step name (else NULL). */
const char *xpv_groups_step_name(const xpv_groups *g, uint32_t plane, uint32_t line,
                                 uint32_t ev);

#endif /* XPV_GROUP_EVENTS_H */
