/*
 * request.c - a data request's shared parameters, parsed once (request.h).
 */
#include "request.h"

#include <stdint.h>
#include <string.h>

#include "util.h"

static const char *param(const xpv_query *q, const char *key) {
    const char *v = xpv_query_get(q, key);
    return v && *v ? v : NULL;
}

/* Strict decimal within [0, max]; absent or empty leaves *out at 0. */
static int count(const xpv_query *q, const char *key, uint64_t max, size_t *out,
                 xpv_err *err) {
    const char *v = param(q, key);
    uint64_t x = 0;
    if (v && !xpv_parse_u64_strict(v, max, &x))
        return xpv_err_set(err, XPV_E_BAD_REQUEST, "bad parameter %s=%.200s", key, v);
    *out = (size_t)x;
    return 0;
}

int xpv_request_parse(xpv_request *rq, const xpv_query *q, xpv_err *err) {
    memset(rq, 0, sizeof *rq);
    rq->q = q;
    rq->run = param(q, "run");
    rq->tag = param(q, "tag");
    rq->host = param(q, "host");
    rq->hosts = param(q, "hosts");
    rq->base_run = param(q, "base_run");
    rq->base_host = param(q, "base_host");
    if (count(q, "table", XPV_REQUEST_MAX_TABLE, &rq->table, err) != 0 ||
        count(q, "top", XPV_REQUEST_MAX_TOP, &rq->top, err) != 0)
        return -1;
    return 0;
}

xpv_params xpv_request_params(const xpv_request *rq) {
    xpv_params p = {0, NULL, NULL, rq->tag};
    if (rq->q) {
        p.n = rq->q->n;
        p.keys = (const char *const *)rq->q->keys;
        p.vals = (const char *const *)rq->q->vals;
    }
    return p;
}
