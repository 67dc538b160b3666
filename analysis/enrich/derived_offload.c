/*
 * derived_offload.c - XProf's host offload lines on a TPU TensorCore plane
 * (xprof/utils/host_offload_utils.cc HostOffloadEventProcessor, run by
 * derived_timeline.cc DeriveLinesFromStats; derived_lines_int.h).
 *
 * Rules, in XProf's terms:
 *   - An event is a host offload op when its display name (else its name)
 *     contains copy-start, copy-done, dynamic-slice-start / -done or
 *     dynamic-update-slice-start / -done, and its metadata name (the HLO
 *     text) contains "S(5)", XLA's host memory space.  Events with a
 *     non-zero `_a` (event stat over metadata stat) are skipped before the
 *     test, as DeriveLinesFromStats skips asynchronous events.
 *   - Events are taken in the plane's time order (start, longer first).
 *     The op's key is "offload-<display name up to -start/-done>.<the
 *     part after its last '.'>" ("0" without a '.'); a -start is queued
 *     under its key, a -done takes the oldest queued start of its key (a
 *     done without one is dropped) and makes one event from the start's
 *     begin to the done's end, named by the key.
 *   - Its line: among "Host Offload Ops row <k>" (ids kThreadIdDerivedMin +
 *     8 + k, k < 41), the one with the smallest end frontier at or before
 *     the event's begin (ties: the later row); none: a new row (frontier =
 *     its end), or the last row once there are 41.  The row's frontier
 *     becomes the later of its own and the event's end.
 *   - Stats: `_a` = 1, `raw_bytes_accessed` from the done's metadata,
 *     `shape_with_layout` from the start's metadata.  No group_id.
 * The rows' events are sorted by time afterwards (XProf's SortXPlane).
 * XProf gives each event a fresh metadata with an empty name and the key
 * as display name; here events share one metadata per key, named by it
 * (the trace shows the same name, and no long_name either way).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checked.h"
#include "collections.h"
#include "derived_lines_int.h"

#define MAX_ROWS XPV_DL_OFFLOAD_ROWS

static const char *const keywords[] = {
    "copy-start", "copy-done", "dynamic-slice-start", "dynamic-slice-done",
    "dynamic-update-slice-start", "dynamic-update-slice-done",
};

static const char *find(xpv_str s, const char *sub) {
    size_t k = strlen(sub);
    for (uint32_t i = 0; i + k <= s.len; i++)
        if (!memcmp(s.ptr + i, sub, k)) return s.ptr + i;
    return NULL;
}

/* A candidate event: its line and index. */
typedef struct cand {
    uint32_t li, ei;
} cand;

static const xpv_event *cev(const xpv_plane *pl, cand c) {
    return &pl->lines[c.li].events[c.ei];
}

/* The plane's time order: start, longer first, line, index. */
static int before(const xpv_plane *pl, cand a, cand b) {
    const xpv_event *x = cev(pl, a), *y = cev(pl, b);
    if (x->start_ps != y->start_ps) return x->start_ps < y->start_ps;
    if (x->dur_ps != y->dur_ps) return x->dur_ps > y->dur_ps;
    if (a.li != b.li) return a.li < b.li;
    return a.ei < b.ei;
}

/* The key of a display name into `buf` (at least 9 + 2 * d.len bytes). */
static size_t offload_key(char *buf, xpv_str d) {
    const char *cut = find(d, "-start");
    if (!cut) cut = find(d, "-done");
    size_t plen = cut ? (size_t)(cut - d.ptr) : d.len;
    const char *dot = NULL;
    for (uint32_t i = 0; i < d.len; i++)
        if (d.ptr[i] == '.') dot = d.ptr + i;
    const char *id = dot ? dot + 1 : "0";
    size_t idlen = dot ? (size_t)(d.ptr + d.len - dot - 1) : 1;
    memcpy(buf, "offload-", 8);
    memcpy(buf + 8, d.ptr, plen);
    buf[8 + plen] = '.';
    memcpy(buf + 9 + plen, id, idlen);
    return 8 + plen + 1 + idlen;
}

