/*
 * trace_index_image.c - the trace index as a byte image (see
 * trace_index.h: xpv_trace_index_save / _seal / _load), so a built index
 * can be kept in --cache_dir and mapped back without rebuilding.
 */
#include "trace_index.h"
#include "trace_index_int.h"

#include <stdlib.h>
#include <string.h>

#define LV XPV_TRACE_LEVELS

/* ==== Persistence ======================================================= */

/*
 * Image layout (host byte order, checked by a byte-order mark; every
 * section a multiple of 8 bytes):
 *
 *   header   128 bytes: magic "XPVTRIX\0", format, byte-order mark, levels,
 *            nhosts, nprocs, nrows, ngroups, nsteps, nidx, min_ps, max_ps,
 *            ndropped, ncounter, body length, hash (of the header
 *            fields before it and of the body), zero padding
 *   hosts    per host: nplanes u32, 0 u32, nevents u64, fingerprint u64
 *            (of the profiles the image belongs to: see prof_print)
 *   rows     per row: host, plane, line, group0, ngroups u32, 0, nevents u64
 *   groups   per group: row, key u32, off u64, seg[LEVELS + 1] u32, 0 u32
 *   steps    per step: start_ps, dur_ps i64, row, ev u32
 *   idx      nidx u32 event indices
 *
 * Only numbers are stored.  Names, pids, tids and stat ids are re-derived
 * from the profiles on load by the same pass 1 as a build, and the stored
 * rows must match that layout exactly.
 */
#define IMG_MAGIC "XPVTRIX"
#define IMG_BOM 0x01020304u
#define IMG_HEAD 128
#define IMG_HOST 24
#define IMG_ROW 32
#define IMG_GROUP (16 + 4 * (LV + 1) + 4)
#define IMG_STEP 24

static inline uint64_t rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

/* 64-bit hash of the image body (detects corruption; not cryptographic:
 * bounds are checked regardless).  Four independent lanes, ~10 GB/s. */
static uint64_t img_hash(const unsigned char *p, size_t n) {
    const uint64_t k1 = 0x9e3779b97f4a7c15ULL, k2 = 0xc2b2ae3d27d4eb4fULL;
    uint64_t h[4] = {k1, k2, k1 ^ k2, (uint64_t)n};
    size_t i = 0;
    for (; i + 32 <= n; i += 32)
        for (int k = 0; k < 4; k++) {
            uint64_t w;
            memcpy(&w, p + i + 8 * (size_t)k, 8);
            h[k] = rotl64(h[k] ^ (w * k2), 31) * k1;
        }
    for (; i < n; i++) h[i & 3] = rotl64(h[i & 3] ^ (p[i] * k2), 31) * k1;
    uint64_t r = h[0] ^ rotl64(h[1], 17) ^ rotl64(h[2], 29) ^ rotl64(h[3], 43);
    r ^= r >> 33;
    r *= k2;
    r ^= r >> 29;
    return r;
}

static void put32(xpv_buf *b, uint32_t v) { xpv_buf_add(b, &v, 4); }
static void put64(xpv_buf *b, uint64_t v) { xpv_buf_add(b, &v, 8); }

static uint64_t prof_events(const xpv_profile *p) { return p ? p->nevents : 0; }
static uint32_t prof_planes(const xpv_profile *p) { return p ? p->nplanes : 0; }

/* A cheap fingerprint of a profile (its size, and per line the event
 * count and the first and last events' times): an image is only loaded
 * for the profiles it was made from, even if two files had the same
 * shape.  O(lines). */
static uint64_t prof_print(const xpv_profile *p) {
    uint64_t h = 0x84222325cbf29ce4ULL;
    if (!p) return h;
    uint64_t v = p->file_size;
    h = img_hash((const unsigned char *)&v, 8) ^ rotl64(h, 7);
    for (uint32_t i = 0; i < p->nplanes; i++)
        for (uint32_t j = 0; j < p->planes[i].nlines; j++) {
            const xpv_line *ln = &p->planes[i].lines[j];
            int64_t w[5] = {ln->nevents, 0, 0, 0, 0};
            if (ln->nevents) {
                w[1] = ln->events[0].start_ps;
                w[2] = ln->events[0].dur_ps;
                w[3] = ln->events[ln->nevents - 1].start_ps;
                w[4] = ln->events[ln->nevents - 1].dur_ps;
            }
            h = img_hash((const unsigned char *)w, sizeof w) ^ rotl64(h, 7);
        }
    return h;
}

