/*
 * derived_stats.c - the stats of derived events (derived_lines_int.h),
 * written as XEvent wire bytes so the model's stat functions and the trace
 * viewer read them as they read a file's.
 */
#include "derived_lines_int.h"
#include "idmap.h"

#include <string.h>

static const char *const ds_names[DS_N] = {"", "group_id", "step_name", "num_launches",
                                           "max_launch_time_us", "avg_launch_time_us",
                                           "cuda_graph_id", "correlation_id"};

/* The stat metadata of every synthesized plane: XProf's DerivedXLineBuilder
 * gives each new derived event a `group_id` stat when it has a group,
 * AddGroupMetadataToStepEvents adds `step_name` to Steps events of a named
 * group, and DeriveEventsFromHostTrace gives Launch Stats events their
 * counts.  Ids are the dense indices (index 0: the empty entry). */
void xpv_dl_synth_stat_meta(xpv_arena *arena, xpv_plane *sp) {
    sp->stat_meta = xpv_arena_calloc(arena, DS_N, sizeof *sp->stat_meta);
    sp->nstat_meta = DS_N;
    int64_t ids[DS_N - 1];
    for (int k = 1; k < DS_N; k++) {
        sp->stat_meta[k].key = sp->stat_meta[k].id = k;
        sp->stat_meta[k].name = (xpv_str){ds_names[k], (uint32_t)strlen(ds_names[k])};
        ids[k - 1] = k;
    }
    sp->stat_meta_ids = xpv_idmap_build(arena, ids, DS_N - 1);
}

/* Wire bytes of derived events' stats, in the XEvent shape the model's
 * stat iterator reads (a length, then `stats` fields 4 holding XStats),
 * written straight into the arena after an exact size pass. */
static uint8_t *put_varint(uint8_t *w, uint64_t v) {
    do {
        uint8_t c = (uint8_t)(v & 0x7f);
        v >>= 7;
        *w++ = (uint8_t)(c | (v ? 0x80 : 0));
    } while (v);
    return w;
}
static size_t varint_len(uint64_t v) {
    size_t n = 1;
    while (v >>= 7) n++;
    return n;
}


/* Sizes: an XStat of a metadata id below 128 and one varint value; the
 * step_name XStat; an XStat holding a double. */
static size_t stat_int_len(uint64_t v) { return 3 + varint_len(v); }
static size_t stat_str_len(uint32_t n) { return 3 + varint_len(n) + n; }
#define STAT_DOUBLE_LEN 11

static size_t body_len(const dstats *s) {
    size_t body = 0;
    if (s->g.has) body += 2 + stat_int_len((uint64_t)s->g.v);
    if (s->step_name.len) {
        size_t sn = stat_str_len(s->step_name.len);
        body += 1 + varint_len(sn) + sn;
    }
    if (s->launch) body += 2 + stat_int_len(s->num_launches) + 2 * (2 + STAT_DOUBLE_LEN);
    if (s->gx.graph) body += 2 + stat_int_len(s->gx.graph);
    if (s->gx.graph && s->gx.has_corr) body += 2 + stat_int_len((uint64_t)s->gx.corr);
    return body;
}

/* One event's length and body at `w`; returns the end. */
static uint8_t *put_event(uint8_t *w, const dstats *s) {
    w = put_varint(w, body_len(s));
    if (s->g.has) {            /* int64_value (field 4) */
        *w++ = (4 << 3) | 2;
        w = put_varint(w, stat_int_len((uint64_t)s->g.v));
        *w++ = (1 << 3) | 0;
        *w++ = DS_GROUP_ID;
        *w++ = (4 << 3) | 0;
        w = put_varint(w, (uint64_t)s->g.v);
    }
    if (s->step_name.len) {    /* str_value (field 5) */
        *w++ = (4 << 3) | 2;
        w = put_varint(w, stat_str_len(s->step_name.len));
        *w++ = (1 << 3) | 0;
        *w++ = DS_STEP_NAME;
        *w++ = (5 << 3) | 2;
        w = put_varint(w, s->step_name.len);
        memcpy(w, s->step_name.ptr, s->step_name.len);
        w += s->step_name.len;
    }
    if (s->launch) {           /* uint64_value (field 3), then double_value (field 2) */
        *w++ = (4 << 3) | 2;
        w = put_varint(w, stat_int_len(s->num_launches));
        *w++ = (1 << 3) | 0;
        *w++ = DS_NUM_LAUNCHES;
        *w++ = (3 << 3) | 0;
        w = put_varint(w, s->num_launches);
        double d[2] = {s->max_us, s->avg_us};
        for (int k = 0; k < 2; k++) {
            *w++ = (4 << 3) | 2;
            *w++ = STAT_DOUBLE_LEN;
            *w++ = (1 << 3) | 0;
            *w++ = (uint8_t)(DS_MAX_LAUNCH_US + k);
            *w++ = (2 << 3) | 1;
            memcpy(w, &d[k], 8);   /* little-endian, as wire_double reads it */
            w += 8;
        }
    }
    if (s->gx.graph) {         /* cuda_graph_id: uint64_value (field 3) */
        *w++ = (4 << 3) | 2;
        w = put_varint(w, stat_int_len(s->gx.graph));
        *w++ = (1 << 3) | 0;
        *w++ = DS_CUDA_GRAPH_ID;
        *w++ = (3 << 3) | 0;
        w = put_varint(w, s->gx.graph);
    }
    if (s->gx.graph && s->gx.has_corr) {   /* correlation_id: int64_value */
        *w++ = (4 << 3) | 2;
        w = put_varint(w, stat_int_len((uint64_t)s->gx.corr));
        *w++ = (1 << 3) | 0;
        *w++ = DS_CORRELATION_ID;
        *w++ = (4 << 3) | 0;
        w = put_varint(w, (uint64_t)s->gx.corr);
    }
    return w;
}

static int has_stats(const dstats *s) {
    return s->g.has || s->step_name.len || s->launch || s->gx.graph;
}

/* Give the events of `ln` their stats (`stat(arg, i)` for event i) as
 * wire bytes in `arena`; events without any keep XPV_NO_STATS. */
void xpv_dl_attach_stats(xpv_arena *arena, xpv_line *ln, dstats (*stat)(const void *, uint32_t),
                         const void *arg) {
    size_t total = 0;
    for (uint32_t i = 0; i < ln->nevents; i++) {
        dstats s = stat(arg, i);
        if (has_stats(&s)) {
            size_t b = body_len(&s);
            total += varint_len(b) + b;
        }
    }
    if (!total || total >= XPV_NO_STATS) return;
    uint8_t *base = xpv_arena_alloc(arena, total), *w = base;
    for (uint32_t i = 0; i < ln->nevents; i++) {
        dstats s = stat(arg, i);
        if (!has_stats(&s)) continue;
        ln->events[i].wire = (uint32_t)(w - base);
        w = put_event(w, &s);
    }
    ln->wire = base;
}

