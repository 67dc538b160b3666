/*
 * trace_search.c - trace viewer search over a name index built once per
 * trace index (see "Search" in trace_index.h).
 *
 * Searching used to walk every indexed event and decode the `step_name`
 * stat of each (and, for a substring, every string stat): 1.9 s per new
 * prefix on 1 GB of real TF.  XProf builds a prefix trie of the names
 * once and searches that.  Here the first search builds, in one pass over
 * the events' stats:
 *   - per row, its events ordered by (metadata, event): the events shown
 *     under a metadata name are a binary search away;
 *   - the renamed events (shown under a `step_name` stat or a computed
 *     group's name, as the renderer shows them), by uid, with that name;
 *   - every distinct string arg (XPV_STAT_STR stats of events, refs
 *     resolved) with the events that hold it.
 * A search compares the metadata names and the distinct strings with the
 * text and visits only the events of the matching ones.  The answers are
 * the ones of the walk (the test keeps the walk as its reference).
 */
#include "collections.h"
#include "group_events.h"
#include "trace_index.h"
#include "trace_index_int.h"

#include <ctype.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define LV XPV_TRACE_LEVELS

typedef struct seg {
    uint32_t row;
    uint64_t off;                   /* first event in aev; ends at the next */
} seg;

typedef struct xpv_trace_names {
    uint64_t *roff;                 /* per row: its events in mev (nrows + 1) */
    uint32_t *mev;                  /* per row, events by (meta, ev) */
    uint64_t *ren_uid;              /* renamed events, ascending uid */
    uint32_t *ren_sid;              /* their shown name */
    size_t nren;
    const char **str;               /* distinct strings (arena) */
    uint32_t *str_len;
    uint32_t nstr;
    uint32_t *soff;                 /* per string: its segments (nstr + 1) */
    seg *segs;                      /* + a sentinel */
    uint32_t *aev;                  /* events holding each string */
    uint64_t naev;
    xpv_arena arena;
    size_t bytes;
} xpv_trace_names;

/* Builds are rare (once per index) and short next to a search without the
 * index: one lock for all of them. */
static pthread_mutex_t names_mu = PTHREAD_MUTEX_INITIALIZER;

void xpv_trace_names_free(xpv_trace_names *nm) {
    if (!nm) return;
    free(nm->roff);
    free(nm->mev);
    free(nm->ren_uid);
    free(nm->ren_sid);
    free(nm->str);
    free(nm->str_len);
    free(nm->soff);
    free(nm->segs);
    free(nm->aev);
    xpv_arena_free(&nm->arena);
    free(nm);
}

size_t xpv_trace_names_bytes(const xpv_trace_index *ix) {
    pthread_mutex_lock(&names_mu);
    size_t b = ix->names ? ix->names->bytes : 0;
    pthread_mutex_unlock(&names_mu);
    return b;
}

/* ==== Build ============================================================= */

typedef struct nbuild {
    xpv_trace_names *nm;
    strmap smap;
    vec strs;                       /* const char * */
    vec lens;                       /* uint32_t */
    vec occ;                        /* occ: (sid, row, ev) of string args */
    vec ren;                        /* uint64_t uid << ... see ren_add */
    vec ren_s;
} nbuild;

typedef struct occ {
    uint32_t sid, row, ev;
} occ;

typedef struct ren_ent {
    uint64_t uid;
    uint32_t sid;
} ren_ent;

static uint32_t intern(nbuild *b, xpv_str s) {
    int found;
    strmap_ent *e = strmap_put(&b->smap, &b->nm->arena, s.len ? s.ptr : "", s.len, &found);
    if (!found) {
        e->val = (uint32_t)b->strs.n;
        *(const char **)vec_push(&b->strs) = e->k;
        *(uint32_t *)vec_push(&b->lens) = (uint32_t)s.len;
    }
    return e->val;
}

