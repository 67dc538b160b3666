/*
 * test_base_oom.c - allocation failure inside xpv_oom_run() unwinds to it
 * (base/arena.c), across the two halves of xpv_par_run() (base/par.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "arena.h"
#include "par.h"
#include "testutil.h"

/* Under AddressSanitizer, a huge malloc returns NULL as libc's does
 * (instead of ASan's own report), so the failure path is what runs. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "allocator_may_return_null=1"; }

/* Larger than any address space: malloc always refuses it. */
#define HUGE_SIZE (SIZE_MAX / 4)

static int alloc_huge(void *arg) {
    int *reached = arg;
    void *p = xpv_xmalloc(HUGE_SIZE);
    *reached = 1;   /* never: the allocation does not return */
    free(p);
    return 7;
}

static int returns_five(void *arg) {
    (void)arg;
    void *p = xpv_xmalloc(64);
    free(p);
    return 5;
}

static void test_result_passes_through(void **state) {
    (void)state;
    size_t failed = 123;
    assert_int_equal(xpv_oom_run(returns_five, NULL, &failed), 5);
    assert_int_equal(failed, 123);  /* untouched on success */
}

static void test_failure_unwinds(void **state) {
    (void)state;
    int reached = 0;
    size_t failed = 0;
    assert_int_equal(xpv_oom_run(alloc_huge, &reached, &failed), XPV_OOM_FAILED);
    assert_int_equal(reached, 0);
    assert_int_equal(failed, HUGE_SIZE);
}

static int calloc_overflow(void *arg) {
    (void)arg;
    void *p = xpv_xcalloc(SIZE_MAX / 2, 4);    /* count * size wraps */
    free(p);
    return 0;
}

static int realloc_huge(void *arg) {
    void **keep = arg;
    *keep = xpv_xmalloc(16);    /* still the caller's when realloc fails */
    *keep = xpv_xrealloc(*keep, HUGE_SIZE);
    return 0;
}

static int arena_huge(void *arg) {
    xpv_arena *a = arg;
    xpv_arena_alloc(a, 100);
    xpv_arena_alloc(a, HUGE_SIZE);
    return 0;
}

static void test_every_allocator(void **state) {
    (void)state;
    size_t failed = 0;
    assert_int_equal(xpv_oom_run(calloc_overflow, NULL, &failed), XPV_OOM_FAILED);
    assert_int_equal(failed, SIZE_MAX);
    void *keep = NULL;
    assert_int_equal(xpv_oom_run(realloc_huge, &keep, &failed), XPV_OOM_FAILED);
    assert_int_equal(failed, HUGE_SIZE);
    free(keep);
    xpv_arena a;
    xpv_arena_init(&a, 0);
    assert_int_equal(xpv_oom_run(arena_huge, &a, &failed), XPV_OOM_FAILED);
    assert_true(failed >= HUGE_SIZE);
    xpv_arena_free(&a);     /* what it had allocated is still its own */
}

/* The inner scope catches its failure; the outer one goes on. */
static int outer(void *arg) {
    int *inner_rc = arg;
    *inner_rc = xpv_oom_run(alloc_huge, &(int){0}, NULL);
    return 1;
}

static void test_nesting(void **state) {
    (void)state;
    int inner_rc = 0;
    assert_int_equal(xpv_oom_run(outer, &inner_rc, NULL), 1);
    assert_int_equal(inner_rc, XPV_OOM_FAILED);
    /* The outer scope is gone too: a later failure would abort, which the
     * scope stack shows by a fresh run still catching its own. */
    assert_int_equal(xpv_oom_run(alloc_huge, &(int){0}, NULL), XPV_OOM_FAILED);
}

/* ==== xpv_par_run ======================================================== */

typedef struct half_state {
    int fail;
    volatile int done;
} half_state;

static void half(void *arg) {
    half_state *h = arg;
    if (h->fail) free(xpv_xmalloc(HUGE_SIZE));
    for (volatile int i = 0; i < 100000; i++) {
    }
    h->done = 1;
}

