/*
 * model.c - lookups and lazy stat decoding over a decoded profile.
 */
#include <stdlib.h>
#include <string.h>

#include "gz.h"
#include "idmap.h"
#include "model.h"
#include "wire.h"

/* ==== time order ========================================================== */

int xpv_cmp_time_key(const void *a, const void *b) {
    const xpv_time_key *x = a, *y = b;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    if (x->dur != y->dur) return x->dur > y->dur ? -1 : 1;
    return (x->tie > y->tie) - (x->tie < y->tie);
}

uint32_t *xpv_line_time_order(const xpv_line *ln) {
    if (xpv_line_in_time_order(ln)) return NULL;
    uint32_t ne = ln->nevents;
    xpv_time_key *o = xpv_xmalloc(ne * sizeof *o);
    for (uint32_t i = 0; i < ne; i++)
        o[i] = (xpv_time_key){ln->events[i].start_ps, ln->events[i].dur_ps, i};
    qsort(o, ne, sizeof *o, xpv_cmp_time_key);
    uint32_t *r = xpv_xmalloc(ne * sizeof *r);
    for (uint32_t i = 0; i < ne; i++) r[i] = (uint32_t)o[i].tie;
    free(o);
    return r;
}

void xpv_plane_walk_init(xpv_plane_walk *w, const xpv_plane *pl) {
    w->pl = pl;
    w->cur = xpv_xcalloc(pl->nlines ? pl->nlines : 1, sizeof *w->cur);
    w->n = 0;
}

void xpv_plane_walk_add(xpv_plane_walk *w, uint32_t li) {
    const xpv_line *ln = &w->pl->lines[li];
    if (ln->nevents) w->cur[w->n++] = (xpv_walk_cursor){ln, li, 0, xpv_line_time_order(ln)};
}

static inline uint32_t cur_ev(const xpv_walk_cursor *c) { return c->ord ? c->ord[c->pos] : c->pos; }

static inline int cur_before(const xpv_walk_cursor *a, const xpv_walk_cursor *b) {
    const xpv_event *x = &a->ln->events[cur_ev(a)], *y = &b->ln->events[cur_ev(b)];
    if (x->start_ps != y->start_ps) return x->start_ps < y->start_ps;
    if (x->dur_ps != y->dur_ps) return x->dur_ps > y->dur_ps;
    return a->li < b->li;
}

/* (a cursor that runs out is replaced by the last one: ties go by line
 * index, not array order) */
const xpv_event *xpv_plane_walk_next(xpv_plane_walk *w, uint32_t *li, uint32_t *ei) {
    if (!w->n) return NULL;
    uint32_t best = 0;
    for (uint32_t k = 1; k < w->n; k++)
        if (cur_before(&w->cur[k], &w->cur[best])) best = k;
    xpv_walk_cursor *t = &w->cur[best];
    *ei = cur_ev(t);
    *li = t->li;
    const xpv_event *e = &t->ln->events[*ei];
    if (!t->ord) __builtin_prefetch(e + 32); /* (reading ahead on a stored line) */
    if (++t->pos == t->ln->nevents) {
        free(t->ord);
        w->cur[best] = w->cur[--w->n];
    }
    return e;
}

void xpv_plane_walk_free(xpv_plane_walk *w) {
    for (uint32_t k = 0; k < w->n; k++) free(w->cur[k].ord);
    free(w->cur);
    w->cur = NULL;
    w->n = 0;
}

/* ==== lookups ============================================================= */

const xpv_plane *xpv_find_plane(const xpv_profile *p, const char *name) {
    for (uint32_t i = 0; i < p->nplanes; i++)
        if (xpv_str_eq(p->planes[i].name, name)) return &p->planes[i];
    return NULL;
}

