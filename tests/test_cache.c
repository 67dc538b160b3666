/*
 * test_cache.c - the budgeted LRU cache (server/cache/cache.c): hits, LRU order,
 * refcounts across eviction, single-flight builds with threads, remembered
 * failures, transient values, dependencies, memory admission of
 * concurrent builds (xpv_cache_get_admit).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cache.h"
#include "testutil.h"

static int nfreed;
static int nbuilt;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

struct val {
    char name[32];
    int freed;
};

static void free_val(void *p) {
    pthread_mutex_lock(&mu);
    nfreed++;
    pthread_mutex_unlock(&mu);
    free(p);
}

struct bctx {
    const char *name;
    size_t size;
    int status;         /* 0 = succeed, else fail with it */
    int sleep_ms;
    int transient;
    xpv_centry **deps;
    size_t ndeps;
};

static int build(void *vctx, xpv_cache_val *v, xpv_err *err) {
    struct bctx *c = vctx;
    pthread_mutex_lock(&mu);
    nbuilt++;
    pthread_mutex_unlock(&mu);
    if (c->sleep_ms) {
        struct timespec ts = {0, c->sleep_ms * 1000000L};
        nanosleep(&ts, NULL);
    }
    if (c->status) return xpv_err_set(err, c->status, "failed %s", c->name);
    struct val *x = calloc(1, sizeof *x);
    snprintf(x->name, sizeof x->name, "%s", c->name);
    v->ptr = x;
    v->size = c->size;
    v->free = free_val;
    v->transient = c->transient;
    if (c->ndeps) {
        v->deps = malloc(c->ndeps * sizeof *v->deps);
        memcpy(v->deps, c->deps, c->ndeps * sizeof *v->deps);
        v->ndeps = c->ndeps;
    }
    return 0;
}

static xpv_centry *get(xpv_cache *c, const char *key, size_t size) {
    struct bctx b = {key, size, 0, 0, 0, NULL, 0};
    xpv_err err;
    return xpv_cache_get(c, key, build, &b, &err);
}

static int present(xpv_cache *c, const char *key) {
    xpv_centry *e = xpv_cache_peek(c, key);
    if (!e) return 0;
    xpv_cache_release(c, e);
    return 1;
}

static int reset(void **state) {
    (void)state;
    nfreed = nbuilt = 0;
    return 0;
}

static void test_cache__hit_and_lru(void **state) {
    (void)state;
    xpv_cache *c = xpv_cache_new(3 * 1200);
    xpv_centry *a = get(c, "a", 1000);
    assert_non_null(a);
    assert_string_equal(((struct val *)xpv_centry_value(a))->name, "a");
    xpv_cache_release(c, a);
    a = get(c, "a", 1000);  /* hit: not rebuilt */
    assert_int_equal(nbuilt, 1);
    xpv_cache_release(c, a);
    xpv_cache_release(c, get(c, "b", 1000));
    xpv_cache_release(c, get(c, "c", 1000));
    assert_true(present(c, "a"));    /* a is now the most recent */
    xpv_cache_release(c, get(c, "d", 1000));
    /* Over budget: the least recently used (b) went. */
    assert_false(present(c, "b"));
    assert_true(present(c, "a"));
    assert_true(present(c, "c"));
    assert_true(present(c, "d"));
    assert_int_equal(nfreed, 1);
    xpv_cache_stats st;
    xpv_cache_get_stats(c, &st);
    assert_true(st.used <= st.budget);
    assert_int_equal(st.entries, 3);
    assert_int_equal(st.evictions, 1);
    xpv_cache_free(c);
    assert_int_equal(nfreed, 4);
}

static void test_cache__refcount_survives_eviction(void **state) {
    (void)state;
    xpv_cache *c = xpv_cache_new(2500);
    xpv_centry *held = get(c, "held", 1000);
    struct val *v = xpv_centry_value(held);
    /* Fill far beyond the budget: `held` is in use, so it stays. */
    char key[16];
    for (int i = 0; i < 10; i++) {
        snprintf(key, sizeof key, "k%d", i);
        xpv_cache_release(c, get(c, key, 1000));
    }
    assert_string_equal(v->name, "held");
    assert_true(present(c, "held"));
    /* A value bigger than the whole budget is returned, then dropped once
     * released. */
    xpv_centry *huge = get(c, "huge", 100000);
    assert_non_null(huge);
    int before = nfreed;
    xpv_cache_release(c, huge);
    assert_int_equal(nfreed, before + 1);
    assert_false(present(c, "huge"));
    xpv_cache_release(c, held);
    xpv_cache_free(c);
    assert_int_equal(nfreed, nbuilt);
}

