/*
 * cache.c - see cache.h.
 *
 * One mutex guards the hash table, the LRU list and every entry's state
 * and refcount; builds and value frees run outside it.
 */
#include "cache.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arena.h"
#include "util.h"

#define NBUCKETS 4096
#define ENTRY_OVERHEAD 128      /* bytes charged per entry besides its value */
#define ADMIT_WAIT_MS 120000    /* default longest queueing behind decodes */
#define HELD_WAIT_MS 2000       /* default longest wait for held entries */
#define HELD_FREE_WAIT_MS 15000 /* the same when the caller holds no entry */

enum { BUILDING, READY, FAILED };

struct xpv_centry {
    char *key;
    uint64_t hash;
    int state;
    int refs;                   /* users, dependents included */
    int in_table;
    void *val;
    size_t size;                /* value bytes + overhead */
    size_t charged;             /* what this entry added to c->used */
    uint64_t reserved;          /* admission bytes held while BUILDING */
    void (*free)(void *);
    xpv_centry **deps;
    size_t ndeps;
    xpv_err err;                /* FAILED entries */
    xpv_centry *prev, *next;    /* LRU list, head = most recently used */
    xpv_centry *hnext;          /* hash chain */
};

struct xpv_cache {
    pthread_mutex_t mu;
    pthread_cond_t cv;          /* signalled when a build finishes */
    xpv_centry *buckets[NBUCKETS];
    xpv_centry *head, *tail;
    uint64_t budget, used, entries;
    uint64_t hits, misses, evictions, builds;
    uint64_t reserved;          /* sum of BUILDING entries' reservations */
    uint64_t admit_waits, admit_rejects;
    int admit_wait_ms, held_wait_ms, held_free_wait_ms;
    int admit_waiters;          /* threads queued in xpv_cache_get_admit */
};

/* ==== Table and LRU list (lock held) ================================== */

static xpv_centry **bucket_of(xpv_cache *c, uint64_t h) {
    return &c->buckets[h % NBUCKETS];
}

static xpv_centry *lookup(xpv_cache *c, const char *key, uint64_t h) {
    for (xpv_centry *e = *bucket_of(c, h); e; e = e->hnext)
        if (e->hash == h && !strcmp(e->key, key)) return e;
    return NULL;
}

static void lru_unlink(xpv_cache *c, xpv_centry *e) {
    if (e->prev) e->prev->next = e->next;
    else c->head = e->next;
    if (e->next) e->next->prev = e->prev;
    else c->tail = e->prev;
    e->prev = e->next = NULL;
}

static void lru_push_head(xpv_cache *c, xpv_centry *e) {
    e->prev = NULL;
    e->next = c->head;
    if (c->head) c->head->prev = e;
    c->head = e;
    if (!c->tail) c->tail = e;
}

static void table_remove(xpv_cache *c, xpv_centry *e) {
    xpv_centry **pp = bucket_of(c, e->hash);
    while (*pp && *pp != e) pp = &(*pp)->hnext;
    if (*pp) *pp = e->hnext;
    e->hnext = NULL;
    lru_unlink(c, e);
    e->in_table = 0;
    c->entries--;
}

/* ==== Destruction ====================================================== */

/* Entries whose last reference is gone and that left the table are put on
 * a list under the lock and destroyed after it is dropped. */
typedef struct graveyard {
    xpv_centry *list;
} graveyard;

static void bury(xpv_cache *c, graveyard *g, xpv_centry *e) {
    c->used -= e->charged;
    e->charged = 0;
    e->hnext = g->list;
    g->list = e;
}

static void release_locked(xpv_cache *c, graveyard *g, xpv_centry *e);

/* Evict LRU entries nobody uses until at most `target` bytes are charged
 * (lock held).  Returns how many were evicted. */
static int evict_to_locked(xpv_cache *c, graveyard *g, uint64_t target) {
    int n = 0;
    while (c->used > target) {
        xpv_centry *e = c->tail;
        while (e && (e->refs > 0 || e->state == BUILDING)) e = e->prev;
        if (!e) break;
        table_remove(c, e);
        c->evictions++;
        bury(c, g, e);
        n++;
    }
    return n;
}