/* Fills o->meta (kind 0: not a candidate) and o->keys, deduplicated. */
static void classify(const xpv_plane *pl, xpv_arena *a, xpv_dl_offload *o) {
    int32_t raw_id = xpv_stat_id(pl, "raw_bytes_accessed");
    int32_t shape_id = xpv_stat_id(pl, "shape_with_layout");
    uint32_t cap = 0;
    strmap seen; /* key -> index in keys (a hash: hostile planes hold many) */
    memset(&seen, 0, sizeof seen);
    char *kbuf = NULL;
    size_t kcap = 0;
    for (uint32_t m = 0; m < pl->nevent_meta; m++) {
        const xpv_event_meta *em = &pl->event_meta[m];
        xpv_dl_offload_meta *om = &o->meta[m];
        xpv_str d = em->display_name.len ? em->display_name : em->name;
        int hit = 0;
        for (size_t k = 0; k < sizeof keywords / sizeof keywords[0] && !hit; k++)
            hit = find(d, keywords[k]) != NULL;
        if (!hit || !find(em->name, "S(5)")) continue;
        om->kind = find(d, "-start") ? 1 : find(d, "-done") ? 2 : 0;
        if (!om->kind) continue;
        if (9 + 2 * (size_t)d.len > kcap) {
            kcap = 9 + 2 * (size_t)d.len;
            kbuf = xpv_xrealloc(kbuf, kcap);
        }
        size_t klen = offload_key(kbuf, d);
        int found;
        strmap_ent *ent = strmap_put(&seen, a, kbuf, klen, &found); /* key copied into a */
        if (!found) {
            if (o->nkeys == cap) {
                cap = cap ? cap * 2 : 16;
                o->keys = xpv_xrealloc(o->keys, cap * sizeof *o->keys);
            }
            ent->val = o->nkeys;
            o->keys[o->nkeys++] = (xpv_str){ent->k, ent->klen};
        }
        om->key = ent->val;
        for (uint32_t s = 0; s < em->nstats; s++) {
            const xpv_stat *st = &em->stats[s];
            int64_t v;
            if (st->meta == raw_id && raw_id >= 0) {
                om->has_raw = (uint8_t)xpv_stat_as_int(st, &v);
                om->raw = om->has_raw ? v : om->raw;
            }
            if (st->meta == shape_id && shape_id >= 0 && st->kind == XPV_STAT_STR) om->shape = st->v.s;
        }
    }
    strmap_free(&seen);
    free(kbuf);
}

/* Merge the sorted runs c[run[r]..run[r+1]) (r < nrun) into one sorted
 * array, pairwise (O(n log nrun)); returns the array holding the result
 * (c or tmp). */
static cand *merge_runs(const xpv_plane *pl, cand *c, cand *tmp, size_t *run, size_t nrun) {
    while (nrun > 1) {
        size_t w = 0;
        for (size_t r = 0; r < nrun; r += 2) {
            size_t lo = run[r], mid = run[r + 1], hi = r + 2 <= nrun ? run[r + 2] : mid;
            size_t i = lo, j = mid, o = lo;
            while (i < mid && j < hi) tmp[o++] = before(pl, c[j], c[i]) ? c[j++] : c[i++];
            while (i < mid) tmp[o++] = c[i++];
            while (j < hi) tmp[o++] = c[j++];
            run[w++] = lo;
        }
        run[w] = run[nrun];
        nrun = w;
        cand *t = c;
        c = tmp;
        tmp = t;
    }
    return c;
}

/* Sorts c[0..n) in the plane's time order. */
static void sort_cands(const xpv_plane *pl, cand *c, size_t n) {
    xpv_time_key *r = xpv_xmalloc(n * sizeof *r);
    for (size_t i = 0; i < n; i++) {
        const xpv_event *e = cev(pl, c[i]);
        r[i] = (xpv_time_key){e->start_ps, e->dur_ps, (uint64_t)c[i].li << 32 | c[i].ei};
    }
    qsort(r, n, sizeof *r, xpv_cmp_time_key);
    for (size_t i = 0; i < n; i++) c[i] = (cand){(uint32_t)(r[i].tie >> 32), (uint32_t)r[i].tie};
    free(r);
}

/* Whether event `e` of line `ln` is a candidate: a start or done
 * metadata (`kind`), and no non-zero `_a` when the line may carry one. */
