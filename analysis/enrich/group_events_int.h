/*
 * group_events_int.h - what group_events.c shares with group_ctx.c (the
 * producer / consumer context keys of XLA's grouping) and group_lines.c
 * (the per-line ids made after the groups).  Private to the grouping
 * pass; not part of the analysis API.
 */
#ifndef XPV_GROUP_EVENTS_INT_H
#define XPV_GROUP_EVENTS_INT_H

#include <stdint.h>

#include "collections.h"
#include "group_events.h"
#include "model.h"

/* A context key shared by more than this many producers and as many
 * consumers links nothing (XProf's limit on context fan-out). */
#define CONTEXT_EDGE_LIMIT 64
#define TYPE_EXECUTOR (-1000)  /* executor -> iterator: (id, iter_num) */

/* One producer or consumer: (type, id, process id) and its node. */
typedef struct ctx_key {
    int64_t type, id, id2;
    uint32_t node;
} ctx_key;

/* qsort order of ctx_key: type, id, id2, node. */
int xpv_ge_cmp_ctx_key(const void *a, const void *b);

/* Sort producers and consumers (vectors of ctx_key) by key and node,
 * keeping only the records that can make an edge (see group_ctx.c).
 * Both vectors are replaced (their arrays reallocated). */
void xpv_ge_ctx_sort(vec *prod, vec *cons);

/* The TensorCore plane's grouping line: `Steps` when it has events, else
 * `XLA Modules`; -1 when neither (group_events.c). */
int xpv_ge_tpu_grouping_line(const xpv_plane *pl);

/* The ids of the events of TPU plane `pl` (index k) on its lines but the
 * grouping one, from the grouping line's ids (group_lines.c). */
void xpv_ge_tpu_line_ids(xpv_groups *g, const xpv_plane *pl, uint32_t k);

#endif /* XPV_GROUP_EVENTS_INT_H */
