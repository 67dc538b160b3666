/*
 * steps.h - step grouping, step events and the step-time breakdown.
 *
 * XProf's step analysis (xprof-reference.md §2.2-2.3) for one host profile,
 * plus the multi-host step intersection:
 *
 *   grouping   Files that already carry `group_id` stats are used as they
 *              are.  Otherwise every `/host:*` event becomes a node:
 *              same-line nesting (`_a` events do not nest), producer ->
 *              consumer (`_pt/_p` -> `_ct/_c`), ExecutorState::Process ->
 *              IteratorGetNext*::DoCompute on (id, iter_num).  Roots are
 *              events with `_r` > 0 (or `TraceContext`); each root that has
 *              no ancestor of the same level starts a group that spreads
 *              breadth-first to the ungrouped descendants.  Device events
 *              take the group of the host event with the same
 *              `correlation_id`.  TF loop ops disable grouping.
 *   events     Device (GPU) events with a correlation id and a group are
 *              classified (memcpy spellings `MemcpyH2D` and `MEMCPYHToD`;
 *              a copy whose name does not say its direction by its
 *              `memcpy_details` kinds; `nccl*` collectives, 16/32-bit
 *              compute by `shape` or name);
 *              per plane a step marker spans the group's device events (or
 *              the file's derived "Steps" line).  Host `/host:CPU` events
 *              of a group are step markers (`train*`, `test*`,
 *              `TraceContext`, or a `step_name` stat) or classified CPU
 *              work (input-pipeline stages, `_ipl_stage_name`, are input); with a GPU they are kept only for steps seen on the
 *              device (the classic TF behaviour, so Input / Kernel launch
 *              / Host compute are measured on GPU profiles too).
 *   breakdown  Per step: step time from the markers, a non-overlapping
 *              sweep (higher event type wins), time per type clipped to
 *              the step, the rest "unknown"; steps without compute are
 *              not well formed and dropped.
 *
 * Everything is built from const profiles; the result owns its memory.
 * Times are picoseconds.
 */
#ifndef XPV_STEPS_H
#define XPV_STEPS_H

#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "model.h"

/* XProf EventType, in priority order (XProf value = 10 * ours). */
enum xpv_event_type {
    XPV_EV_UNKNOWN = 0,
    XPV_EV_HOST_COMPUTE,
    XPV_EV_HOST_PREPROCESS,
    XPV_EV_HOST_POSTPROCESS,
    XPV_EV_HOST_BATCH_FORMATION,
    XPV_EV_HOST_RUNTIME,
    XPV_EV_HOST_COMPILE,
    XPV_EV_HOST_TO_HOST,
    XPV_EV_HOST_TO_DEVICE,
    XPV_EV_HOST_PREPARE,
    XPV_EV_DEVICE_COLLECTIVES,
    XPV_EV_HOST_WAIT_INPUT,
    XPV_EV_DEVICE_TO_DEVICE,
    XPV_EV_DEVICE_TO_HOST,
    XPV_EV_DEVICE_COMPUTE_32,
    XPV_EV_DEVICE_COMPUTE_16,
    XPV_EV_DEVICE_WAIT_DEVICE,
    XPV_EV_DEVICE_WAIT_HOST,
    XPV_EV_NTYPES
};

/* One well-formed step (XProf StepInfoResult with its generic breakdown). */
typedef struct xpv_step {
    int64_t step_num;          /* group id */
    const char *name;          /* step name ("train 12"), or "" */
    int64_t begin_ps;
    int64_t dur_ps;
    int64_t type_ps[XPV_EV_NTYPES];
} xpv_step;

/* Where the steps came from, for diagnostics. */
enum xpv_grouping {
    XPV_GROUPING_NONE = 0,     /* no root events: nothing grouped */
    XPV_GROUPING_FILE,         /* `group_id` stats already in the file */
    XPV_GROUPING_COMPUTED,     /* grouped here from `_r` roots */
    XPV_GROUPING_LOOPS,        /* TF loop ops present: grouping skipped */
};

