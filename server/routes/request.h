/*
 * request.h - a data request's shared parameters, parsed once.
 *
 * The routes under /data/plugin/profile/ share a handful of parameters
 * (which run, tool, host or hosts, which table of a CSV export, the diff's
 * base side).  xpv_request_parse reads them from the decoded query once,
 * strictly (a malformed number is a 400 naming the parameter, whatever
 * the route), and the routes and the request pipeline read the fields.
 * Tool-specific options (a trace viewport, graph_viewer's node) stay in the
 * query: tools read them through xpv_params.
 */
#ifndef XPV_REQUEST_H
#define XPV_REQUEST_H

#include <stddef.h>

#include "err.h"
#include "query.h"

typedef struct xpv_request {
    /* Every pair as sent (borrowed): tools' own options, cache keys and
     * validators.  NULL for requests made in code (the CLI's diff). */
    const xpv_query *q;
    /* First value of each parameter, borrowed from q; NULL when absent
     * or empty (the routes treat both alike). */
    const char *run;        /* run name */
    const char *tag;        /* tool name (XProf's "tag"), as sent */
    const char *host;       /* host name or ALL_HOSTS */
    const char *hosts;      /* trace viewer: "a,b" */
    const char *base_run;   /* diff: the base side */
    const char *base_host;
    size_t table;           /* data_csv: which DataTable (0 when absent) */
    size_t top;             /* diff: rows kept (0 = all) */
} xpv_request;

/* Largest accepted table index and diff row count. */
#define XPV_REQUEST_MAX_TABLE 100000
#define XPV_REQUEST_MAX_TOP 1000000

/* Fill `rq` from `q` (which must outlive rq).  Returns 0, or -1 with a
 * 400 in `err` naming the malformed parameter. */
int xpv_request_parse(xpv_request *rq, const xpv_query *q, xpv_err *err);

/* The request as the converter contract's xpv_params: every pair, and the
 * tag as parsed (all borrowed from rq and its query). */
xpv_params xpv_request_params(const xpv_request *rq);

#endif