int32_t xpv_stat_id(const xpv_plane *pl, const char *name) {
    size_t n = strlen(name);
    for (uint32_t i = 1; i < pl->nstat_meta; i++) {
        const xpv_stat_meta *m = &pl->stat_meta[i];
        if (m->name.len == n && !memcmp(m->name.ptr, name, n)) {
            /* Only an entry reachable by its id counts (duplicate ids:
             * the last one wins). */
            if (xpv_stat_meta_index(pl, m->key) == (int32_t)i) return (int32_t)i;
        }
    }
    return -1;
}

uint32_t xpv_event_meta_index(const xpv_plane *pl, int64_t id) {
    return pl->event_meta_ids ? xpv_idmap_get(pl->event_meta_ids, id) : 0;
}

int32_t xpv_stat_meta_index(const xpv_plane *pl, int64_t id) {
    uint32_t v = pl->stat_meta_ids ? xpv_idmap_get(pl->stat_meta_ids, id) : 0;
    return v ? (int32_t)v : -1;
}

xpv_str xpv_event_display_name(const xpv_plane *pl, const xpv_event *e) {
    const xpv_event_meta *m = &pl->event_meta[e->meta];
    return m->display_name.len ? m->display_name : m->name;
}

int xpv_str_eq(xpv_str a, const char *b) {
    size_t n = strlen(b);
    return a.len == n && (n == 0 || !memcmp(a.ptr, b, n));
}

int xpv_str_has_prefix(xpv_str a, const char *prefix) {
    size_t n = strlen(prefix);
    return a.len >= n && (n == 0 || !memcmp(a.ptr, prefix, n));
}

int xpv_str_contains(xpv_str a, const char *needle) {
    size_t n = strlen(needle);
    if (n == 0) return 1;
    if (a.len < n) return 0;
    return memmem(a.ptr, a.len, needle, n) != NULL;
}

static char ascii_lower(char c) { return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c; }

int xpv_str_has_prefix_nocase(xpv_str a, const char *prefix) {
    size_t n = strlen(prefix);
    if (a.len < n) return 0;
    for (size_t i = 0; i < n; i++)
        if (ascii_lower(a.ptr[i]) != ascii_lower(prefix[i])) return 0;
    return 1;
}

int xpv_line_is_derived(const xpv_line *ln) {
    int32_t id = (int32_t)(uint32_t)ln->id;
    int32_t base = (int32_t)0xdeadbeefu;
    return id >= base && id <= base + 289;
}

/* ==== lazy event stats =================================================== */

/* Decode the value fields of one XStat payload into `out` (metadata id
 * and ref resolution are the caller's). */
static void stat_value(const uint8_t *q, const uint8_t *qe, xpv_stat *out, int64_t *mid) {
    memset(out, 0, sizeof *out);
    *mid = 0;
    while (q < qe) {
        uint64_t t, v;
        if (!wire_varint(&q, qe, &t)) break;
        unsigned f = (unsigned)(t >> 3), wt = (unsigned)(t & 7);
        if (f == 1 && wt == WT_VARINT) {
            if (!wire_varint(&q, qe, &v)) break;
            *mid = (int64_t)v;
        } else if (f == 2 && wt == WT_I64 && qe - q >= 8) {
            out->kind = XPV_STAT_DOUBLE;
            out->is_ref = 0;
            out->v.d = wire_double(q);
            q += 8;
        } else if ((f == 3 || f == 4 || f == 7) && wt == WT_VARINT) {
            if (!wire_varint(&q, qe, &v)) break;
            out->kind = f == 4 ? XPV_STAT_INT : XPV_STAT_UINT;
            out->is_ref = f == 7;
            out->v.u = v;
        } else if ((f == 5 || f == 6 || f == 8) && wt == WT_LEN) {
            const uint8_t *ss;
            if (!wire_len(&q, qe, &ss, &v)) break;
            out->kind = f == 5 ? XPV_STAT_STR : f == 6 ? XPV_STAT_BYTES : XPV_STAT_GZSTR;
            out->is_ref = 0;
            out->v.s.ptr = (const char *)ss;
            out->v.s.len = (uint32_t)v;
        } else if (!wire_skip(&q, qe, wt)) {
            break;
        }
    }
}