typedef struct xpv_step_db {
    xpv_step *steps;           /* ordered by step number (one host) or by
                                * the chief host's order (intersection) */
    size_t n;
    /* Multi-host: per step the longest duration over the hosts (the step
     * time XProf's summary uses); equals steps[i].dur_ps for one host. */
    int64_t *max_dur_ps;
    uint32_t num_steps_dropped; /* multi-host: steps seen on some host but
                                 * outside the intersection */
    int empty_intersect;       /* steps on some host, none in common */
    /* XProf's StepDatabaseResult.use_incomplete_step: the step time is the
     * trace duration because no step completed.  No XPlane conversion of
     * XProf sets it (ConvertStepEventsToStepDb never does; only step dbs
     * made elsewhere carry it), so xpv_steps_build leaves it 0; the
     * multi-host combine ORs it over every host (CombineStepDatabase) and
     * the diagnostics then warn of an incomplete step instead of a missing
     * step marker (PopulateStepDiagnostics, xprof/utils/diagnostics.cc). */
    int use_incomplete_step;
    int has_device;            /* a GPU plane exists */
    int grouping;              /* enum xpv_grouping (first host) */
    uint64_t groups;           /* groups formed (first host) */
    int64_t compute_16bit_ps;  /* precision stats over all step events */
    int64_t compute_32bit_ps;
} xpv_step_db;

/* Analyse one host profile.  All memory comes from `a`.  Groups the
 * events first (group_events.h). */
void xpv_steps_build(const xpv_profile *p, xpv_arena *a, xpv_step_db *out);
/* The same with the profile's grouping already made (xpv_group_events). */
struct xpv_groups;
void xpv_steps_build_grouped(const xpv_profile *p, const struct xpv_groups *gr, xpv_arena *a,
                             xpv_step_db *out);

/* Multi-host intersection (XProf StepIntersection): aligns every host's
 * steps with the host of the shortest step span, keeps the common index
 * range; step i of the result is the first listed host's step (the one XProf
 * reports for generic hardware) with max_dur_ps over all hosts.  Hosts with
 * has_device == 0 are coordinators and skipped unless no host has a
 * device.  A host whose steps meet none of the chief's in time makes the
 * intersection empty (empty_intersect = 1).  num_steps_dropped counts the
 * aligned steps present on some host but not on all.  `n` >= 1. */
void xpv_steps_intersect(const xpv_step_db *const *dbs, size_t n, xpv_arena *a,
                         xpv_step_db *out);

/* Breakdown helpers (ps), XProf's generic per-step details. */
static inline int64_t xpv_step_input_ps(const xpv_step *s) {
    return s->type_ps[XPV_EV_HOST_WAIT_INPUT] + s->type_ps[XPV_EV_HOST_TO_DEVICE] +
           s->type_ps[XPV_EV_DEVICE_WAIT_HOST];
}
static inline int64_t xpv_step_host_to_device_ps(const xpv_step *s) {
    return s->type_ps[XPV_EV_HOST_TO_DEVICE] + s->type_ps[XPV_EV_DEVICE_WAIT_HOST];
}
static inline int64_t xpv_step_device_compute_ps(const xpv_step *s) {
    return s->type_ps[XPV_EV_DEVICE_COMPUTE_16] + s->type_ps[XPV_EV_DEVICE_COMPUTE_32];
}
static inline int64_t xpv_step_device_to_device_ps(const xpv_step *s) {
    return s->type_ps[XPV_EV_DEVICE_TO_DEVICE] + s->type_ps[XPV_EV_DEVICE_WAIT_DEVICE];
}

/* Classification of one GPU event by name and `shape` stat (may be empty). */
int xpv_steps_classify_gpu(xpv_str name, xpv_str shapes);
/* Event type of a GPU copy by its `memcpy_details` stat (either format,
 * see xpv_parse_memcpy_details); XPV_EV_UNKNOWN when the details do not
 * say the direction.  Used when the event name does not say it. */
int xpv_steps_classify_memcpy(xpv_str details);
/* Classification of one host event of a step (§2.3); `has_device` and
 * `has_correlation` as XProf's ClassifyCpuEvent. */
int xpv_steps_classify_cpu(xpv_str name, int has_device, int has_correlation);

#endif /* XPV_STEPS_H */
