/*
 * model.h - the in-memory profile model every converter reads.
 *
 * A profile is one decoded XSpace (one host file).  It owns:
 *   - the file bytes (one buffer; every string in the model is a slice into
 *     it, or into the arena for the rare strings that had to be built),
 *   - one arena holding every plane, line, event and metadata table.
 * xpv_profile_free() releases all of it in one call.
 *
 * Events are compact (24 bytes): absolute start and duration in ps, the
 * dense index of their event metadata, and the offset of their wire bytes
 * so event stats are decoded lazily with xpv_stat_iter (refs resolved,
 * display names applied).  Converters receive `const xpv_profile *` and
 * must never modify it: the same profile is shared by concurrent requests.
 */
#ifndef XPV_MODEL_H
#define XPV_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "arena.h"

/* A string slice.  Not NUL-terminated.  len == 0 means empty. */
typedef struct xpv_str {
    const char *ptr;
    uint32_t len;
} xpv_str;

/* Stat value kinds, matching the XStat oneof. */
enum xpv_stat_kind {
    XPV_STAT_NONE = 0,   /* no value on the wire (proto3 default) */
    XPV_STAT_DOUBLE,
    XPV_STAT_UINT,
    XPV_STAT_INT,
    XPV_STAT_STR,        /* str_value, or ref_value resolved to its name */
    XPV_STAT_BYTES,
    XPV_STAT_GZSTR       /* compressed_str_value: gzip bytes, see xpv_stat_gzstr() */
};

/* One decoded stat.  `meta` is the dense stat-metadata index in its plane
 * (or -1 when the file names a metadata id the plane does not define). */
typedef struct xpv_stat {
    int32_t meta;
    uint8_t kind;        /* enum xpv_stat_kind */
    uint8_t is_ref;      /* 1 when the string came from ref_value */
    union {
        double d;
        uint64_t u;
        int64_t i;
        xpv_str s;       /* STR, BYTES and GZSTR */
    } v;
} xpv_stat;

typedef struct xpv_stat_meta {
    int64_t key;             /* map key: what stats refer to (normally == id) */
    int64_t id;
    xpv_str name;
    xpv_str description;
} xpv_stat_meta;

typedef struct xpv_event_meta {
    int64_t key;             /* map key: what events refer to (normally == id) */
    int64_t id;
    xpv_str name;
    xpv_str display_name;
    xpv_str metadata;        /* opaque bytes field 3 */
    xpv_stat *stats;         /* metadata-level stats, decoded eagerly */
    uint32_t nstats;
    uint32_t nchildren;
    int64_t *child_ids;
} xpv_event_meta;

/* 24 bytes per event: this array dominates the model's size. */
typedef struct xpv_event {
    int64_t start_ps;        /* line.timestamp_ns*1000 + offset_ps */
    int64_t dur_ps;
    uint32_t meta;           /* dense index into plane->event_meta */
    uint32_t wire;           /* offset of the XEvent bytes from line->wire,
                              * or XPV_NO_STATS when it carries no stats */
} xpv_event;

#define XPV_NO_STATS UINT32_MAX

typedef struct xpv_line {
    int64_t id;
    int64_t display_id;      /* display_id, or id when the file has none */
    xpv_str name;
    xpv_str display_name;    /* display_name, or name when the file has none */
    int64_t timestamp_ns;
    int64_t duration_ps;
    const uint8_t *wire;     /* base for xpv_event.wire offsets */
    size_t wire_len;         /* bytes at `wire` an event's stats may use:
                              * every stat read stays inside them, also when
                              * a mapped file's bytes changed after decode */
    xpv_event *events;
    uint32_t nevents;
    uint8_t has_num_occurrences; /* some event used num_occurrences, not offset */
    uint8_t stat_keys_known;     /* stat_keys is valid (set by the decoder) */
    uint64_t stat_keys;          /* the metadata keys its events' stats name, as
                                  * xpv_stat_key_bit bits: lets a pass skip the
                                  * lines whose events cannot hold the stats it
                                  * reads without walking their bytes */
    uint8_t time_ordered;        /* 1: the decoder saw its events in time order
                                  * (start, longer first on equal starts);
                                  * 0: not, or not known */
} xpv_line;

