/*
 * trace_index.h - the trace viewer's per-host-set event index with
 * precomputed levels of detail (derived kind "trace_index").
 *
 * Built once per (run, host set) from const profiles and cached by the
 * server.  It never copies events: it holds, per timeline row (one XLine of
 * a shown plane), the indices of the row's events grouped by nesting depth
 * (counter rows: by counter name), and inside a group ordered by
 * (level, start).  That is 4 bytes per event plus small per-row/group
 * headers; starts, durations and names are read from the profile.
 *
 * Levels: level L has resolution XPV_TRACE_RES(L) = 4^(XPV_TRACE_LEVELS-1-L)
 * ps (level 0 ~ 1126 s, the last level 1 ps).  An event's level is the
 * coarsest level at which XProf's visibility rule (xprof-reference.md
 * §2.12) shows it when applied to its whole group:
 *   - the first event of a group is visible;
 *   - an event is visible if dur >= res, or its start is >= res after the
 *     end of the last visible event of its group (same row, same depth);
 *   - counter samples: visible if >= res after the previous visible sample
 *     of the same counter.
 * A query at resolution R reads only the levels whose resolution is >= R/4
 * (plus the next one), then re-applies the rule at R in the window, so a
 * response holds at most ~2 events per R of time per group whatever the
 * size of the trace.
 *
 * Rows follow XProf's pid/tid mapping: `/host:CPU*` planes -> 701, 702...;
 * `/device:GPU:*` -> 1 + plane id (if no GPU plane: `/device:TPU:*`);
 * `/device:CUSTOM:*` -> 501 + plane id; with several hosts, pid +=
 * 1000 * (host index + 1).  tid = line display id.  Lines named
 * `counters_*` and empty lines are skipped; `_counters_` lines are counter
 * rows.  Internal events (MemoryAllocation, MemoryDeallocation, tf.data
 * *Produce / *Consume) are left out.
 *
 * Deviations from XProf (documented): depth is the structural nesting depth
 * (all enclosing events of the row), not the count of visible ancestors;
 * lines sharing one display id in a plane stay separate rows with the same
 * tid.
 */
#ifndef XPV_TRACE_INDEX_H
#define XPV_TRACE_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"
#include "analysis.h"
#include "buf.h"

#define XPV_TRACE_LEVELS 26
/* Resolution of level L in ps: 4^(25-L). */
#define XPV_TRACE_RES(L) ((int64_t)1 << (2 * (XPV_TRACE_LEVELS - 1 - (L))))

typedef struct xpv_trace_group {
    uint32_t row;
    uint32_t key;                   /* depth, or counter's dense meta index */
    uint64_t off;                   /* first index in xpv_trace_index.idx */
    uint32_t seg[XPV_TRACE_LEVELS + 1]; /* level L = idx[off+seg[L], off+seg[L+1]) */
} xpv_trace_group;

typedef struct xpv_trace_row {
    uint32_t host, plane, line;     /* where the events live */
    uint32_t proc;                  /* index into procs */
    int64_t pid, tid;
    const char *name;               /* thread name (NUL-terminated, index arena) */
    int is_counter;
    int is_host;                    /* on a /host: plane (launch side of flows) */
    uint32_t group0, ngroups;       /* range in groups */
    uint64_t nevents;               /* events indexed (dropped ones excluded) */
    /* Stat ids (dense, per plane) the renderer needs, or -1. */
    int32_t st_step_name, st_group_id, st_corr, st_flow, st_async;
    /* Where the events live: the profile's plane and line, or for a
     * derived row (line >= the plane's nlines) the derived plane and line
     * (derived_lines.h); and the JSON names of their event metadata. */
    const xpv_plane *pl;
    const xpv_line *ln;
    const char *const *jname;
    const uint32_t *jname_len;
} xpv_trace_row;

typedef struct xpv_trace_proc {
    int64_t pid;
    uint32_t host, plane;
    const char *plane_name;         /* NUL-terminated */
    const char *host_name;
    uint32_t nthreads;
    /* Per event metadata (dense index): the shown name (display_name, else
     * name) already escaped as a JSON string literal, quotes included. */
    const char **jname;
    uint32_t *jname_len;
} xpv_trace_proc;

typedef struct xpv_trace_step {
    int64_t start_ps, dur_ps;
    uint32_t row, ev;
} xpv_trace_step;

