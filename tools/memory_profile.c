/*
 * memory_profile.c - the memory profile tool (XProf memory_profile).
 *
 * Input: the `MemoryAllocation` / `MemoryDeallocation` TraceMe events that
 * TF's BFC allocator writes on the `/host:CPU` plane, one allocator (memory
 * id) per `allocator_name` stat.  Output (xprof-reference.md §2.10): XProf's
 * MemoryProfile message as protobuf JSON (lowerCamelCase, int64 as strings,
 * every primitive field printed):
 *
 *   {"memoryProfilePerAllocator": {"<id>": {
 *        "memoryProfileSnapshots": [only those the breakdown references],
 *        "profileSummary": {...}, "activeAllocations": [...],
 *        "specialAllocations": [...], "sampledTimelineSnapshots": [<=1000]}},
 *    "numHosts": 1, "memoryIds": [sorted], "version": 1}
 *
 * The algorithm follows XProf step by step (summary in file order, stable
 * time sort, step-id repair, deallocation metadata from the matching
 * allocation, max box filter to 1000 points, breakdown of the live
 * allocations at the peak).  Where XProf iterates a hash map (ties in the
 * breakdown sort) we break ties by time order, so output is deterministic.
 * `hloModules` is not produced: XProf's converter leaves it empty too.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checked.h"
#include "collections.h"
#include "tool.h"

#define MP_MAX_TIMELINE 1000   /* XProf's default max_num_snapshots */
#define MP_INVALID_STEP (-1)

enum { MP_ALLOCATION = 1, MP_DEALLOCATION = 2 };

/* One MemoryProfileSnapshot.  Strings point into the profile. */
typedef struct mp_snap {
    int64_t time_ps;         /* event offset within its line */
    int64_t stack;           /* bytes_reserved */
    int64_t heap;            /* bytes_allocated */
    int64_t free_bytes;      /* bytes_available */
    int64_t peak_in_use;     /* peak_bytes_in_use */
    double frag;             /* fragmentation */
    int64_t requested;
    int64_t allocated;       /* allocation_bytes */
    uint64_t address;
    int64_t step;
    int64_t dtype;           /* TF DataType enum, valid when has_dtype */
    xpv_str op, region, shape;
    uint32_t order;          /* file order, the stable-sort tiebreak */
    uint8_t activity;        /* MP_ALLOCATION / MP_DEALLOCATION */
    uint8_t has_dtype;
} mp_snap;

/* MemoryAggregationStats. */
typedef struct mp_stats {
    int64_t stack, heap, free_bytes, peak_in_use;
    double frag;
} mp_stats;

/* A breakdown row before merging: index into snaps, or -1/-2 special. */
typedef struct mp_row {
    int64_t index;
    const mp_snap *meta;
} mp_row;

/* Everything XProf keeps per allocator. */
typedef struct mp_alloc {
    char *id;                /* memory id, malloc'ed */
    size_t idlen;            /* strlen(id) */
    mp_snap *snaps;
    size_t n, cap;
    /* MemoryProfileSummary */
    int64_t peak_lifetime;
    mp_stats peak;
    int64_t peak_time_ps;
    int64_t capacity;
    /* Results of the post-processing. */
    size_t *timeline;        /* indices into snaps, sorted by time */
    size_t ntimeline;
    mp_snap special[2];
    size_t nspecial;
    mp_row *rows;            /* active allocations, merged */
    int64_t *occ;            /* num_occurrences per row */
    size_t nrows;
} mp_alloc;

typedef struct mp_profile {
    mp_alloc *a;
    size_t n, cap;
    size_t last;             /* allocator of the previous event */
} mp_profile;

/* ==== TF DataType names (tensorflow/core/framework/types.proto) ========= */

static const char *const mp_dtype_names[] = {
    "INVALID", "float", "double", "int32", "uint8", "int16", "int8", "string",
    "complex64", "int64", "bool", "qint8", "quint8", "qint32", "bfloat16",
    "qint16", "quint16", "uint16", "complex128", "half", "resource", "variant",
    "uint32", "uint64", "float8_e5m2", "float8_e4m3fn", "float8_e4m3fnuz",
    "float8_e4m3b11fnuz", "float8_e5m2fnuz", "int4", "uint4", "int2", "uint2",
};
#define MP_NDTYPES (sizeof mp_dtype_names / sizeof mp_dtype_names[0])

