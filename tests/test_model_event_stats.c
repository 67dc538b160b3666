/*
 * test_model_event_stats.c - xpv_event_stats / xpv_event_stats_in: several
 * event stats found in one pass agree with xpv_event_stat (last occurrence
 * wins, refs resolved) and report the stats given more than once.
 */
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#include "model.h"
#include "tool_xspace.h"
#include "wire_write.h"
#include "xplane.h"

static void test_pick_matches_single_lookups(void **state) {
    (void)state;
    int pl, ln;
    tx_space *s = tx_new_line("/device:GPU:0", 7, "Stream #7", &pl, &ln);
    tx_event_t *e = tx_event(s, pl, ln, "k0", 0, 10);
    tx_ev_int(s, pl, e, "correlation_id", 1);
    tx_ev_ref(s, pl, e, "shape", "(half[2,3])");
    tx_ev_str(s, pl, e, "tf_op", "a/b:MatMul");
    tx_ev_int(s, pl, e, "correlation_id", 7); /* given twice: 7 wins */
    e = tx_event(s, pl, ln, "k1", 20, 10);
    tx_ev_str(s, pl, e, "tf_op", "c:Relu");
    tx_event(s, pl, ln, "k2", 40, 10); /* no stats */
    tx_stat_meta(s, pl, "group_id");   /* defined, on no event */
    xpv_profile *p = tx_decode(s);
    assert_non_null(p);
    const xpv_plane *P = &p->planes[0];
    const xpv_line *L = &P->lines[0];
    int32_t ids[5] = {xpv_stat_id(P, "correlation_id"), xpv_stat_id(P, "shape"), -1,
                      xpv_stat_id(P, "tf_op"), xpv_stat_id(P, "group_id")};
    assert_true(ids[0] >= 0 && ids[1] >= 0 && ids[3] >= 0 && ids[4] >= 0);
    xpv_stat out[5];
    uint32_t multi = 99;

    uint32_t got = xpv_event_stats(P, L, &L->events[0], ids, 5, out, &multi);
    assert_int_equal(got, 1u | 2u | 8u);
    assert_int_equal(multi, 1u);
    int64_t v = 0;
    assert_true(xpv_stat_as_int(&out[0], &v));
    assert_true(v == 7);
    assert_int_equal(out[1].kind, XPV_STAT_STR);
    assert_int_equal(out[1].is_ref, 1);
    assert_true(xpv_str_eq(out[1].v.s, "(half[2,3])"));
    assert_true(xpv_str_eq(out[3].v.s, "a/b:MatMul"));
    /* The same answers as one lookup per stat. */
    for (int i = 0; i < 5; i++) {
        xpv_stat one;
        int has = xpv_event_stat(P, L, &L->events[0], ids[i], &one);
        assert_int_equal(has, (got >> i) & 1);
        if (has) {
            assert_int_equal(one.meta, out[i].meta);
            assert_int_equal(one.kind, out[i].kind);
            assert_memory_equal(&one.v, &out[i].v, sizeof one.v);
        }
    }

    got = xpv_event_stats(P, L, &L->events[1], ids, 5, out, &multi);
    assert_int_equal(got, 8u);
    assert_int_equal(multi, 0u);
    assert_true(xpv_str_eq(out[3].v.s, "c:Relu"));

    got = xpv_event_stats(P, L, &L->events[2], ids, 5, out, &multi);
    assert_int_equal(got, 0u);
    assert_int_equal(multi, 0u);
    /* The prepared set gives the same answers. */
    xpv_stat_set set;
    xpv_stat_set_init(&set, P, ids, 5);
    xpv_stat out2[5];
    got = xpv_event_stats_in(P, L, &L->events[0], &set, out2, &multi);
    assert_int_equal(got, 1u | 2u | 8u);
    assert_int_equal(multi, 1u);
    assert_true(xpv_stat_as_int(&out2[0], &v));
    assert_true(v == 7);
    assert_true(xpv_str_eq(out2[3].v.s, "a/b:MatMul"));
    /* The same id twice: both slots filled. */
    int32_t twice[2] = {ids[0], ids[0]};
    got = xpv_event_stats(P, L, &L->events[0], twice, 2, out2, &multi);
    assert_int_equal(got, 3u);
    assert_int_equal(multi, 3u);
    int64_t v2 = 0;
    assert_true(xpv_stat_as_int(&out2[0], &v) && xpv_stat_as_int(&out2[1], &v2));
    assert_true(v == 7 && v2 == 7);
    /* No valid id: nothing found, and `multi` may be NULL. */
    int32_t none[2] = {-1, -5};
    assert_int_equal(xpv_event_stats(P, L, &L->events[0], none, 2, out, NULL), 0u);
    xpv_profile_free(p);
}

/* One XStat payload written field by field: `mid` first unless `mid_last`,
 * an int64 value, and a second metadata id `mid2` when not 0. */