/* Row `ri`: its events by (meta, ev) into mev, and the stats pass. */
static void build_row(nbuild *b, const xpv_trace_index *ix, uint32_t ri, uint64_t *keys,
                      uint64_t *tmp) {
    xpv_trace_names *nm = b->nm;
    const xpv_trace_row *r = &ix->rows[ri];
    const xpv_plane *pl = r->pl;
    const xpv_line *ln = r->ln;
    const xpv_groups *hg = r->host < ix->nhosts ? ix->hgroups[r->host] : NULL;
    size_t k = 0;
    for (uint32_t gi = r->group0; gi < r->group0 + r->ngroups; gi++) {
        const xpv_trace_group *g = &ix->groups[gi];
        for (uint64_t i = 0; i < g->seg[LV]; i++) {
            uint32_t ev = ix->idx[g->off + i];
            keys[k++] = ((uint64_t)ln->events[ev].meta << 32) | ev;
        }
    }
    radix_sort_u64(keys, tmp, k);
    uint32_t *dst = nm->mev + nm->roff[ri];
    for (size_t i = 0; i < k; i++) dst[i] = (uint32_t)keys[i];
    /* In event order (the stats lie in the file in that order). */
    for (size_t i = 0; i < k; i++) keys[i] &= 0xffffffffu;
    radix_sort_u64(keys, tmp, k);
    for (size_t i = 0; i < k; i++) {
        uint32_t ev = (uint32_t)keys[i];
        const xpv_event *e = &ln->events[ev];
        int renamed = 0;
        if (e->wire != XPV_NO_STATS) {
            xpv_stat_iter it;
            xpv_stat st;
            xpv_stat_iter_init(&it, pl, ln, e);
            uint32_t last = UINT32_MAX;
            while (xpv_stat_next(&it, &st)) {
                if (st.kind != XPV_STAT_STR) continue;
                uint32_t sid = intern(b, st.v.s);
                if (sid != last) *(occ *)vec_push(&b->occ) = (occ){sid, ri, ev};
                last = sid;
                if (!renamed && st.meta >= 0 && st.meta == r->st_step_name && st.v.s.len) {
                    *(ren_ent *)vec_push(&b->ren) = (ren_ent){((uint64_t)ri << 32) | ev, sid};
                    renamed = 1;
                }
            }
        }
        const char *sn;
        if (!renamed && hg && (sn = xpv_groups_step_name(hg, r->plane, r->line, ev)))
            *(ren_ent *)vec_push(&b->ren) =
                (ren_ent){((uint64_t)ri << 32) | ev, intern(b, xpv_cstr(sn))};
    }
}

static int cmp_ren(const void *a, const void *b) {
    const ren_ent *x = a, *y = b;
    return x->uid < y->uid ? -1 : x->uid > y->uid;
}

/* The string args' events by string (a stable counting sort keeps row and
 * event order), in runs of one row. */
static void place_args(nbuild *b) {
    xpv_trace_names *nm = b->nm;
    const occ *o = b->occ.p;
    size_t n = b->occ.n;
    uint64_t *cnt = xpv_xcalloc((size_t)nm->nstr + 1, sizeof *cnt);
    for (size_t i = 0; i < n; i++) cnt[o[i].sid + 1]++;
    for (uint32_t s = 0; s < nm->nstr; s++) cnt[s + 1] += cnt[s];
    nm->aev = xpv_xmalloc((n ? n : 1) * sizeof *nm->aev);
    uint32_t *rows = xpv_xmalloc((n ? n : 1) * sizeof *rows);
    uint64_t *pos = xpv_xmalloc(((size_t)nm->nstr + 1) * sizeof *pos);
    memcpy(pos, cnt, ((size_t)nm->nstr + 1) * sizeof *pos);
    for (size_t i = 0; i < n; i++) {
        uint64_t p = pos[o[i].sid]++;
        nm->aev[p] = o[i].ev;
        rows[p] = o[i].row;
    }
    nm->naev = n;
    nm->soff = xpv_xmalloc(((size_t)nm->nstr + 1) * sizeof *nm->soff);
    vec segs = {NULL, 0, 0, sizeof(seg)};
    for (uint32_t s = 0; s < nm->nstr; s++) {
        nm->soff[s] = (uint32_t)segs.n;
        for (uint64_t p = cnt[s]; p < cnt[s + 1]; p++)
            if (p == cnt[s] || rows[p] != rows[p - 1]) *(seg *)vec_push(&segs) = (seg){rows[p], p};
    }
    nm->soff[nm->nstr] = (uint32_t)segs.n;
    *(seg *)vec_push(&segs) = (seg){0, n};
    nm->segs = segs.p;
    nm->bytes += n * sizeof *nm->aev + segs.n * sizeof(seg) + ((size_t)nm->nstr + 1) * 4;
    free(rows);
    free(pos);
    free(cnt);
}