/* Write TF's DataTypeString() of `s` into buf (empty when the event had no
 * data_type stat).  Returns buf. */
static const char *mp_dtype_str(const mp_snap *s, char *buf, size_t cap) {
    buf[0] = '\0';
    if (!s->has_dtype) return buf;
    int64_t t = s->dtype;
    if (t >= 0 && (uint64_t)t < MP_NDTYPES)
        snprintf(buf, cap, "%s", mp_dtype_names[t]);
    else if (t > 100 && (uint64_t)(t - 100) < MP_NDTYPES && t != 100)
        snprintf(buf, cap, "%s_ref", mp_dtype_names[t - 100]);
    else
        snprintf(buf, cap, "unknown dtype enum (%lld)", (long long)t);
    return buf;
}

/* ==== Collection (XProf GenerateMemoryProfile) =========================== */

enum {
    ST_INDEX_ON_HOST, ST_DEVICE_ORDINAL, ST_ALLOCATOR_NAME, ST_BYTES_RESERVED,
    ST_BYTES_ALLOCATED, ST_BYTES_AVAILABLE, ST_FRAGMENTATION, ST_PEAK_BYTES,
    ST_REQUESTED, ST_ALLOCATION_BYTES, ST_ADDR, ST_TF_OP, ST_GROUP_ID,
    ST_REGION_TYPE, ST_DATA_TYPE, ST_SHAPE, ST_COUNT
};

static const char *const mp_stat_names[ST_COUNT] = {
    "index_on_host", "device_ordinal", "allocator_name", "bytes_reserved",
    "bytes_allocated", "bytes_available", "fragmentation", "peak_bytes_in_use",
    "requested_bytes", "allocation_bytes", "addr", "tf_op", "group_id",
    "region_type", "data_type", "shape",
};

/* XStatVisitor::IntValue: int64 or uint64 (bit cast); anything else 0. */
static int64_t mp_int(const xpv_stat *s) {
    if (s->kind == XPV_STAT_INT) return s->v.i;
    if (s->kind == XPV_STAT_UINT) return (int64_t)s->v.u;
    return 0;
}

static xpv_str mp_strval(const xpv_stat *s) {
    xpv_str empty = {"", 0};
    return s->kind == XPV_STAT_STR ? s->v.s : empty;
}

/* Allocator with this id, created when new. */
static mp_alloc *mp_allocator(mp_profile *mp, const char *id, size_t len) {
    mp_alloc *l = mp->last < mp->n ? &mp->a[mp->last] : NULL;
    if (l && l->idlen == len && !memcmp(l->id, id, len)) return l;
    for (size_t i = 0; i < mp->n; i++)
        if (mp->a[i].idlen == len && !memcmp(mp->a[i].id, id, len)) {
            mp->last = i;
            return &mp->a[i];
        }
    if (mp->n == mp->cap) {
        mp->cap = mp->cap ? mp->cap * 2 : 4;
        mp->a = xpv_xrealloc(mp->a, mp->cap * sizeof *mp->a);
    }
    mp_alloc *a = &mp->a[mp->n++];
    memset(a, 0, sizeof *a);
    a->id = xpv_xmalloc(len + 1);
    memcpy(a->id, id, len);
    a->id[len] = '\0';
    a->idlen = strlen(a->id);
    mp->last = mp->n - 1;
    return a;
}

/* XProf UpdateProfileSummary: runs in file order, before sorting.  XProf
 * keeps the last snapshot's allocator peak_bytes_in_use as the lifetime
 * peak; in file order that can be an earlier, lower value (the audit saw
 * 5.0 GB "lifetime" under a 6.2 GB in-profile peak).  A lifetime peak is
 * the largest seen, and never below the peak observed in the profile. */
static void mp_update_summary(mp_alloc *a, const mp_snap *s) {
    int64_t in_use = xpv_add_i64(s->stack, s->heap, NULL);
    if (s->peak_in_use > a->peak_lifetime) a->peak_lifetime = s->peak_in_use;
    if (in_use > a->peak_lifetime) a->peak_lifetime = in_use;
    if (in_use >= a->peak.peak_in_use) {
        a->peak.stack = s->stack;
        a->peak.heap = s->heap;
        a->peak.free_bytes = s->free_bytes;
        a->peak.frag = s->frag;
        a->peak.peak_in_use = in_use;
        a->peak_time_ps = s->time_ps;
        a->capacity = xpv_add_i64(in_use, s->free_bytes, NULL);
    }
}

