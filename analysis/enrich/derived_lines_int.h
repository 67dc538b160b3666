/*
 * derived_lines_int.h - internals shared by derived_lines.c and
 * derived_stats.c: the stats XProf puts on derived events.
 */
#ifndef XPV_DERIVED_LINES_INT_H
#define XPV_DERIVED_LINES_INT_H

#include <stdint.h>

#include "arena.h"
#include "buf.h"
#include "model.h"

typedef struct opt64 {
    int has;
    int64_t v;
} opt64;

/* The CUDA-graph stats of an XLA Ops event (XProf's AddStatToLevelEvent):
 * cuda_graph_id of its kernel, a CUDA graph's inner node, and that
 * kernel's correlation_id; the latest merged kernel's values win. */
typedef struct gstat {
    uint64_t graph;            /* 0: none */
    int has_corr;
    int64_t corr;
} gstat;

/* The stat metadata of every synthesized plane: XProf's DerivedXLineBuilder
 * gives each new derived event a `group_id` stat when it has a group,
 * AddGroupMetadataToStepEvents adds `step_name` to Steps events of a named
 * group, DeriveEventsFromHostTrace gives Launch Stats events their counts,
 * and XLA Ops of CUDA graph nodes get cuda_graph_id and correlation_id.
 * Ids are the dense indices (index 0: the empty entry). */
enum { DS_GROUP_ID = 1, DS_STEP_NAME, DS_NUM_LAUNCHES, DS_MAX_LAUNCH_US, DS_AVG_LAUNCH_US,
       DS_CUDA_GRAPH_ID, DS_CORRELATION_ID, DS_IS_ASYNC, DS_RAW_BYTES, DS_SHAPE, DS_N };

/* One derived event's stats; absent ones are zero. */
typedef struct dstats {
    opt64 g;
    xpv_str step_name;
    int launch;
    uint64_t num_launches;
    double max_us, avg_us;
    gstat gx;                  /* XLA Ops of a CUDA graph node; graph 0: none */
    /* host offload events: `_a` = 1, raw_bytes_accessed, shape_with_layout */
    int offload;
    opt64 raw_bytes;
    xpv_str shape;
} dstats;

/* Give `sp` (a synthesized plane) the stat metadata above, in `arena`. */
void xpv_dl_synth_stat_meta(xpv_arena *arena, xpv_plane *sp);

/* Give the events of `ln` their stats (`stat(arg, i)` for event i) as
 * wire bytes in `arena`; events without any keep XPV_NO_STATS. */
void xpv_dl_attach_stats(xpv_arena *arena, xpv_line *ln, dstats (*stat)(const void *, uint32_t),
                         const void *arg);

/* For a line whose events carry only `group_id`, written as its events
 * are made: each event's stat (none without a group) shares the previous
 * event's encoding when the ids are equal (runs of equal ids share one).  `adopt` makes the bytes the line's wire (in the
 * arena) and frees the rest. */
typedef struct xpv_group_wire {
    xpv_buf b;
    opt64 last;                /* the previous event's group */
    uint32_t last_wire;
} xpv_group_wire;
void xpv_dl_group_wire_init(xpv_group_wire *w);
uint32_t xpv_dl_group_wire(xpv_group_wire *w, opt64 g);
void xpv_dl_group_wire_adopt(xpv_arena *arena, xpv_line *ln, xpv_group_wire *w);
void xpv_dl_group_wire_free(xpv_group_wire *w);

/* ==== Launch Stats (derived_launch.c) =================================== */

struct xpv_derived_lines;
struct xpv_groups;
/* XProf's DeriveEventsFromHostTrace: a Launch Stats line on each GPU plane
 * that a group launched on, added to `d` (planes without derived lines
 * get an entry). */
void xpv_dl_launch_stats(struct xpv_derived_lines *d, const xpv_profile *p,
                         const struct xpv_groups *gr);

/* ==== Host offload rows (derived_offload.c) ============================ */

/* What the rule reads of one event metadata of the plane. */
typedef struct xpv_dl_offload_meta {
    uint8_t kind;              /* 1: a -start, 2: a -done, 0: neither */
    uint8_t has_raw;
    uint32_t key;              /* index in keys */
    int64_t raw;               /* raw_bytes_accessed */
    xpv_str shape;             /* shape_with_layout */
} xpv_dl_offload_meta;

#define XPV_DL_OFFLOAD_ROWS 41 /* kThreadIdHostOffloadOpEnd - ...Start + 1 */

/* The host offload rows of one TensorCore plane. */
struct xpv_dl_pairing;
typedef struct xpv_dl_offload {
    xpv_dl_offload_meta *meta; /* per event metadata of the plane */
    uint8_t *kind;             /* per event metadata: meta[].kind (a compact copy) */
    struct xpv_dl_pairing *pairing; /* between begin and end */
    xpv_str *keys;             /* event names ("offload-copy.3"), in the arena */
    uint32_t nkeys, nrows;
    /* Per row: its ops in time order, each from its -start's begin to its
     * -done's end; until the row is emitted, `meta` holds the done's
     * event metadata and `wire` the start's (xpv_dl_attach_offload_stats
     * and the emitter then make them the row's). */
    xpv_event *row[XPV_DL_OFFLOAD_ROWS];
    size_t nrow[XPV_DL_OFFLOAD_ROWS], caprow[XPV_DL_OFFLOAD_ROWS];
} xpv_dl_offload;

/* XProf's host offload rows of TensorCore plane `pl` into `o` (names in
 * `arena`; release with xpv_dl_offload_free), in steps, for a caller that
 * walks the plane in time order itself (XProf runs the processor inside
 * DeriveLinesFromStats's walk): begin (0: no candidate metadata, nothing
 * else to call but end); then
 * either feed every candidate event (o->kind[meta] non-zero, no non-zero
 * `_a` event stat) in the plane's time order (start, longer first, line,
 * index), which is only right when no line left out of that walk holds
 * one (outside() == 0; `skip`: per line, 1 for a line not to check, as
 * one walked or none of whose events has a candidate metadata), or walk;
 * then end, which returns the number of rows. */
uint32_t xpv_dl_offload_begin(const xpv_plane *pl, xpv_arena *arena, xpv_dl_offload *o);
int xpv_dl_offload_outside(const xpv_dl_offload *o, const xpv_plane *pl, const uint8_t *skip);
void xpv_dl_offload_feed(xpv_dl_offload *o, const xpv_event *e);
void xpv_dl_offload_walk(xpv_dl_offload *o, const xpv_plane *pl);
uint32_t xpv_dl_offload_end(xpv_dl_offload *o);
void xpv_dl_offload_free(xpv_dl_offload *o);

/* Give the events of `ln` (a row of `o`, as built: done and start
 * metadata in meta and wire) their stats (`_a` = 1, raw_bytes_accessed,
 * shape_with_layout) in `arena`, their wire offsets replacing the start
 * metadata, and their metadata: key_meta(arg, key of the done's), asked
 * in the order of the events (at least once per key, at first use);
 * equal stats share one encoding (derived_stats.c). */
void xpv_dl_attach_offload_stats(xpv_arena *arena, xpv_line *ln, const xpv_dl_offload *o,
                                 uint32_t (*key_meta)(void *arg, uint32_t key), void *arg);

#endif
