/*
 * derived_stats.c - the stats of derived events (derived_lines_int.h),
 * written as XEvent wire bytes so the model's stat functions and the trace
 * viewer read them as they read a file's.
 */
#include "collections.h"
#include "derived_lines_int.h"
#include "buf.h"
#include "idmap.h"

#include <string.h>

static const char *const ds_names[DS_N] = {"", "group_id", "step_name", "num_launches",
                                           "max_launch_time_us", "avg_launch_time_us",
                                           "cuda_graph_id", "correlation_id", "_a",
                                           "raw_bytes_accessed", "shape_with_layout"};

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

/* One XStat field (stats, field 4 of the XEvent) holding a varint value
 * in `field` (3 uint64_value, 4 int64_value), and its length. */
static size_t int_field_len(uint64_t v) { return 2 + stat_int_len(v); }
static uint8_t *put_int_stat(uint8_t *w, int id, int field, uint64_t v) {
    *w++ = (4 << 3) | 2;
    w = put_varint(w, stat_int_len(v));
    *w++ = (1 << 3) | 0;
    *w++ = (uint8_t)id;
    *w++ = (uint8_t)(field << 3);
    return put_varint(w, v);
}

/* One XStat field holding a str_value (field 5), and its length. */
static size_t str_field_len(uint32_t n) {
    size_t sn = stat_str_len(n);
    return 1 + varint_len(sn) + sn;
}
static uint8_t *put_str_stat(uint8_t *w, int id, xpv_str v) {
    *w++ = (4 << 3) | 2;
    w = put_varint(w, stat_str_len(v.len));
    *w++ = (1 << 3) | 0;
    *w++ = (uint8_t)id;
    *w++ = (5 << 3) | 2;
    w = put_varint(w, v.len);
    memcpy(w, v.ptr, v.len);
    return w + v.len;
}

static size_t body_len(const dstats *s) {
    size_t body = 0;
    if (s->g.has) body += int_field_len((uint64_t)s->g.v);
    if (s->step_name.len) body += str_field_len(s->step_name.len);
    if (s->launch) body += int_field_len(s->num_launches) + 2 * (2 + STAT_DOUBLE_LEN);
    if (s->gx.graph) body += int_field_len(s->gx.graph);
    if (s->gx.graph && s->gx.has_corr) body += int_field_len((uint64_t)s->gx.corr);
    if (s->offload) body += int_field_len(1);
    if (s->raw_bytes.has) body += int_field_len((uint64_t)s->raw_bytes.v);
    if (s->shape.len) body += str_field_len(s->shape.len);
    return body;
}