static int is_cand(const xpv_plane *pl, const xpv_line *ln, const xpv_event *e, const uint8_t *kind,
                   int check_a, const xpv_stat_set *set) {
    if (!kind[e->meta]) return 0;
    xpv_stat st;
    int64_t a;
    return !(check_a && xpv_event_stats_in(pl, ln, e, set, &st, NULL) && xpv_stat_as_int(&st, &a) &&
             a);
}

/* The candidate events in time order (`kind`: per metadata, non-zero for
 * a candidate).  A line's events are usually in time order already: each
 * line's candidates form a run, and the runs are merged; only when some
 * run is out of order is the whole array sorted. */
static size_t candidates(const xpv_plane *pl, const uint8_t *kind, const xpv_stat_set *set,
                         int32_t async_id, cand **out) {
    size_t n = 0, cap = 0, nrun = 0;
    cand *c = NULL;
    size_t *run = xpv_xmalloc(((size_t)pl->nlines + 1) * sizeof *run);
    int sorted = 1;
    for (uint32_t li = 0; li < pl->nlines; li++) {
        const xpv_line *ln = &pl->lines[li];
        int check_a = async_id >= 0 && xpv_line_may_have(ln, set);
        size_t first = n;
        int64_t ps = 0, pd = 0;
        for (uint32_t i = 0; i < ln->nevents; i++) {
            const xpv_event *e = &ln->events[i];
            if (!is_cand(pl, ln, e, kind, check_a, set)) continue;
            if (n == cap) {
                cap = cap ? cap * 2 : 1024;
                c = xpv_xrealloc(c, cap * sizeof *c);
            }
            if (n > first && (e->start_ps < ps || (e->start_ps == ps && e->dur_ps > pd)))
                sorted = 0;
            ps = e->start_ps;
            pd = e->dur_ps;
            c[n++] = (cand){li, i};
        }
        if (n > first) run[nrun++] = first;
    }
    run[nrun] = n;
    if (n && !sorted) {
        sort_cands(pl, c, n);
    } else if (nrun > 1) {
        cand *tmp = xpv_xmalloc(n * sizeof *tmp);
        cand *m = merge_runs(pl, c, tmp, run, nrun);
        free(m == c ? tmp : c);
        c = m;
    }
    free(run);
    *out = c;
    return n;
}

/* A queued start: its begin and metadata. */
typedef struct qent {
    int64_t begin;
    uint32_t smeta;
} qent;

/* One key's queued starts, oldest first: a ring of `cap` (a power of two,
 * 0 before the first start) from `head`. */
typedef struct qring {
    qent *q;
    uint32_t head, len, cap;
} qring;

/* The pairing of starts and dones, fed the candidates in time order. */
typedef struct xpv_dl_pairing {
    xpv_dl_offload *o;
    qring *ring;               /* per key */
    int64_t frontier[MAX_ROWS];
    /* the rows in place()'s order of preference, smallest frontier first,
     * the later row first on equal frontiers: a ring of o->nrows entries
     * from rhead (rows are mostly used in turn, so a row whose frontier
     * moves goes from the head to the tail) */
    uint8_t ring_rows[MAX_ROWS];
    uint32_t rhead;
    uint8_t unsorted[MAX_ROWS];
} pairing;

static void ring_grow(qring *r) {
    uint32_t cap = r->cap ? r->cap * 2 : 16;
    qent *q = xpv_xmalloc(cap * sizeof *q);
    for (uint32_t i = 0; i < r->len; i++) q[i] = r->q[(r->head + i) & (r->cap - 1)];
    free(r->q);
    *r = (qring){q, 0, r->len, cap};
}

/* Whether row a comes before row b in place()'s order. */
static inline int row_before(const pairing *p, uint32_t a, uint32_t b) {
    int64_t fa = p->frontier[a], fb = p->frontier[b];
    return fa < fb || (fa == fb && a > b);
}

static inline uint32_t ring_at(const pairing *p, uint32_t k) {
    uint32_t i = p->rhead + k;
    return i >= MAX_ROWS ? i - MAX_ROWS : i;
}

/* Put row `r` among the first `m` rows of the ring, in order (looking
 * from the tail: usually it goes last). */