static void put_stat(xpv_buf *b, int64_t mid, int64_t v, int mid_last, int64_t mid2) {
    size_t f = wire_frame_open(b, 4);
    if (!mid_last) wire_put_uint(b, 1, (uint64_t)mid);
    wire_put_int(b, 4, v);
    if (mid_last) wire_put_uint(b, 1, (uint64_t)mid);
    if (mid2) wire_put_uint(b, 1, (uint64_t)mid2);
    wire_frame_close(b, f);
}

static void put_meta(xpv_buf *b, unsigned field, int64_t id, const char *name) {
    size_t e = wire_frame_open(b, field);
    wire_put_uint(b, 1, (uint64_t)id);
    size_t v = wire_frame_open(b, 2);
    wire_put_uint(b, 1, (uint64_t)id);
    wire_put_str(b, 2, name);
    wire_frame_close(b, v);
    wire_frame_close(b, e);
}

/* Stats in shapes no producer writes (the metadata id after the value,
 * two metadata ids: the last wins) read as the general decoding says,
 * and a line's stat keys (xpv_line.stat_keys) are what its events name. */
static void test_unusual_stat_shapes_and_line_keys(void **state) {
    (void)state;
    xpv_buf b;
    xpv_buf_init(&b);
    size_t pl = wire_frame_open(&b, 1);
    wire_put_uint(&b, 1, 1);
    wire_put_str(&b, 2, "/host:CPU");
    size_t ln = wire_frame_open(&b, 3);
    wire_put_uint(&b, 1, 1);
    size_t ev = wire_frame_open(&b, 4);
    wire_put_uint(&b, 1, 1);
    wire_put_uint(&b, 3, 10);
    put_stat(&b, 1, 5, 1, 0);  /* a = 5, metadata id written last */
    put_stat(&b, 2, 7, 0, 1);  /* ids 2 then 1: a = 7 */
    wire_frame_close(&b, ev);
    ev = wire_frame_open(&b, 4);
    wire_put_uint(&b, 1, 1);
    wire_put_uint(&b, 2, 20);
    put_stat(&b, 2, 9, 0, 0);  /* b = 9, the usual shape */
    wire_frame_close(&b, ev);
    wire_frame_close(&b, ln);
    size_t ln2 = wire_frame_open(&b, 3); /* a line without stats */
    wire_put_uint(&b, 1, 2);
    ev = wire_frame_open(&b, 4);
    wire_put_uint(&b, 1, 1);
    wire_frame_close(&b, ev);
    wire_frame_close(&b, ln2);
    put_meta(&b, 4, 1, "e");
    put_meta(&b, 5, 1, "a");
    put_meta(&b, 5, 2, "b");
    put_meta(&b, 5, 3, "c");
    wire_frame_close(&b, pl);
    xpv_decode_error err;
    xpv_profile *p = xpv_decode(b.data, b.len, NULL, &err);
    assert_non_null(p);
    const xpv_plane *P = &p->planes[0];
    const xpv_line *L = &P->lines[0];
    int32_t ids[3] = {xpv_stat_id(P, "a"), xpv_stat_id(P, "b"), xpv_stat_id(P, "c")};
    xpv_stat out[3];
    uint32_t multi = 0;
    int64_t v = 0;
    assert_int_equal(xpv_event_stats(P, L, &L->events[0], ids, 3, out, &multi), 1u);
    assert_int_equal(multi, 1u);
    assert_true(xpv_stat_as_int(&out[0], &v) && v == 7);
    assert_int_equal(out[0].meta, ids[0]);
    xpv_stat one;
    assert_true(xpv_event_stat(P, L, &L->events[0], ids[0], &one));
    assert_true(xpv_stat_as_int(&one, &v) && v == 7);
    assert_int_equal(xpv_event_stats(P, L, &L->events[1], ids, 3, out, &multi), 2u);
    assert_true(xpv_stat_as_int(&out[1], &v) && v == 9);
    /* keys 1 and 2 on the first line, none on the second */
    assert_true(L->stat_keys_known);
    assert_true(L->stat_keys == (xpv_stat_key_bit(1) | xpv_stat_key_bit(2)));
    assert_true(P->lines[1].stat_keys_known);
    assert_true(P->lines[1].stat_keys == 0);
    xpv_stat_set set;
    xpv_stat_set_init(&set, P, ids + 2, 1); /* c: on no event */
    assert_false(xpv_line_may_have(L, &set));
    xpv_stat_set_init(&set, P, ids, 2);
    assert_true(xpv_line_may_have(L, &set));
    assert_false(xpv_line_may_have(&P->lines[1], &set));
    xpv_line built = {0};   /* not from the decoder: anything may be there */
    assert_true(xpv_line_may_have(&built, &set));
    assert_true(xpv_stat_key_bit(62) == 1ull << 62 && xpv_stat_key_bit(63) == 1ull << 63 &&
                xpv_stat_key_bit(-1) == 1ull << 63);
    xpv_profile_free(p);
    xpv_buf_free(&b);
}

TU_MAIN(cmocka_unit_test(test_pick_matches_single_lookups),
        cmocka_unit_test(test_unusual_stat_shapes_and_line_keys))
