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

/* Candidate metadata of the plane (kind 0: not one); keys deduplicated.
 * Returns the number of keys. */
static uint32_t classify(const xpv_plane *pl, xpv_arena *a, cmeta *cm, xpv_str **keys_out) {
    int32_t raw_id = xpv_stat_id(pl, "raw_bytes_accessed");
    int32_t shape_id = xpv_stat_id(pl, "shape_with_layout");
    xpv_str *keys = NULL;
    uint32_t nkeys = 0, cap = 0;
    strmap seen; /* key -> index in keys (a hash: hostile planes hold many) */
    memset(&seen, 0, sizeof seen);
    char *kbuf = NULL;
    size_t kcap = 0;
    for (uint32_t m = 0; m < pl->nevent_meta; m++) {
        const xpv_event_meta *em = &pl->event_meta[m];
        xpv_str d = em->display_name.len ? em->display_name : em->name;
        int hit = 0;
        for (size_t k = 0; k < sizeof keywords / sizeof keywords[0] && !hit; k++)
            hit = find(d, keywords[k]) != NULL;
        if (!hit || !find(em->name, "S(5)")) continue;
        cm[m].kind = find(d, "-start") ? 1 : find(d, "-done") ? 2 : 0;
        if (!cm[m].kind) continue;
        if (9 + 2 * (size_t)d.len > kcap) {
            kcap = 9 + 2 * (size_t)d.len;
            kbuf = xpv_xrealloc(kbuf, kcap);
        }
        size_t klen = offload_key(kbuf, d);
        int found;
        strmap_ent *ent = strmap_put(&seen, a, kbuf, klen, &found); /* key copied into a */
        if (!found) {
            if (nkeys == cap) {
                cap = cap ? cap * 2 : 16;
                keys = xpv_xrealloc(keys, cap * sizeof *keys);
            }
            ent->val = nkeys;
            keys[nkeys++] = (xpv_str){ent->k, ent->klen};
        }
        cm[m].key = ent->val;
        for (uint32_t s = 0; s < em->nstats; s++) {
            const xpv_stat *st = &em->stats[s];
            if (st->meta == raw_id && raw_id >= 0) cm[m].has_raw = xpv_stat_as_int(st, &cm[m].raw);
            if (st->meta == shape_id && shape_id >= 0 && st->kind == XPV_STAT_STR) cm[m].shape = st->v.s;
        }
    }
    strmap_free(&seen);
    free(kbuf);
    *keys_out = keys;
    return nkeys;
}

/* Merge the sorted runs c[run[r]..run[r+1]) (r < nrun) into one sorted
 * array, pairwise (O(n log nrun)); returns the array holding the result
 * (c or tmp). */
static cand *merge_runs(cand *c, cand *tmp, size_t *run, size_t nrun) {
    while (nrun > 1) {
        size_t w = 0;
        for (size_t r = 0; r < nrun; r += 2) {
            size_t lo = run[r], mid = run[r + 1], hi = r + 2 <= nrun ? run[r + 2] : mid;
            size_t i = lo, j = mid, o = lo;
            while (i < mid && j < hi) tmp[o++] = cmp_cand(&c[j], &c[i]) < 0 ? c[j++] : c[i++];
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

/* The candidate events in time order, `_a` ones left out.  A line's
 * events are usually in time order already: each line's candidates form a
 * run, and the runs are merged; only when some run is out of order is the
 * whole array sorted. */
static size_t candidates(const xpv_plane *pl, const cmeta *cm, cand **out) {
    int32_t async_id = xpv_stat_id(pl, "_a");
    xpv_stat_set set;
    xpv_stat_set_init(&set, pl, &async_id, 1);
    size_t n = 0, cap = 0, nrun = 0;
    for (uint32_t li = 0; li < pl->nlines; li++)
        for (uint32_t i = 0; i < pl->lines[li].nevents; i++)
            cap += cm[pl->lines[li].events[i].meta].kind != 0;
    cand *c = xpv_xmalloc((cap ? cap : 1) * sizeof *c); /* every candidate fits */
    size_t *run = xpv_xmalloc(((size_t)pl->nlines + 1) * sizeof *run);
    int sorted = 1;
    for (uint32_t li = 0; li < pl->nlines; li++) {
        const xpv_line *ln = &pl->lines[li];
        int check_a = async_id >= 0 && xpv_line_may_have(ln, &set);
        size_t first = n;
        for (uint32_t i = 0; i < ln->nevents; i++) {
            const xpv_event *e = &ln->events[i];
            if (!cm[e->meta].kind) continue;
            xpv_stat st;
            int64_t a;
            if (check_a && xpv_event_stats_in(pl, ln, e, &set, &st, NULL) &&
                xpv_stat_as_int(&st, &a) && a)
                continue;
            c[n] = (cand){e->start_ps, e->dur_ps, li, i, e->meta};
            if (n > first && cmp_cand(&c[n - 1], &c[n]) > 0) sorted = 0;
            n++;
        }
        if (n > first) run[nrun++] = first;
    }
    run[nrun] = n;
    if (n && !sorted) {
        qsort(c, n, sizeof *c, cmp_cand);
    } else if (nrun > 1) {
        cand *tmp = xpv_xmalloc(n * sizeof *tmp);
        cand *m = merge_runs(c, tmp, run, nrun);
        free(m == c ? tmp : c);
        c = m;
    }
    free(run);
    *out = c;
    return n;
}

/* Share the `np` events of `all` (row of each in `rowof`) out to their
 * rows, each in time order. */
static void fill_rows(xpv_dl_offload_line *rows, uint32_t nrows, const xpv_dl_offload_ev *all,
                      const uint8_t *rowof, size_t np) {
    for (size_t i = 0; i < np; i++) rows[rowof[i]].cap++;
    for (uint32_t r = 0; r < nrows; r++)
        rows[r].ev = xpv_xmalloc((rows[r].cap ? rows[r].cap : 1) * sizeof *rows[r].ev);
    for (size_t i = 0; i < np; i++) {
        xpv_dl_offload_line *row = &rows[rowof[i]];
        row->ev[row->n++] = all[i];
    }
    for (uint32_t r = 0; r < nrows; r++) {
        size_t i = 1;
        while (i < rows[r].n && cmp_ev(&rows[r].ev[i - 1], &rows[r].ev[i]) <= 0) i++;
        if (i < rows[r].n) qsort(rows[r].ev, rows[r].n, sizeof *rows[r].ev, cmp_ev);
    }
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
    xpv_dl_offload_ev *all = xpv_xmalloc((n ? n : 1) * sizeof *all); /* pairs <= dones */
    uint8_t *rowof = xpv_xmalloc(n ? n : 1);
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
                                sm->shape, seq};
        rowof[seq] = (uint8_t)idx;
        all[seq++] = ev;
    }
    fill_rows(rows, nrows, all, rowof, (size_t)seq);
    free(all);
    free(rowof);
    free(cm);
    free(keys);
    free(c);
    free(qhead);
    free(next);
    free(last);
    return nrows;
}