struct thr {
    xpv_cache *c;
    xpv_centry *got;
};

static void *racer(void *p) {
    struct thr *t = p;
    struct bctx b = {"shared", 100, 0, 100, 0, NULL, 0};
    xpv_err err;
    t->got = xpv_cache_get(t->c, "shared", build, &b, &err);
    return NULL;
}

static void test_cache__single_flight(void **state) {
    (void)state;
    xpv_cache *c = xpv_cache_new(1 << 20);
    enum { N = 8 };
    pthread_t th[N];
    struct thr t[N];
    for (int i = 0; i < N; i++) {
        t[i].c = c;
        pthread_create(&th[i], NULL, racer, &t[i]);
    }
    for (int i = 0; i < N; i++) pthread_join(th[i], NULL);
    assert_int_equal(nbuilt, 1);
    for (int i = 0; i < N; i++) {
        assert_non_null(t[i].got);
        assert_ptr_equal(t[i].got, t[0].got);
        xpv_cache_release(c, t[i].got);
    }
    xpv_cache_free(c);
    assert_int_equal(nfreed, 1);
}

static void test_cache__failures(void **state) {
    (void)state;
    xpv_cache *c = xpv_cache_new(1 << 20);
    xpv_err err;
    struct bctx bad = {"bad", 0, 422, 0, 0, NULL, 0};
    assert_null(xpv_cache_get(c, "bad", build, &bad, &err));
    assert_int_equal(err.status, 422);
    assert_string_equal(err.msg, "failed bad");
    memset(&err, 0, sizeof err);
    assert_null(xpv_cache_get(c, "bad", build, &bad, &err));
    assert_int_equal(err.status, 422);  /* remembered, not rebuilt */
    assert_int_equal(nbuilt, 1);

    struct bctx io = {"io", 0, 500, 0, 0, NULL, 0};
    assert_null(xpv_cache_get(c, "io", build, &io, &err));
    assert_null(xpv_cache_get(c, "io", build, &io, &err));
    assert_int_equal(err.status, 500);
    assert_int_equal(nbuilt, 3);        /* transient errors are retried */
    xpv_cache_free(c);
}

static void test_cache__transient_and_deps(void **state) {
    (void)state;
    xpv_cache *c = xpv_cache_new(1 << 20);
    struct bctx tb = {"t", 10, 0, 0, 1, NULL, 0};
    xpv_err err;
    xpv_centry *t = xpv_cache_get(c, "t", build, &tb, &err);
    assert_non_null(t);
    assert_false(present(c, "t"));
    xpv_cache_release(c, t);
    assert_int_equal(nfreed, 1);

    /* A derived value keeps its base alive even after the base left. */
    xpv_centry *base = get(c, "base", 100);
    struct val *bv = xpv_centry_value(base);
    xpv_centry_ref(c, base);    /* the reference handed to the dependent */
    struct bctx db = {"derived", 100, 0, 0, 0, &base, 1};
    xpv_centry *d = xpv_cache_get(c, "derived", build, &db, &err);
    assert_non_null(d);
    xpv_cache_release(c, d);
    xpv_cache_release(c, base);
    xpv_cache_clear(c);         /* drops derived, then base */
    assert_int_equal(nfreed, 3);
    (void)bv;
    xpv_cache_free(c);
}

/* ==== Memory admission ================================================ */

/* A build that blocks until its gate opens, recording when it ran. */
struct gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int open;
    int started, finished;      /* sequence numbers (0 = not yet) */
};

static int seq;

struct gctx {
    const char *name;
    size_t size;
    struct gate *gate;          /* NULL: do not block */
    int started, finished;      /* when no gate */
};