static xpv_trace_names *names_build(const xpv_trace_index *ix) {
    nbuild b;
    memset(&b, 0, sizeof b);
    b.strs.sz = sizeof(const char *);
    b.lens.sz = sizeof(uint32_t);
    b.occ.sz = sizeof(occ);
    b.ren.sz = sizeof(ren_ent);
    xpv_trace_names *nm = b.nm = xpv_xcalloc(1, sizeof *nm);
    xpv_arena_init(&nm->arena, 1 << 16);
    nm->roff = xpv_xcalloc((size_t)ix->nrows + 1, sizeof *nm->roff);
    uint64_t maxn = 0;
    for (uint32_t ri = 0; ri < ix->nrows; ri++) {
        uint64_t n = ix->rows[ri].is_counter ? 0 : ix->rows[ri].nevents;
        nm->roff[ri + 1] = nm->roff[ri] + n;
        if (n > maxn) maxn = n;
    }
    nm->mev = xpv_xmalloc((nm->roff[ix->nrows] ? nm->roff[ix->nrows] : 1) * sizeof *nm->mev);
    uint64_t *keys = xpv_xmalloc((maxn ? maxn : 1) * sizeof *keys);
    uint64_t *tmp = xpv_xmalloc((maxn ? maxn : 1) * sizeof *tmp);
    for (uint32_t ri = 0; ri < ix->nrows; ri++)
        if (!ix->rows[ri].is_counter) build_row(&b, ix, ri, keys, tmp);
    free(keys);
    free(tmp);
    nm->str = b.strs.p;
    nm->str_len = b.lens.p;
    nm->nstr = (uint32_t)b.strs.n;
    ren_ent *re = b.ren.p;
    nm->nren = b.ren.n;
    if (nm->nren) qsort(re, nm->nren, sizeof *re, cmp_ren);
    nm->ren_uid = xpv_xmalloc((nm->nren ? nm->nren : 1) * sizeof *nm->ren_uid);
    nm->ren_sid = xpv_xmalloc((nm->nren ? nm->nren : 1) * sizeof *nm->ren_sid);
    for (size_t i = 0; i < nm->nren; i++) {
        nm->ren_uid[i] = re[i].uid;
        nm->ren_sid[i] = re[i].sid;
    }
    free(re);
    nm->bytes = sizeof *nm + ((size_t)ix->nrows + 1) * 8 + nm->roff[ix->nrows] * 4 +
                nm->nren * 12 + (size_t)nm->nstr * 12 + nm->arena.total;
    place_args(&b);
    free(b.occ.p);
    strmap_free(&b.smap);
    return nm;
}

/* The index's names, built by the first caller. */
static const xpv_trace_names *names_of(const xpv_trace_index *ix, int *built) {
    pthread_mutex_lock(&names_mu);
    *built = 0;
    if (!ix->names) {
        /* A cache kept with the (otherwise immutable) index. */
        ((xpv_trace_index *)ix)->names = names_build(ix);
        *built = 1;
    }
    const xpv_trace_names *nm = ix->names;
    pthread_mutex_unlock(&names_mu);
    return nm;
}

/* ==== Search ============================================================ */

static int prefix_ci(const char *s, size_t sn, const char *p, size_t n) {
    if (sn < n) return 0;
    for (size_t i = 0; i < n; i++)
        if (tolower((unsigned char)s[i]) != tolower((unsigned char)p[i])) return 0;
    return 1;
}

