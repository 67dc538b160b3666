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
#include "derived_lines_int.h"

#define MAX_ROWS 41 /* kThreadIdHostOffloadOpEnd - kThreadIdHostOffloadOpStart + 1 */

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

/* Per candidate metadata: 1 start, 2 done; its key's index. */
typedef struct cmeta {
    uint8_t kind;
    uint32_t key;
    int64_t raw;
    int has_raw;
    xpv_str shape;
} cmeta;

typedef struct cand {
    int64_t start, dur;
    uint32_t li, ei, meta;
} cand;

static int cmp_cand(const void *a, const void *b) {
    const cand *x = a, *y = b;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    if (x->dur != y->dur) return x->dur > y->dur ? -1 : 1;
    if (x->li != y->li) return x->li < y->li ? -1 : 1;
    return x->ei < y->ei ? -1 : x->ei > y->ei;
}

static int cmp_ev(const void *a, const void *b) {
    const xpv_dl_offload_ev *x = a, *y = b;
    if (x->start_ps != y->start_ps) return x->start_ps < y->start_ps ? -1 : 1;
    if (x->dur_ps != y->dur_ps) return x->dur_ps > y->dur_ps ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The key of a display name, in the arena. */
static xpv_str offload_key(xpv_arena *a, xpv_str d) {
    const char *cut = find(d, "-start");
    if (!cut) cut = find(d, "-done");
    size_t plen = cut ? (size_t)(cut - d.ptr) : d.len;
    const char *dot = NULL;
    for (uint32_t i = 0; i < d.len; i++)
        if (d.ptr[i] == '.') dot = d.ptr + i;
    const char *id = dot ? dot + 1 : "0";
    size_t idlen = dot ? (size_t)(d.ptr + d.len - dot - 1) : 1;
    size_t n = 8 + plen + 1 + idlen;
    char *s = xpv_arena_alloc(a, n + 1);
    memcpy(s, "offload-", 8);
    memcpy(s + 8, d.ptr, plen);
    s[8 + plen] = '.';
    memcpy(s + 9 + plen, id, idlen);
    s[n] = 0;
    return (xpv_str){s, (uint32_t)n};
}

/* Candidate metadata of the plane (kind 0: not one); keys deduplicated.
 * Returns the number of keys. */
static uint32_t classify(const xpv_plane *pl, xpv_arena *a, cmeta *cm, xpv_str **keys_out) {
    int32_t raw_id = xpv_stat_id(pl, "raw_bytes_accessed");
    int32_t shape_id = xpv_stat_id(pl, "shape_with_layout");
    xpv_str *keys = NULL;
    uint32_t nkeys = 0, cap = 0;
    for (uint32_t m = 0; m < pl->nevent_meta; m++) {
        const xpv_event_meta *em = &pl->event_meta[m];
        xpv_str d = em->display_name.len ? em->display_name : em->name;
        int hit = 0;
        for (size_t k = 0; k < sizeof keywords / sizeof keywords[0] && !hit; k++)
            hit = find(d, keywords[k]) != NULL;
        if (!hit || !find(em->name, "S(5)")) continue;
        cm[m].kind = find(d, "-start") ? 1 : find(d, "-done") ? 2 : 0;
        if (!cm[m].kind) continue;
        xpv_str key = offload_key(a, d);
        uint32_t k = 0;
        while (k < nkeys && !(keys[k].len == key.len && !memcmp(keys[k].ptr, key.ptr, key.len))) k++;
        if (k == nkeys) {
            if (nkeys == cap) {
                cap = cap ? cap * 2 : 16;
                keys = xpv_xrealloc(keys, cap * sizeof *keys);
            }
            keys[nkeys++] = key;
        }
        cm[m].key = k;
        for (uint32_t s = 0; s < em->nstats; s++) {
            const xpv_stat *st = &em->stats[s];
            if (st->meta == raw_id && raw_id >= 0) cm[m].has_raw = xpv_stat_as_int(st, &cm[m].raw);
            if (st->meta == shape_id && shape_id >= 0 && st->kind == XPV_STAT_STR) cm[m].shape = st->v.s;
        }
    }
    *keys_out = keys;
    return nkeys;
}

/* The candidate events in time order, `_a` ones left out. */
static size_t candidates(const xpv_plane *pl, const cmeta *cm, cand **out) {
    int32_t async_id = xpv_stat_id(pl, "_a");
    size_t n = 0, cap = 0;
    cand *c = NULL;
    for (uint32_t li = 0; li < pl->nlines; li++) {
        const xpv_line *ln = &pl->lines[li];
        for (uint32_t i = 0; i < ln->nevents; i++) {
            const xpv_event *e = &ln->events[i];
            if (!cm[e->meta].kind) continue;
            xpv_stat st;
            int64_t a;
            if (async_id >= 0 && xpv_event_stat(pl, ln, e, async_id, &st) &&
                xpv_stat_as_int(&st, &a) && a)
                continue;
            if (n == cap) {
                cap = cap ? cap * 2 : 64;
                c = xpv_xrealloc(c, cap * sizeof *c);
            }
            c[n++] = (cand){e->start_ps, e->dur_ps, li, i, e->meta};
        }
    }
    if (n) qsort(c, n, sizeof *c, cmp_cand);
    *out = c;
    return n;
}

static void row_push(xpv_dl_offload_line *row, const xpv_dl_offload_ev *ev) {
    if (row->n == row->cap) {
        row->cap = row->cap ? row->cap * 2 : 16;
        row->ev = xpv_xrealloc(row->ev, row->cap * sizeof *row->ev);
    }
    row->ev[row->n++] = *ev;
}

uint32_t xpv_dl_host_offload(const xpv_plane *pl, xpv_arena *arena, xpv_dl_offload_line *rows) {
    cmeta *cm = xpv_xcalloc(pl->nevent_meta ? pl->nevent_meta : 1, sizeof *cm);
    xpv_str *keys;
    uint32_t nkeys = classify(pl, arena, cm, &keys);
    uint32_t nrows = 0;
    cand *c = NULL;
    size_t n = nkeys ? candidates(pl, cm, &c) : 0;
    /* Per key a FIFO of its queued starts, linked through `next`: head
     * and tail as indices into c, plus 1 (0: empty). */
    size_t *qhead = xpv_xcalloc(nkeys ? nkeys : 1, sizeof *qhead);
    size_t *last = xpv_xcalloc(nkeys ? nkeys : 1, sizeof *last);
    size_t *next = xpv_xmalloc((n ? n : 1) * sizeof *next);
    int64_t frontier[MAX_ROWS];
    uint64_t seq = 0;
    for (size_t i = 0; i < n; i++) {
        const cmeta *m = &cm[c[i].meta];
        uint32_t k = m->key;
        if (m->kind == 1) {
            next[i] = 0;
            if (last[k]) next[last[k] - 1] = i + 1;
            else qhead[k] = i + 1;
            last[k] = i + 1;
            continue;
        }
        if (!qhead[k]) continue; /* a done whose start was not traced */
        size_t s = qhead[k] - 1;
        qhead[k] = next[s];
        if (!qhead[k]) last[k] = 0;
        int64_t begin = c[s].start, end = xpv_add_i64(c[i].start, c[i].dur, NULL);
        int idx = -1;
        int64_t minf = begin;
        for (uint32_t r = 0; r < nrows; r++)
            if (frontier[r] <= minf) {
                idx = (int)r;
                minf = frontier[r];
            }
        if (idx < 0) {
            if (nrows < MAX_ROWS) frontier[nrows++] = end;
            idx = (int)nrows - 1;
        }
        if (end > frontier[idx]) frontier[idx] = end;
        const cmeta *sm = &cm[c[s].meta];
        xpv_dl_offload_ev ev = {begin, end > begin ? end - begin : 0, keys[k], m->has_raw, m->raw,
                                sm->shape, seq++};
        row_push(&rows[idx], &ev);
    }
    for (uint32_t r = 0; r < nrows; r++)
        if (rows[r].n > 1) qsort(rows[r].ev, rows[r].n, sizeof *rows[r].ev, cmp_ev);
    free(cm);
    free(keys);
    free(c);
    free(qhead);
    free(next);
    free(last);
    return nrows;
}
