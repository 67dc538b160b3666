/*
 * buf.c - growable buffer and JSON appenders.
 */
#include "buf.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "arena.h"

void xpv_buf_init(xpv_buf *b) {
    b->data = NULL;
    b->len = b->cap = 0;
}

void xpv_buf_free(xpv_buf *b) {
    free(b->data);
    xpv_buf_init(b);
}

void xpv_buf_reset(xpv_buf *b) { b->len = 0; }

char *xpv_buf_reserve(xpv_buf *b, size_t n) {
    if (b->cap - b->len < n) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap - b->len < n) cap *= 2;
        b->data = xpv_xrealloc(b->data, cap);
        b->cap = cap;
    }
    return b->data + b->len;
}

char *xpv_buf_steal(xpv_buf *b, size_t *len) {
    char *d = b->data;
    if (len) *len = b->len;
    if (!d) d = xpv_xmalloc(1);
    xpv_buf_init(b);
    return d;
}

void xpv_buf_printf(xpv_buf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char tmp[256];
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n < sizeof tmp) {
        xpv_buf_add(b, tmp, (size_t)n);
        return;
    }
    char *w = xpv_buf_reserve(b, (size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(w, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void xpv_buf_u64(xpv_buf *b, uint64_t v) {
    char tmp[24];
    char *p = tmp + sizeof tmp;
    do {
        *--p = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    xpv_buf_add(b, p, (size_t)(tmp + sizeof tmp - p));
}

void xpv_buf_i64(xpv_buf *b, int64_t v) {
    if (v < 0) {
        xpv_buf_putc(b, '-');
        xpv_buf_u64(b, (uint64_t)0 - (uint64_t)v);
    } else {
        xpv_buf_u64(b, (uint64_t)v);
    }
}

void xpv_buf_double(xpv_buf *b, double v) {
    if (isnan(v)) { xpv_buf_puts(b, "\"NaN\""); return; }
    if (isinf(v)) { xpv_buf_puts(b, v > 0 ? "\"Infinity\"" : "\"-Infinity\""); return; }
    if (fabs(v) < 1e15 && v == (double)(int64_t)v) {  /* range first: no UB cast */
        xpv_buf_i64(b, (int64_t)v);
        return;
    }
    char tmp[32];
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*g", prec, v);
        if (strtod(tmp, NULL) == v) break;
    }
    xpv_buf_puts(b, tmp);
}

/* Append v/10^scale exactly, keeping at least `minfrac` decimals. */
static void fixed(xpv_buf *b, int64_t v, int scale, int minfrac) {
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    uint64_t pow10 = 1;
    for (int i = 0; i < scale; i++) pow10 *= 10;
    uint64_t ip = u / pow10, fp = u % pow10;
    if (v < 0) xpv_buf_putc(b, '-');
    xpv_buf_u64(b, ip);
    char frac[20];
    for (int i = scale - 1; i >= 0; i--) {
        frac[i] = (char)('0' + fp % 10);
        fp /= 10;
    }
    int n = scale;
    while (n > minfrac && frac[n - 1] == '0') n--;
    if (n > 0) {
        xpv_buf_putc(b, '.');
        xpv_buf_add(b, frac, (size_t)n);
    }
}

void xpv_buf_ps_as_us(xpv_buf *b, int64_t ps) { fixed(b, ps, 6, 3); }
void xpv_buf_ps_as_ms(xpv_buf *b, int64_t ps) { fixed(b, ps, 9, 0); }

static const char hexd[] = "0123456789abcdef";

size_t xpv_utf8_seq_len(const unsigned char *p, const unsigned char *end) {
    unsigned char c = *p;
    size_t need = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c < 0xE0 ? 2 : 0;
    if (c > 0xF4) need = 0;
    int ok = need && (size_t)(end - p) >= need;
    for (size_t i = 1; ok && i < need; i++)
        if ((p[i] & 0xC0) != 0x80) ok = 0;
    if (ok && need == 3) {
        uint32_t cp = ((uint32_t)(c & 0x0F) << 12) | ((uint32_t)(p[1] & 0x3F) << 6) | (p[2] & 0x3F);
        if (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF)) ok = 0;
    }
    if (ok && need == 4) {
        uint32_t cp = ((uint32_t)(c & 0x07) << 18) | ((uint32_t)(p[1] & 0x3F) << 12) |
                      ((uint32_t)(p[2] & 0x3F) << 6) | (p[3] & 0x3F);
        if (cp < 0x10000 || cp > 0x10FFFF) ok = 0;
    }
    return ok ? need : 0;
}

void xpv_buf_utf8_clean(xpv_buf *b, const char *s, size_t n) {
    const unsigned char *p = (const unsigned char *)s, *end = p + n;
    while (p < end) {
        const unsigned char *run = p;
        while (p < end && *p < 0x80) p++;
        xpv_buf_add(b, run, (size_t)(p - run));
        if (p == end) break;
        size_t k = xpv_utf8_seq_len(p, end);
        if (k) {
            xpv_buf_add(b, p, k);
            p += k;
        } else {
            xpv_buf_add(b, "\xef\xbf\xbd", 3);
            p++;
        }
    }
}

/* Bytes copied as they are into a JSON string (printable ASCII but for
 * the quote, the backslash and the HTML-significant <, >, &): one table
 * load per byte on the common path instead of seven compares. */
static const unsigned char json_plain[256] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    1, 1, 0, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 0, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
};

void xpv_buf_json_str(xpv_buf *b, const char *s, size_t n) {
    const unsigned char *p = (const unsigned char *)s, *end = n ? p + n : p;
    /* Worst case every byte becomes \u00XX (6 bytes). */
    char *w = xpv_buf_reserve(b, n * 6 + 2);
    char *w0 = w;
    *w++ = '"';
    while (p < end) {
        unsigned char c = *p;
        if (json_plain[c]) {
            *w++ = (char)c;
            p++;
            continue;
        }
        if (c < 0x80) {
            *w++ = '\\';
            switch (c) {
            case '"': *w++ = '"'; break;
            case '\\': *w++ = '\\'; break;
            case '\n': *w++ = 'n'; break;
            case '\r': *w++ = 'r'; break;
            case '\t': *w++ = 't'; break;
            default:
                *w++ = 'u'; *w++ = '0'; *w++ = '0';
                *w++ = hexd[c >> 4]; *w++ = hexd[c & 15];
            }
            p++;
            continue;
        }
        size_t need = xpv_utf8_seq_len(p, end);
        if (need == 3 && p[1] == 0x80 && (p[2] == 0xA8 || p[2] == 0xA9) && c == 0xE2) {
            /* U+2028 / U+2029: valid JSON, but not inside JavaScript strings. */
            memcpy(w, p[2] == 0xA8 ? "\\u2028" : "\\u2029", 6);
            w += 6;
            p += 3;
            continue;
        }
        if (!need) {
            memcpy(w, "\\ufffd", 6);
            w += 6;
            p++;
            continue;
        }
        memcpy(w, p, need);
        w += need;
        p += need;
    }
    *w++ = '"';
    b->len += (size_t)(w - w0);
}
