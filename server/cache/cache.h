/*
 * cache.h - a memory-budgeted, refcounted, single-flight cache.
 *
 * One cache holds everything the server computes from profile files:
 * decoded profiles (key: path + size + mtime), the converters' derived
 * data (key: kind + run + host files' identities), tool lists and rendered
 * responses.  Values are charged to one byte budget; when it is exceeded,
 * the least recently used entries nobody is using are evicted.
 *
 * Entries are refcounted: xpv_cache_get() hands out a reference that the
 * caller must give back with xpv_cache_release().  An entry evicted while
 * in use stays alive until its last user releases it.  A value may keep
 * other entries alive (a derived value pointing into its profiles) by
 * listing them as dependencies.
 *
 * Concurrent gets of the same missing key build it once: the first caller
 * builds (outside the lock), the others wait on a condition variable and
 * share the result.  Failures with status 413 or 422 (bad file, stable for
 * a given file identity) are remembered too; other failures are not.
 *
 * Memory admission (xpv_cache_get_admit): a build that needs a known amount
 * of memory at once (a profile decode) reserves it before it starts, so
 * concurrent cold decodes of different profiles cannot together overrun the
 * budget: they evict unused entries, or queue behind the decodes in flight.
 */
#ifndef XPV_CACHE_H
#define XPV_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "util.h"

typedef struct xpv_cache xpv_cache;
typedef struct xpv_centry xpv_centry;

/* What a build function produces. */
typedef struct xpv_cache_val {
    void *ptr;                  /* the value (not NULL on success) */
    size_t size;                /* bytes charged to the budget */
    void (*free)(void *ptr);    /* releases ptr; NULL = nothing to free */
    xpv_centry **deps;          /* entries kept alive by this value: the
                                 * cache takes over one reference of each and
                                 * the malloc'ed array itself */
    size_t ndeps;
    int transient;              /* 1: hand it to the callers waiting now,
                                 * but do not keep it in the cache */
} xpv_cache_val;

/* Build the value for a missing key.  Returns 0 with *v filled, or -1 with
 * `err` filled (v->deps, if set, are still released by the cache). */
typedef int (*xpv_cache_build_fn)(void *ctx, xpv_cache_val *v, xpv_err *err);

typedef struct xpv_cache_stats {
    uint64_t budget, used;      /* bytes */
    uint64_t entries;           /* entries in the table */
    uint64_t hits, misses, evictions, builds;
    uint64_t reserved;          /* bytes reserved by admitted builds now */
    uint64_t admit_waits;       /* admitted builds that had to queue */
    uint64_t admit_rejects;     /* refused: more than the whole budget (413)
                                 * or queued too long (503) */
} xpv_cache_stats;

/* A cache charging at most `budget` bytes (values bigger than the budget
 * are still built and returned, then dropped when released). */
xpv_cache *xpv_cache_new(uint64_t budget);

/* Free every entry.  No reference may be outstanding. */
void xpv_cache_free(xpv_cache *c);

/* The entry for `key`, built with build(ctx, ...) when missing.  Returns a
 * referenced entry, or NULL with `err` filled when building failed (now or,
 * for remembered failures, earlier). */
xpv_centry *xpv_cache_get(xpv_cache *c, const char *key,
                          xpv_cache_build_fn build, void *ctx, xpv_err *err);

/* xpv_cache_get() for a build that needs about `need` bytes at once and
 * calls no cache function itself (a profile decode: `need` = its heap
 * estimate, xpv_load_heap_estimate; 0 = plain xpv_cache_get).  `label` names the value in errors (the
 * file).  On a miss:
 *  - need > budget: NULL with a 413 error, nothing built (it never fits);
 *  - when the bytes cached + those reserved by admitted builds in flight +
 *    `need` exceed the budget, unused entries are evicted; if that is not
 *    enough, the call queues: behind the admitted builds in flight (at
 *    most the decodes wait, then NULL with a 503 error, nothing built),
 *    then for entries held by requests to be released (at most the held
 *    wait when `caller_holds` says the caller itself holds entries, e.g. a
 *    request holding one host while loading another, which may be the
 *    holders in the way, then it goes ahead over budget; else the longer
 *    held-free wait, then NULL with a 503 error: pinned entries count
 *    against the budget and cold work is refused rather than exceed it);
 *  - then `need` stays reserved until the build ends.
 * Hits and single-flight waits behave as in xpv_cache_get(). */
xpv_centry *xpv_cache_get_admit(xpv_cache *c, const char *key, uint64_t need,
                                int caller_holds, const char *label, xpv_cache_build_fn build,
                                void *ctx, xpv_err *err);

/* How long xpv_cache_get_admit() may queue behind other decodes (default
 * 120000 ms) and for held entries (default 2000 ms when the caller holds
 * entries itself, 15000 ms when it holds none). */
void xpv_cache_set_admit_wait(xpv_cache *c, int decodes_ms, int held_ms, int held_free_ms);

/* The entry for `key` if it is ready in the cache (referenced), else NULL.
 * Never builds, never waits. */
xpv_centry *xpv_cache_peek(xpv_cache *c, const char *key);

/* Take one more reference on an entry the caller already holds. */
void xpv_centry_ref(xpv_cache *c, xpv_centry *e);

/* The value of an entry the caller holds a reference to. */
void *xpv_centry_value(const xpv_centry *e);
size_t xpv_centry_size(const xpv_centry *e);

/* Give back one reference.  NULL is allowed. */
void xpv_cache_release(xpv_cache *c, xpv_centry *e);

/* The held entry `e`'s value now takes `value_size` bytes (it grew after
 * it was stored: a part built lazily, like the trace index's name index):
 * charge the growth, evicting unused entries to stay in the budget.  A
 * smaller size or an entry no longer charged changes nothing. */
void xpv_cache_grow(xpv_cache *c, xpv_centry *e, size_t value_size);

/* Take the held entry `e` out of the table: the next get of its key
 * builds anew (its value went stale: the file under a profile changed);
 * `e` lives until its last reference is released. */
void xpv_cache_forget(xpv_cache *c, xpv_centry *e);

/* Drop every entry nobody uses (e.g. after the logdir changed). */
void xpv_cache_clear(xpv_cache *c);

void xpv_cache_get_stats(xpv_cache *c, xpv_cache_stats *st);

/* Inline mode, per thread (the HTTP threads, see http.c): between begin
 * and end, a get whose key is missing or still being built returns NULL
 * with a 503 "deferred" error at once, building and waiting for nothing,
 * and end() returns 1: the caller discards the answer and runs the request
 * again on a worker thread.  Hits (failures remembered included) answer as
 * usual.  Routes with heavy work outside the cache call
 * xpv_cache_defer_heavy() first: 1 (deferred, return at once) in inline
 * mode, else 0. */
void xpv_cache_inline_begin(void);
int xpv_cache_inline_end(void);
int xpv_cache_defer_heavy(void);

#endif