typedef struct xpv_trace_index {
    xpv_trace_proc *procs;          /* ascending pid */
    uint32_t nprocs;
    xpv_trace_row *rows;            /* grouped by proc, ascending tid */
    uint32_t nrows;
    xpv_trace_group *groups;
    uint32_t ngroups;
    uint32_t *idx;                  /* event indices into their line */
    uint64_t nidx;
    xpv_trace_step *steps;          /* step markers, ascending start */
    uint32_t nsteps;
    int64_t min_ps, max_ps;         /* span of the indexed events */
    uint64_t ndropped;              /* internal events left out */
    uint64_t ncounter;              /* counter samples indexed */
    /* Per host: the computed event grouping (group_events.h) when the file
     * has no group ids of its own, else NULL.  Borrowed from the profile's
     * enrichment (enrich.h), re-attached on load. */
    const struct xpv_groups **hgroups;
    uint32_t nhosts;
    size_t bytes;                   /* memory held */
    const struct xpv_derived_lines **derived; /* per host: derived lines,
                                     * borrowed from the profile (enrich.h) */
    size_t nderived;
    /* The name index (trace_search.c): built by the first search and
     * kept with the index, under a lock (searches share the index). */
    struct xpv_trace_names *names;
    uint64_t build_work;            /* comparisons + steps of the row/proc
                                     * ordering (tests check it grows
                                     * n log n); 0 for a loaded index */
    xpv_arena arena;
} xpv_trace_index;

extern const xpv_derived_kind xpv_derived_trace_index;

/* Build the index of a host set.  Never fails on odd input (returns an
 * empty index); the caller frees it with xpv_trace_index_free. */
xpv_trace_index *xpv_trace_index_build(const xpv_hostset *hs);
void xpv_trace_index_free(xpv_trace_index *ix);

/* Version of the persisted image (xpv_trace_index_save); bump it on any
 * change of the image layout or of what a build computes. */
#define XPV_TRACE_INDEX_FORMAT 2

/* Append a persistent image of `ix` (built for `hs`) to `out`: a compact
 * binary layout holding only numbers (rows, groups, event indices, steps,
 * a fingerprint of the profiles), ~4 bytes per indexed event.  Never
 * fails. */
void xpv_trace_index_save(const xpv_trace_index *ix, const xpv_hostset *hs, xpv_buf *out);

/* Rebuild an index from an image made by xpv_trace_index_save for the same
 * profiles, re-attached to `hs` (names and stat ids are re-derived from
 * the profiles).  The bytes are borrowed and never trusted: returns NULL
 * when they are not a valid image for `hs` (bad magic, format or byte
 * order, truncated or extended, hash mismatch, counts or any row, group,
 * step or event index that does not fit the profiles).  Never reads
 * outside [data, data + len).  Free the result with xpv_trace_index_free. */
xpv_trace_index *xpv_trace_index_load(const xpv_hostset *hs, const void *data, size_t len);

/* Recompute the hash of an image of `len` bytes in place (for tests that
 * edit an image and check that the bounds checks, not only the hash,
 * reject it). */
void xpv_trace_index_seal(void *img, size_t len);

/* The event of row `r` at index `ev` of its line. */
static inline const xpv_event *xpv_trace_event(const xpv_hostset *hs,
                                               const xpv_trace_row *r, uint32_t ev) {
    (void)hs;
    return &r->ln->events[ev];
}

/* 1 when the event name is one the trace viewer hides. */
int xpv_trace_is_internal(xpv_str name);

/* One query result: an event of a row. */
typedef struct xpv_trace_hit {
    uint32_t row;
    uint32_t ev;
} xpv_trace_hit;

/* Events visible in [start_ps, end_ps) at resolution `res_ps` (0: every
 * event of the window), row by row (rows in index order, each row's events
 * by group then start).  Counter rows also get the last sample before the
 * window.  `out` is malloc'ed (caller frees); returns the count. */
size_t xpv_trace_query(const xpv_hostset *hs, const xpv_trace_index *ix,
                       int64_t start_ps, int64_t end_ps, int64_t res_ps,
                       xpv_trace_hit **out);