/* 1 when the line's events are in time order (start, longer first on
 * equal starts): known from the decoder, else checked here. */
static inline int xpv_line_in_time_order(const xpv_line *ln) {
    if (ln->time_ordered) return 1;
    for (uint32_t i = 1; i < ln->nevents; i++) {
        const xpv_event *x = &ln->events[i - 1], *y = &ln->events[i];
        if (y->start_ps < x->start_ps || (y->start_ps == x->start_ps && y->dur_ps > x->dur_ps))
            return 0;
    }
    return 1;
}

/* A qsort record of time order: start, longer first, then `tie` (an
 * index, or a line and an index). */
typedef struct xpv_time_key {
    int64_t start, dur;
    uint64_t tie;
} xpv_time_key;
int xpv_cmp_time_key(const void *a, const void *b);

/* The indices of the line's events in time order (start, longer first,
 * then index), malloc'd; NULL when they are stored in that order. */
uint32_t *xpv_line_time_order(const xpv_line *ln);

/* Bit of a stat metadata key in xpv_line.stat_keys: keys 0..62 have their
 * own bit, every other key shares bit 63. */
static inline uint64_t xpv_stat_key_bit(int64_t key) {
    return (uint64_t)key < 63 ? 1ull << key : 1ull << 63;
}

typedef struct xpv_plane {
    int64_t id;
    xpv_str name;
    xpv_line *lines;
    uint32_t nlines;
    xpv_event_meta *event_meta;  /* dense; index 0 is a synthetic empty entry */
    uint32_t nevent_meta;
    xpv_stat_meta *stat_meta;    /* dense; index 0 is a synthetic empty entry */
    uint32_t nstat_meta;
    xpv_stat *stats;             /* plane-level stats */
    uint32_t nstats;
    /* per plane stat: its metadata id as written, also when no metadata
     * has it (`/host:__ScopeRangeCallStack__` keys its tree so); NULL
     * where the source was not an xplane */
    int64_t *stat_mids;
    /* id -> dense index lookup (private to model.c; use the functions). */
    struct xpv_idmap *event_meta_ids;
    struct xpv_idmap *stat_meta_ids;
    uint64_t nevents;            /* events over all lines */
} xpv_plane;

/* A walk over chosen lines of a plane in the plane's time order: start,
 * longer first, line index, event index (XProf's merge of the lines,
 * each in its own time order).  Lines are added with
 * xpv_plane_walk_add; xpv_plane_walk_next takes the next event (NULL at
 * the end).  The cursors are open for a caller that finishes a lone line
 * itself (cur[0]: its line, and `pos` into `ord` or the events). */
typedef struct xpv_walk_cursor {
    const xpv_line *ln;
    uint32_t li, pos;
    uint32_t *ord;             /* xpv_line_time_order, or NULL */
} xpv_walk_cursor;

typedef struct xpv_plane_walk {
    const xpv_plane *pl;
    xpv_walk_cursor *cur;      /* the lines not finished */
    uint32_t n;
} xpv_plane_walk;

void xpv_plane_walk_init(xpv_plane_walk *w, const xpv_plane *pl);
/* Adds line `li` (no-op for an empty line). */
void xpv_plane_walk_add(xpv_plane_walk *w, uint32_t li);
const xpv_event *xpv_plane_walk_next(xpv_plane_walk *w, uint32_t *li, uint32_t *ei);
void xpv_plane_walk_free(xpv_plane_walk *w);

/* What a Chrome trace source held (xpv_profile.trace_facts): run_tools
 * lists kernel_stats / framework_op_stats for a trace by these. */