/* Line base in ps exactly as the decoder computed it, so that
 * start_ps - base gives the event's offset_ps back. */
static int64_t mp_line_base_ps(const xpv_profile *p, const xpv_line *ln) {
    int64_t ts = xpv_sub_i64(ln->timestamp_ns, p->base_ns, NULL);
    const int64_t lim = INT64_MAX / 4000;
    if (ts > lim) ts = lim;
    if (ts < -lim) ts = -lim;
    return ts * 1000;
}

/* Which event metadata entries are MemoryAllocation (1) / Deallocation (2);
 * malloc'ed array indexed by dense metadata index, or NULL when none. */
static uint8_t *mp_event_types(const xpv_plane *pl) {
    uint8_t *types = NULL;
    for (uint32_t i = 0; i < pl->nevent_meta; i++) {
        uint8_t t = 0;
        if (xpv_str_eq(pl->event_meta[i].name, "MemoryAllocation")) t = MP_ALLOCATION;
        else if (xpv_str_eq(pl->event_meta[i].name, "MemoryDeallocation")) t = MP_DEALLOCATION;
        if (!t) continue;
        if (!types) types = xpv_xcalloc(pl->nevent_meta, 1);
        types[i] = t;
    }
    return types;
}

/* Apply stat `st`, the memory stat number `k` (ST_*), to `s` / idbuf. */
static void mp_apply(const xpv_stat *st, int k, mp_snap *s, char *idbuf, size_t idcap,
                     size_t *idlen) {
    switch (k) {
    case ST_INDEX_ON_HOST:
    case ST_DEVICE_ORDINAL: {
        int n = snprintf(idbuf, idcap, "%lld", (long long)mp_int(st));
        *idlen = n < 0 ? 0 : (size_t)n < idcap ? (size_t)n : idcap - 1;
        break;
    }
    case ST_ALLOCATOR_NAME: {
        xpv_str v = mp_strval(st);
        size_t n = v.len < idcap - 1 ? v.len : idcap - 1;
        if (n) memcpy(idbuf, v.ptr, n); /* an absent string has ptr NULL */
        *idlen = n;
        break;
    }
    case ST_BYTES_RESERVED: s->stack = mp_int(st); break;
    case ST_BYTES_ALLOCATED: s->heap = mp_int(st); break;
    case ST_BYTES_AVAILABLE: s->free_bytes = mp_int(st); break;
    case ST_FRAGMENTATION: s->frag = st->kind == XPV_STAT_DOUBLE ? st->v.d : 0; break;
    case ST_PEAK_BYTES: s->peak_in_use = mp_int(st); break;
    case ST_REQUESTED: s->requested = mp_int(st); break;
    case ST_ALLOCATION_BYTES: s->allocated = mp_int(st); break;
    case ST_ADDR: s->address = (uint64_t)mp_int(st); break;
    case ST_TF_OP: s->op = mp_strval(st); break;
    case ST_GROUP_ID: s->step = mp_int(st); break;
    case ST_REGION_TYPE: s->region = mp_strval(st); break;
    case ST_DATA_TYPE:
        s->dtype = mp_int(st);
        s->has_dtype = 1;
        break;
    case ST_SHAPE: s->shape = mp_strval(st); break;
    default: break;
    }
}

static void mp_apply_any(const xpv_stat *st, const int32_t *sid, mp_snap *s, char *idbuf,
                         size_t idcap, size_t *idlen) {
    if (st->meta < 0) return;
    int k;
    for (k = 0; k < ST_COUNT; k++)
        if (sid[k] == st->meta) break;
    mp_apply(st, k, s, idbuf, idcap, idlen);
}

#define MP_ID_STATS \
    ((1u << ST_INDEX_ON_HOST) | (1u << ST_DEVICE_ORDINAL) | (1u << ST_ALLOCATOR_NAME))

/* Read one memory event's stats into `s` and its memory id into idbuf.
 * Later stats win, as in XProf's ForEachStat switch: the event's own
 * stats in order, then its metadata's.  One pass finds them all; the
 * order only matters when a stat repeats or two of the stats naming the
 * memory id are present, and then every stat is applied in order. */
