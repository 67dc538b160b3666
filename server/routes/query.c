/*
 * query.c - see query.h.
 */
#include "query.h"

#include <stdlib.h>
#include <string.h>

#include "arena.h"

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

long xpv_url_decode(const char *in, size_t len, char *out, size_t cap, int plus) {
    size_t o = 0;
    if (cap == 0) return -1;
    for (size_t i = 0; i < len; i++) {
        char c = in[i];
        if (c == '%') {
            if (len - i < 3) return -1;
            int hi = hexval(in[i + 1]), lo = hexval(in[i + 2]);
            if (hi < 0 || lo < 0) return -1;
            c = (char)(hi * 16 + lo);
            i += 2;
        } else if (c == '+' && plus) {
            c = ' ';
        }
        if (c == '\0') return -1;
        if (o + 1 >= cap) return -1;
        out[o++] = c;
    }
    out[o] = '\0';
    return (long)o;
}

/* One allocation per pair: "key\0value\0"; vals[i] points inside keys[i]. */
static int add_pair(xpv_query *q, const char *k, size_t klen,
                    const char *v, size_t vlen) {
    if (q->n == XPV_QUERY_MAX_PARAMS) return -1;
    char *blk = xpv_xmalloc(klen + vlen + 2);
    memcpy(blk, k, klen);
    blk[klen] = '\0';
    memcpy(blk + klen + 1, v, vlen);
    blk[klen + 1 + vlen] = '\0';
    q->keys[q->n] = blk;
    q->vals[q->n] = blk + klen + 1;
    q->n++;
    return 0;
}

int xpv_query_add(xpv_query *q, const char *key, const char *val) {
    return add_pair(q, key, strlen(key), val, strlen(val));
}

int xpv_query_parse(xpv_query *q, const char *qs, size_t len, xpv_err *err) {
    char kbuf[XPV_QUERY_MAX_LEN + 1], vbuf[XPV_QUERY_MAX_LEN + 1];
    if (!qs) len = 0;
    if (len > XPV_QUERY_MAX_LEN)
        return xpv_err_set(err, XPV_E_BAD_REQUEST, "query string too long (%zu bytes, max %d)",
                           len, XPV_QUERY_MAX_LEN);
    if (len && memchr(qs, '\0', len))
        return xpv_err_set(err, XPV_E_BAD_REQUEST, "NUL byte in query string");
    size_t i = 0;
    while (i < len) {
        size_t end = i;
        while (end < len && qs[end] != '&') end++;
        if (end > i) {
            const char *eq = memchr(qs + i, '=', end - i);
            size_t klen = eq ? (size_t)(eq - (qs + i)) : end - i;
            const char *v = eq ? eq + 1 : qs + end;
            size_t vlen = eq ? (size_t)(qs + end - v) : 0;
            long kl = xpv_url_decode(qs + i, klen, kbuf, sizeof kbuf, 1);
            long vl = xpv_url_decode(v, vlen, vbuf, sizeof vbuf, 1);
            if (kl < 0 || vl < 0) {
                xpv_query_release(q);
                return xpv_err_set(err, XPV_E_BAD_REQUEST, "malformed query string (bad %%-escape "
                                   "or NUL byte near offset %zu)", i);
            }
            if (add_pair(q, kbuf, (size_t)kl, vbuf, (size_t)vl) < 0) {
                xpv_query_release(q);
                return xpv_err_set(err, XPV_E_BAD_REQUEST, "too many query parameters (max %d)",
                                   XPV_QUERY_MAX_PARAMS);
            }
        }
        i = end + 1;
    }
    return 0;
}

const char *xpv_query_get(const xpv_query *q, const char *key) {
    for (size_t i = 0; i < q->n; i++)
        if (!strcmp(q->keys[i], key)) return q->vals[i];
    return NULL;
}

void xpv_query_release(xpv_query *q) {
    for (size_t i = 0; i < q->n; i++) free(q->keys[i]);
    q->n = 0;
}