/* Case-insensitive substring (n > 0). */
static int contains_ci(const char *s, size_t sn, const char *p, size_t n) {
    if (sn < n) return 0;
    for (size_t i = 0; i + n <= sn; i++)
        if (prefix_ci(s + i, sn - i, p, n)) return 1;
    return 0;
}

static int str_match(xpv_str s, const char *p, size_t n, int mode) {
    return mode ? contains_ci(s.ptr, s.len, p, n) : prefix_ci(s.ptr, s.len, p, n);
}

typedef struct heap_item {
    int64_t start;
    uint64_t uid;
} heap_item;

static int heap_less(heap_item a, heap_item b) {
    return a.start < b.start || (a.start == b.start && a.uid < b.uid);
}

/* Max-heap on (start, uid) keeping the `limit` smallest. */
static void heap_push(heap_item *h, size_t *n, size_t limit, heap_item it) {
    if (*n < limit) {
        size_t i = (*n)++;
        h[i] = it;
        while (i && heap_less(h[(i - 1) / 2], h[i])) {
            heap_item t = h[i];
            h[i] = h[(i - 1) / 2];
            h[(i - 1) / 2] = t;
            i = (i - 1) / 2;
        }
        return;
    }
    if (!*n || !heap_less(it, h[0])) return;
    h[0] = it;
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < *n && heap_less(h[m], h[l])) m = l;
        if (r < *n && heap_less(h[m], h[r])) m = r;
        if (m == i) break;
        heap_item t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

static int cmp_heap(const void *a, const void *b) {
    heap_item x = *(const heap_item *)a, y = *(const heap_item *)b;
    return heap_less(x, y) ? -1 : heap_less(y, x);
}

/* One search's state: the matches so far (deduplicated by uid in
 * substring mode, where an event can match by name and by args). */
typedef struct srch {
    const xpv_trace_index *ix;
    int64_t from;
    size_t limit, nh;
    heap_item *heap;
    uint64_t total;
    int dedup;
    i64map seen;
    xpv_trace_search_work w;
} srch;

static void take(srch *s, uint32_t row, uint32_t ev) {
    s->w.events++;
    const xpv_event *e = &s->ix->rows[row].ln->events[ev];
    if (e->start_ps < s->from) return;
    uint64_t uid = ((uint64_t)row << 32) | ev;
    if (s->dedup) {
        uint32_t *v = i64map_slot(&s->seen, (int64_t)uid);
        if (*v) return;
        *v = 1;
    }
    s->total++;
    if (s->limit) heap_push(s->heap, &s->nh, s->limit, (heap_item){e->start_ps, uid});
}

static int is_renamed(const xpv_trace_names *nm, uint64_t uid) {
    size_t lo = 0, hi = nm->nren;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (nm->ren_uid[mid] < uid) lo = mid + 1;
        else hi = mid;
    }
    return lo < nm->nren && nm->ren_uid[lo] == uid;
}