enum {
    XPV_TRACE_HOST_OPS = 1 << 0,     /* cpu_op / Operator events */
    XPV_TRACE_KERNELS = 1 << 1,      /* kernel / Kernel events */
};

typedef struct xpv_profile {
    xpv_plane *planes;
    uint32_t nplanes;
    xpv_str *errors;
    uint32_t nerrors;
    xpv_str *warnings;
    uint32_t nwarnings;
    xpv_str *hostnames;
    uint32_t nhostnames;
    uint64_t nevents;            /* events over all planes */
    int64_t base_ns;             /* subtracted from line timestamps; 0 unless
                                  * the file holds epoch-ns timestamps whose
                                  * ps value would overflow int64 */
    size_t file_size;            /* bytes decoded */
    unsigned trace_facts;        /* XPV_TRACE_* bits: what a Chrome trace held
                                  * (set by its importer; 0 for XPlanes) */
    size_t mem_size;             /* heap bytes held: arena, and the buffer
                                  * unless it maps the file (page cache) */
    xpv_arena arena;
    void *buf;                   /* the file bytes; freed with the profile */
    void (*buf_free)(void *buf, size_t len);
    size_t buf_len;
    /* What the analysis layer derives once per profile and keeps with it
     * (analysis/enrich/enrich.h: event groups, derived lines).  Opaque here; set
     * once, atomically, by its builder; freed with the profile. */
    struct xpv_profile_ext *ext;
} xpv_profile;

/* Head of a profile extension: how to free it. */
typedef struct xpv_profile_ext {
    void (*free)(struct xpv_profile_ext *ext);
} xpv_profile_ext;

/* Release everything the profile holds.  NULL is allowed. */
void xpv_profile_free(xpv_profile *p);

/* Append a warning (copied into the profile's arena) to p->warnings, shown
 * with the file's own XSpace warnings (profile_info, overview diagnostics).
 * Importers use it for values they had to clamp or drop. */
void xpv_profile_add_warning(xpv_profile *p, const char *msg);

/* ==== Lookups =========================================================== */

/* First plane with exactly this name, or NULL. */
const xpv_plane *xpv_find_plane(const xpv_profile *p, const char *name);

/* Dense stat-metadata index of the stat named `name` in this plane (first
 * seen wins), or -1.  Converters resolve the names they need once. */
int32_t xpv_stat_id(const xpv_plane *pl, const char *name);

/* Dense event-metadata index for a raw metadata id, or 0 (the empty entry). */
uint32_t xpv_event_meta_index(const xpv_plane *pl, int64_t id);
/* Dense stat-metadata index for a raw metadata id, or -1. */
int32_t xpv_stat_meta_index(const xpv_plane *pl, int64_t id);

/* Name shown in UIs: display_name when set, else name. */
xpv_str xpv_event_display_name(const xpv_plane *pl, const xpv_event *e);
static inline const xpv_event_meta *xpv_event_metadata(const xpv_plane *pl,
                                                       const xpv_event *e) {
    return &pl->event_meta[e->meta];
}

/* ==== Event stats (lazy) ================================================= */

typedef struct xpv_stat_iter {
    const xpv_plane *plane;
    const uint8_t *p, *end;
} xpv_stat_iter;

/* Iterate the event's own stats (not its metadata's). */
void xpv_stat_iter_init(xpv_stat_iter *it, const xpv_plane *pl,
                        const xpv_line *ln, const xpv_event *e);
/* Fill `out` with the next stat; returns 0 when there are no more. */
int xpv_stat_next(xpv_stat_iter *it, xpv_stat *out);

/* Find the event stat with dense index `stat_id` (from xpv_stat_id).
 * Returns 1 and fills `out` when present, else 0.  When the same stat occurs
 * twice the last one wins. */
int xpv_event_stat(const xpv_plane *pl, const xpv_line *ln,
                   const xpv_event *e, int32_t stat_id, xpv_stat *out);
