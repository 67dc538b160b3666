/*
 * test_base_collections.c - base/collections.h: xpv_ranked_sort_desc puts
 * the largest key first and equal keys in ascending position, whatever
 * order the pairs came in (checked against a hand-written answer and
 * against the defining properties on shuffled arrays), and the extreme
 * int64 keys compare without overflow.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "collections.h"
#include "testutil.h"

static void test_ranked_by_hand(void **state) {
    (void)state;
    /* Positions deliberately out of order, so ties cannot pass by luck of
     * input order. */
    xpv_ranked a[] = {{5, 7}, {9, 3}, {5, 2}, {-1, 0}, {9, 1}, {0, 5}, {5, 4}};
    const xpv_ranked want[] = {{9, 1}, {9, 3}, {5, 2}, {5, 4}, {5, 7}, {0, 5}, {-1, 0}};
    size_t n = sizeof a / sizeof *a;
    xpv_ranked_sort_desc(a, n);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(a[i].key, want[i].key);
        assert_int_equal(a[i].pos, want[i].pos);
    }
}

static void test_ranked_extremes(void **state) {
    (void)state;
    /* A comparator written as key difference would overflow here. */
    xpv_ranked a[] = {{INT64_MIN, 0}, {INT64_MAX, 1}, {0, 2}, {INT64_MIN, 3}, {INT64_MAX, 4}};
    xpv_ranked_sort_desc(a, 5);
    const uint64_t pos[] = {1, 4, 2, 0, 3};
    for (size_t i = 0; i < 5; i++) assert_int_equal(a[i].pos, pos[i]);
    /* Zero and one element: nothing to do, nothing touched. */
    xpv_ranked one = {42, 9};
    xpv_ranked_sort_desc(&one, 1);
    xpv_ranked_sort_desc(NULL, 0);
    assert_int_equal(one.key, 42);
    assert_int_equal(one.pos, 9);
}

static void test_ranked_shuffled(void **state) {
    (void)state;
    enum { N = 1000 };
    xpv_ranked a[N];
    unsigned char seen[N];
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (int round = 0; round < 20; round++) {
        /* Few distinct keys (many ties), positions a permutation of 0..N-1
         * shuffled by Fisher-Yates. */
        for (size_t i = 0; i < N; i++) a[i].pos = i;
        for (size_t i = N - 1; i > 0; i--) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            size_t j = (size_t)((x >> 33) % (i + 1));
            uint64_t t = a[i].pos;
            a[i].pos = a[j].pos;
            a[j].pos = t;
        }
        for (size_t i = 0; i < N; i++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            a[i].key = (int64_t)((x >> 40) % 13) - 6;
        }
        int64_t key_of[N];   /* each position's key before the sort */
        for (size_t i = 0; i < N; i++) key_of[a[i].pos] = a[i].key;
        xpv_ranked_sort_desc(a, N);
        memset(seen, 0, sizeof seen);
        for (size_t i = 0; i < N; i++) {
            assert_true(a[i].pos < N);
            assert_false(seen[a[i].pos]);
            seen[a[i].pos] = 1;
            assert_int_equal(a[i].key, key_of[a[i].pos]);   /* pairs intact */
            if (i == 0) continue;
            assert_true(a[i - 1].key >= a[i].key);
            if (a[i - 1].key == a[i].key) assert_true(a[i - 1].pos < a[i].pos);
        }
    }
}

TU_MAIN(cmocka_unit_test(test_ranked_by_hand),
        cmocka_unit_test(test_ranked_extremes),
        cmocka_unit_test(test_ranked_shuffled))