/*
 * A total budget for one viewport answer, whatever the number of rows
 * (XProf has no such rule: its resolution is per row, so a profile with
 * 135 rows answers 15 times what one with 9 does).  When the visible
 * events of the window exceed it, the rows share it max-min fairly (every
 * row may keep the same number of events, the same for all because every
 * row is as wide on screen; rows needing fewer keep all theirs): a row
 * over its share is queried again at the finest coarser resolution whose
 * visible events fit (XProf's rule at that resolution, so the longest
 * events and a sample spread over the window stay), and when even the
 * coarsest does not fit (more depth groups than its share) its longest
 * events are kept.  1/16 of the events are left for the other ends of
 * flows.  `max_bytes` bounds an estimate of the JSON written (a fixed size
 * per event plus its escaped name), by lowering the event count.
 * Deterministic: the same query gives the same events.
 */
typedef struct xpv_trace_budget {
    size_t max_events;              /* 0: no budget */
    size_t max_bytes;               /* 0: no byte bound */
    int64_t *row_res_ps;            /* NULL, or the caller's array of nrows:
                                     * set to the resolution each row over
                                     * its share was answered at (others
                                     * are left alone) */
} xpv_trace_budget;

typedef struct xpv_trace_budget_info {
    size_t candidates;              /* visible events before the budget */
    uint32_t rows_coarsened;        /* rows queried at a coarser resolution */
    uint32_t rows_cut;              /* rows cut to their longest events */
    size_t row_cap;                 /* events each row could keep */
    int64_t max_row_res_ps;         /* coarsest resolution used for a row */
} xpv_trace_budget_info;

/* xpv_trace_query within `budget` (NULL: none); `info` (may be NULL) says
 * what the budget did.  On an index of millions of events the groups and
 * the budget's busy rows are queried on two threads (trace_query_par.c);
 * the answer is the serial one, hit for hit. */
size_t xpv_trace_query_budget(const xpv_hostset *hs, const xpv_trace_index *ix,
                              int64_t start_ps, int64_t end_ps, int64_t res_ps,
                              const xpv_trace_budget *budget, xpv_trace_budget_info *info,
                              xpv_trace_hit **out);

/* uid of an event (stable for an index): row << 32 | ev. */
static inline uint64_t xpv_trace_uid(xpv_trace_hit h) {
    return ((uint64_t)h.row << 32) | h.ev;
}
/* Decode a uid; returns 0 when it names no indexed row/event. */
int xpv_trace_uid_decode(const xpv_hostset *hs, const xpv_trace_index *ix,
                         uint64_t uid, xpv_trace_hit *out);

/*
 * Search (trace_search.c), over a name index built once per index by the
 * first search (like XProf's prefix trie table, built once per host): per
 * row its events ordered by metadata, the events shown under another name
 * (a `step_name` stat, or a computed group's name) with that name, and
 * each distinct string arg of an event with the events holding it.  A
 * search then reads the metadata names and the distinct strings, and
 * visits only the matching events: no event's stats are decoded again.
 */

/* Up to `limit` events whose shown name starts with `prefix`
 * (case-insensitive), in ascending start order, with start >= from_ps.
 * Fills *total with the number of matches >= from_ps.  `out` malloc'ed. */
size_t xpv_trace_search(const xpv_hostset *hs, const xpv_trace_index *ix,
                        const char *prefix, int64_t from_ps, size_t limit,
                        xpv_trace_hit **out, uint64_t *total);

/* The same over a case-insensitive substring of the shown name or of any
 * string arg (the event's stats, its metadata's stats, ref_values
 * resolved): "philox" finds "void tensorflow::functor::FillPhiloxRandom...". */
size_t xpv_trace_search_text(const xpv_hostset *hs, const xpv_trace_index *ix,
                             const char *text, int64_t from_ps, size_t limit,
                             xpv_trace_hit **out, uint64_t *total);

/* What a search cost: `strings` names and distinct strings compared,
 * `events` matching events visited; `built` 1 when this search built the
 * name index. */
typedef struct xpv_trace_search_work {
    uint64_t strings, events;
    int built;
} xpv_trace_search_work;

/* xpv_trace_search (text_mode 0) or xpv_trace_search_text (1), telling
 * what it cost in *work (may be NULL). */
size_t xpv_trace_search_ex(const xpv_hostset *hs, const xpv_trace_index *ix, const char *text,
                           int text_mode, int64_t from_ps, size_t limit, xpv_trace_hit **out,
                           uint64_t *total, xpv_trace_search_work *work);

/* Memory held by the name index (0 before the first search). */
size_t xpv_trace_names_bytes(const xpv_trace_index *ix);
void xpv_trace_names_free(struct xpv_trace_names *nm);

#endif