/* One event's length and body at `w`; returns the end. */
static uint8_t *put_event(uint8_t *w, const dstats *s) {
    w = put_varint(w, body_len(s));
    if (s->g.has) w = put_int_stat(w, DS_GROUP_ID, 4, (uint64_t)s->g.v);
    if (s->step_name.len) w = put_str_stat(w, DS_STEP_NAME, s->step_name);
    if (s->launch) {           /* uint64_value, then double_value (field 2) */
        w = put_int_stat(w, DS_NUM_LAUNCHES, 3, s->num_launches);
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
    if (s->gx.graph) w = put_int_stat(w, DS_CUDA_GRAPH_ID, 3, s->gx.graph);
    if (s->gx.graph && s->gx.has_corr) w = put_int_stat(w, DS_CORRELATION_ID, 4, (uint64_t)s->gx.corr);
    if (s->offload) w = put_int_stat(w, DS_IS_ASYNC, 4, 1);
    if (s->raw_bytes.has) w = put_int_stat(w, DS_RAW_BYTES, 4, (uint64_t)s->raw_bytes.v);
    if (s->shape.len) w = put_str_stat(w, DS_SHAPE, s->shape);
    return w;
}

static int has_stats(const dstats *s) {
    return s->g.has || s->step_name.len || s->launch || s->gx.graph || s->offload ||
           s->raw_bytes.has || s->shape.len;
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
    ln->wire_len = total;
}

/* The line's stats bytes written in `b` become its wire (adopted by the
 * arena, no copy); events keep their offsets unless the bytes reach
 * XPV_NO_STATS, where none keeps any. */
static void adopt_wire(xpv_arena *arena, xpv_line *ln, xpv_buf *b) {
    if (!b->len || b->len >= XPV_NO_STATS) {
        if (b->len)
            for (uint32_t i = 0; i < ln->nevents; i++) ln->events[i].wire = XPV_NO_STATS;
        xpv_buf_free(b);
        return;
    }
    size_t n;
    char *d = xpv_buf_steal(b, &n);
    d = xpv_xrealloc(d, n);
    xpv_arena_adopt(arena, d, n);
    ln->wire = (const uint8_t *)d;
    ln->wire_len = n;
}

/* Room for one event's length and an int stat field. */
#define INT_EVENT_MAX 24

void xpv_dl_group_wire_init(xpv_group_wire *w) {
    memset(w, 0, sizeof *w);
    xpv_buf_init(&w->b);
    w->last_wire = XPV_NO_STATS;
}

uint32_t xpv_dl_group_wire(xpv_group_wire *w, opt64 g) {
    if (!g.has) {
        w->last = g;
        return XPV_NO_STATS;
    }
    if (w->last.has && w->last.v == g.v) return w->last_wire;
    uint8_t *w0 = (uint8_t *)xpv_buf_reserve(&w->b, INT_EVENT_MAX), *p = w0;
    p = put_varint(p, int_field_len((uint64_t)g.v));
    p = put_int_stat(p, DS_GROUP_ID, 4, (uint64_t)g.v);
    w->last = g;
    w->last_wire = (uint32_t)w->b.len;
    w->b.len += (size_t)(p - w0);
    return w->last_wire;
}

void xpv_dl_group_wire_adopt(xpv_arena *arena, xpv_line *ln, xpv_group_wire *w) {
    adopt_wire(arena, ln, &w->b);
}

void xpv_dl_group_wire_free(xpv_group_wire *w) { xpv_buf_free(&w->b); }

/* Host offload events carry only the stats of their start / done
 * metadata (`_a` = 1, raw_bytes_accessed, shape_with_layout), so many are
 * equal: those share one encoding (one wire offset), found through a
 * direct-mapped memo of the recent (start, done) metadata pairs, which
 * also holds the event's own metadata (its key's).  The events come with
 * the start's metadata in `wire` and the done's in `meta`. */
typedef struct offload_memo {
    uint32_t smeta, dmeta, off, meta;
    int used;
} offload_memo;

#define OFFLOAD_MEMO 256

void xpv_dl_attach_offload_stats(xpv_arena *arena, xpv_line *ln, const xpv_dl_offload *o,
                                 uint32_t (*key_meta)(void *arg, uint32_t key), void *arg) {
    offload_memo mm[OFFLOAD_MEMO];
    memset(mm, 0, sizeof mm);
    xpv_buf b;
    xpv_buf_init(&b);
    for (size_t i = 0; i < ln->nevents; i++) {
        xpv_event *e = &ln->events[i];
        uint32_t smeta = e->wire, dmeta = e->meta;
        uint64_t h = mix64(((uint64_t)smeta << 32) ^ dmeta);
        offload_memo *m = &mm[h & (OFFLOAD_MEMO - 1)];
        if (m->used && m->smeta == smeta && m->dmeta == dmeta) {
            e->wire = m->off;
            e->meta = m->meta;
            continue;
        }
        const xpv_dl_offload_meta *dm = &o->meta[dmeta];
        dstats s;
        memset(&s, 0, sizeof s);
        s.offload = 1;
        s.raw_bytes = (opt64){dm->has_raw, dm->raw};
        s.shape = o->meta[smeta].shape;
        size_t body = body_len(&s), len = varint_len(body) + body;
        uint8_t *w = (uint8_t *)xpv_buf_reserve(&b, len);
        e->wire = (uint32_t)b.len;
        e->meta = key_meta(arg, dm->key);
        put_event(w, &s);
        *m = (offload_memo){smeta, dmeta, (uint32_t)b.len, e->meta, 1};
        b.len += len;
    }
    adopt_wire(arena, ln, &b);
}
