/*
 * test_query.c - query-string and path decoding (server/routes/query.c).
 */
#include <stdio.h>
#include <string.h>

#include "query.h"
#include "request.h"
#include "testutil.h"

static void test_query__basic(void **state) {
    (void)state;
    xpv_query q = XPV_QUERY_INIT;
    xpv_err err;
    const char *s = "run=a%2Fb&tag=overview_page&x=1+2&empty=&flag&&a=%e2%82%AC";
    assert_int_equal(xpv_query_parse(&q, s, strlen(s), &err), 0);
    assert_int_equal(q.n, 6);
    assert_string_equal(xpv_query_get(&q, "run"), "a/b");
    assert_string_equal(xpv_query_get(&q, "tag"), "overview_page");
    assert_string_equal(xpv_query_get(&q, "x"), "1 2");
    assert_string_equal(xpv_query_get(&q, "empty"), "");
    assert_string_equal(xpv_query_get(&q, "flag"), "");
    assert_string_equal(xpv_query_get(&q, "a"), "\xe2\x82\xac");
    assert_null(xpv_query_get(&q, "missing"));
    xpv_query_release(&q);
    assert_int_equal(q.n, 0);
}

static void test_query__duplicates_first_wins(void **state) {
    (void)state;
    xpv_query q = XPV_QUERY_INIT;
    xpv_err err;
    const char *s = "host=a&host=b";
    assert_int_equal(xpv_query_parse(&q, s, strlen(s), &err), 0);
    assert_int_equal(q.n, 2);
    assert_string_equal(xpv_query_get(&q, "host"), "a");
    assert_string_equal(q.vals[1], "b");
    xpv_query_release(&q);
}

static void test_query__rejects(void **state) {
    (void)state;
    static const char *bad[] = {
        "a=%00", "a=%0", "a=%", "a=%zz", "%00=1", "a=b%2", "k%g1=2",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        xpv_query q = XPV_QUERY_INIT;
        xpv_err err;
        xpv_err_clear(&err);
        assert_int_equal(xpv_query_parse(&q, bad[i], strlen(bad[i]), &err), -1);
        assert_int_equal(err.status, 400);
        assert_int_equal(q.n, 0);
    }
    /* A raw NUL inside the given length. */
    xpv_query q = XPV_QUERY_INIT;
    xpv_err err;
    assert_int_equal(xpv_query_parse(&q, "a=1\0b=2", 7, &err), -1);
    /* Too long. */
    static char big[XPV_QUERY_MAX_LEN + 10];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    assert_int_equal(xpv_query_parse(&q, big, strlen(big), &err), -1);
    assert_int_equal(err.status, 400);
    /* Too many parameters. */
    char many[XPV_QUERY_MAX_LEN];
    size_t o = 0;
    for (int i = 0; i < XPV_QUERY_MAX_PARAMS + 1; i++)
        o += (size_t)snprintf(many + o, sizeof many - o, "k%d=v&", i);
    assert_int_equal(xpv_query_parse(&q, many, o, &err), -1);
    assert_int_equal(q.n, 0);
    /* Exactly the maximum is fine. */
    o = 0;
    for (int i = 0; i < XPV_QUERY_MAX_PARAMS; i++)
        o += (size_t)snprintf(many + o, sizeof many - o, "k%d=v&", i);
    assert_int_equal(xpv_query_parse(&q, many, o, &err), 0);
    assert_int_equal(q.n, XPV_QUERY_MAX_PARAMS);
    xpv_query_release(&q);
}

static void test_query__empty_and_null(void **state) {
    (void)state;
    xpv_query q = XPV_QUERY_INIT;
    xpv_err err;
    assert_int_equal(xpv_query_parse(&q, NULL, 0, &err), 0);
    assert_int_equal(q.n, 0);
    assert_int_equal(xpv_query_parse(&q, "&&&", 3, &err), 0);
    assert_int_equal(q.n, 0);
    assert_int_equal(xpv_query_parse(&q, "=v", 2, &err), 0);
    assert_int_equal(q.n, 1);
    assert_string_equal(q.keys[0], "");
    assert_string_equal(q.vals[0], "v");
    xpv_query_release(&q);
}