static void ring_insert(pairing *p, uint32_t r, uint32_t m) {
    uint32_t j = m;
    while (j > 0 && row_before(p, r, p->ring_rows[ring_at(p, j - 1)])) {
        p->ring_rows[ring_at(p, j)] = p->ring_rows[ring_at(p, j - 1)];
        j--;
    }
    p->ring_rows[ring_at(p, j)] = (uint8_t)r;
}

/* The row of an op from `begin` to `end`: among the rows, the one with
 * the smallest frontier at or before `begin` (ties: the later row), else
 * a new row, else the last.  That row is the ring's head when any is. */
static uint32_t place(pairing *p, int64_t begin, int64_t end) {
    int64_t *frontier = p->frontier;
    uint32_t n = p->o->nrows;
    if (n && frontier[p->ring_rows[p->rhead]] <= begin) {
        uint32_t idx = p->ring_rows[p->rhead];
        if (end > frontier[idx]) frontier[idx] = end;
        p->rhead = ring_at(p, 1);
        ring_insert(p, idx, n - 1);
        return idx;
    }
    if (n < MAX_ROWS) {
        frontier[n] = end;
        p->o->nrows = n + 1;
        ring_insert(p, n, n);
        return n;
    }
    uint32_t idx = MAX_ROWS - 1;
    if (end > frontier[idx]) {
        uint32_t k = 0;
        while (p->ring_rows[ring_at(p, k)] != idx) k++;
        for (; k + 1 < n; k++) p->ring_rows[ring_at(p, k)] = p->ring_rows[ring_at(p, k + 1)];
        frontier[idx] = end;
        ring_insert(p, idx, n - 1);
    }
    return idx;
}

static void push_op(pairing *p, uint32_t r, xpv_event op) {
    xpv_dl_offload *o = p->o;
    if (o->nrow[r] == o->caprow[r]) {
        o->caprow[r] = o->caprow[r] ? o->caprow[r] * 2 : 256;
        o->row[r] = xpv_xrealloc(o->row[r], o->caprow[r] * sizeof *o->row[r]);
    }
    if (o->nrow[r]) {
        const xpv_event *l = &o->row[r][o->nrow[r] - 1];
        if (l->start_ps > op.start_ps || (l->start_ps == op.start_ps && l->dur_ps < op.dur_ps))
            p->unsorted[r] = 1;
    }
    o->row[r][o->nrow[r]++] = op;
}

/* One candidate, in time order: a start is queued under its key, a done
 * takes the oldest queued start of its key and makes an op. */
static void feed(pairing *p, const xpv_event *e) {
    const xpv_dl_offload_meta *m = &p->o->meta[e->meta];
    qring *r = &p->ring[m->key];
    if (m->kind == 1) {
        if (r->len == r->cap) ring_grow(r);
        r->q[(r->head + r->len++) & (r->cap - 1)] = (qent){e->start_ps, e->meta};
        return;
    }
    if (!r->len) return; /* a done whose start was not traced */
    qent sn = r->q[r->head];
    r->head = (r->head + 1) & (r->cap - 1);
    r->len--;
    int64_t begin = sn.begin, end = xpv_add_i64(e->start_ps, e->dur_ps, NULL);
    uint32_t row = place(p, begin, end);
    push_op(p, row, (xpv_event){begin, end > begin ? end - begin : 0, e->meta, sn.smeta});
}

/* Back to no op and no queued start (the walk starts over). */
static void pairing_reset(pairing *p) {
    for (uint32_t r = 0; r < p->o->nrows; r++) p->o->nrow[r] = 0;
    p->o->nrows = 0;
    for (uint32_t k = 0; k < p->o->nkeys; k++) p->ring[k].head = p->ring[k].len = 0;
    p->rhead = 0;
    memset(p->unsorted, 0, sizeof p->unsorted);
}

/* Rows are made in time order but for the last one once all 41 exist
 * (it takes what fits nowhere else) and zero-length ties: sort those. */
static void sort_row(xpv_dl_offload *o, uint32_t r) {
    size_t n = o->nrow[r];
    xpv_time_key *t = xpv_xmalloc(n * sizeof *t);
    for (size_t i = 0; i < n; i++)
        t[i] = (xpv_time_key){o->row[r][i].start_ps, o->row[r][i].dur_ps, i};
    qsort(t, n, sizeof *t, xpv_cmp_time_key);
    xpv_event *s = xpv_xmalloc(n * sizeof *s);
    for (size_t i = 0; i < n; i++) s[i] = o->row[r][t[i].tie];
    free(o->row[r]);
    o->row[r] = s;
    o->caprow[r] = n;
    free(t);
}