static void mp_read_event(const xpv_plane *pl, const xpv_line *ln, const xpv_event *e,
                          const int32_t *sid, const xpv_stat_set *set, mp_snap *s,
                          char *idbuf, size_t idcap, size_t *idlen) {
    xpv_stat found[ST_COUNT];
    uint32_t multi = 0;
    *idlen = 0;
    uint32_t got = xpv_event_stats_in(pl, ln, e, set, found, &multi);
    uint32_t ids = got & MP_ID_STATS;
    if (!multi && !(ids & (ids - 1))) {
        for (uint32_t v = got; v; v &= v - 1) {
            int k = __builtin_ctz(v);
            mp_apply(&found[k], k, s, idbuf, idcap, idlen);
        }
    } else {
        xpv_stat_iter it;
        xpv_stat st;
        xpv_stat_iter_init(&it, pl, ln, e);
        while (xpv_stat_next(&it, &st)) mp_apply_any(&st, sid, s, idbuf, idcap, idlen);
    }
    const xpv_event_meta *m = xpv_event_metadata(pl, e);
    for (uint32_t mi = 0; mi < m->nstats; mi++)
        mp_apply_any(&m->stats[mi], sid, s, idbuf, idcap, idlen);
}

/* Collect every memory event of `pl` into per-allocator snapshot lists. */
static void mp_collect(const xpv_profile *p, const xpv_plane *pl, mp_profile *mp) {
    uint8_t *types = mp_event_types(pl);
    if (!types) return;
    int32_t sid[ST_COUNT];
    for (int k = 0; k < ST_COUNT; k++) sid[k] = xpv_stat_id(pl, mp_stat_names[k]);
    xpv_stat_set set;
    xpv_stat_set_init(&set, pl, sid, ST_COUNT);
    uint32_t order = 0;
    char idbuf[512];
    for (uint32_t li = 0; li < pl->nlines; li++) {
        const xpv_line *ln = &pl->lines[li];
        int64_t base = mp_line_base_ps(p, ln);
        for (uint32_t ei = 0; ei < ln->nevents; ei++) {
            const xpv_event *e = &ln->events[ei];
            uint8_t t = e->meta < pl->nevent_meta ? types[e->meta] : 0;
            if (!t) continue;
            mp_snap s;
            memset(&s, 0, sizeof s);
            s.op = s.region = s.shape = xpv_cstr("");
            s.activity = t;
            s.step = MP_INVALID_STEP;
            s.time_ps = xpv_sub_i64(e->start_ps, base, NULL);
            s.order = order++;
            size_t idlen = 0;
            mp_read_event(pl, ln, e, sid, &set, &s, idbuf, sizeof idbuf, &idlen);
            mp_alloc *a = mp_allocator(mp, idbuf, idlen);
            mp_update_summary(a, &s);
            if (a->n == a->cap) {
                a->cap = a->cap ? a->cap * 2 : 64;
                a->snaps = xpv_xrealloc(a->snaps, a->cap * sizeof *a->snaps);
            }
            a->snaps[a->n++] = s;
        }
    }
    free(types);
}

/* ==== Post-processing (XProf ProcessMemoryProfileProto) ================== */

/* Snapshots without a step id get the last valid one + 1 (0 at start). */
static void mp_update_step_ids(mp_alloc *a) {
    int64_t last = -1;
    for (size_t i = 0; i < a->n; i++) {
        if (a->snaps[i].step == MP_INVALID_STEP) a->snaps[i].step = xpv_add_i64(last, 1, NULL);
        else last = a->snaps[i].step;
    }
}

/* Address -> snapshot index + 1 (0 = none or freed): base/collections.h. */
static int64_t mp_map_get(const i64map *m, uint64_t k) {
    uint32_t v = i64map_at(m, (int64_t)k);
    return v ? (int64_t)v - 1 : -1;
}

static void mp_map_put(i64map *m, uint64_t k, int64_t v) {
    i64map_put(m, (int64_t)k, v < 0 ? 0 : (uint32_t)(v + 1));
}

/* Deallocations take op/region/dtype/shape from the allocation at the same
 * address (first allocation wins until it is freed). */