static void test_query__url_decode(void **state) {
    (void)state;
    char out[16];
    assert_int_equal(xpv_url_decode("a+b%20c", 7, out, sizeof out, 0), 7 - 2);
    assert_string_equal(out, "a+b c");
    assert_int_equal(xpv_url_decode("a+b", 3, out, sizeof out, 1), 3);
    assert_string_equal(out, "a b");
    assert_int_equal(xpv_url_decode("%2e%2E/", 7, out, sizeof out, 0), 3);
    assert_string_equal(out, "../");
    /* Overflow of the output buffer. */
    assert_int_equal(xpv_url_decode("0123456789abcdefg", 17, out, sizeof out, 0), -1);
    assert_int_equal(xpv_url_decode("0123456789abcde", 15, out, sizeof out, 0), 15);
}

/* The typed request (server/routes/request.c): shared parameters read once,
 * empty = absent, numbers strictly decimal with the parameter named. */
static void test_request__parse(void **state) {
    (void)state;
    xpv_query q = XPV_QUERY_INIT;
    xpv_err err;
    const char *s = "run=r1&tag=trace_viewer%40&host=&hosts=a,b&table=12&top=0&x=1&run=r2";
    assert_int_equal(xpv_query_parse(&q, s, strlen(s), &err), 0);
    xpv_request rq;
    assert_int_equal(xpv_request_parse(&rq, &q, &err), 0);
    assert_ptr_equal(rq.q, &q);
    assert_string_equal(rq.run, "r1");   /* the first one, as XProf */
    assert_string_equal(rq.tag, "trace_viewer@");
    assert_null(rq.host);                /* empty: absent */
    assert_string_equal(rq.hosts, "a,b");
    assert_null(rq.base_run);
    assert_int_equal(rq.table, 12);
    assert_int_equal(rq.top, 0);
    /* The tools see every pair, and the tag as parsed. */
    xpv_params p = xpv_request_params(&rq);
    assert_int_equal(p.n, 8);
    assert_string_equal(xpv_param(&p, "x"), "1");
    assert_string_equal(xpv_param(&p, "run"), "r1");
    assert_string_equal(p.tag, "trace_viewer@");
    xpv_query_release(&q);

    static const char *const bad[][2] = {
        {"table=1x", "bad parameter table=1x"},   {"table=-1", "bad parameter table=-1"},
        {"table=%2B2", "bad parameter table=+2"},   {"table=100001", "bad parameter table=100001"},
        {"top=0x10", "bad parameter top=0x10"},   {"run=a&top=1e3", "bad parameter top=1e3"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(xpv_query_parse(&q, bad[i][0], strlen(bad[i][0]), &err), 0);
        memset(&err, 0, sizeof err);
        assert_int_equal(xpv_request_parse(&rq, &q, &err), -1);
        assert_int_equal(err.status, 400);
        assert_string_equal(err.msg, bad[i][1]);
        xpv_query_release(&q);
    }
    assert_int_equal(xpv_query_parse(&q, "table=100000&top=", 17, &err), 0);
    assert_int_equal(xpv_request_parse(&rq, &q, &err), 0);
    assert_int_equal(rq.table, 100000);
    assert_int_equal(rq.top, 0);
    xpv_query_release(&q);
}

TU_MAIN(cmocka_unit_test(test_query__basic),
        cmocka_unit_test(test_request__parse),
        cmocka_unit_test(test_query__duplicates_first_wins),
        cmocka_unit_test(test_query__rejects),
        cmocka_unit_test(test_query__empty_and_null),
        cmocka_unit_test(test_query__url_decode))