static int gated_build(void *vctx, xpv_cache_val *v, xpv_err *err) {
    struct gctx *g = vctx;
    (void)err;
    pthread_mutex_lock(&mu);
    nbuilt++;
    int *st = g->gate ? &g->gate->started : &g->started;
    *st = ++seq;
    pthread_mutex_unlock(&mu);
    if (g->gate) {
        pthread_mutex_lock(&g->gate->mu);
        while (!g->gate->open) pthread_cond_wait(&g->gate->cv, &g->gate->mu);
        pthread_mutex_unlock(&g->gate->mu);
    }
    struct val *x = calloc(1, sizeof *x);
    snprintf(x->name, sizeof x->name, "%s", g->name);
    v->ptr = x;
    v->size = g->size;
    v->free = free_val;
    pthread_mutex_lock(&mu);
    *(g->gate ? &g->gate->finished : &g->finished) = ++seq;
    pthread_mutex_unlock(&mu);
    return 0;
}

struct athr {
    xpv_cache *c;
    const char *key;
    uint64_t need;
    struct gctx g;
    xpv_centry *got;
    xpv_err err;
    int done;
    int holds;                  /* caller_holds passed on */
};

static void *admit_thread(void *p) {
    struct athr *t = p;
    t->got = xpv_cache_get_admit(t->c, t->key, t->need, t->holds, t->key, gated_build, &t->g,
                                 &t->err);
    pthread_mutex_lock(&mu);
    t->done = 1;
    pthread_mutex_unlock(&mu);
    return NULL;
}

static int read_locked(const int *p) {
    pthread_mutex_lock(&mu);
    int v = *p;
    pthread_mutex_unlock(&mu);
    return v;
}

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void wait_for(const int *flag) {
    for (int i = 0; i < 5000 && !read_locked(flag); i++) sleep_ms(1);
    assert_true(read_locked(flag));
}