void xpv_trace_index_save(const xpv_trace_index *ix, const xpv_hostset *hs, xpv_buf *out) {
    size_t base = out->len;
    unsigned char head[IMG_HEAD];
    uint32_t h32[8] = {XPV_TRACE_INDEX_FORMAT, IMG_BOM, LV, (uint32_t)hs->n,
                       ix->nprocs, ix->nrows, ix->ngroups, ix->nsteps};
    uint64_t h64[5] = {ix->nidx, (uint64_t)ix->min_ps, (uint64_t)ix->max_ps, ix->ndropped,
                       ix->ncounter};
    memset(head, 0, sizeof head);
    memcpy(head, IMG_MAGIC, 8);
    memcpy(head + 8, h32, sizeof h32);
    memcpy(head + 40, h64, sizeof h64);
    xpv_buf_add(out, head, sizeof head);
    for (size_t h = 0; h < hs->n; h++) {
        put32(out, prof_planes(hs->profiles[h]));
        put32(out, 0);
        put64(out, prof_events(hs->profiles[h]));
        put64(out, prof_print(hs->profiles[h]));
    }
    for (uint32_t i = 0; i < ix->nrows; i++) {
        const xpv_trace_row *r = &ix->rows[i];
        put32(out, r->host);
        put32(out, r->plane);
        put32(out, r->line);
        put32(out, r->group0);
        put32(out, r->ngroups);
        put32(out, 0);
        put64(out, r->nevents);
    }
    for (uint32_t i = 0; i < ix->ngroups; i++) {
        const xpv_trace_group *g = &ix->groups[i];
        put32(out, g->row);
        put32(out, g->key);
        put64(out, g->off);
        xpv_buf_add(out, g->seg, sizeof g->seg);
        put32(out, 0);
    }
    for (uint32_t i = 0; i < ix->nsteps; i++) {
        const xpv_trace_step *st = &ix->steps[i];
        put64(out, (uint64_t)st->start_ps);
        put64(out, (uint64_t)st->dur_ps);
        put32(out, st->row);
        put32(out, st->ev);
    }
    xpv_buf_add(out, ix->idx, ix->nidx * sizeof *ix->idx);
    if (ix->nidx & 1) put32(out, 0);
    uint64_t body = out->len - base - IMG_HEAD;
    memcpy(out->data + base + 80, &body, 8);
    xpv_trace_index_seal(out->data + base, out->len - base);
}

/* Hash of an image: header fields before the hash, and the body. */
static uint64_t image_hash(const unsigned char *p, size_t len) {
    return img_hash(p, 88) * 0x100000001b3ULL + img_hash(p + IMG_HEAD, len - IMG_HEAD);
}

void xpv_trace_index_seal(void *img, size_t len) {
    if (len < IMG_HEAD) return;
    uint64_t hash = image_hash(img, len);
    memcpy((unsigned char *)img + 88, &hash, 8);
}

/* A bounds-checked cursor over an image whose total length was checked
 * against its counts: reads cannot fail. */
typedef struct img_rd {
    const unsigned char *p;
    size_t at;
} img_rd;

static uint32_t get32(img_rd *r) {
    uint32_t v;
    memcpy(&v, r->p + r->at, 4);
    r->at += 4;
    return v;
}
static uint64_t get64(img_rd *r) {
    uint64_t v;
    memcpy(&v, r->p + r->at, 8);
    r->at += 8;
    return v;
}

static uint32_t row_line_events(const xpv_hostset *hs, const xpv_trace_row *r) {
    return (*r->ln).nevents;
}