static void mp_update_deallocations(mp_alloc *a) {
    i64map m = {0};
    for (size_t i = 0; i < a->n; i++) {
        mp_snap *s = &a->snaps[i];
        int64_t j = mp_map_get(&m, s->address);
        if (s->activity == MP_DEALLOCATION) {
            if (j >= 0) {
                const mp_snap *al = &a->snaps[j];
                s->op = al->op;
                s->region = al->region;
                s->dtype = al->dtype;
                s->has_dtype = al->has_dtype;
                s->shape = al->shape;
                mp_map_put(&m, s->address, -1);
            }
        } else if (j < 0) {
            mp_map_put(&m, s->address, (int64_t)i);
        }
    }
    i64map_free(&m);
}

static int64_t mp_in_use(const mp_snap *s) { return xpv_add_i64(s->stack, s->heap, NULL); }

/* Max box filter down to MP_MAX_TIMELINE points (or all of them). */
static void mp_sample_timeline(mp_alloc *a) {
    size_t n = a->n, max = MP_MAX_TIMELINE;
    a->timeline = xpv_xmalloc((n < max ? n : max) * sizeof *a->timeline + 1);
    a->ntimeline = 0;
    if (n <= max) {
        for (size_t i = 0; i < n; i++) a->timeline[a->ntimeline++] = i;
        return;
    }
    size_t width = n / max;
    size_t count1 = max * (width + 1) - n;
    size_t count2 = max - count1;
    size_t widths[2] = {width, width + 1}, counts[2] = {count1, count2};
    size_t starts[2] = {0, width * count1};
    for (int box = 0; box < 2; box++) {
        for (size_t i = 0; i < counts[box]; i++) {
            size_t first = starts[box] + widths[box] * i;
            size_t best = first;
            for (size_t k = first + 1; k < first + widths[box]; k++)
                if (mp_in_use(&a->snaps[k]) > mp_in_use(&a->snaps[best])) best = k;
            a->timeline[a->ntimeline++] = best;
        }
    }
}

/* Step of the (last) snapshot whose stack+heap equals the window peak. */
static int64_t mp_peak_step(const mp_alloc *a) {
    int64_t step = 0;
    for (size_t i = 0; i < a->n; i++)
        if (mp_in_use(&a->snaps[i]) == a->peak.peak_in_use) step = a->snaps[i].step;
    return step;
}

static int mp_cmp_str(xpv_str x, xpv_str y) {
    size_t n = x.len < y.len ? x.len : y.len;
    int c = n ? memcmp(x.ptr, y.ptr, n) : 0;
    if (c) return c;
    return x.len < y.len ? -1 : x.len > y.len;
}

/* XProf MetadataComparator: allocation bytes desc, requested desc, then op,
 * region, dtype, shape ascending.  Returns 0 for "identical" rows. */
static int mp_cmp_meta(const mp_snap *x, const mp_snap *y) {
    char bx[48], by[48];
    int c;
    if (x->allocated != y->allocated) return x->allocated > y->allocated ? -1 : 1;
    if (x->requested != y->requested) return x->requested > y->requested ? -1 : 1;
    if ((c = mp_cmp_str(x->op, y->op))) return c;
    if ((c = mp_cmp_str(x->region, y->region))) return c;
    if ((x->has_dtype != y->has_dtype || x->dtype != y->dtype) &&
        (c = strcmp(mp_dtype_str(x, bx, sizeof bx), mp_dtype_str(y, by, sizeof by))))
        return c;
    return mp_cmp_str(x->shape, y->shape);
}

static int mp_cmp_row(const void *p, const void *q) {
    const mp_row *x = p, *y = q;
    int c = mp_cmp_meta(x->meta, y->meta);
    if (c) return c;
    /* Deterministic tiebreak (XProf: hash-map order). */
    return x->index < y->index ? -1 : x->index > y->index;
}

/* A special breakdown row ("unused preallocated device memory", "stack"). */
static void mp_add_special(mp_alloc *a, mp_row *rows, size_t *nrows, int64_t bytes,
                           const char *op, const char *region, int64_t step) {
    mp_snap *s = &a->special[a->nspecial];
    memset(s, 0, sizeof *s);
    s->activity = MP_ALLOCATION;
    s->requested = s->allocated = bytes;
    s->op = xpv_cstr(op);
    s->region = xpv_cstr(region);
    s->shape = xpv_cstr("unknown");
    s->has_dtype = 1;            /* DataTypeString(0) = "INVALID" */
    s->dtype = 0;
    s->step = step;
    a->nspecial++;
    rows[*nrows].index = -(int64_t)a->nspecial;
    rows[*nrows].meta = s;
    (*nrows)++;
}

