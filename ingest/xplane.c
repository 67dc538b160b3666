/*
 * xplane.c - zero-copy XSpace decoder: serialized bytes -> xpv_profile.
 *
 * The hot path walks the protobuf wire format directly (no protobuf-c
 * unpack, which runs ~12x slower and needs ~6x the file in RAM):
 *
 *   - strings stay slices of the file buffer;
 *   - each plane is walked twice at its top level: once to count lines and
 *     metadata and to find them, once to decode metadata first (events refer
 *     to it) and then lines;
 *   - each line is walked once to count events (tag + length only), then
 *     its events are decoded into an exactly sized 24-byte array;
 *   - event stats are validated (so the lazy iterator can trust them) but
 *     not stored: converters decode them on demand (model.c).
 *
 * Every read is bounds-checked; malformed input yields an error with the
 * byte offset at which decoding failed.
 *
 * Large files (xpv_decode_ex): lines are parsed on one thread per CPU
 * first, then placed by the serial decoder in file order, so the profile
 * is the serial one byte for byte ("Parallel line decoding" below).
 *
 * Memory budget (xpv_decode_limited): every allocation sized by counts in
 * the file (planes, lines, events, metadata, stats, strings) is charged to
 * the budget before it is made, the file's own bytes included, so a small
 * file declaring millions of empty planes is refused (413) after counting
 * them, never allocated.  Allocations that still fail (memory exhausted by
 * other work) fail the file with a 503, never the process.
 */
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "checked.h"
#include "collections.h"
#include "idmap.h"
#include "model.h"
#include "wire.h"
#include "xplane.h"

typedef struct dec {
    const uint8_t *base;       /* start of the file */
    xpv_arena *arena;
    xpv_decode_error *err;
    int failed;
    xpv_event *scratch;        /* events of the line being decoded */
    size_t scratch_cap;
    uint64_t nclamped;         /* lines/events whose times were clamped */
    uint64_t budget;           /* bytes the decode may hold; 0 = no limit */
    uint64_t charged;          /* bytes charged so far (the file included) */
    _Atomic uint64_t *held;    /* line workers: bytes all workers hold (added
                                * to `charged` by fits()); NULL otherwise */
    struct line_job *jobs;     /* parallel decode: the lines, parsed already
                                * (decode_plane places them); NULL: serial */
} dec;

/* A line parsed by a line worker (see "Parallel line decoding"). */
typedef struct line_job {
    const uint8_t *s, *e;      /* the line's bytes */
    const xpv_idmap *ids;      /* its plane's event metadata ids */
    xpv_line ln;               /* parsed; ln.events unset */
    xpv_event *ev;             /* ln.nevents events, malloc'ed; NULL if none */
    uint64_t nclamped;
} line_job;