static void gate_open(struct gate *g) {
    pthread_mutex_lock(&g->mu);
    g->open = 1;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

/* Budget 1000: a decode "a" needing 400 is in flight (blocked), "b" (400)
 * still fits beside it and is held; "c" (450) would overrun the budget
 * (held 528 + reserved 400 + 450), nothing can be evicted, so it queues
 * until "a" finishes and is released, and builds only then.  With a short
 * wait it is refused 503 instead; more than the whole budget is refused
 * 413 at once; nothing is built for a refusal.  Entries held (not being
 * built) delay a build only for the held wait. */
static void test_cache__admission(void **state) {
    (void)state;
    seq = 0;
    xpv_cache *c = xpv_cache_new(1000);
    xpv_cache_stats st;
    xpv_err err;
    struct gctx huge = {"huge", 10, NULL, 0, 0};
    assert_null(xpv_cache_get_admit(c, "huge", 2000, 0, "run/huge.xplane.pb", gated_build,
                                    &huge, &err));
    assert_int_equal(err.status, 413);
    assert_non_null(strstr(err.msg, "run/huge.xplane.pb"));
    assert_non_null(strstr(err.msg, "memory budget"));
    assert_int_equal(nbuilt, 0);

    struct gate ga = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0};
    struct athr a = {c, "a", 400, {"a", 400, &ga, 0, 0}, NULL, {0}, 0, 0};
    pthread_t ta, tc;
    pthread_create(&ta, NULL, admit_thread, &a);
    wait_for(&ga.started);
    xpv_cache_get_stats(c, &st);
    assert_int_equal(st.reserved, 400);

    /* Fits beside the decode in flight: built at once. */
    struct gctx gb = {"b", 400, NULL, 0, 0};
    xpv_centry *b = xpv_cache_get_admit(c, "b", 400, 0, "b", gated_build, &gb, &err);
    assert_non_null(b);
    assert_int_equal(ga.finished, 0);

    /* Does not fit: refused after a short wait... */
    xpv_cache_set_admit_wait(c, 50, 50, 50);
    struct gctx gc0 = {"c", 450, NULL, 0, 0};
    assert_null(xpv_cache_get_admit(c, "c", 450, 0, "run/c.xplane.pb", gated_build, &gc0, &err));
    assert_int_equal(err.status, 503);
    assert_non_null(strstr(err.msg, "run/c.xplane.pb"));
    assert_int_equal(gc0.started, 0);

    /* ... or queued until the decode in flight ends and its value is
     * released (then evicted to make room). */
    xpv_cache_set_admit_wait(c, 60000, 60000, 60000);
    struct athr cc = {c, "c", 450, {"c", 340, NULL, 0, 0}, NULL, {0}, 0, 0};
    pthread_create(&tc, NULL, admit_thread, &cc);
    sleep_ms(100);
    assert_int_equal(read_locked(&cc.g.started), 0);
    gate_open(&ga);
    pthread_join(ta, NULL);
    assert_non_null(a.got);
    sleep_ms(100);
    assert_int_equal(read_locked(&cc.g.started), 0);    /* "a" is still held */
    xpv_cache_release(c, a.got);
    pthread_join(tc, NULL);
    assert_non_null(cc.got);
    assert_true(cc.g.started > ga.finished);    /* never overlapped */
    assert_false(present(c, "a"));              /* evicted for "c" */
    xpv_cache_get_stats(c, &st);
    assert_int_equal(st.reserved, 0);
    assert_int_equal(st.admit_waits, 2);
    assert_int_equal(st.admit_rejects, 2);
    assert_int_equal(nbuilt, 3);               /* a, b, c: none for refusals */
    assert_true(st.used <= st.budget);

    /* Only held entries in the way (b, c): after the held wait it goes
     * ahead over budget rather than wait on holders forever. */
    xpv_cache_set_admit_wait(c, 60000, 50, 60000);
    struct gctx gd = {"d", 500, NULL, 0, 0};
    xpv_centry *d = xpv_cache_get_admit(c, "d", 500, 1, "d", gated_build, &gd, &err);
    assert_non_null(d);
    xpv_cache_get_stats(c, &st);
    assert_int_equal(st.admit_waits, 3);
    /* A caller holding nothing waits for the holders instead (the held-
     * free wait): "f" builds only once b, c and d are released and
     * evicted, never over budget. */
    pthread_t tf;
    struct athr ff = {c, "f", 200, {"f", 100, NULL, 0, 0}, NULL, {0}, 0, 0};
    pthread_create(&tf, NULL, admit_thread, &ff);
    sleep_ms(200);                              /* well past the 50 ms */
    assert_int_equal(read_locked(&ff.g.started), 0);
    xpv_cache_release(c, b);
    xpv_cache_release(c, cc.got);
    xpv_cache_release(c, d);
    pthread_join(tf, NULL);
    assert_non_null(ff.got);
    assert_true(ff.g.started > 0);
    xpv_cache_get_stats(c, &st);
    assert_true(st.used <= st.budget);
    assert_int_equal(st.admit_waits, 4);
    xpv_cache_release(c, ff.got);
    /* Room made by evicting unused entries: no wait. */
    struct gctx ge = {"e", 900, NULL, 0, 0};
    xpv_centry *e = xpv_cache_get_admit(c, "e", 900, 0, "e", gated_build, &ge, &err);
    assert_non_null(e);
    xpv_cache_get_stats(c, &st);
    assert_int_equal(st.admit_waits, 4);
    /* A hit needs no admission. */
    xpv_centry *e2 = xpv_cache_get_admit(c, "e", 900, 0, "e", gated_build, &ge, &err);
    assert_ptr_equal(e, e2);
    xpv_cache_release(c, e);
    xpv_cache_release(c, e2);
    xpv_cache_free(c);
    assert_int_equal(nfreed, nbuilt);
}

/* Pinned entries count against the budget: a caller holding nothing that
 * finds the budget held by others waits the held-free wait, then gets a
 * 503 (nothing built, the budget not exceeded); a caller holding entries
 * itself still goes ahead (its own holdings may be what is in the way). */
static void test_cache__pinned_refuses(void **state) {
    (void)state;
    xpv_cache *c = xpv_cache_new(1000);
    xpv_cache_set_admit_wait(c, 1000, 20, 20);
    xpv_centry *pinned = get(c, "pinned", 800);   /* a slow download holds it */
    xpv_err err;
    struct bctx b = {"cold", 400, 0, 0, 0, NULL, 0};
    int built = nbuilt;
    assert_null(xpv_cache_get_admit(c, "cold", 400, 0, "cold.xplane.pb", build, &b, &err));
    assert_int_equal(err.status, 503);
    assert_non_null(strstr(err.msg, "cold.xplane.pb"));
    assert_non_null(strstr(err.msg, "held by requests"));
    assert_int_equal(nbuilt, built);
    xpv_cache_stats st;
    xpv_cache_get_stats(c, &st);
    assert_true(st.used <= st.budget);
    /* Holding entries itself: goes ahead after the short wait. */
    xpv_centry *e = xpv_cache_get_admit(c, "cold", 400, 1, "cold", build, &b, &err);
    assert_non_null(e);
    xpv_cache_release(c, e);
    /* Released: room again, no refusal. */
    xpv_cache_release(c, pinned);
    e = xpv_cache_get_admit(c, "cold2", 400, 0, "cold2", build, &b, &err);
    assert_non_null(e);
    xpv_cache_release(c, e);
    xpv_cache_free(c);
    assert_int_equal(nfreed, nbuilt);
}

