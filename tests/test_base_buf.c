/*
 * test_base_buf.c - base/buf.c's JSON string writer: every byte value on
 * its own and in context comes back, through a JSON string reader written
 * here, as the byte itself (printable ASCII), as U+FFFD (a byte that is not
 * valid UTF-8), and the written literal never holds a raw quote,
 * backslash, control byte or one of < > & (HTML-safe); valid UTF-8 is
 * copied, U+2028/2029 escaped.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "buf.h"
#include "testutil.h"

/* A JSON string literal read back into UTF-8 (no surrogate pairs: the
 * writer never makes them).  Returns the decoded length, or -1 when the
 * literal is not well formed. */
static long read_json_str(const char *s, size_t n, char *out) {
    if (n < 2 || s[0] != '"' || s[n - 1] != '"') return -1;
    long k = 0;
    for (size_t i = 1; i + 1 < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c < 0x20) return -1;
        if (c != '\\') {
            out[k++] = (char)c;
            continue;
        }
        if (++i + 1 >= n) return -1;
        switch (s[i]) {
        case '"': out[k++] = '"'; break;
        case '\\': out[k++] = '\\'; break;
        case 'n': out[k++] = '\n'; break;
        case 'r': out[k++] = '\r'; break;
        case 't': out[k++] = '\t'; break;
        case 'u': {
            if (i + 5 >= n) return -1;
            char hex[5] = {s[i + 1], s[i + 2], s[i + 3], s[i + 4], 0};
            unsigned long cp = strtoul(hex, NULL, 16);
            i += 4;
            if (cp < 0x80) {
                out[k++] = (char)cp;
            } else if (cp < 0x800) {
                out[k++] = (char)(0xC0 | (cp >> 6));
                out[k++] = (char)(0x80 | (cp & 0x3F));
            } else {
                out[k++] = (char)(0xE0 | (cp >> 12));
                out[k++] = (char)(0x80 | ((cp >> 6) & 0x3F));
                out[k++] = (char)(0x80 | (cp & 0x3F));
            }
            break;
        }
        default: return -1;
        }
    }
    return k;
}

/* The literal holds nothing a browser could read as markup or a string
 * end, and no control byte. */
static void assert_safe(const xpv_buf *b) {
    for (size_t i = 1; i + 1 < b->len; i++) {
        unsigned char c = (unsigned char)b->data[i];
        assert_true(c >= 0x20);
        assert_true(c != '<' && c != '>' && c != '&');
        if (c == '"') assert_int_equal(b->data[i - 1], '\\');
    }
}

static void test_every_single_byte(void **state) {
    (void)state;
    for (int c = 0; c < 256; c++) {
        char in = (char)c, back[8];
        xpv_buf b;
        xpv_buf_init(&b);
        xpv_buf_json_str(&b, &in, 1);
        assert_safe(&b);
        long k = read_json_str(b.data, b.len, back);
        if (c < 0x80) {
            assert_int_equal(k, 1);
            assert_int_equal((unsigned char)back[0], c);
            /* Printable ASCII but for the six escaped ones is copied. */
            int plain = c >= 0x20 && !strchr("\"\\<>&", c);
            assert_int_equal(b.len == 3, plain);
        } else {
            /* A lone byte >= 0x80 is never valid UTF-8. */
            assert_int_equal(k, 3);
            assert_memory_equal(back, "\xef\xbf\xbd", 3);
        }
        xpv_buf_free(&b);
    }
}

static void test_in_context(void **state) {
    (void)state;
    static const struct {
        const char *in, *lit;
    } cases[] = {
        {"jit(f)/dot_general", "\"jit(f)/dot_general\""},
        {"a<b>&\"c\"\\d", "\"a\\u003cb\\u003e\\u0026\\\"c\\\"\\\\d\""},
        {"tab\there\nnl\r", "\"tab\\there\\nnl\\r\""},
        {"caf\xc3\xa9 \xe2\x82\xac", "\"caf\xc3\xa9 \xe2\x82\xac\""},   /* copied */
        {"x\xe2\x80\xa8y\xe2\x80\xa9", "\"x\\u2028y\\u2029\""},
        {"\xc0\xaf", "\"\\ufffd\\ufffd\""},                              /* overlong */
        {"\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\""},                   /* surrogate */
        {"\xf0\x9f\x98", "\"\\ufffd\\ufffd\\ufffd\""},                   /* truncated */
        {"", "\"\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        xpv_buf b;
        xpv_buf_init(&b);
        xpv_buf_json_cstr(&b, cases[i].in);
        assert_int_equal(b.len, strlen(cases[i].lit));
        assert_memory_equal(b.data, cases[i].lit, b.len);
        assert_safe(&b);
        xpv_buf_free(&b);
    }
}

TU_MAIN(cmocka_unit_test(test_every_single_byte),
        cmocka_unit_test(test_in_context))