/* Evict LRU entries nobody uses until the budget holds (lock held). */
static void evict_locked(xpv_cache *c, graveyard *g) {
    evict_to_locked(c, g, c->budget);
}

static void destroy_all(xpv_cache *c, graveyard *g) {
    while (g->list) {
        xpv_centry *e = g->list;
        g->list = e->hnext;
        if (e->state == READY && e->free && e->val) e->free(e->val);
        if (e->ndeps) {
            pthread_mutex_lock(&c->mu);
            graveyard g2 = {NULL};
            for (size_t i = 0; i < e->ndeps; i++) release_locked(c, &g2, e->deps[i]);
            evict_locked(c, &g2);
            pthread_mutex_unlock(&c->mu);
            /* Append g2 to our work list. */
            while (g2.list) {
                xpv_centry *d = g2.list;
                g2.list = d->hnext;
                d->hnext = g->list;
                g->list = d;
            }
        }
        free(e->deps);
        free(e->key);
        free(e);
    }
}

static void release_locked(xpv_cache *c, graveyard *g, xpv_centry *e) {
    if (--e->refs > 0) return;
    if (!e->in_table) bury(c, g, e);
}

/* ==== Inline mode ====================================================== */

/* Set on an HTTP thread while it tries to answer from the cache alone. */
static _Thread_local int inline_mode;
static _Thread_local int inline_deferred;

void xpv_cache_inline_begin(void) {
    inline_mode = 1;
    inline_deferred = 0;
}

int xpv_cache_inline_end(void) {
    inline_mode = 0;
    return inline_deferred;
}

int xpv_cache_defer_heavy(void) {
    if (inline_mode) inline_deferred = 1;
    return inline_mode;
}

/* Inline: the answer needs a build (or waits for one): refuse it here and
 * let the request run again on a worker. */
static xpv_centry *defer_locked(xpv_cache *c, xpv_err *err) {
    pthread_mutex_unlock(&c->mu);
    inline_deferred = 1;
    xpv_err_clear(err);
    xpv_err_set(err, XPV_E_BUSY, "deferred to a worker");
    return NULL;
}

/* ==== Public API ======================================================= */

xpv_cache *xpv_cache_new(uint64_t budget) {
    xpv_cache *c = xpv_xcalloc(1, sizeof *c);
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    c->budget = budget;
    c->admit_wait_ms = ADMIT_WAIT_MS;
    c->held_wait_ms = HELD_WAIT_MS;
    c->held_free_wait_ms = HELD_FREE_WAIT_MS;
    return c;
}

void xpv_cache_set_admit_wait(xpv_cache *c, int decodes_ms, int held_ms, int held_free_ms) {
    pthread_mutex_lock(&c->mu);
    c->admit_wait_ms = decodes_ms < 0 ? 0 : decodes_ms;
    c->held_wait_ms = held_ms < 0 ? 0 : held_ms;
    c->held_free_wait_ms = held_free_ms < 0 ? 0 : held_free_ms;
    pthread_mutex_unlock(&c->mu);
}

void xpv_cache_clear(xpv_cache *c) {
    graveyard g = {NULL};
    pthread_mutex_lock(&c->mu);
    /* Repeat: dropping a dependent makes its dependencies unused. */
    for (;;) {
        xpv_centry *e = c->tail;
        while (e && (e->refs > 0 || e->state == BUILDING)) e = e->prev;
        if (!e) break;
        table_remove(c, e);
        bury(c, &g, e);
        pthread_mutex_unlock(&c->mu);
        destroy_all(c, &g);
        pthread_mutex_lock(&c->mu);
    }
    pthread_mutex_unlock(&c->mu);
}