typedef struct pair {
    half_state a, b;
} pair;

static int run_pair(void *arg) {
    pair *p = arg;
    xpv_par_run(half, &p->a, half, &p->b);
    return 3;
}

static void test_par_both_run(void **state) {
    (void)state;
    pair p = {{0, 0}, {0, 0}};
    assert_int_equal(xpv_oom_run(run_pair, &p, NULL), 3);
    assert_true(p.a.done && p.b.done);
}

static void test_par_failure_raised_after_both(void **state) {
    (void)state;
    for (int which = 0; which < 2; which++) {
        pair p = {{which == 0, 0}, {which == 1, 0}};
        size_t failed = 0;
        assert_int_equal(xpv_oom_run(run_pair, &p, &failed), XPV_OOM_FAILED);
        assert_int_equal(failed, HUGE_SIZE);
        /* The half that did not fail ran to its end before the caller was
         * unwound. */
        assert_true(which == 0 ? p.b.done : p.a.done);
        assert_false(which == 0 ? p.a.done : p.b.done);
    }
}

static int run_pair_inline(void *arg) {
    pair *p = arg;
    xpv_par_run_if(0, half, &p->a, half, &p->b);
    return 5;
}

/* Below a caller's size threshold both halves run here, in order b then a;
 * a failure in b unwinds the caller without running a, one in a after b
 * finished, as xpv_par_run() does when no thread can be started. */
static void test_par_run_if_inline(void **state) {
    (void)state;
    pair p = {{0, 0}, {0, 0}};
    assert_int_equal(xpv_oom_run(run_pair_inline, &p, NULL), 5);
    assert_true(p.a.done && p.b.done);
    for (int which = 0; which < 2; which++) {
        pair q = {{which == 0, 0}, {which == 1, 0}};
        size_t failed = 0;
        assert_int_equal(xpv_oom_run(run_pair_inline, &q, &failed), XPV_OOM_FAILED);
        assert_int_equal(failed, HUGE_SIZE);
        assert_false(q.a.done);
        assert_true(which == 0 ? q.b.done : !q.b.done);
    }
}

typedef struct many {
    half_state h[5];
} many;

static int run_many(void *arg) {
    many *m = arg;
    void *args[5];
    for (int i = 0; i < 5; i++) args[i] = &m->h[i];
    xpv_par_many(half, args, 5);
    return 4;
}

static void test_par_many(void **state) {
    (void)state;
    many m;
    memset(&m, 0, sizeof m);
    assert_int_equal(xpv_oom_run(run_many, &m, NULL), 4);
    for (int i = 0; i < 5; i++) assert_true(m.h[i].done);
    memset(&m, 0, sizeof m);
    m.h[3].fail = 1;
    size_t failed = 0;
    assert_int_equal(xpv_oom_run(run_many, &m, &failed), XPV_OOM_FAILED);
    assert_int_equal(failed, HUGE_SIZE);
    for (int i = 0; i < 5; i++) assert_true(i == 3 ? !m.h[i].done : m.h[i].done);
}

/* More jobs than threads (64): every job runs, once. */
static void count_job(void *arg) { __atomic_fetch_add((int *)arg, 1, __ATOMIC_RELAXED); }

static void test_par_many_past_64(void **state) {
    (void)state;
    enum { N = 200 };
    int count[N];
    void *args[N];
    memset(count, 0, sizeof count);
    for (int i = 0; i < N; i++) args[i] = &count[i];
    xpv_par_many(count_job, args, N);
    for (int i = 0; i < N; i++) assert_int_equal(count[i], 1);
}

TU_MAIN(cmocka_unit_test(test_result_passes_through),
        cmocka_unit_test(test_failure_unwinds),
        cmocka_unit_test(test_every_allocator),
        cmocka_unit_test(test_nesting),
        cmocka_unit_test(test_par_many_past_64),
        cmocka_unit_test(test_par_both_run),
        cmocka_unit_test(test_par_failure_raised_after_both),
        cmocka_unit_test(test_par_run_if_inline),
        cmocka_unit_test(test_par_many))