xpv_trace_index *xpv_trace_index_load(const xpv_hostset *hs, const void *data, size_t len) {
    const unsigned char *p = data;
    xpv_trace_index *ix = NULL;
    builder b;
    memset(&b, 0, sizeof b);
    if (!p || len < IMG_HEAD || memcmp(p, IMG_MAGIC, 8) != 0) return NULL;
    uint32_t h32[8];
    uint64_t h64[7];
    memcpy(h32, p + 8, sizeof h32);
    memcpy(h64, p + 40, sizeof h64);
    if (h32[0] != XPV_TRACE_INDEX_FORMAT || h32[1] != IMG_BOM || h32[2] != LV ||
        h32[3] != hs->n)
        return NULL;
    for (size_t i = 96; i < IMG_HEAD; i++)
        if (p[i]) return NULL;
    uint32_t nprocs = h32[4], nrows = h32[5], ngroups = h32[6], nsteps = h32[7];
    uint64_t nidx = h64[0], body = h64[5], hash = h64[6];
    size_t avail = len - IMG_HEAD;
    /* Exact body length from the counts; every product fits in 64 bits
     * (32-bit counts times < 256) once nidx is bounded by the length. */
    if (body != avail || nidx > avail / 4 || nsteps > MAX_STEPS) return NULL;
    uint64_t need = (uint64_t)hs->n * IMG_HOST + (uint64_t)nrows * IMG_ROW +
                    (uint64_t)ngroups * IMG_GROUP + (uint64_t)nsteps * IMG_STEP +
                    (nidx + (nidx & 1)) * 4;
    if (need != avail) return NULL;
    if (image_hash(p, len) != hash) return NULL;
    img_rd r = {p, IMG_HEAD};
    for (size_t h = 0; h < hs->n; h++) {
        uint32_t np = get32(&r), pad = get32(&r);
        uint64_t ne = get64(&r), fp = get64(&r);
        if (np != prof_planes(hs->profiles[h]) || pad || ne != prof_events(hs->profiles[h]) ||
            fp != prof_print(hs->profiles[h]))
            return NULL;
    }

    /* Pass 1 as a build does it: the rows must be the stored ones. */
    ix = xpv_xcalloc(1, sizeof *ix);
    b.ix = ix;
    xpv_arena_init(&ix->arena, 1 << 16);
    xpv_ti_layout(&b, hs);
    if (ix->nrows != nrows || ix->nprocs != nprocs) goto bad;
    uint64_t gsum = 0, esum = 0;
    for (uint32_t i = 0; i < nrows; i++) {
        xpv_trace_row *row = &ix->rows[i];
        uint32_t host = get32(&r), plane = get32(&r), line = get32(&r);
        uint32_t g0 = get32(&r), ng = get32(&r), pad = get32(&r);
        uint64_t ne = get64(&r);
        if (host != row->host || plane != row->plane || line != row->line || pad ||
            g0 != gsum || ng > ngroups - g0 || ne > row_line_events(hs, row))
            goto bad;
        row->group0 = g0;
        row->ngroups = ng;
        row->nevents = ne;
        gsum += ng;
        esum += ne;
    }
    if (gsum != ngroups || esum != nidx) goto bad;
    ix->groups = xpv_xcalloc(ngroups ? ngroups : 1, sizeof *ix->groups);
    ix->ngroups = ngroups;
    uint64_t covered = 0;
    for (uint32_t gi = 0; gi < ngroups; gi++) {
        xpv_trace_group *g = &ix->groups[gi];
        g->row = get32(&r);
        g->key = get32(&r);
        g->off = get64(&r);
        for (int L = 0; L <= LV; L++) g->seg[L] = get32(&r);
        if (get32(&r) != 0 || g->row >= nrows) goto bad;
        const xpv_trace_row *row = &ix->rows[g->row];
        if (gi < row->group0 || gi - row->group0 >= row->ngroups || g->seg[0] != 0) goto bad;
        for (int L = 0; L < LV; L++)
            if (g->seg[L + 1] < g->seg[L]) goto bad;
        if (g->off > nidx || g->seg[LV] > nidx - g->off) goto bad;
        if (row->is_counter &&
            g->key >= row->pl->nevent_meta)
            goto bad;
        covered += g->seg[LV];
    }
    if (covered != nidx) goto bad;
    ix->steps = xpv_xcalloc(nsteps ? nsteps : 1, sizeof *ix->steps);
    ix->nsteps = nsteps;
    for (uint32_t i = 0; i < nsteps; i++) {
        xpv_trace_step *st = &ix->steps[i];
        st->start_ps = (int64_t)get64(&r);
        st->dur_ps = (int64_t)get64(&r);
        st->row = get32(&r);
        st->ev = get32(&r);
        if (st->row >= nrows || st->ev >= row_line_events(hs, &ix->rows[st->row])) goto bad;
    }
    ix->idx = xpv_xmalloc((nidx ? nidx : 1) * sizeof *ix->idx);
    ix->nidx = nidx;
    memcpy(ix->idx, p + r.at, nidx * sizeof *ix->idx);
    /* Event indices in range, and the span recomputed from the events (the
     * stored one must match: the renderer does arithmetic on it).  Inside
     * a level segment events are in start order and, in one group (one
     * depth), ends are in start order too, so a segment's first event has
     * its smallest start and its last one its largest end: O(groups).  On
     * a forged image the values may differ from a build's, but they are
     * real event times of these profiles, as a build's are. */
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (uint32_t gi = 0; gi < ngroups; gi++) {
        const xpv_trace_group *g = &ix->groups[gi];
        const xpv_trace_row *row = &ix->rows[g->row];
        uint32_t lim = row_line_events(hs, row);
        const uint32_t *v = ix->idx + g->off;
        uint32_t over = 0;
        for (uint64_t i = 0; i < g->seg[LV]; i++) over |= v[i] >= lim;
        if (over) goto bad;
        const xpv_event *evs = (*row->ln).events;
        for (int L = 0; L < LV; L++) {
            if (g->seg[L] == g->seg[L + 1]) continue;
            const xpv_event *first = &evs[v[g->seg[L]]], *last = &evs[v[g->seg[L + 1] - 1]];
            int64_t end = last->start_ps + (row->is_counter ? 0 : ev_dur(last));
            if (first->start_ps < lo) lo = first->start_ps;
            if (end > hi) hi = end;
        }
    }
    if (lo > hi) lo = hi = 0;
    uint64_t dropped = 0, counter = 0;
    for (uint32_t i = 0; i < nrows; i++) {
        dropped += row_line_events(hs, &ix->rows[i]) - ix->rows[i].nevents;
        if (ix->rows[i].is_counter) counter += ix->rows[i].nevents;
    }
    ix->min_ps = (int64_t)h64[1];
    ix->max_ps = (int64_t)h64[2];
    ix->ndropped = h64[3];
    ix->ncounter = h64[4];
    if (ix->min_ps != lo || ix->max_ps != hi || ix->ndropped != dropped ||
        ix->ncounter != counter)
        goto bad;
    xpv_ti_attach_groups(ix, hs);
    ix->bytes = xpv_ti_index_bytes(ix);
    return ix;
bad:
    xpv_trace_index_free(ix);
    return NULL;
}