void xpv_cache_free(xpv_cache *c) {
    if (!c) return;
    xpv_cache_clear(c);
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

xpv_centry *xpv_cache_peek(xpv_cache *c, const char *key) {
    uint64_t h = xpv_hash64(key, strlen(key));
    pthread_mutex_lock(&c->mu);
    xpv_centry *e = lookup(c, key, h);
    if (e && e->state == READY) {
        e->refs++;
        lru_unlink(c, e);
        lru_push_head(c, e);
        c->hits++;
    } else {
        e = NULL;
    }
    pthread_mutex_unlock(&c->mu);
    return e;
}

/* Whether a build of `need` bytes fits now beside what is cached and
 * reserved (lock held); evicts unused entries into `g` to make room
 * (*evicted set when it did). */
static int admit_locked(xpv_cache *c, graveyard *g, uint64_t need, int *evicted) {
    uint64_t want = c->reserved + need;
    *evicted = 0;
    if (c->used + want <= c->budget) return 1;
    *evicted = evict_to_locked(c, g, want < c->budget ? c->budget - want : 0) > 0;
    return c->used + want <= c->budget;
}

struct build_call {
    xpv_cache_build_fn build;
    void *ctx;
    xpv_cache_val *v;
    xpv_err *err;
};

static int build_call_run(void *p) {
    struct build_call *bc = p;
    return bc->build(bc->ctx, bc->v, bc->err);
}

/* build(), with an allocation failure inside it failing this entry (a
 * 413 kept like one, so asking again does not retry it) instead of the
 * process.  What the build had allocated is lost; the builds release what
 * they hold (cache references, locks) in guards of their own. */
static int guarded_build(xpv_cache_build_fn build, void *ctx, xpv_cache_val *v, xpv_err *err) {
    struct build_call bc = {build, ctx, v, err};
    size_t failed = 0;
    int rc = xpv_oom_run(build_call_run, &bc, &failed);
    if (rc != XPV_OOM_FAILED) return rc;
    memset(v, 0, sizeof *v);
    xpv_err_clear(err);
    xpv_err_set(err, XPV_E_TOO_LARGE, "out of memory: an allocation of %zu bytes failed while "
                "building this answer", failed);
    fprintf(stderr, "xpview: out of memory: an allocation of %zu bytes failed; that answer "
            "fails, the server goes on\n", failed);
    return -1;
}

xpv_centry *xpv_cache_get(xpv_cache *c, const char *key,
                          xpv_cache_build_fn build, void *ctx, xpv_err *err) {
    return xpv_cache_get_admit(c, key, 0, 0, NULL, build, ctx, err);
}

/* The phases of xpv_cache_get_admit: look up and admit (wait for room),
 * then a hit (wait for its build) or a miss (a BUILDING placeholder, the
 * build outside the lock, the result published). */

/* Admission of a missing key's build of `need` bytes, or its entry (lock
 * held; *found gets the entry when the key is there, built or building).
 * Returns 0 to go on (with the lock held), or -1 with `err` filled and the
 * lock released (refused: over the whole budget, or the waits ran out). */
static int lookup_admit_locked(xpv_cache *c, const char *key, uint64_t h, uint64_t need,
                               int caller_holds, const char *label, graveyard *g,
                               xpv_centry **found, xpv_err *err) {
    struct timespec decodes_until = {0, 0}, held_until = {0, 0};
    int queued = 0, decodes_out = 0, held_out = 0;
    for (;;) {
        xpv_centry *e = lookup(c, key, h);
        *found = e;
        if (e || !need) return 0;
        if (need > c->budget) {
            c->admit_rejects++;
            uint64_t b = c->budget;
            pthread_mutex_unlock(&c->mu);
            xpv_err_clear(err);
            xpv_err_set(err, XPV_E_TOO_LARGE, "%s: loading it needs at least %llu MiB at once, more "
                        "than the whole memory budget (%llu MiB; raise --cache_mb)", label,
                        (unsigned long long)(need >> 20), (unsigned long long)(b >> 20));
            return -1;
        }
        int evicted;
        int fits = admit_locked(c, g, need, &evicted);
        if (evicted) {
            /* Free what was evicted before building, then look again. */
            pthread_mutex_unlock(&c->mu);
            destroy_all(c, g);
            pthread_mutex_lock(&c->mu);
            continue;
        }
        if (fits) return 0;
        /* In the way: other decodes (queue behind them, up to the admit
         * wait, then 503), or only entries held by requests (wait a little
         * for their release; then a caller holding entries itself goes
         * ahead over budget, as its own holdings may be what is in the way,
         * e.g. a request holding another host; a caller holding nothing
         * waits longer, then is refused with a 503: entries pinned by other
         * requests (slow downloads) count against the budget, and new cold
         * work does not push the process past it). */
        if (!c->reserved && held_out && caller_holds) return 0;
        if (!c->reserved && held_out) {
            c->admit_rejects++;
            uint64_t b = c->budget, u = c->used;
            pthread_mutex_unlock(&c->mu);
            xpv_err_clear(err);
            xpv_err_set(err, XPV_E_BUSY, "%s: busy: %llu MiB of the %llu MiB memory budget are "
                        "held by requests in progress; retry in a moment", label,
                        (unsigned long long)(u >> 20), (unsigned long long)(b >> 20));
            return -1;
        }
        if (c->reserved && decodes_out) {
            c->admit_rejects++;
            uint64_t b = c->budget, r = c->reserved;
            pthread_mutex_unlock(&c->mu);
            xpv_err_clear(err);
            xpv_err_set(err, XPV_E_BUSY, "%s: busy: %llu MiB of the %llu MiB memory budget are "
                        "reserved by other profiles being loaded; retry in a moment", label,
                        (unsigned long long)(r >> 20), (unsigned long long)(b >> 20));
            return -1;
        }
        if (!queued) {
            queued = 1;
            c->admit_waits++;
            decodes_until = xpv_deadline_in_ms(c->admit_wait_ms);
            held_until = xpv_deadline_in_ms(caller_holds ? c->held_wait_ms : c->held_free_wait_ms);
        }
        /* Woken by finished builds and released entries; look again. */
        int on_decodes = c->reserved > 0;
        c->admit_waiters++;
        int rc = pthread_cond_timedwait(&c->cv, &c->mu,
                                        on_decodes ? &decodes_until : &held_until);
        c->admit_waiters--;
        if (rc == ETIMEDOUT) {
            if (on_decodes) decodes_out = 1;
            else held_out = 1;
        }
    }
}

/* A hit (lock held, released here): waits for a build in flight; the
 * entry referenced, or NULL with the failure it remembers. */
static xpv_centry *hit_locked(xpv_cache *c, xpv_centry *e, graveyard *g, xpv_err *err) {
    e->refs++;
    c->hits++;
    while (e->state == BUILDING) pthread_cond_wait(&c->cv, &c->mu);
    if (e->in_table) {
        lru_unlink(c, e);
        lru_push_head(c, e);
    }
    if (e->state == READY) {
        pthread_mutex_unlock(&c->mu);
        return e;
    }
    *err = e->err;
    release_locked(c, g, e);
    pthread_mutex_unlock(&c->mu);
    destroy_all(c, g);
    return NULL;
}

/* A miss (lock held): the BUILDING placeholder others wait on, holding
 * the admitted `need` bytes. */
static xpv_centry *insert_building_locked(xpv_cache *c, const char *key, uint64_t h,
                                          uint64_t need) {
    c->misses++;
    c->builds++;
    xpv_centry *e = xpv_xcalloc(1, sizeof *e);
    e->key = xpv_xstrdup(key);
    e->hash = h;
    e->state = BUILDING;
    e->refs = 1;
    e->in_table = 1;
    e->reserved = need;
    c->reserved += need;
    e->hnext = *bucket_of(c, h);
    *bucket_of(c, h) = e;
    lru_push_head(c, e);
    c->entries++;
    return e;
}

/* The build's result `v` (rc 0) or failure stored in `e` (lock held, and
 * released here); returns `e` referenced, or NULL with `err`. */
static xpv_centry *publish_locked(xpv_cache *c, xpv_centry *e, int rc, xpv_cache_val *v,
                                  graveyard *g, xpv_err *err) {
    c->reserved -= e->reserved;   /* the real size is charged below */
    e->reserved = 0;
    e->deps = v->deps;
    e->ndeps = v->ndeps;
    if (rc == 0) {
        e->val = v->ptr;
        e->free = v->free;
        e->size = v->size + ENTRY_OVERHEAD;
        e->state = READY;
        e->charged = e->size;
        c->used += e->charged;
        if (v->transient) table_remove(c, e);
    } else {
        if (v->ptr && v->free) v->free(v->ptr);
        e->state = FAILED;
        if (e->err.status == 0) e->err.status = XPV_E_INTERNAL;
        *err = e->err;
        if (e->err.status != 413 && e->err.status != 422) {
            table_remove(c, e);
        } else {
            e->charged = sizeof *e + strlen(e->key);
            c->used += e->charged;
        }
    }
    pthread_cond_broadcast(&c->cv);
    if (rc != 0) {
        /* Failed entries hold no dependencies. */
        for (size_t i = 0; i < e->ndeps; i++) release_locked(c, g, e->deps[i]);
        free(e->deps);
        e->deps = NULL;
        e->ndeps = 0;
        release_locked(c, g, e);
        e = NULL;
    }
    evict_locked(c, g);
    pthread_mutex_unlock(&c->mu);
    destroy_all(c, g);
    return e;
}

xpv_centry *xpv_cache_get_admit(xpv_cache *c, const char *key, uint64_t need,
                                int caller_holds, const char *label, xpv_cache_build_fn build,
                                void *ctx, xpv_err *err) {
    uint64_t h = xpv_hash64(key, strlen(key));
    graveyard g = {NULL};
    if (!label) label = "value";
    pthread_mutex_lock(&c->mu);
    xpv_centry *e = lookup(c, key, h);
    if (inline_mode && (!e || e->state == BUILDING)) return defer_locked(c, err);
    if (lookup_admit_locked(c, key, h, need, caller_holds, label, &g, &e, err) != 0)
        return NULL;
    if (inline_mode && (!e || e->state == BUILDING)) return defer_locked(c, err);
    if (e) return hit_locked(c, e, &g, err);

    /* Missing: insert a BUILDING placeholder and build outside the lock. */
    e = insert_building_locked(c, key, h, need);
    pthread_mutex_unlock(&c->mu);
    xpv_cache_val v;
    memset(&v, 0, sizeof v);
    xpv_err_clear(&e->err);
    int rc = guarded_build(build, ctx, &v, &e->err);
    if (rc == 0 && !v.ptr) rc = xpv_err_set(&e->err, XPV_E_INTERNAL, "internal error: empty value");
    pthread_mutex_lock(&c->mu);
    return publish_locked(c, e, rc, &v, &g, err);
}

void xpv_centry_ref(xpv_cache *c, xpv_centry *e) {
    pthread_mutex_lock(&c->mu);
    e->refs++;
    pthread_mutex_unlock(&c->mu);
}

void *xpv_centry_value(const xpv_centry *e) { return e->val; }
size_t xpv_centry_size(const xpv_centry *e) { return e->size; }

void xpv_cache_release(xpv_cache *c, xpv_centry *e) {
    if (!e) return;
    graveyard g = {NULL};
    pthread_mutex_lock(&c->mu);
    release_locked(c, &g, e);
    evict_locked(c, &g);
    if (c->admit_waiters && e->refs == 0) pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    destroy_all(c, &g);
}

void xpv_cache_forget(xpv_cache *c, xpv_centry *e) {
    if (!e) return;
    pthread_mutex_lock(&c->mu);
    if (e->in_table && e->state != BUILDING) table_remove(c, e);
    pthread_mutex_unlock(&c->mu);
}

void xpv_cache_grow(xpv_cache *c, xpv_centry *e, size_t value_size) {
    if (!e) return;
    graveyard g = {NULL};
    pthread_mutex_lock(&c->mu);
    size_t want = value_size + ENTRY_OVERHEAD;
    if (e->state == READY && e->charged && want > e->charged) {
        c->used += want - e->charged;
        e->charged = e->size = want;
        evict_locked(c, &g);
    }
    pthread_mutex_unlock(&c->mu);
    destroy_all(c, &g);
}

void xpv_cache_get_stats(xpv_cache *c, xpv_cache_stats *st) {
    pthread_mutex_lock(&c->mu);
    st->budget = c->budget;
    st->used = c->used;
    st->entries = c->entries;
    st->hits = c->hits;
    st->misses = c->misses;
    st->evictions = c->evictions;
    st->builds = c->builds;
    st->reserved = c->reserved;
    st->admit_waits = c->admit_waits;
    st->admit_rejects = c->admit_rejects;
    pthread_mutex_unlock(&c->mu);
}