/* The walk: in one pass over the plane's events when they are in time
 * order as stored (candidates on one line, in order: the usual case),
 * else over the candidates gathered and put in time order. */
void xpv_dl_offload_walk(xpv_dl_offload *o, const xpv_plane *pl) {
    pairing *p = o->pairing;
    const uint8_t *kind = o->kind;
    int32_t async_id = xpv_stat_id(pl, "_a");
    xpv_stat_set set;
    xpv_stat_set_init(&set, pl, &async_id, 1);
    int64_t ps = 0, pd = 0;
    int64_t cline = -1;
    for (uint32_t li = 0; li < pl->nlines; li++) {
        const xpv_line *ln = &pl->lines[li];
        int check_a = async_id >= 0 && xpv_line_may_have(ln, &set);
        for (uint32_t i = 0; i < ln->nevents; i++) {
            const xpv_event *e = &ln->events[i];
            if (!is_cand(pl, ln, e, kind, check_a, &set)) continue;
            if (cline >= 0 && (cline != li || e->start_ps < ps ||
                               (e->start_ps == ps && e->dur_ps > pd)))
                goto gathered;
            cline = li;
            ps = e->start_ps;
            pd = e->dur_ps;
            feed(p, e);
        }
    }
    return;
gathered:
    pairing_reset(p);
    cand *c = NULL;
    size_t n = candidates(pl, kind, &set, async_id, &c);
    for (size_t i = 0; i < n; i++) feed(p, cev(pl, c[i]));
    free(c);
}

int xpv_dl_offload_outside(const xpv_dl_offload *o, const xpv_plane *pl, const uint8_t *skip) {
    int32_t async_id = xpv_stat_id(pl, "_a");
    xpv_stat_set set;
    xpv_stat_set_init(&set, pl, &async_id, 1);
    for (uint32_t li = 0; li < pl->nlines; li++) {
        const xpv_line *ln = &pl->lines[li];
        if (skip[li]) continue;
        int check_a = async_id >= 0 && xpv_line_may_have(ln, &set);
        for (uint32_t i = 0; i < ln->nevents; i++)
            if (is_cand(pl, ln, &ln->events[i], o->kind, check_a, &set)) return 1;
    }
    return 0;
}

void xpv_dl_offload_feed(xpv_dl_offload *o, const xpv_event *e) { feed(o->pairing, e); }

uint32_t xpv_dl_offload_begin(const xpv_plane *pl, xpv_arena *arena, xpv_dl_offload *o) {
    memset(o, 0, sizeof *o);
    size_t nm = pl->nevent_meta ? pl->nevent_meta : 1;
    o->meta = xpv_xcalloc(nm, sizeof *o->meta);
    classify(pl, arena, o);
    if (!o->nkeys) return 0;
    o->kind = xpv_xcalloc(nm, 1);
    for (uint32_t m = 0; m < pl->nevent_meta; m++) o->kind[m] = o->meta[m].kind;
    pairing *p = o->pairing = xpv_xcalloc(1, sizeof *p);
    p->o = o;
    p->ring = xpv_xcalloc(o->nkeys, sizeof *p->ring);
    return o->nkeys;
}

uint32_t xpv_dl_offload_end(xpv_dl_offload *o) {
    pairing *p = o->pairing;
    if (!p) return 0;
    for (uint32_t r = 0; r < o->nrows; r++)
        if (p->unsorted[r]) sort_row(o, r);
    for (uint32_t k = 0; k < o->nkeys; k++) free(p->ring[k].q);
    free(p->ring);
    free(p);
    o->pairing = NULL;
    return o->nrows;
}

void xpv_dl_offload_free(xpv_dl_offload *o) {
    xpv_dl_offload_end(o);
    for (uint32_t r = 0; r < XPV_DL_OFFLOAD_ROWS; r++) free(o->row[r]);
    free(o->meta);
    free(o->kind);
    free(o->keys);
    memset(o, 0, sizeof *o);
}