static void stat_resolve(const xpv_plane *pl, int64_t mid, xpv_stat *out) {
    out->meta = xpv_stat_meta_index(pl, mid);
    if (out->is_ref) {
        int32_t r = xpv_stat_meta_index(pl, (int64_t)out->v.u);
        out->kind = XPV_STAT_STR;
        out->v.s = r >= 0 ? pl->stat_meta[r].name : (xpv_str){"", 0};
    }
}

/* Metadata id of an XStat payload without decoding its value: producers
 * write field 1 first, so this is usually one or two byte reads. */
static inline int64_t stat_meta_id(const uint8_t *q, const uint8_t *qe) {
    int64_t mid = 0;
    while (q < qe) {
        uint64_t t, v;
        if (!wire_varint(&q, qe, &t)) break;
        if (t == ((1 << 3) | WT_VARINT)) {
            if (!wire_varint(&q, qe, &v)) break;
            mid = (int64_t)v; /* keep going: the last occurrence wins */
        } else if (!wire_skip(&q, qe, (unsigned)(t & 7))) {
            break;
        }
    }
    return mid;
}


void xpv_stat_iter_init(xpv_stat_iter *it, const xpv_plane *pl, const xpv_line *ln,
                        const xpv_event *e) {
    it->plane = pl;
    it->p = it->end = NULL;
    if (e->wire == XPV_NO_STATS || e->wire >= ln->wire_len) return;
    const uint8_t *p = ln->wire + e->wire, *s;
    uint64_t len;
    /* The decoder validated these bytes, but a mapped file rewritten in
     * place since then has others (issue 26): the line's bytes bound every
     * read. */
    if (!wire_len(&p, ln->wire + ln->wire_len, &s, &len)) return;
    it->p = s;
    it->end = s + len;
}

/* The next XStat payload [*s, *s + *len) of the iterator's event (field 4
 * of the XEvent), other fields skipped.  Returns 0, and ends the iterator,
 * at the end or at bytes that do not parse. */
static inline int stat_payload(xpv_stat_iter *it, const uint8_t **s, uint64_t *len) {
    while (it->p && it->p < it->end) {
        uint64_t tag;
        if (!wire_varint(&it->p, it->end, &tag)) break;
        if (tag != ((4 << 3) | WT_LEN)) {
            if (!wire_skip(&it->p, it->end, (unsigned)(tag & 7))) break;
            continue;
        }
        if (!wire_len(&it->p, it->end, s, len)) break;
        return 1;
    }
    it->p = NULL;
    return 0;
}

int xpv_stat_next(xpv_stat_iter *it, xpv_stat *out) {
    const uint8_t *s;
    uint64_t len;
    if (!stat_payload(it, &s, &len)) return 0;
    int64_t mid;
    stat_value(s, s + len, out, &mid);
    stat_resolve(it->plane, mid, out);
    return 1;
}

int xpv_event_stat(const xpv_plane *pl, const xpv_line *ln, const xpv_event *e,
                   int32_t stat_id, xpv_stat *out) {
    if (stat_id < 0 || (uint32_t)stat_id >= pl->nstat_meta || e->wire == XPV_NO_STATS) return 0;
    /* Compare raw metadata ids (the map key of stat_id) and decode only the
     * matching stat: converters ask for one stat of many per event. */
    const int64_t want = pl->stat_meta[stat_id].key;
    xpv_stat_iter it;
    xpv_stat_iter_init(&it, pl, ln, e);
    const uint8_t *found = NULL, *found_end = NULL;
    const uint8_t *s;
    uint64_t len;
    while (stat_payload(&it, &s, &len)) {
        if (stat_meta_id(s, s + len) == want) {
            found = s;
            found_end = s + len;
        }
    }
    if (!found) return 0;
    int64_t mid;
    stat_value(found, found_end, out, &mid);
    stat_resolve(pl, mid, out);
    return 1;
}