/* The breakdown table: live allocations of the peak step at the peak. */
static void mp_active_allocations(mp_alloc *a, int64_t peak_step) {
    int64_t unmapped = a->peak.heap, unmapped_dealloc = 0;
    i64map m = {0};
    size_t nlive = 0;
    for (size_t i = 0; i < a->n; i++) {
        const mp_snap *s = &a->snaps[i];
        if (s->time_ps > a->peak_time_ps) break;
        if (s->step != peak_step) continue;
        if (s->activity == MP_ALLOCATION) {
            if (mp_map_get(&m, s->address) < 0) nlive++;
            mp_map_put(&m, s->address, (int64_t)i);
            unmapped = xpv_sub_i64(unmapped, s->allocated, NULL);
        } else {
            if (mp_map_get(&m, s->address) >= 0) {
                mp_map_put(&m, s->address, -1);
                nlive--;
            } else {
                unmapped_dealloc = xpv_add_i64(unmapped_dealloc, s->allocated, NULL);
            }
            unmapped = xpv_add_i64(unmapped, s->allocated, NULL);
        }
    }
    unmapped = xpv_sub_i64(unmapped, unmapped_dealloc, NULL);

    mp_row *rows = xpv_xmalloc((nlive + 2) * sizeof *rows);
    size_t nrows = 0;
    for (size_t i = 0; i < m.cap; i++) {
        if (!m.used[i] || !m.vals[i]) continue;
        rows[nrows].index = (int64_t)m.vals[i] - 1;
        rows[nrows].meta = &a->snaps[m.vals[i] - 1];
        nrows++;
    }
    i64map_free(&m);
    if (unmapped > 0)
        mp_add_special(a, rows, &nrows, unmapped, "unused preallocated device memory",
                       "persist/dynamic", peak_step);
    if (a->peak.stack > 0)
        mp_add_special(a, rows, &nrows, a->peak.stack, "stack", "stack", peak_step);
    /* Special rows point into a->special, which must not move: it is an
     * inline array, filled before sorting. */
    qsort(rows, nrows, sizeof *rows, mp_cmp_row);

    a->rows = xpv_xmalloc((nrows + 1) * sizeof *a->rows);
    a->occ = xpv_xmalloc((nrows + 1) * sizeof *a->occ);
    a->nrows = 0;
    for (size_t i = 0; i < nrows; i++) {
        a->rows[a->nrows] = rows[i];
        a->occ[a->nrows] = 1;
        while (i + 1 < nrows && mp_cmp_meta(rows[i].meta, rows[i + 1].meta) == 0) {
            a->occ[a->nrows]++;
            i++;
        }
        a->nrows++;
    }
    free(rows);
}

typedef struct mp_key_idx {
    int64_t time_ps;
    size_t idx;                /* position in file order */
} mp_key_idx;

