/*
 * json_in.c - the pull JSON tokenizer (see json_in.h).
 */
#include "json_in.h"

#include <stdio.h>
#include <string.h>

int jfail(jin *j, int status, const char *msg) {
    if (!j->err->msg[0]) {
        j->err->status = status;
        j->err->offset = j->base + j->pos;
        snprintf(j->err->msg, sizeof j->err->msg, "%s", msg);
    }
    return -1;
}

int jfailed(const jin *j) { return j->err->msg[0] != 0; }

/* Refill the window; returns 1 when bytes were added. */
int jfill(jin *j) {
    if (j->eof || jfailed(j)) return 0;
    if (j->pos) {
        memmove(j->b, j->b + j->pos, j->len - j->pos);
        j->base += j->pos;
        j->len -= j->pos;
        j->pos = 0;
    }
    long n = j->rd(j->ctx, j->b + j->len, j->cap - j->len);
    if (n < 0) {
        j->eof = 1;
        jfail(j, XPV_E_INTERNAL, "read error");
        return 0;
    }
    if (n == 0) {
        j->eof = 1;
        return 0;
    }
    j->len += (size_t)n;
    if (j->max && j->base + j->len > j->max) {
        j->eof = 1;
        jfail(j, XPV_E_TOO_LARGE, "trace JSON larger than the configured cap");
        return 0;
    }
    return 1;
}




int jexpect(jin *j, int c, const char *msg) {
    if (jws(j) != c) return jfail(j, XPV_E_BAD_PROFILE, msg);
    j->pos++;
    return 0;
}

static void put_utf8(xpv_buf *b, uint32_t cp) {
    char t[4];
    size_t n;
    if (cp < 0x80) {
        t[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        t[0] = (char)(0xc0 | (cp >> 6));
        t[1] = (char)(0x80 | (cp & 0x3f));
        n = 2;
    } else if (cp < 0x10000) {
        t[0] = (char)(0xe0 | (cp >> 12));
        t[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        t[2] = (char)(0x80 | (cp & 0x3f));
        n = 3;
    } else {
        t[0] = (char)(0xf0 | (cp >> 18));
        t[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
        t[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
        t[3] = (char)(0x80 | (cp & 0x3f));
        n = 4;
    }
    xpv_buf_add(b, t, n);
}

static int hex4(jin *j, uint32_t *out) {
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        int c = jget(j);
        int d = c >= '0' && c <= '9' ? c - '0'
              : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0) return jfail(j, XPV_E_BAD_PROFILE, "bad \\u escape in string");
        v = v * 16 + (uint32_t)d;
    }
    *out = v;
    return 0;
}

/* Read a string (the opening quote is next).  Decoded bytes are appended
 * to `dst` (NULL: skip).  With `raw` set, the bytes are appended exactly
 * as written, quotes and escapes included (for re-emitting JSON text). */
int jstring(jin *j, xpv_buf *dst, int raw) {
    if (jws(j) != '"') return jfail(j, XPV_E_BAD_PROFILE, "expected a string");
    j->pos++;
    if (raw && dst) xpv_buf_putc(dst, '"');
    for (;;) {
        if (j->pos == j->len && !jfill(j)) return jfail(j, XPV_E_BAD_PROFILE, "unterminated string");
        /* Copy the run up to the next quote or backslash in one go. */
        const unsigned char *s = j->b + j->pos, *e = j->b + j->len, *p = s;
        while (p < e && *p != '"' && *p != '\\') p++;
        if (dst && p > s) xpv_buf_add(dst, s, (size_t)(p - s));
        j->pos += (size_t)(p - s);
        if (p == e) continue;
        int c = j->b[j->pos++];
        if (c == '"') {
            if (raw && dst) xpv_buf_putc(dst, '"');
            return 0;
        }
        int x = jget(j);
        if (x < 0) return jfail(j, XPV_E_BAD_PROFILE, "unterminated string");
        if (raw) {
            if (dst) {
                xpv_buf_putc(dst, '\\');
                xpv_buf_putc(dst, (char)x);
            }
            continue;
        }
        uint32_t cp;
        switch (x) {
        case 'n': cp = '\n'; break;
        case 't': cp = '\t'; break;
        case 'r': cp = '\r'; break;
        case 'b': cp = '\b'; break;
        case 'f': cp = '\f'; break;
        case 'u':
            if (hex4(j, &cp)) return -1;
            if (cp >= 0xd800 && cp < 0xdc00 && jpeek(j) == '\\') {
                j->pos++;
                uint32_t lo;
                if (jget(j) != 'u' || hex4(j, &lo)) return jfail(j, XPV_E_BAD_PROFILE, "bad surrogate pair");
                if (lo >= 0xdc00 && lo < 0xe000)
                    cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                else
                    cp = 0xfffd;
            } else if (cp >= 0xd800 && cp < 0xe000) {
                cp = 0xfffd;
            }
            break;
        default: cp = (uint32_t)x; break;   /* \" \\ \/ and lenient others */
        }
        if (dst) put_utf8(dst, cp);
    }
}

/* A bare token (number, true/false/null, or a lenient unquoted word such
 * as N/A) into `t` (NUL-terminated); returns its length or -1. */
int jbare(jin *j, char *t, size_t cap) {
    size_t n = 0;
    for (;;) {
        int c = jpeek(j);
        if (c < 0 || c == ',' || c == '}' || c == ']' || c == ':' || c == ' ' ||
            c == '\n' || c == '\r' || c == '\t' || c == '"' || c == '{' || c == '[')
            break;
        if (n + 1 >= cap) return jfail(j, XPV_E_BAD_PROFILE, "token too long");
        t[n++] = (char)c;
        j->pos++;
    }
    t[n] = 0;
    if (!n) return jfail(j, XPV_E_BAD_PROFILE, "expected a value");
    return (int)n;
}

/* Skip one value; with `cap` set, append it as compact JSON text. */
int jskip(jin *j, xpv_buf *cap) {
    int depth = 0;
    char tok[MAX_NUM_TEXT];
    do {
        int c = jws(j);
        if (c < 0) return jfail(j, XPV_E_BAD_PROFILE, "unexpected end of input");
        if (c == '{' || c == '[') {
            if (++depth > MAX_NEST) return jfail(j, XPV_E_BAD_PROFILE, "nesting too deep");
            j->pos++;
            if (cap) xpv_buf_putc(cap, (char)c);
        } else if (c == '}' || c == ']') {
            if (depth == 0) return jfail(j, XPV_E_BAD_PROFILE, "unbalanced bracket");
            depth--;
            j->pos++;
            if (cap) xpv_buf_putc(cap, (char)c);
        } else if (c == ',' || c == ':') {
            if (depth == 0) return jfail(j, XPV_E_BAD_PROFILE, "unexpected separator");
            j->pos++;
            if (cap) xpv_buf_putc(cap, (char)c);
        } else if (c == '"') {
            if (jstring(j, cap, 1)) return -1;
        } else {
            int n = jbare(j, tok, sizeof tok);
            if (n < 0) return -1;
            if (cap) xpv_buf_add(cap, tok, (size_t)n);
        }
    } while (depth > 0);
    return 0;
}

/* After a member value: ',' (returns 1, more follow) or `close` (0). */
int jnext(jin *j, int close) {
    int c = jws(j);
    if (c == ',') {
        j->pos++;
        return 1;
    }
    if (c == close) {
        j->pos++;
        return 0;
    }
    return jfail(j, XPV_E_BAD_PROFILE, close == '}' ? "expected ',' or '}'" : "expected ',' or ']'");
}