/* First position in row events [lo, hi) (by meta) whose meta is >= m. */
static uint64_t meta_lower(const xpv_event *evs, const uint32_t *mev, uint64_t lo, uint64_t hi,
                           uint32_t m) {
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (evs[mev[mid]].meta < m) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* Events shown under a matching metadata name (or, in substring mode,
 * whose metadata has a matching string stat: those count even when the
 * event is renamed, as the metadata's args stay). */
static void search_meta(srch *s, const xpv_trace_names *nm, const char *text, size_t tn,
                        int mode) {
    const xpv_trace_index *ix = s->ix;
    const xpv_plane *last_pl = NULL;
    vec hits = {NULL, 0, 0, sizeof(uint64_t)};   /* meta << 1 | (stat match) */
    for (uint32_t ri = 0; ri < ix->nrows; ri++) {
        const xpv_trace_row *r = &ix->rows[ri];
        if (r->is_counter) continue;
        const xpv_plane *pl = r->pl;
        if (pl != last_pl) {
            hits.n = 0;
            for (uint32_t k = 0; k < pl->nevent_meta; k++) {
                const xpv_event_meta *m = &pl->event_meta[k];
                xpv_str nmn = m->display_name.len ? m->display_name : m->name;
                s->w.strings++;
                int v = str_match(nmn, text, tn, mode);
                if (!v && mode)
                    for (uint32_t si = 0; si < m->nstats && !v; si++)
                        if (m->stats[si].kind == XPV_STAT_STR &&
                            contains_ci(m->stats[si].v.s.ptr, m->stats[si].v.s.len, text, tn))
                            v = 2;
                if (v) *(uint64_t *)vec_push(&hits) = ((uint64_t)k << 1) | (v == 2);
            }
            last_pl = pl;
        }
        const xpv_event *evs = r->ln->events;
        uint64_t lo = nm->roff[ri], hi = nm->roff[ri + 1];
        for (size_t h = 0; h < hits.n; h++) {
            uint64_t hv = ((uint64_t *)hits.p)[h];
            uint32_t m = (uint32_t)(hv >> 1);
            int by_stat = (int)(hv & 1);
            for (uint64_t i = meta_lower(evs, nm->mev, lo, hi, m);
                 i < hi && evs[nm->mev[i]].meta == m; i++) {
                uint32_t ev = nm->mev[i];
                if (!by_stat && nm->nren && is_renamed(nm, ((uint64_t)ri << 32) | ev)) continue;
                take(s, ri, ev);
            }
        }
    }
    free(hits.p);
}

size_t xpv_trace_search_ex(const xpv_hostset *hs, const xpv_trace_index *ix, const char *text,
                           int mode, int64_t from_ps, size_t limit, xpv_trace_hit **out,
                           uint64_t *total, xpv_trace_search_work *work) {
    (void)hs;
    srch s;
    memset(&s, 0, sizeof s);
    s.ix = ix;
    s.from = from_ps;
    s.limit = limit;
    s.dedup = mode != 0;
    s.heap = xpv_xmalloc((limit ? limit : 1) * sizeof *s.heap);
    size_t tn = strlen(text);
    if (!(mode && !tn)) {
        const xpv_trace_names *nm = names_of(ix, &s.w.built);
        search_meta(&s, nm, text, tn, mode);
        /* renamed events by their shown name */
        for (size_t i = 0; i < nm->nren; i++) {
            uint32_t sid = nm->ren_sid[i];
            s.w.strings++;
            if (str_match((xpv_str){nm->str[sid], nm->str_len[sid]}, text, tn, mode))
                take(&s, (uint32_t)(nm->ren_uid[i] >> 32), (uint32_t)nm->ren_uid[i]);
        }
        /* string args */
        for (uint32_t sid = 0; mode && sid < nm->nstr; sid++) {
            s.w.strings++;
            if (!contains_ci(nm->str[sid], nm->str_len[sid], text, tn)) continue;
            for (uint32_t k = nm->soff[sid]; k < nm->soff[sid + 1]; k++)
                for (uint64_t p = nm->segs[k].off; p < nm->segs[k + 1].off; p++)
                    take(&s, nm->segs[k].row, nm->aev[p]);
        }
    }
    i64map_free(&s.seen);
    qsort(s.heap, s.nh, sizeof *s.heap, cmp_heap);
    xpv_trace_hit *hits = xpv_xmalloc((s.nh ? s.nh : 1) * sizeof *hits);
    for (size_t i = 0; i < s.nh; i++)
        hits[i] = (xpv_trace_hit){(uint32_t)(s.heap[i].uid >> 32), (uint32_t)s.heap[i].uid};
    free(s.heap);
    *out = hits;
    *total = s.total;
    if (work) *work = s.w;
    return s.nh;
}

size_t xpv_trace_search(const xpv_hostset *hs, const xpv_trace_index *ix, const char *prefix,
                        int64_t from_ps, size_t limit, xpv_trace_hit **out, uint64_t *total) {
    return xpv_trace_search_ex(hs, ix, prefix, 0, from_ps, limit, out, total, NULL);
}

size_t xpv_trace_search_text(const xpv_hostset *hs, const xpv_trace_index *ix, const char *text,
                             int64_t from_ps, size_t limit, xpv_trace_hit **out,
                             uint64_t *total) {
    return xpv_trace_search_ex(hs, ix, text, 1, from_ps, limit, out, total, NULL);
}