static int fail(dec *d, const uint8_t *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail_status(dec *d, const uint8_t *at, int status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int fail(dec *d, const uint8_t *at, const char *fmt, ...) {
    if (d->failed) return 0;
    d->failed = 1;
    if (d->err) {
        d->err->offset = (uint64_t)(at - d->base);
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(d->err->msg, sizeof d->err->msg, fmt, ap);
        va_end(ap);
    }
    return 0;
}

#define TRUNC(d, at, what) fail(d, at, "truncated or malformed %s", what)

/* fail() with an HTTP status other than the default 422. */
static int fail_status(dec *d, const uint8_t *at, int status, const char *fmt, ...) {
    if (d->failed) return 0;
    d->failed = 1;
    if (d->err) {
        d->err->offset = (uint64_t)(at - d->base);
        d->err->status = status;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(d->err->msg, sizeof d->err->msg, fmt, ap);
        va_end(ap);
    }
    return 0;
}

/* Whether `bytes` more fit in the budget (nothing charged).  Fails the
 * decode with a 413 naming `what` when they do not. */
static int fits(dec *d, const uint8_t *at, uint64_t bytes, const char *what) {
    uint64_t charged = d->charged + (d->held ? atomic_load(d->held) : 0);
    if (!d->budget || (bytes <= d->budget && charged <= d->budget - bytes)) return 1;
    return fail_status(d, at, 413, "decoding needs more than the %llu MiB memory budget "
                       "(%s: %llu MiB more; raise --cache_mb)",
                       (unsigned long long)(d->budget >> 20), what,
                       (unsigned long long)(bytes >> 20));
}

/* Charge `bytes` to the budget (see fits()). */
static int charge(dec *d, const uint8_t *at, uint64_t bytes, const char *what) {
    if (!fits(d, at, bytes, what)) return 0;
    d->charged += bytes;
    return 1;
}

/* `count` zeroed elements of `size` bytes from the arena, charged to the
 * budget first; NULL (decode failed: 413 over budget, 503 out of memory)
 * otherwise.  A count of 0 gives a valid pointer too. */
static void *dalloc(dec *d, const uint8_t *at, uint64_t count, size_t size,
                    const char *what) {
    uint64_t n = size && count > UINT64_MAX / size ? UINT64_MAX : count * size;
    if (n > SIZE_MAX / 2) {
        fail_status(d, at, 413, "%s: %llu elements cannot be held in memory", what,
                    (unsigned long long)count);
        return NULL;
    }
    if (!charge(d, at, n, what)) return NULL;
    void *p = xpv_arena_try_alloc(d->arena, (size_t)n);
    if (!p) {
        fail_status(d, at, 503, "out of memory decoding %s (%llu bytes); retry later",
                    what, (unsigned long long)n);
        return NULL;
    }
    memset(p, 0, (size_t)n);
    return p;
}

static inline xpv_str mkstr(const uint8_t *p, uint64_t n) {
    xpv_str s = {(const char *)p, (uint32_t)n};
    return s;
}

/* Read a length-delimited string field, refusing > 4 GiB strings. */
static int read_str(dec *d, const uint8_t **p, const uint8_t *end, xpv_str *out,
                    const char *what) {
    const uint8_t *at = *p, *s;
    uint64_t n;
    if (!wire_len(p, end, &s, &n)) return TRUNC(d, at, what);
    if (n >= UINT32_MAX) return fail(d, at, "%s longer than 4 GiB", what);
    *out = mkstr(s, n);
    return 1;
}

/* ==== XStat ============================================================= */

/* Decode one XStat message [p, end).  `out` may be NULL to only validate.
 * String refs are left as raw ids (kind XPV_STAT_UINT, is_ref = 1, meta of
 * the referenced entry resolved later by resolve_ref). */
static int decode_stat(dec *d, const uint8_t *p, const uint8_t *end,
                       int64_t *meta_id, xpv_stat *out) {
    xpv_stat st;
    memset(&st, 0, sizeof st);
    int64_t mid = 0;
    while (p < end) {
        const uint8_t *at = p;
        uint64_t tag = 0, v = 0;
        if (!wire_varint(&p, end, &tag)) return TRUNC(d, at, "stat tag");
        unsigned field = (unsigned)(tag >> 3), wt = (unsigned)(tag & 7);
        switch (field) {
        case 1:
            if (wt != WT_VARINT || !wire_varint(&p, end, &v)) return TRUNC(d, at, "stat metadata_id");
            mid = (int64_t)v;
            break;
        case 2:
            if (wt != WT_I64 || end - p < 8) return TRUNC(d, at, "stat double_value");
            st.kind = XPV_STAT_DOUBLE;
            st.is_ref = 0;
            st.v.d = wire_double(p);
            p += 8;
            break;
        case 3: case 4: case 7:
            if (wt != WT_VARINT || !wire_varint(&p, end, &v)) return TRUNC(d, at, "stat integer value");
            st.kind = field == 4 ? XPV_STAT_INT : XPV_STAT_UINT;
            st.is_ref = field == 7;
            st.v.u = v;
            break;
        case 5: case 6: case 8:
            if (wt != WT_LEN || !read_str(d, &p, end, &st.v.s, "stat string value")) return TRUNC(d, at, "stat string value");
            st.kind = field == 5 ? XPV_STAT_STR : field == 6 ? XPV_STAT_BYTES : XPV_STAT_GZSTR;
            st.is_ref = 0;
            break;
        default:
            if (field == 0 || !wire_skip(&p, end, wt)) return TRUNC(d, at, "stat field");
        }
    }
    *meta_id = mid;
    if (out) *out = st;
    return 1;
}

/* Validate one XStat message without decoding it (the event hot path:
 * values are decoded lazily by model.c); its metadata key goes into *keys. */
static inline int check_stat(dec *d, const uint8_t *p, const uint8_t *end, uint64_t *keys) {
    while (p < end) {
        const uint8_t *at = p;
        uint64_t tag = 0, v = 0;
        if (!wire_varint(&p, end, &tag)) return TRUNC(d, at, "stat tag");
        unsigned field = (unsigned)(tag >> 3), wt = (unsigned)(tag & 7);
        if (wt == WT_VARINT) {
            if (!wire_varint(&p, end, &v)) return TRUNC(d, at, "stat value");
            if (field == 1) *keys |= xpv_stat_key_bit((int64_t)v); /* metadata_id */
        } else if (field == 0 || !wire_skip(&p, end, wt)) {
            return TRUNC(d, at, "stat field");
        } else if (wt == WT_LEN && (p - at) > (1 << 30) + 16) {
            return fail(d, at, "stat string longer than 1 GiB");
        }
    }
    return 1;
}

/* Resolve a decoded stat's metadata id and ref value against its plane. */
static void resolve_stat(const xpv_plane *pl, int64_t mid, xpv_stat *st) {
    st->meta = xpv_stat_meta_index(pl, mid);
    if (st->is_ref) {
        int32_t r = xpv_stat_meta_index(pl, (int64_t)st->v.u);
        st->kind = XPV_STAT_STR;
        st->v.s = r >= 0 ? pl->stat_meta[r].name : (xpv_str){"", 0};
    }
}

/* Decode a run of stats stored as a repeated field `field` inside message
 * [p, end) into an arena array.  Used for plane and metadata stats.  With
 * `mids`, also the metadata id of each stat as written (an arena array;
 * XProf's scope-range tree keys are ids that name no metadata). */
static int decode_stat_list(dec *d, const xpv_plane *pl, const uint8_t *p,
                            const uint8_t *end, unsigned field, xpv_stat **out,
                            uint32_t *nout, int64_t **mids) {
    uint32_t n = 0;
    const uint8_t *q = p;
    while (q < end) {
        const uint8_t *at = q;
        uint64_t tag = 0;
        if (!wire_varint(&q, end, &tag) || !wire_skip(&q, end, (unsigned)(tag & 7)))
            return TRUNC(d, at, "field");
        if ((tag >> 3) == field && (tag & 7) == WT_LEN) n++;
    }
    *nout = n;
    *out = NULL;
    if (n && !(*out = dalloc(d, p, n, sizeof(xpv_stat), "stats"))) return 0;
    if (mids) {
        *mids = NULL;
        if (n && !(*mids = dalloc(d, p, n, sizeof(int64_t), "stat ids"))) return 0;
    }
    uint32_t i = 0;
    const uint8_t *s = NULL;
    uint64_t len = 0;
    while (wire_next_len(&p, end, field, &s, &len)) {
        int64_t mid = 0;
        if (!decode_stat(d, s, s + len, &mid, &(*out)[i])) return 0;
        resolve_stat(pl, mid, &(*out)[i]);
        if (mids) (*mids)[i] = mid;
        i++;
    }
    return 1;
}

/* ==== Metadata =========================================================== */

/* A map entry: field 1 key (varint), field 2 value (message). */
static int map_entry(dec *d, const uint8_t *p, const uint8_t *end, int64_t *key,
                     const uint8_t **val, const uint8_t **val_end) {
    *key = 0;
    *val = *val_end = p; /* empty value */
    while (p < end) {
        const uint8_t *at = p;
        uint64_t tag = 0, v = 0;
        if (!wire_varint(&p, end, &tag)) return TRUNC(d, at, "map entry");
        unsigned field = (unsigned)(tag >> 3), wt = (unsigned)(tag & 7);
        if (field == 1 && wt == WT_VARINT) {
            if (!wire_varint(&p, end, &v)) return TRUNC(d, at, "map key");
            *key = (int64_t)v;
        } else if (field == 2 && wt == WT_LEN) {
            const uint8_t *s = NULL;
            if (!wire_len(&p, end, &s, &v)) return TRUNC(d, at, "map value");
            *val = s;
            *val_end = s + v;
        } else if (field == 0 || !wire_skip(&p, end, wt)) {
            return TRUNC(d, at, "map entry field");
        }
    }
    return 1;
}

static int decode_stat_meta(dec *d, const uint8_t *p, const uint8_t *end,
                            xpv_stat_meta *m) {
    while (p < end) {
        const uint8_t *at = p;
        uint64_t tag = 0, v = 0;
        if (!wire_varint(&p, end, &tag)) return TRUNC(d, at, "stat metadata");
        unsigned field = (unsigned)(tag >> 3), wt = (unsigned)(tag & 7);
        if (field == 1 && wt == WT_VARINT) {
            if (!wire_varint(&p, end, &v)) return TRUNC(d, at, "stat metadata id");
            m->id = (int64_t)v;
        } else if ((field == 2 || field == 3) && wt == WT_LEN) {
            if (!read_str(d, &p, end, field == 2 ? &m->name : &m->description, "stat metadata name"))
                return 0;
        } else if (field == 0 || !wire_skip(&p, end, wt)) {
            return TRUNC(d, at, "stat metadata field");
        }
    }
    return 1;
}

static int decode_event_meta(dec *d, const xpv_plane *pl, const uint8_t *p,
                             const uint8_t *end, xpv_event_meta *m) {
    const uint8_t *start = p;
    uint32_t nchild = 0;
    while (p < end) {
        const uint8_t *at = p;
        uint64_t tag = 0, v = 0;
        const uint8_t *s = NULL;
        if (!wire_varint(&p, end, &tag)) return TRUNC(d, at, "event metadata");
        unsigned field = (unsigned)(tag >> 3), wt = (unsigned)(tag & 7);
        if (field == 1 && wt == WT_VARINT) {
            if (!wire_varint(&p, end, &v)) return TRUNC(d, at, "event metadata id");
            m->id = (int64_t)v;
        } else if (field == 2 && wt == WT_LEN) {
            if (!read_str(d, &p, end, &m->name, "event metadata name")) return 0;
        } else if (field == 4 && wt == WT_LEN) {
            if (!read_str(d, &p, end, &m->display_name, "event metadata display_name")) return 0;
        } else if (field == 3 && wt == WT_LEN) {
            if (!read_str(d, &p, end, &m->metadata, "event metadata bytes")) return 0;
        } else if (field == 6 && wt == WT_LEN) {
            /* packed child ids */
            if (!wire_len(&p, end, &s, &v)) return TRUNC(d, at, "child_id");
            const uint8_t *q = s, *qe = s + v;
            while (q < qe) {
                uint64_t c = 0;
                if (!wire_varint(&q, qe, &c)) return TRUNC(d, q, "packed child_id");
                nchild++;
            }
        } else if (field == 6 && wt == WT_VARINT) {
            if (!wire_varint(&p, end, &v)) return TRUNC(d, at, "child_id");
            nchild++;
        } else if (field == 0 || !wire_skip(&p, end, wt)) {
            return TRUNC(d, at, "event metadata field");
        }
    }
    if (!decode_stat_list(d, pl, start, end, 5, &m->stats, &m->nstats, NULL)) return 0;
    if (nchild) {
        m->child_ids = dalloc(d, start, nchild, sizeof(int64_t), "child ids");
        if (!m->child_ids) return 0;
        m->nchildren = 0;
        for (p = start; p < end;) {
            uint64_t tag = 0, v = 0;
            const uint8_t *s = NULL;
            wire_varint(&p, end, &tag);
            unsigned field = (unsigned)(tag >> 3), wt = (unsigned)(tag & 7);
            if (field == 6 && wt == WT_LEN) {
                wire_len(&p, end, &s, &v);
                for (const uint8_t *q = s; q < s + v;) {
                    uint64_t c = 0;
                    wire_varint(&q, s + v, &c);
                    m->child_ids[m->nchildren++] = (int64_t)c;
                }
            } else if (field == 6 && wt == WT_VARINT) {
                wire_varint(&p, end, &v);
                m->child_ids[m->nchildren++] = (int64_t)v;
            } else {
                wire_skip(&p, end, wt);
            }
        }
    }
    return 1;
}

/* Decode every entry of the plane's metadata map `field` (4: event
 * metadata, 5: stat metadata) into dense slots 1..n, recording each entry's
 * map key in ids[slot - 1]. */
static int decode_metadata_map(dec *d, xpv_plane *pl, const uint8_t *p,
                               const uint8_t *end, unsigned field, int64_t *ids) {
    const uint8_t *s = NULL, *vs, *ve;
    uint64_t len = 0;
    for (uint32_t k = 1; wire_next_len(&p, end, field, &s, &len); k++) {
        int64_t key;
        if (!map_entry(d, s, s + len, &key, &vs, &ve)) return 0;
        if (field == 5 ? !decode_stat_meta(d, vs, ve, &pl->stat_meta[k])
                       : !decode_event_meta(d, pl, vs, ve, &pl->event_meta[k]))
            return 0;
        ids[k - 1] = key;
        if (field == 5) pl->stat_meta[k].key = key;
        else pl->event_meta[k].key = key;
    }
    return 1;
}

/* ==== Lines and events ===================================================== */

/* Validate an XEvent's stats [p, end) and read its scalar fields; the
 * metadata keys its stats name are added to *keys. */
static inline int decode_event(dec *d, const uint8_t *p,
                               const uint8_t *end, int64_t *meta_id, int64_t *off,
                               int64_t *dur, int *has_stats, int *num_occ, uint64_t *keys) {
    *meta_id = *off = *dur = 0;
    *has_stats = 0;
    while (p < end) {
        const uint8_t *at = p;
        uint64_t tag = 0, v = 0;
        if (!wire_varint(&p, end, &tag)) return TRUNC(d, at, "event");
        switch ((unsigned)tag) {
        case (1 << 3) | WT_VARINT:
            if (!wire_varint(&p, end, &v)) return TRUNC(d, at, "event metadata_id");
            *meta_id = (int64_t)v;
            break;
        case (2 << 3) | WT_VARINT:
            if (!wire_varint(&p, end, &v)) return TRUNC(d, at, "event offset_ps");
            *off = (int64_t)v;
            *num_occ = 0;
            break;
        case (5 << 3) | WT_VARINT:
            if (!wire_varint(&p, end, &v)) return TRUNC(d, at, "event num_occurrences");
            *off = 0;
            *num_occ = 1;
            break;
        case (3 << 3) | WT_VARINT:
            if (!wire_varint(&p, end, &v)) return TRUNC(d, at, "event duration_ps");
            *dur = (int64_t)v;
            break;
        case (4 << 3) | WT_LEN: {
            const uint8_t *s = NULL;
            if (!wire_len(&p, end, &s, &v)) return TRUNC(d, at, "event stat");
            if (!check_stat(d, s, s + v, keys)) return 0;
            *has_stats = 1;
            break;
        }
        default:
            if ((tag >> 3) == 0 || !wire_skip(&p, end, (unsigned)(tag & 7)))
                return TRUNC(d, at, "event field");
        }
    }
    return 1;
}

/* Clamp so that start + dur never overflows in converters (|start| and
 * dur <= INT64_MAX / 4, dur >= 0); sets *clamped when it changed either. */
static inline void clamp_times(int64_t *start, int64_t *dur, int *clamped) {
    const int64_t lim = INT64_MAX / 4;
    if (*start > lim) { *start = lim; *clamped = 1; }
    if (*start < -lim) { *start = -lim; *clamped = 1; }
    if (*dur < 0) { *dur = 0; *clamped = 1; }
    if (*dur > lim) { *dur = lim; *clamped = 1; }
}

/* Decode one XLine in a single pass into the decoder's scratch array (its
 * count is unknown until the end of the line): every field of `ln` but
 * `events`, with each event's start already based on the line's timestamp
 * and clamped (timestamp_ns may follow the events, so that is a second
 * loop over the scratch).  `ids` maps the plane's event metadata ids.
 * Touches nothing shared: line workers run it concurrently, each with its
 * own decoder (see decode_lines_parallel). */
static int parse_line(dec *d, const xpv_idmap *ids, const uint8_t *p, const uint8_t *end,
                      xpv_line *ln, int64_t base_ns) {
    const uint8_t *start = p;
    int has_display_id = 0, has_display_name = 0;
    if ((uint64_t)(end - start) >= UINT32_MAX)
        return fail(d, start, "line larger than 4 GiB");
    size_t nev = 0;
    uint64_t keys = 0; /* stat metadata keys seen (xpv_line.stat_keys) */
    xpv_event *ev = d->scratch;
    while (p < end) {
        const uint8_t *at = p;
        uint64_t tag = 0, v = 0;
        if (!wire_varint(&p, end, &tag)) return TRUNC(d, at, "line");
        if (tag == ((4 << 3) | WT_LEN)) {
            const uint8_t *s = NULL;
            if (!wire_len(&p, end, &s, &v)) return TRUNC(d, at, "event");
            if (nev == d->scratch_cap) {
                if (nev >= UINT32_MAX - 1) return fail(d, at, "too many events in one line");
                size_t ncap = d->scratch_cap ? d->scratch_cap * 2 : 4096;
                /* The line's events are charged when it ends; the scratch
                 * array only has to fit beside what is charged. */
                if (!fits(d, at, ncap * sizeof(xpv_event), "events of one line")) return 0;
                xpv_event *grown = realloc(d->scratch, ncap * sizeof(xpv_event));
                if (!grown)
                    return fail_status(d, at, 503, "out of memory decoding a line (%zu "
                                       "events); retry later", ncap);
                d->scratch = grown;
                d->scratch_cap = ncap;
                ev = d->scratch;
            }
            int64_t mid, off, dur;
            int has_stats, num_occ = 0;
            if (!decode_event(d, s, s + v, &mid, &off, &dur, &has_stats, &num_occ, &keys))
                return 0;
            if (num_occ) ln->has_num_occurrences = 1;
            ev[nev].start_ps = off;
            ev[nev].dur_ps = dur;
            ev[nev].meta = xpv_idmap_get(ids, mid); /* 0: unknown */
            ev[nev].wire = has_stats ? (uint32_t)(at + 1 - start) : XPV_NO_STATS;
            nev++;
            continue;
        }
        unsigned field = (unsigned)(tag >> 3), wt = (unsigned)(tag & 7);
        if ((field == 1 || field == 3 || field == 9 || field == 10) && wt == WT_VARINT) {
            if (!wire_varint(&p, end, &v)) return TRUNC(d, at, "line field");
            if (field == 1) ln->id = (int64_t)v;
            else if (field == 3) ln->timestamp_ns = (int64_t)v;
            else if (field == 9) ln->duration_ps = (int64_t)v;
            else { ln->display_id = (int64_t)v; has_display_id = v != 0; }
        } else if (field == 2 && wt == WT_LEN) {
            if (!read_str(d, &p, end, &ln->name, "line name")) return 0;
        } else if (field == 11 && wt == WT_LEN) {
            if (!read_str(d, &p, end, &ln->display_name, "line display_name")) return 0;
            has_display_name = ln->display_name.len != 0;
        } else if (field == 0 || !wire_skip(&p, end, wt)) {
            return TRUNC(d, at, "line field");
        }
    }
    if (!has_display_id) ln->display_id = ln->id;
    if (!has_display_name) ln->display_name = ln->name;
    ln->wire = start;
    ln->wire_len = (size_t)(end - start);
    ln->stat_keys = keys;
    ln->stat_keys_known = 1;
    ln->nevents = (uint32_t)nev;
    ln->events = NULL;
    /* Base in ps.  A timestamp far from base_ns (extreme or corrupt
     * values) saturates instead of wrapping; the file gets a warning.
     * Keep in step with mp_line_base_ps (tools/memory_profile.c). */
    int clamped = 0;
    int64_t ts = xpv_sub_i64(ln->timestamp_ns, base_ns, &clamped);
    const int64_t lim = INT64_MAX / 4000;
    if (ts > lim) { ts = lim; clamped = 1; }
    if (ts < -lim) { ts = -lim; clamped = 1; }
    int64_t base_ps = ts * 1000; /* |ts| <= INT64_MAX / 4000: exact */
    if (clamped && nev) d->nclamped++; /* an empty line has no times to clamp */
    int ordered = 1;
    for (size_t i = 0; i < nev; i++) {
        xpv_event *e = &ev[i];
        int64_t off = e->start_ps;
        int ec = 0;
        if (off > INT64_MAX / 4) { off = INT64_MAX / 4; ec = 1; }
        e->start_ps = xpv_add_i64(base_ps, off, &ec);
        clamp_times(&e->start_ps, &e->dur_ps, &ec);
        d->nclamped += (uint64_t)ec;
        if (i && (e->start_ps < e[-1].start_ps ||
                  (e->start_ps == e[-1].start_ps && e->dur_ps > e[-1].dur_ps)))
            ordered = 0;
    }
    ln->time_ordered = (uint8_t)ordered;
    return 1;
}

/* Lines whose events take at least this many bytes keep their own block. */
#define BIG_LINE (1u << 20)

/* Give line `ln` (parsed, ln->nevents events in the malloc'ed block
 * *evp) its events array in the profile: a big line takes the block
 * itself (shrunk to size: realloc cannot fail when shrinking, but keep the
 * old block if it does) so peak memory stays file + model, and sets
 * *taken; a small one gets a copy in the arena, the block left to the
 * caller.  0 when over the budget or out of memory. */
static int place_events(dec *d, const uint8_t *start, xpv_line *ln, xpv_event **evp,
                        int *taken) {
    size_t nev = ln->nevents;
    *taken = 0;
    if (nev * sizeof(xpv_event) >= BIG_LINE) {
        if (!charge(d, start, nev * sizeof(xpv_event), "events")) return 0;
        ln->events = realloc(*evp, nev * sizeof(xpv_event));
        if (!ln->events) ln->events = *evp;
        xpv_arena_adopt(d->arena, ln->events, nev * sizeof(xpv_event));
        *taken = 1;
        return 1;
    }
    ln->events = NULL;
    if (nev && !(ln->events = dalloc(d, start, nev, sizeof(xpv_event), "events"))) return 0;
    if (nev) memcpy(ln->events, *evp, nev * sizeof(xpv_event));
    return 1;
}

/* Decode one XLine (serial path): parse it into the scratch array, then
 * hand the scratch itself over (big line) or copy it into the arena. */
static int decode_line(dec *d, xpv_plane *pl, const uint8_t *p, const uint8_t *end,
                       xpv_line *ln, int64_t base_ns) {
    if (!parse_line(d, pl->event_meta_ids, p, end, ln, base_ns)) return 0;
    int taken;
    if (!place_events(d, p, ln, &d->scratch, &taken)) return 0;
    if (taken) {
        d->scratch = NULL;
        d->scratch_cap = 0;
    }
    return 1;
}

/* ==== Plane ================================================================ */

static int replay_line(dec *d, struct line_job *j, xpv_line *ln);

static int decode_plane(dec *d, const uint8_t *p, const uint8_t *end, xpv_plane *pl,
                        int64_t base_ns) {
    const uint8_t *start = p;
    uint32_t nlines = 0, nem = 0, nsm = 0;
    /* Pass 1: scalars and counts. */
    while (p < end) {
        const uint8_t *at = p;
        uint64_t tag = 0, v = 0;
        if (!wire_varint(&p, end, &tag)) return TRUNC(d, at, "plane");
        unsigned field = (unsigned)(tag >> 3), wt = (unsigned)(tag & 7);
        if (field == 1 && wt == WT_VARINT) {
            if (!wire_varint(&p, end, &v)) return TRUNC(d, at, "plane id");
            pl->id = (int64_t)v;
        } else if (field == 2 && wt == WT_LEN) {
            if (!read_str(d, &p, end, &pl->name, "plane name")) return 0;
        } else if (field >= 3 && field <= 6 && wt == WT_LEN) {
            const uint8_t *s = NULL;
            if (!wire_len(&p, end, &s, &v)) return TRUNC(d, at, "plane field");
            if (field == 3) nlines++;
            else if (field == 4) nem++;
            else if (field == 5) nsm++;
            if (nlines == UINT32_MAX || nem == UINT32_MAX - 1 || nsm == UINT32_MAX - 1)
                return fail(d, at, "too many entries in plane");
        } else if (field == 0 || !wire_skip(&p, end, wt)) {
            return TRUNC(d, at, "plane field");
        }
    }

    /* Everything this plane's counts ask for, checked before any of it
     * is allocated (id maps: at most 64 bytes per entry, see idmap.c). */
    uint64_t nmax = nsm > nem ? nsm : nem;
    uint64_t want = ((uint64_t)nsm + 1) * sizeof(xpv_stat_meta) +
                    ((uint64_t)nem + 1) * sizeof(xpv_event_meta) +
                    (uint64_t)nlines * sizeof(xpv_line) + 64 * ((uint64_t)nsm + nem) +
                    128 + (nmax + 1) * sizeof(int64_t);
    if (!fits(d, start, want, "plane metadata and lines")) return 0;

    /* Stat metadata first: refs and stat names resolve through it. */
    pl->stat_meta = dalloc(d, start, (uint64_t)nsm + 1, sizeof(xpv_stat_meta), "stat metadata");
    if (!pl->stat_meta) return 0;
    pl->nstat_meta = nsm + 1;
    int64_t *ids = malloc((size_t)(nmax + 1) * sizeof(int64_t));
    if (!ids)
        return fail_status(d, start, 503, "out of memory decoding metadata (%llu ids); "
                           "retry later", (unsigned long long)nmax);
    if (!decode_metadata_map(d, pl, start, end, 5, ids)) {
        free(ids);
        return 0;
    }
    /* ids[i] belongs to dense index i + 1, which is what the map returns
     * (index 0 is the synthetic empty entry). */
    d->charged += 64 * (uint64_t)nsm + 64;   /* within `want` above */
    pl->stat_meta_ids = xpv_idmap_build(d->arena, ids, nsm);

    pl->event_meta = dalloc(d, start, (uint64_t)nem + 1, sizeof(xpv_event_meta), "event metadata");
    if (!pl->event_meta) {
        free(ids);
        return 0;
    }
    pl->nevent_meta = nem + 1;
    if (!decode_metadata_map(d, pl, start, end, 4, ids)) {
        free(ids);
        return 0;
    }
    d->charged += 64 * (uint64_t)nem + 64;
    pl->event_meta_ids = xpv_idmap_build(d->arena, ids, nem);
    free(ids);

    /* Plane stats. */
    if (!decode_stat_list(d, pl, start, end, 6, &pl->stats, &pl->nstats, &pl->stat_mids)) return 0;

    /* Lines. */
    pl->lines = NULL;
    if (nlines && !(pl->lines = dalloc(d, start, nlines, sizeof(xpv_line), "lines"))) return 0;
    pl->nlines = nlines;
    uint32_t k = 0;
    const uint8_t *s = NULL;
    uint64_t v = 0;
    for (p = start; wire_next_len(&p, end, 3, &s, &v); k++) {
        if (d->jobs ? !replay_line(d, d->jobs++, &pl->lines[k])
                    : !decode_line(d, pl, s, s + v, &pl->lines[k], base_ns))
            return 0;
        pl->nevents += pl->lines[k].nevents;
    }
    return 1;
}

/* Lines carry ns timestamps; ×1000 must fit int64.  TSL-written files are
 * normalized to the session start; older files may hold epoch ns, which we
 * rebase on the earliest line so ps arithmetic stays exact. */
static int64_t find_base_ns(const uint8_t *p, const uint8_t *end) {
    int64_t min_ts = INT64_MAX;
    int need = 0;
    while (p < end) {
        uint64_t tag = 0, v = 0;
        const uint8_t *s = NULL;
        if (!wire_varint(&p, end, &tag)) break;
        if (tag != ((1 << 3) | WT_LEN)) {
            if (!wire_skip(&p, end, (unsigned)(tag & 7))) break;
            continue;
        }
        if (!wire_len(&p, end, &s, &v)) break;
        const uint8_t *q = s, *qe = s + v;
        while (q < qe) {
            uint64_t t2 = 0, v2 = 0;
            const uint8_t *s2 = NULL;
            if (!wire_varint(&q, qe, &t2)) break;
            if (t2 != ((3 << 3) | WT_LEN)) {
                if (!wire_skip(&q, qe, (unsigned)(t2 & 7))) break;
                continue;
            }
            if (!wire_len(&q, qe, &s2, &v2)) break;
            const uint8_t *r = s2, *re = s2 + v2;
            while (r < re) {
                uint64_t t3 = 0, v3 = 0;
                if (!wire_varint(&r, re, &t3)) break;
                if (t3 == ((3 << 3) | WT_VARINT)) {
                    if (!wire_varint(&r, re, &v3)) break;
                    int64_t ts = (int64_t)v3;
                    if (ts > INT64_MAX / 4000 || ts < -(INT64_MAX / 4000)) need = 1;
                    if (ts != 0 && ts < min_ts) min_ts = ts;
                    break; /* timestamp precedes events in canonical order */
                }
                if (t3 == ((4 << 3) | WT_LEN)) break; /* events started: no ts */
                if (!wire_skip(&r, re, (unsigned)(t3 & 7))) break;
            }
        }
    }
    return need && min_ts != INT64_MAX ? min_ts : 0;
}

/* ==== Parallel line decoding =============================================
 *
 * A large file's lines are parsed by several threads, then placed in the
 * profile by the serial decoder in file order, so the profile is the one
 * the serial decoder builds, byte for byte (same arena layout, same
 * mem_size), whatever the threads' schedule:
 *   1. a cheap pass finds every line's bytes and builds, per plane, the
 *      map of event metadata ids (map keys only: what line parsing needs);
 *   2. the threads take lines, biggest first, and parse each into its own
 *      exactly sized malloc'ed block (parse_line, a decoder of their own);
 *   3. the serial decoder runs as usual, but takes each line's parse
 *      instead of parsing it (replay_line): metadata, charges to the
 *      budget and arena allocations happen in the serial order.
 * Any failure (malformed bytes, budget, memory) abandons the attempt: the
 * file is then decoded serially from the start, so errors (message, byte
 * offset, status) are the serial decoder's too. */

typedef struct line_pool {
    line_job *jobs;
    uint32_t *order;           /* job indices, biggest line first */
    size_t njobs;
    _Atomic size_t next;       /* next entry of `order` to take */
    _Atomic int failed;
    _Atomic uint64_t held;     /* bytes of parsed events held */
    const uint8_t *base;
    uint64_t budget, charged;  /* the serial decoder's when the pool starts */
    int64_t base_ns;
} line_pool;

static void *line_worker(void *arg) {
    line_pool *lp = arg;
    xpv_decode_error e;
    dec d = {.base = lp->base, .err = &e, .budget = lp->budget, .charged = lp->charged,
             .held = &lp->held};
    while (!atomic_load(&lp->failed)) {
        size_t i = atomic_fetch_add(&lp->next, 1);
        if (i >= lp->njobs) break;
        line_job *j = &lp->jobs[lp->order[i]];
        d.nclamped = 0;
        if (!parse_line(&d, j->ids, j->s, j->e, &j->ln, lp->base_ns)) {
            atomic_store(&lp->failed, 1);
            break;
        }
        j->nclamped = d.nclamped;
        size_t bytes = (size_t)j->ln.nevents * sizeof(xpv_event);
        if (bytes >= BIG_LINE) {    /* the scratch block itself, as serial */
            j->ev = realloc(d.scratch, bytes);
            if (!j->ev) j->ev = d.scratch;
            d.scratch = NULL;
            d.scratch_cap = 0;
        } else if (bytes) {
            if (!(j->ev = malloc(bytes))) {
                atomic_store(&lp->failed, 1);
                break;
            }
            memcpy(j->ev, d.scratch, bytes);
        }
        atomic_fetch_add(&lp->held, bytes);
    }
    free(d.scratch);
    return NULL;
}

/* Place a line parsed by a worker as decode_line would have: the scratch
 * growth it would have checked against the budget, then place_events. */
static int replay_line(dec *d, line_job *j, xpv_line *ln) {
    memcpy(ln, &j->ln, sizeof *ln);   /* padding too: zero in both */
    d->nclamped += j->nclamped;
    size_t nev = ln->nevents;
    if (nev > d->scratch_cap) {
        size_t cap = d->scratch_cap;
        while (cap < nev) cap = cap ? cap * 2 : 4096;
        if (!fits(d, j->s, cap * sizeof(xpv_event), "events of one line")) return 0;
        d->scratch_cap = cap;       /* no block: only its size matters */
    }
    int taken;
    if (!place_events(d, j->s, ln, &j->ev, &taken)) return 0;
    if (taken) d->scratch_cap = 0;
    else free(j->ev);
    j->ev = NULL;
    return 1;
}

/* Step 1: every line of every plane of [p, end) as a job, with its plane's
 * event metadata ids (maps in `tmp`).  Returns the number of jobs, or
 * SIZE_MAX when the file is better decoded serially (malformed, lines too
 * small to be worth it, maps over the budget): the serial decoder then
 * finds out what is wrong with it. */
static size_t find_lines(dec *d, const uint8_t *p, const uint8_t *end, size_t min_avg,
                         xpv_arena *tmp, line_job **out) {
    /* Count first (tags only): many small lines, or none, are parsed
     * serially for less than handing them out costs. */
    uint64_t nlines = 0, most = (uint64_t)(end - p) / (min_avg ? min_avg : 1);
    const uint8_t *ps = NULL, *s = NULL, *q, *qe;
    uint64_t plen = 0, len = 0;
    for (const uint8_t *pp = p; wire_next_len(&pp, end, 1, &ps, &plen);) {
        for (q = ps, qe = ps + plen; wire_next_len(&q, qe, 3, &s, &len);)
            if (++nlines > most) return SIZE_MAX;
    }
    if (!nlines) return SIZE_MAX;
    line_job *jobs = calloc((size_t)nlines, sizeof *jobs);
    if (!jobs) return SIZE_MAX;
    size_t n = 0;
    while (wire_next_len(&p, end, 1, &ps, &plen)) {
        size_t first = n;
        uint64_t nem = 0;
        for (q = ps, qe = ps + plen; q < qe;) {
            uint64_t tag = 0;
            const uint8_t *at = q;
            if (!wire_varint(&q, qe, &tag) || !wire_skip(&q, qe, (unsigned)(tag & 7))) goto serial;
            if (tag == ((4 << 3) | WT_LEN)) nem++;
            if (tag != ((3 << 3) | WT_LEN)) continue;
            if (!wire_varint(&at, qe, &tag) || !wire_len(&at, qe, &s, &len) || n == nlines)
                goto serial;
            jobs[n].s = s;
            jobs[n++].e = s + len;
        }
        if (n == first) continue;          /* no lines: no map needed */
        /* The map's own budget check comes later, in decode_plane. */
        if (!fits(d, ps, 64 * nem + 64 + 8 * (nem + 1), "event metadata ids")) goto serial;
        int64_t *ids = malloc((size_t)(nem + 1) * sizeof *ids);
        if (!ids) goto serial;
        uint32_t k = 0;
        const uint8_t *vs, *ve;
        for (q = ps; wire_next_len(&q, qe, 4, &s, &len); k++) {
            if (!map_entry(d, s, s + len, &ids[k], &vs, &ve)) {
                free(ids);
                goto serial;
            }
        }
        const xpv_idmap *map = xpv_idmap_build(tmp, ids, k);
        free(ids);
        for (size_t i = first; i < n; i++) jobs[i].ids = map;
    }
    if (n != nlines) goto serial;
    *out = jobs;
    return n;
serial:
    free(jobs);
    return SIZE_MAX;
}

/* Steps 1 and 2 on `threads` threads (this one included).  Returns the
 * parsed lines in file order (free with free_jobs), or NULL: decode
 * serially. */
static line_job *parse_lines_parallel(dec *d, const uint8_t *p, const uint8_t *end,
                                      int64_t base_ns, const xpv_decode_opts *o,
                                      xpv_arena *tmp, size_t *njobs) {
    line_job *jobs = NULL;
    int threads = o->threads;
    size_t n = find_lines(d, p, end, o->min_avg_line, tmp, &jobs);
    if (n == SIZE_MAX || n > UINT32_MAX) {
        free(jobs);
        return NULL;
    }
    line_pool lp = {.jobs = jobs, .njobs = n, .base = d->base, .budget = d->budget,
                    .charged = d->charged, .base_ns = base_ns};
    atomic_init(&lp.next, 0);
    atomic_init(&lp.failed, 0);
    atomic_init(&lp.held, 0);
    lp.order = malloc(n * sizeof *lp.order);
    if (!lp.order) {
        free(jobs);
        return NULL;
    }
    xpv_ranked *sz = malloc(n * sizeof *sz);
    if (!sz) {
        free(lp.order);
        free(jobs);
        return NULL;
    }
    /* Biggest first; file order among equals. */
    for (size_t i = 0; i < n; i++) sz[i] = (xpv_ranked){jobs[i].e - jobs[i].s, i};
    xpv_ranked_sort_desc(sz, n);
    for (size_t i = 0; i < n; i++) lp.order[i] = (uint32_t)sz[i].pos;
    free(sz);
    pthread_t th[XPV_DECODE_MAX_THREADS];
    int started = 0;
    for (int t = 1; t < threads && t < XPV_DECODE_MAX_THREADS; t++) {
        if (pthread_create(&th[started], NULL, line_worker, &lp) != 0) break;
        started++;
    }
    line_worker(&lp);
    for (int t = 0; t < started; t++) pthread_join(th[t], NULL);
    free(lp.order);
    if (atomic_load(&lp.failed)) {
        for (size_t i = 0; i < n; i++) free(jobs[i].ev);
        free(jobs);
        return NULL;
    }
    *njobs = n;
    return jobs;
}

/* ==== XSpace =============================================================== */

static int read_str_list(dec *d, const uint8_t *p, const uint8_t *end, unsigned field,
                         uint32_t n, xpv_str **out) {
    *out = NULL;
    if (n && !(*out = dalloc(d, p, n, sizeof(xpv_str), "strings"))) return 0;
    const uint8_t *s = NULL;
    uint64_t len = 0;
    for (uint32_t i = 0; wire_next_len(&p, end, field, &s, &len); i++) {
        if (len >= UINT32_MAX) return fail(d, s, "string longer than 4 GiB");
        (*out)[i] = mkstr(s, len);
    }
    return 1;
}

/* Pass 1 over the XSpace's top level: counts, and the first error of its
 * framing.  Returns 0 (failed) or 1. */
static int count_space(dec *d, const uint8_t *p, const uint8_t *end, uint32_t n[4]) {
    n[0] = n[1] = n[2] = n[3] = 0;
    if (p == end) return fail(d, p, "empty file");
    while (p < end) {
        const uint8_t *at = p;
        uint64_t tag = 0;
        if (!wire_varint(&p, end, &tag)) return TRUNC(d, at, "XSpace field tag");
        unsigned field = (unsigned)(tag >> 3), wt = (unsigned)(tag & 7);
        const uint8_t *val = p;
        if (field == 0 || !wire_skip(&p, end, wt)) {
            uint64_t len = 0;
            if (field == 0)
                return fail(d, at, "invalid field number 0 (not an XSpace protobuf?)");
            if (wt == WT_LEN && wire_varint(&val, end, &len))
                return fail(d, at, "XSpace field %u declares %llu bytes but only %llu remain "
                            "(truncated or corrupt file)", field, (unsigned long long)len,
                            (unsigned long long)(end - val));
            return fail(d, at, "truncated or malformed XSpace field %u (wire type %u)", field, wt);
        }
        if (wt == WT_LEN) {
            if (field >= 1 && field <= 4) n[field - 1]++;
        } else if (field <= 4) {
            return fail(d, at, "XSpace field %u has wire type %u (not an XSpace protobuf?)",
                        field, wt);
        }
    }
    return 1;
}

/* Decode prof->buf into prof (empty, its arena initialised).  With
 * o->threads > 1 the lines are parsed in parallel first; returns -1 when
 * that was not possible or failed (prof then needs profile_reset before
 * the serial decode).  Else 1, or 0 with `err` filled. */
static int decode_space(xpv_profile *prof, const xpv_decode_opts *o, int parallel,
                        xpv_decode_error *err) {
    dec d = {.base = prof->buf, .arena = &prof->arena, .err = err, .budget = o->budget,
             .charged = o->file_mapped ? 0 : prof->buf_len};
    const uint8_t *start = prof->buf, *end = start + prof->buf_len, *p = start;
    uint32_t n[4];
    if (!count_space(&d, start, end, n)) return parallel ? -1 : 0;
    int64_t base_ns = find_base_ns(start, end);
    line_job *jobs = NULL;
    size_t njobs = 0;
    int rc = 0;
    xpv_arena tmp;             /* the workers' metadata id maps */
    xpv_arena_init(&tmp, 1 << 16);
    if (parallel) {
        jobs = parse_lines_parallel(&d, start, end, base_ns, o, &tmp, &njobs);
        if (!jobs) goto out;
        d.jobs = jobs;
    }
    if (!read_str_list(&d, start, end, 2, n[1], &prof->errors) ||
        !read_str_list(&d, start, end, 3, n[2], &prof->warnings) ||
        !read_str_list(&d, start, end, 4, n[3], &prof->hostnames))
        goto out;
    prof->nerrors = n[1];
    prof->nwarnings = n[2];
    prof->nhostnames = n[3];
    /* Counted, not allocated yet: 512M empty planes (1 GiB of "0a 00")
     * stop here with a 413 instead of asking for 60 GB. */
    prof->planes = NULL;
    if (n[0] && !(prof->planes = dalloc(&d, start, n[0], sizeof(xpv_plane), "planes")))
        goto out;
    prof->nplanes = n[0];
    uint32_t k = 0;
    const uint8_t *s = NULL;
    uint64_t v = 0;
    for (p = start; wire_next_len(&p, end, 1, &s, &v); k++) {
        if (!decode_plane(&d, s, s + v, &prof->planes[k], base_ns)) goto out;
        prof->nevents += prof->planes[k].nevents;
    }
    prof->base_ns = base_ns;
    if (d.nclamped) {
        char msg[160];
        snprintf(msg, sizeof msg,
                 "%llu line timestamps / event times or durations were out of range "
                 "(negative or past int64 picoseconds) and were clamped",
                 (unsigned long long)d.nclamped);
        xpv_profile_add_warning(prof, msg);
    }
    /* Heap held: a mapped file's bytes are page cache, not counted (as
     * the budget above did not count them). */
    prof->mem_size = (o->file_mapped ? 0 : prof->buf_len) + prof->arena.total + sizeof *prof;
    rc = 1;
out:
    free(d.scratch);
    for (size_t i = 0; i < njobs; i++) free(jobs[i].ev);   /* those not placed */
    free(jobs);
    xpv_arena_free(&tmp);
    return rc || !parallel ? rc : -1;
}

/* Back to a freshly allocated profile over the same bytes. */
static void profile_reset(xpv_profile *prof) {
    void *buf = prof->buf;
    size_t len = prof->buf_len;
    void (*buf_free)(void *, size_t) = prof->buf_free;
    xpv_arena_free(&prof->arena);
    memset(prof, 0, sizeof *prof);
    prof->buf = buf;
    prof->buf_len = len;
    prof->buf_free = buf_free;
    prof->file_size = len;
    /* Chunks of about the file's size, 64 KiB to 1 MiB: a small file's
     * model then takes one small chunk, not a fixed MiB (a fresh mapping
     * per decode under the sanitizers, and 1 MiB charged to the cache). */
    size_t chunk = len < (1u << 16) ? 1u << 16 : len > (1u << 20) ? 1u << 20 : len;
    xpv_arena_init(&prof->arena, chunk);
}

/* Threads to parse lines with by default: the online CPUs, at most 8. */
static int default_threads(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 8 ? 8 : (int)n;
}

xpv_profile *xpv_decode_ex(void *buf, size_t len, void (*buf_free)(void *, size_t),
                           xpv_decode_opts *opts, xpv_decode_error *err) {
    xpv_decode_opts o = opts ? *opts : (xpv_decode_opts){0};
    if (!o.threads) o.threads = default_threads();
    if (o.threads > XPV_DECODE_MAX_THREADS) o.threads = XPV_DECODE_MAX_THREADS;
    if (!o.parallel_min) o.parallel_min = XPV_DECODE_PARALLEL_MIN;
    if (!o.min_avg_line) o.min_avg_line = XPV_DECODE_MIN_AVG_LINE;
    xpv_profile *prof = xpv_xcalloc(1, sizeof *prof);
    prof->buf = buf;
    prof->buf_len = len;
    prof->buf_free = buf_free;
    profile_reset(prof);
    if (err) {
        err->offset = 0;
        err->status = 0;
        err->msg[0] = 0;
    }
    int rc = -1;
    if (o.threads > 1 && len >= o.parallel_min) {
        rc = decode_space(prof, &o, 1, err);
        if (rc < 0) {
            profile_reset(prof);
            if (err) memset(err, 0, sizeof *err);
        }
    }
    if (opts) opts->parallel_used = rc == 1;
    if (rc < 0) rc = decode_space(prof, &o, 0, err);
    if (rc == 1) return prof;
    xpv_profile_free(prof);
    return NULL;
}

uint64_t xpv_decode_heap_estimate(uint64_t len, int file_mapped) {
    uint64_t model = len / XPV_MODEL_PER_BYTE_DEN * XPV_MODEL_PER_BYTE_NUM +
                     (len % XPV_MODEL_PER_BYTE_DEN) * XPV_MODEL_PER_BYTE_NUM / XPV_MODEL_PER_BYTE_DEN;
    return (file_mapped ? 0 : len) + model + (1u << 16) + sizeof(xpv_profile);
}

xpv_profile *xpv_decode(void *buf, size_t len, void (*buf_free)(void *, size_t),
                        xpv_decode_error *err) {
    return xpv_decode_ex(buf, len, buf_free, NULL, err);
}

xpv_profile *xpv_decode_limited(void *buf, size_t len, void (*buf_free)(void *, size_t),
                                uint64_t budget, xpv_decode_error *err) {
    xpv_decode_opts o = {.budget = budget};
    return xpv_decode_ex(buf, len, buf_free, &o, err);
}