void xpv_stat_set_init(xpv_stat_set *set, const xpv_plane *pl, const int32_t *ids, uint32_t n) {
    memset(set, 0, sizeof *set);
    if (n > 32) n = 32;
    set->n = n;
    for (uint32_t i = 0; i < n; i++) {
        set->ids[i] = ids[i];
        if (ids[i] >= 0 && (uint32_t)ids[i] < pl->nstat_meta) {
            set->want[i] = pl->stat_meta[ids[i]].key;
            set->valid |= 1u << i;
            set->key_bits |= xpv_stat_key_bit(set->want[i]);
        }
    }
    /* Keys below 64 (metadata ids are small) are found by table; the
     * others, or all of them when two ids share a key, by comparison. */
    memset(set->small, 0xff, sizeof set->small);
    for (uint32_t v = set->valid; v; v &= v - 1) {
        uint32_t i = (uint32_t)__builtin_ctz(v);
        if ((uint64_t)set->want[i] >= 64) {
            set->big |= 1u << i;
        } else if (set->small[set->want[i]] != 0xff) {
            set->big = set->valid;
            memset(set->small, 0xff, sizeof set->small);
            break;
        } else {
            set->small[set->want[i]] = (uint8_t)i;
        }
    }
}

/* The shape every producer writes an XStat payload [q, qe) in: field 1
 * (metadata_id, one byte) first, then at most one value field ending the
 * payload.  Returns 1 with the metadata id and where the value field
 * starts (qe: no value), for stat_value to decode from there; 0 for any
 * other shape, which the caller reads with stat_meta_id and stat_value
 * over the whole payload instead (the same answer, more steps). */
static inline int stat_simple(const uint8_t *q, const uint8_t *qe, int64_t *mid,
                              const uint8_t **val) {
    if (qe - q < 2 || q[0] != ((1 << 3) | WT_VARINT) || q[1] >= 0x80) return 0;
    *mid = q[1];
    *val = q + 2;
    if (q + 2 == qe) return 1;
    const uint8_t *x = q + 3;
    uint64_t v;
    switch (q[2]) {
    case (2 << 3) | WT_I64: return qe - x == 8;
    case (3 << 3) | WT_VARINT:
    case (4 << 3) | WT_VARINT:
    case (7 << 3) | WT_VARINT: return wire_varint(&x, qe, &v) && x == qe;
    case (5 << 3) | WT_LEN:
    case (6 << 3) | WT_LEN:
    case (8 << 3) | WT_LEN: return wire_varint(&x, qe, &v) && v == (uint64_t)(qe - x);
    default: return 0;
    }
}

uint32_t xpv_event_stats_in(const xpv_plane *pl, const xpv_line *ln, const xpv_event *e,
                            const xpv_stat_set *set, xpv_stat *out, uint32_t *multi) {
    const uint8_t *at[32], *at_end[32];
    uint32_t found = 0, more = 0;
    if (multi) *multi = 0;
    if (!set->valid || e->wire == XPV_NO_STATS) return 0;
    xpv_stat_iter it;
    xpv_stat_iter_init(&it, pl, ln, e);
    const uint8_t *s;
    uint64_t len;
    while (stat_payload(&it, &s, &len)) {
        int64_t mid;
        const uint8_t *val;
        if (!stat_simple(s, s + len, &mid, &val)) {
            mid = stat_meta_id(s, s + len);
            val = s;
        }
        uint32_t hit = 0;
        if ((uint64_t)mid < 64 && set->small[mid] != 0xff) hit = 1u << set->small[mid];
        for (uint32_t v = set->big; v; v &= v - 1) {
            uint32_t i = (uint32_t)__builtin_ctz(v);
            if (set->want[i] == mid) hit |= 1u << i;
        }
        for (; hit; hit &= hit - 1) {
            uint32_t i = (uint32_t)__builtin_ctz(hit);
            more |= found & (1u << i);
            found |= 1u << i;
            at[i] = val;
            at_end[i] = s + len;
        }
    }
    for (uint32_t v = found; v; v &= v - 1) {
        uint32_t i = (uint32_t)__builtin_ctz(v);
        int64_t mid;
        /* (from the value field on, or the whole payload: the metadata id
         * read here is not used, out[i].meta is the key that matched) */
        stat_value(at[i], at_end[i], &out[i], &mid);
        if (out[i].is_ref) stat_resolve(pl, mid, &out[i]);
        out[i].meta = set->ids[i];
    }
    if (multi) *multi = more;
    return found;
}