static int mp_cmp_key_idx(const void *x, const void *y) {
    const mp_key_idx *a = x, *b = y;
    if (a->time_ps != b->time_ps) return a->time_ps < b->time_ps ? -1 : 1;
    return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/* Stable sort by time (snapshots are in file order).  Usually one line
 * holds an allocator's events, already in time order; otherwise sort
 * (time, position) pairs and permute the big records once. */
static void mp_sort_by_time(mp_alloc *a) {
    size_t n = a->n, i;
    for (i = 1; i < n; i++)
        if (a->snaps[i].time_ps < a->snaps[i - 1].time_ps) break;
    if (i >= n) return;
    mp_key_idx *k = xpv_xmalloc(n * sizeof *k);
    for (i = 0; i < n; i++) {
        k[i].time_ps = a->snaps[i].time_ps;
        k[i].idx = i;
    }
    qsort(k, n, sizeof *k, mp_cmp_key_idx);
    /* Permute in place along cycles: slot i receives snaps[k[i].idx]. */
    for (i = 0; i < n; i++) {
        if (k[i].idx == i || k[i].idx == SIZE_MAX) continue;
        mp_snap tmp = a->snaps[i];
        size_t j = i;
        for (;;) {
            size_t from = k[j].idx;
            k[j].idx = SIZE_MAX;
            if (from == i) {
                a->snaps[j] = tmp;
                break;
            }
            a->snaps[j] = a->snaps[from];
            j = from;
        }
    }
    free(k);
}

static void mp_process(mp_alloc *a) {
    mp_sort_by_time(a);
    mp_update_step_ids(a);
    mp_update_deallocations(a);
    mp_sample_timeline(a);
    mp_active_allocations(a, mp_peak_step(a));
}

static void mp_free(mp_profile *mp) {
    for (size_t i = 0; i < mp->n; i++) {
        free(mp->a[i].id);
        free(mp->a[i].snaps);
        free(mp->a[i].timeline);
        free(mp->a[i].rows);
        free(mp->a[i].occ);
    }
    free(mp->a);
}

/* ==== JSON ================================================================ */

static void mp_key(xpv_buf *b, const char *k) {
    xpv_buf_putc(b, '"');
    xpv_buf_puts(b, k);
    xpv_buf_puts(b, "\":");
}

/* An int64 field: protobuf JSON prints it as a string. */
static void mp_i64(xpv_buf *b, const char *k, int64_t v, int comma) {
    mp_key(b, k);
    xpv_buf_putc(b, '"');
    xpv_buf_i64(b, v);
    xpv_buf_putc(b, '"');
    if (comma) xpv_buf_putc(b, ',');
}

static void mp_strfield(xpv_buf *b, const char *k, xpv_str v, int comma) {
    mp_key(b, k);
    xpv_buf_json_str(b, v.ptr, v.len);
    if (comma) xpv_buf_putc(b, ',');
}

static void mp_write_stats(xpv_buf *b, const mp_stats *s) {
    xpv_buf_putc(b, '{');
    mp_i64(b, "stackReservedBytes", s->stack, 1);
    mp_i64(b, "heapAllocatedBytes", s->heap, 1);
    mp_i64(b, "freeMemoryBytes", s->free_bytes, 1);
    mp_key(b, "fragmentation");
    xpv_buf_double(b, s->frag);
    xpv_buf_putc(b, ',');
    mp_i64(b, "peakBytesInUse", s->peak_in_use, 0);
    xpv_buf_putc(b, '}');
}

static void mp_write_meta(xpv_buf *b, const mp_snap *s) {
    char dt[48];
    xpv_buf_putc(b, '{');
    mp_key(b, "memoryActivity");
    xpv_buf_puts(b, s->activity == MP_ALLOCATION ? "\"ALLOCATION\"," : "\"DEALLOCATION\",");
    mp_i64(b, "requestedBytes", s->requested, 1);
    mp_i64(b, "allocationBytes", s->allocated, 1);
    mp_key(b, "address");
    xpv_buf_putc(b, '"');
    xpv_buf_u64(b, s->address);
    xpv_buf_puts(b, "\",");
    mp_strfield(b, "tfOpName", s->op, 1);
    mp_i64(b, "stepId", s->step, 1);
    mp_strfield(b, "regionType", s->region, 1);
    mp_strfield(b, "dataType", xpv_cstr(mp_dtype_str(s, dt, sizeof dt)), 1);
    mp_strfield(b, "tensorShape", s->shape, 0);
    xpv_buf_putc(b, '}');
}

static void mp_write_snapshot(xpv_buf *b, const mp_snap *s) {
    mp_stats st = {s->stack, s->heap, s->free_bytes, s->peak_in_use, s->frag};
    xpv_buf_putc(b, '{');
    mp_i64(b, "timeOffsetPs", s->time_ps, 1);
    mp_key(b, "aggregationStats");
    mp_write_stats(b, &st);
    xpv_buf_putc(b, ',');
    mp_key(b, "activityMetadata");
    mp_write_meta(b, s);
    xpv_buf_putc(b, '}');
}

static void mp_write_allocator(xpv_buf *b, const mp_alloc *a) {
    xpv_buf_putc(b, '{');
    /* memory_profile_snapshots: only those the breakdown references, in
     * breakdown order (XProf SaveActiveAllocationSnapshots). */
    mp_key(b, "memoryProfileSnapshots");
    xpv_buf_putc(b, '[');
    int first = 1;
    for (size_t i = 0; i < a->nrows; i++) {
        if (a->rows[i].index < 0) continue;
        if (!first) xpv_buf_putc(b, ',');
        first = 0;
        mp_write_snapshot(b, a->rows[i].meta);
    }
    xpv_buf_puts(b, "],");

    mp_key(b, "profileSummary");
    xpv_buf_putc(b, '{');
    mp_i64(b, "peakBytesUsageLifetime", a->peak_lifetime, 1);
    mp_key(b, "peakStats");
    mp_write_stats(b, &a->peak);
    xpv_buf_putc(b, ',');
    mp_i64(b, "peakStatsTimePs", a->peak_time_ps, 1);
    mp_i64(b, "memoryCapacity", a->capacity, 0);
    xpv_buf_puts(b, "},");

    mp_key(b, "activeAllocations");
    xpv_buf_putc(b, '[');
    int64_t next = 0;
    for (size_t i = 0; i < a->nrows; i++) {
        int64_t idx = a->rows[i].index;
        if (i) xpv_buf_putc(b, ',');
        xpv_buf_putc(b, '{');
        mp_i64(b, "snapshotIndex", idx < 0 ? idx : next++, 1);
        mp_i64(b, "specialIndex", idx < 0 ? -idx - 1 : -1, 1);
        mp_i64(b, "numOccurrences", a->occ[i], 0);
        xpv_buf_putc(b, '}');
    }
    xpv_buf_puts(b, "],");

    mp_key(b, "specialAllocations");
    xpv_buf_putc(b, '[');
    for (size_t i = 0; i < a->nspecial; i++) {
        if (i) xpv_buf_putc(b, ',');
        mp_write_meta(b, &a->special[i]);
    }
    xpv_buf_puts(b, "],");

    mp_key(b, "sampledTimelineSnapshots");
    xpv_buf_putc(b, '[');
    for (size_t i = 0; i < a->ntimeline; i++) {
        if (i) xpv_buf_putc(b, ',');
        mp_write_snapshot(b, &a->snaps[a->timeline[i]]);
    }
    xpv_buf_puts(b, "]}");
}

static int mp_cmp_id(const void *x, const void *y) {
    return strcmp(((const mp_alloc *)x)->id, ((const mp_alloc *)y)->id);
}

/* ==== Tool ================================================================ */

int xpv_memory_profile_render(const xpv_hostset *hs, const void *derived, const xpv_params *q,
                              xpv_buf *out, xpv_err *err) {
    (void)derived;
    (void)q;
    if (hs->n != 1) {
        err->status = XPV_E_BAD_REQUEST;
        snprintf(err->msg, sizeof err->msg,
                 "memory_profile needs exactly one host (got %zu)", hs->n);
        return -1;
    }
    const xpv_profile *p = hs->profiles[0];
    const xpv_plane *pl = xpv_find_plane(p, "/host:CPU");
    if (!pl) {
        err->status = XPV_E_NOT_FOUND;
        snprintf(err->msg, sizeof err->msg,
                 "no /host:CPU plane in this profile: no memory profile data");
        return -1;
    }
    mp_profile mp = {0};
    mp_collect(p, pl, &mp);
    if (mp.n > 1) qsort(mp.a, mp.n, sizeof *mp.a, mp_cmp_id);
    for (size_t i = 0; i < mp.n; i++) mp_process(&mp.a[i]);

    xpv_buf_puts(out, "{\"memoryProfilePerAllocator\":{");
    for (size_t i = 0; i < mp.n; i++) {
        if (i) xpv_buf_putc(out, ',');
        xpv_buf_json_cstr(out, mp.a[i].id);
        xpv_buf_putc(out, ':');
        mp_write_allocator(out, &mp.a[i]);
    }
    xpv_buf_puts(out, "},\"numHosts\":1,\"memoryIds\":[");
    for (size_t i = 0; i < mp.n; i++) {
        if (i) xpv_buf_putc(out, ',');
        xpv_buf_json_cstr(out, mp.a[i].id);
    }
    xpv_buf_puts(out, "],\"version\":1}");
    mp_free(&mp);
    return 0;
}

/* Offered when the host plane has allocator events. */
int xpv_memory_profile_available(const xpv_profile *p) {
    const xpv_plane *pl = xpv_find_plane(p, "/host:CPU");
    if (!pl) return 0;
    uint8_t *types = mp_event_types(pl);
    int has = types != NULL;
    free(types);
    return has;
}
