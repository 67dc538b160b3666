/*
 * query.h - URL query-string and path decoding.
 *
 * "a=1&b=x%20y&c=1+2&a=2" -> keys/values, percent-decoded, '+' as space,
 * in request order (duplicates kept; lookups return the first, as XProf's
 * request.args.get does).  Input that could confuse later layers is
 * rejected instead of repaired: NUL bytes (also %00), malformed escapes,
 * over-long strings, too many parameters.
 */
#ifndef XPV_QUERY_H
#define XPV_QUERY_H

#include <stddef.h>

#include "tool.h"
#include "util.h"

#define XPV_QUERY_MAX_LEN 8192     /* bytes of raw query string */
#define XPV_QUERY_MAX_PARAMS 64

typedef struct xpv_query {
    size_t n;
    char *keys[XPV_QUERY_MAX_PARAMS];
    char *vals[XPV_QUERY_MAX_PARAMS]; /* points into the keys[i] block */
} xpv_query;

#define XPV_QUERY_INIT {0, {0}, {0}}

/* Parse `len` bytes of `qs` (without the leading '?'; NULL means empty)
 * into `q`, which must be XPV_QUERY_INIT or released.  Empty segments
 * ("a=1&&b=2") are skipped; a key without '=' gets the value "".
 * Returns 0, or -1 with a 400 error in `err` (q is left empty). */
int xpv_query_parse(xpv_query *q, const char *qs, size_t len, xpv_err *err);

/* Append one already-decoded pair (copied).  Returns -1 when full. */
int xpv_query_add(xpv_query *q, const char *key, const char *val);

/* First value of `key`, or NULL. */
const char *xpv_query_get(const xpv_query *q, const char *key);

/* Free everything `q` holds; it becomes empty and reusable. */
void xpv_query_release(xpv_query *q);

/* Percent-decode `len` bytes of `in` into `out` (capacity `cap`, NUL
 * terminated).  `plus` turns '+' into ' ' (query strings, not paths).
 * Returns the decoded length, or -1 on a malformed escape, a NUL byte or
 * overflow. */
long xpv_url_decode(const char *in, size_t len, char *out, size_t cap, int plus);

#endif