uint32_t xpv_event_stats(const xpv_plane *pl, const xpv_line *ln, const xpv_event *e,
                         const int32_t *ids, uint32_t n, xpv_stat *out, uint32_t *multi) {
    xpv_stat_set set;
    xpv_stat_set_init(&set, pl, ids, n);
    return xpv_event_stats_in(pl, ln, e, &set, out, multi);
}

int xpv_event_or_meta_stat(const xpv_plane *pl, const xpv_line *ln, const xpv_event *e,
                           int32_t stat_id, xpv_stat *out) {
    if (stat_id < 0) return 0;
    if (xpv_event_stat(pl, ln, e, stat_id, out)) return 1;
    const xpv_event_meta *m = &pl->event_meta[e->meta];
    for (uint32_t i = m->nstats; i-- > 0;)
        if (m->stats[i].meta == stat_id) {
            *out = m->stats[i];
            return 1;
        }
    return 0;
}

int xpv_plane_stat(const xpv_plane *pl, int32_t stat_id, xpv_stat *out) {
    if (stat_id < 0) return 0;
    for (uint32_t i = pl->nstats; i-- > 0;)
        if (pl->stats[i].meta == stat_id) {
            *out = pl->stats[i];
            return 1;
        }
    return 0;
}

int xpv_stat_as_int(const xpv_stat *s, int64_t *out) {
    switch (s->kind) {
    case XPV_STAT_INT: *out = s->v.i; return 1;
    case XPV_STAT_UINT: *out = (int64_t)s->v.u; return 1;
    case XPV_STAT_DOUBLE:
        /* Out-of-range and NaN doubles would be undefined behaviour. */
        if (!(s->v.d > -9.2e18 && s->v.d < 9.2e18)) return 0;
        *out = (int64_t)s->v.d;
        return 1;
    default: return 0;
    }
}

int xpv_stat_as_double(const xpv_stat *s, double *out) {
    switch (s->kind) {
    case XPV_STAT_INT: *out = (double)s->v.i; return 1;
    case XPV_STAT_UINT: *out = (double)s->v.u; return 1;
    case XPV_STAT_DOUBLE: *out = s->v.d; return 1;
    default: return 0;
    }
}

long xpv_stat_gzstr(const xpv_stat *s, char *out, size_t cap) {
    if (s->kind != XPV_STAT_GZSTR) return -1;
    return xpv_gunzip_into(s->v.s.ptr, s->v.s.len, out, cap);
}

void xpv_profile_add_warning(xpv_profile *p, const char *msg) {
    size_t len = strlen(msg);
    xpv_str *w = xpv_arena_alloc(&p->arena, ((size_t)p->nwarnings + 1) * sizeof *w);
    if (p->nwarnings) memcpy(w, p->warnings, p->nwarnings * sizeof *w);
    w[p->nwarnings].ptr = xpv_arena_strndup(&p->arena, msg, len);
    w[p->nwarnings].len = (uint32_t)len;
    p->warnings = w;
    p->nwarnings++;
}

void xpv_profile_free(xpv_profile *p) {
    if (!p) return;
    if (p->ext) p->ext->free(p->ext);
    xpv_arena_free(&p->arena);
    if (p->buf_free) p->buf_free(p->buf, p->buf_len);
    free(p);
}
