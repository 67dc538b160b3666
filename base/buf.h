/*
 * buf.h - growable byte buffer with a fast JSON writer.
 *
 * Converters write their responses here.  jansson builds trees at tens of
 * MB/s; these appenders run at memcpy-like speed, which is what the trace
 * viewer needs.  Appends never fail: OOM aborts (see arena.h).
 */
#ifndef XPV_BUF_H
#define XPV_BUF_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct xpv_buf {
    char *data;
    size_t len;
    size_t cap;
} xpv_buf;

void xpv_buf_init(xpv_buf *b);
void xpv_buf_free(xpv_buf *b);
void xpv_buf_reset(xpv_buf *b);
/* Make room for `n` more bytes; returns the write position. */
char *xpv_buf_reserve(xpv_buf *b, size_t n);
/* Hand the bytes over to the caller (who free()s them); `b` becomes empty. */
char *xpv_buf_steal(xpv_buf *b, size_t *len);

static inline void xpv_buf_add(xpv_buf *b, const void *p, size_t n) {
    if (!n) return;   /* p may be NULL then (empty slices) */
    if (b->cap - b->len < n) xpv_buf_reserve(b, n);
    memcpy(b->data + b->len, p, n);
    b->len += n;
}
static inline void xpv_buf_putc(xpv_buf *b, char c) {
    if (b->cap == b->len) xpv_buf_reserve(b, 1);
    b->data[b->len++] = c;
}
static inline void xpv_buf_puts(xpv_buf *b, const char *s) {
    xpv_buf_add(b, s, strlen(s));
}
void xpv_buf_printf(xpv_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Decimal integers. */
void xpv_buf_i64(xpv_buf *b, int64_t v);
void xpv_buf_u64(xpv_buf *b, uint64_t v);
/* A double as JSON (shortest round-trip form; NaN/Inf become quoted
 * strings "NaN", "Infinity", "-Infinity" as XProf does). */
void xpv_buf_double(xpv_buf *b, double v);
/* Picoseconds printed exactly as microseconds with 6 decimals trimmed to
 * at least 3 ("12.345" or "12.345678"): never through a double. */
void xpv_buf_ps_as_us(xpv_buf *b, int64_t ps);
/* Picoseconds as milliseconds, exact, up to 9 decimals trimmed. */
void xpv_buf_ps_as_ms(xpv_buf *b, int64_t ps);
/* A JSON string literal, quotes included.  Escapes ", \, control bytes,
 * <, >, & and U+2028/2029; invalid UTF-8 bytes become U+FFFD. */
void xpv_buf_json_str(xpv_buf *b, const char *s, size_t n);
static inline void xpv_buf_json_cstr(xpv_buf *b, const char *s) {
    xpv_buf_json_str(b, s, strlen(s));
}
/* Length of the valid UTF-8 sequence starting at p (a byte >= 0x80), or 0
 * when it is not one (overlong, surrogate, truncated, past U+10FFFF). */
size_t xpv_utf8_seq_len(const unsigned char *p, const unsigned char *end);
/* Append `n` bytes of `s` with each invalid UTF-8 byte replaced by U+FFFD:
 * the string a JSON reader gets back from xpv_buf_json_str. */
void xpv_buf_utf8_clean(xpv_buf *b, const char *s, size_t n);

#endif