/* Several stats in one pass: `ids` holds `n` <= 32 dense stat indices
 * from xpv_stat_id (negative ones never match).  Fills out[i] for each
 * ids[i] present, the last occurrence winning as in xpv_event_stat
 * (out[i].meta is ids[i]), and returns the mask of the ids found (bit i
 * for ids[i]).  Only the matching stats are decoded.  `multi` (may be
 * NULL) gets the mask of ids that occur more than once, for callers that
 * must see every occurrence (they can iterate with xpv_stat_next then). */
uint32_t xpv_event_stats(const xpv_plane *pl, const xpv_line *ln, const xpv_event *e,
                         const int32_t *ids, uint32_t n, xpv_stat *out, uint32_t *multi);
/* The same with the ids resolved once per plane: xpv_stat_set_init copies
 * `ids` (n <= 32) and their keys in `pl`; xpv_event_stats_in then costs
 * nothing per call beyond the pass over the event's stats. */
typedef struct xpv_stat_set {
    int32_t ids[32];
    int64_t want[32];          /* raw metadata keys */
    uint32_t n, valid, big;    /* masks: ids in this plane, keys >= 64 */
    uint8_t small[64];         /* key < 64 -> index in ids, 0xff none */
    uint64_t key_bits;         /* xpv_stat_key_bit of every valid key */
} xpv_stat_set;
void xpv_stat_set_init(xpv_stat_set *set, const xpv_plane *pl, const int32_t *ids,
                       uint32_t n);
uint32_t xpv_event_stats_in(const xpv_plane *pl, const xpv_line *ln, const xpv_event *e,
                            const xpv_stat_set *set, xpv_stat *out, uint32_t *multi);
/* 0 when no event of the line can carry a stat of `set` (the decoder saw
 * none of its keys there): xpv_event_stats_in would find nothing on any
 * of them.  1 when some may (always for lines not from the decoder). */
static inline int xpv_line_may_have(const xpv_line *ln, const xpv_stat_set *set) {
    return !ln->stat_keys_known || (ln->stat_keys & set->key_bits) != 0;
}
/* Same, looking at the event's own stats first, then its metadata stats. */
int xpv_event_or_meta_stat(const xpv_plane *pl, const xpv_line *ln,
                           const xpv_event *e, int32_t stat_id, xpv_stat *out);
/* Plane-level stat by dense stat index. */
int xpv_plane_stat(const xpv_plane *pl, int32_t stat_id, xpv_stat *out);

/* Value helpers: int-or-uint-or-double read as int64 / double; string for
 * STR (refs already resolved).  Return 0 when the kind does not fit. */
int xpv_stat_as_int(const xpv_stat *s, int64_t *out);
int xpv_stat_as_double(const xpv_stat *s, double *out);

/* Inflate a compressed_str_value into `out` (at most `cap` bytes).
 * Returns the length or -1. */
long xpv_stat_gzstr(const xpv_stat *s, char *out, size_t cap);

/* ==== Small string helpers ============================================== */

static inline xpv_str xpv_cstr(const char *s);
int xpv_str_eq(xpv_str a, const char *b);
int xpv_str_has_prefix(xpv_str a, const char *prefix);
/* As xpv_str_has_prefix, ASCII letters compared without case (XProf's
 * absl::StartsWithIgnoreCase). */
int xpv_str_has_prefix_nocase(xpv_str a, const char *prefix);
/* Whether `needle` occurs in `a` (an empty needle always does). */
int xpv_str_contains(xpv_str a, const char *needle);

#include <string.h>
static inline xpv_str xpv_cstr(const char *s) {
    xpv_str r = {s, (uint32_t)strlen(s)};
    return r;
}

/* Derived line ids (XProf's 0xdeadbeef base, see xplane-format.md §3). */
int xpv_line_is_derived(const xpv_line *ln);

#endif /* XPV_MODEL_H */
