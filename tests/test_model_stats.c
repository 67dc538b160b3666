/*
 * test_model_stats.c - model accessors: stat value conversions, a line's
 * time order and the plane walk, string helpers, JSON buffer writer and
 * arena.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#include "arena.h"
#include "buf.h"
#include "model.h"

static void test_stat_as_int(void **state) {
    (void)state;
    xpv_stat s;
    int64_t v;
    memset(&s, 0, sizeof s);
    s.kind = XPV_STAT_DOUBLE;
    s.v.d = 7.72728e+307; /* found by fuzz_xplane: was UB */
    assert_false(xpv_stat_as_int(&s, &v));
    s.v.d = NAN;
    assert_false(xpv_stat_as_int(&s, &v));
    s.v.d = -12.9;
    assert_true(xpv_stat_as_int(&s, &v));
    assert_true(v == -12);
    s.kind = XPV_STAT_UINT;
    s.v.u = 18446744073709551615ULL;
    assert_true(xpv_stat_as_int(&s, &v));
    assert_true(v == -1);
    s.kind = XPV_STAT_STR;
    assert_false(xpv_stat_as_int(&s, &v));
    double d;
    s.kind = XPV_STAT_INT;
    s.v.i = -3;
    assert_true(xpv_stat_as_double(&s, &d));
    assert_true(d == -3.0);
}

static void test_str_helpers(void **state) {
    (void)state;
    xpv_str s = xpv_cstr("Iterator::Prefetch");
    assert_true(xpv_str_eq(s, "Iterator::Prefetch"));
    assert_false(xpv_str_eq(s, "Iterator"));
    assert_true(xpv_str_has_prefix(s, "Iterator::"));
    assert_false(xpv_str_has_prefix(s, "Iterator::Prefetch::Map"));
    xpv_str e = {NULL, 0};
    assert_true(xpv_str_eq(e, ""));
    assert_true(xpv_str_has_prefix(e, ""));
}

static void expect(xpv_buf *b, const char *want) {
    xpv_buf_putc(b, 0);
    assert_string_equal(b->data, want);
    xpv_buf_reset(b);
}

static void test_buf_json(void **state) {
    (void)state;
    xpv_buf b;
    xpv_buf_init(&b);
    xpv_buf_ps_as_us(&b, 1234567890123456789LL);
    expect(&b, "1234567890123.456789");
    xpv_buf_ps_as_us(&b, 1000000);
    expect(&b, "1.000");
    xpv_buf_ps_as_us(&b, 1500);
    expect(&b, "0.0015");
    xpv_buf_ps_as_us(&b, -2500000);
    expect(&b, "-2.500");
    xpv_buf_ps_as_ms(&b, 1500000000);
    expect(&b, "1.5");
    xpv_buf_ps_as_ms(&b, 2000000000);
    expect(&b, "2");
    xpv_buf_i64(&b, INT64_MIN);
    expect(&b, "-9223372036854775808");
    xpv_buf_double(&b, 0.1);
    expect(&b, "0.1");
    xpv_buf_double(&b, 3.0);
    expect(&b, "3");
    xpv_buf_double(&b, NAN);
    expect(&b, "\"NaN\"");
    xpv_buf_double(&b, -INFINITY);
    expect(&b, "\"-Infinity\"");
    const char in[] = "a\"b\\c\n<x>&\x01\xe2\x80\xa8\xc3\xa9\xff";
    xpv_buf_json_str(&b, in, sizeof in - 1);
    expect(&b, "\"a\\\"b\\\\c\\n\\u003cx\\u003e\\u0026\\u0001\\u2028\xc3\xa9\\ufffd\"");
    xpv_buf_printf(&b, "%s-%d", "x", 42);
    expect(&b, "x-42");
    xpv_buf_free(&b);
}

static void test_arena(void **state) {
    (void)state;
    xpv_arena a;
    xpv_arena_init(&a, 1024);
    char *small = xpv_arena_alloc(&a, 10);
    memset(small, 'x', 10);
    char *big = xpv_arena_alloc(&a, 100000); /* own chunk */
    memset(big, 'y', 100000);
    char *small2 = xpv_arena_alloc(&a, 10);
    assert_true(((uintptr_t)small2 & 15) == 0);
    assert_true(small2 == small + 16); /* same small chunk kept current */
    int *z = xpv_arena_calloc(&a, 100, sizeof(int));
    for (int i = 0; i < 100; i++) assert_int_equal(z[i], 0);
    char *s = xpv_arena_strndup(&a, "hello world", 5);
    assert_string_equal(s, "hello");
    assert_true(a.total >= 100000);
    xpv_arena_free(&a);
    assert_null(a.head);
}

/* A line's time order (start, longer first, index) and the walk over a
 * plane's lines in time order (then line index), counted by hand. */
static void test_time_order_walk(void **state) {
    (void)state;
    xpv_event e0[] = {{30, 5, 0, 0}, {10, 5, 0, 0}, {10, 8, 0, 0}, {20, 1, 0, 0}};
    xpv_event e1[] = {{10, 8, 0, 0}, {15, 0, 0, 0}};
    xpv_line lines[3];
    memset(lines, 0, sizeof lines);
    lines[0].events = e0;
    lines[0].nevents = 4;
    lines[1].events = e1;
    lines[1].nevents = 2;
    xpv_plane pl;
    memset(&pl, 0, sizeof pl);
    pl.lines = lines;
    pl.nlines = 3;
    uint32_t *o = xpv_line_time_order(&lines[0]);
    assert_non_null(o);
    const uint32_t want0[] = {2, 1, 3, 0};
    for (int i = 0; i < 4; i++) assert_int_equal(o[i], want0[i]);
    free(o);
    assert_null(xpv_line_time_order(&lines[1])); /* stored in order */
    xpv_plane_walk w;
    xpv_plane_walk_init(&w, &pl);
    for (uint32_t l = 0; l < 3; l++) xpv_plane_walk_add(&w, l);
    assert_int_equal(w.n, 2); /* the empty line is not walked */
    const uint32_t want[][2] = {{0, 2}, {1, 0}, {0, 1}, {1, 1}, {0, 3}, {0, 0}};
    uint32_t li, ei, k = 0;
    const xpv_event *e;
    while ((e = xpv_plane_walk_next(&w, &li, &ei))) {
        assert_true(k < 6);
        assert_int_equal(li, want[k][0]);
        assert_int_equal(ei, want[k][1]);
        assert_ptr_equal(e, &lines[li].events[ei]);
        k++;
    }
    assert_int_equal(k, 6);
    xpv_plane_walk_free(&w);
}

TU_MAIN(cmocka_unit_test(test_stat_as_int),
        cmocka_unit_test(test_time_order_walk),
        cmocka_unit_test(test_str_helpers),
        cmocka_unit_test(test_buf_json),
        cmocka_unit_test(test_arena))