/* Inline mode (the HTTP threads): hits answer, misses and builds in
 * progress defer (nothing built, nothing waited for). */
static void test_cache__inline_mode(void **state) {
    (void)state;
    xpv_cache *c = xpv_cache_new(1 << 20);
    xpv_centry *e = get(c, "hot", 10);
    xpv_cache_release(c, e);
    xpv_err err;
    struct bctx b = {"x", 10, 0, 0, 0, NULL, 0};
    xpv_cache_inline_begin();
    e = xpv_cache_get(c, "hot", build, &b, &err);
    assert_non_null(e);
    xpv_cache_release(c, e);
    assert_int_equal(xpv_cache_inline_end(), 0);   /* a hit: not deferred */

    int built = nbuilt;
    xpv_cache_inline_begin();
    assert_null(xpv_cache_get(c, "cold", build, &b, &err));
    assert_null(xpv_cache_get_admit(c, "cold", 5, 0, "cold", build, &b, &err));
    assert_int_equal(xpv_cache_inline_end(), 1);
    assert_int_equal(nbuilt, built);
    assert_false(present(c, "cold"));
    /* Outside inline mode the same get builds. */
    e = xpv_cache_get(c, "cold", build, &b, &err);
    assert_non_null(e);
    xpv_cache_release(c, e);
    /* Heavy work outside the cache defers in inline mode only. */
    assert_int_equal(xpv_cache_defer_heavy(), 0);
    xpv_cache_inline_begin();
    assert_int_equal(xpv_cache_defer_heavy(), 1);
    assert_int_equal(xpv_cache_inline_end(), 1);
    xpv_cache_free(c);
}

/* A value that grows after it was stored is charged its new size: the
 * unused entries it now crowds out are evicted, never the held one. */
static void test_cache__grow(void **state) {
    (void)state;
    xpv_cache *c = xpv_cache_new(3 * 1200);
    xpv_cache_release(c, get(c, "a", 1000));
    xpv_cache_release(c, get(c, "b", 1000));
    xpv_centry *e = get(c, "c", 1000);
    xpv_cache_stats st;
    xpv_cache_get_stats(c, &st);
    size_t before = st.used;
    assert_int_equal(st.entries, 3);
    xpv_cache_grow(c, e, 500);          /* smaller: nothing changes */
    xpv_cache_get_stats(c, &st);
    assert_int_equal(st.used, before);
    xpv_cache_grow(c, e, 2000);         /* +1000: "a" (LRU, unused) goes */
    xpv_cache_get_stats(c, &st);
    assert_true(st.used <= 3 * 1200);
    assert_false(present(c, "a"));
    assert_true(present(c, "c"));
    assert_int_equal(xpv_centry_size(e), 2000 + 128);  /* + the entry overhead */
    xpv_cache_grow(c, e, 5000);         /* over the budget: all unused go */
    xpv_cache_get_stats(c, &st);
    assert_false(present(c, "b"));
    assert_true(present(c, "c"));
    assert_int_equal(st.entries, 1);
    xpv_cache_release(c, e);
    xpv_cache_free(c);
}

TU_MAIN(cmocka_unit_test_setup(test_cache__hit_and_lru, reset),
        cmocka_unit_test_setup(test_cache__refcount_survives_eviction, reset),
        cmocka_unit_test_setup(test_cache__single_flight, reset),
        cmocka_unit_test_setup(test_cache__failures, reset),
        cmocka_unit_test_setup(test_cache__transient_and_deps, reset),
        cmocka_unit_test_setup(test_cache__admission, reset),
        cmocka_unit_test_setup(test_cache__pinned_refuses, reset),
        cmocka_unit_test_setup(test_cache__inline_mode, reset),
        cmocka_unit_test_setup(test_cache__grow, reset))
