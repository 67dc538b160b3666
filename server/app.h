/*
 * app.h - internal to the server's route files: the app's state, the
 * request context and the helpers they share.  routes.h is the public
 * face; nothing outside server/ includes this.
 *
 *   routes.c         app lifecycle, responses, static files, dispatch
 *   pipeline.c       request context; profiles, derived data and rendered
 *                    answers through the cache; the streamed full trace
 *   validators.c     ETag / Last-Modified / If-Modified-Since
 *   data_routes.c    /data/plugin/profile/<route> handlers
 *   legacy_routes.c  TF 2.2-era per-tool files on the same routes
 *   request.c        the shared query parameters, parsed once per request
 *   diff_route.c     /data/plugin/profile/diff: two runs compared (compare/)
 */
#ifndef XPV_APP_H
#define XPV_APP_H

#include <stddef.h>
#include <stdint.h>

#include "cache.h"
#include "discovery.h"
#include "diskcache.h"
#include "loader.h"
#include "query.h"
#include "request.h"
#include "routes.h"
#include "tool.h"

#define DATA_PREFIX "/data/plugin/profile/"
#define ALL_HOSTS "ALL_HOSTS"

struct xpv_app {
    xpv_logdir *ld;
    xpv_cache *cache;
    xpv_diskcache *dc;               /* --cache_dir, or NULL */
    char *prefix;                    /* "" or "/sub/path" */
    xpv_load_limits limits;
    uint64_t keep_max;               /* largest rendered response kept */
    const xpv_tool *const *tools;
    uint64_t decodes, decode_failures, not_modified;   /* atomic counters */
    uint64_t stale_reloads;     /* profiles whose file changed under them (atomic) */
    uint64_t build_id;               /* hash of the running binary (ETags) */
    int64_t code_mtime;              /* its mtime, s (Last-Modified), or 0 */
};

/* A data request resolved against one run-list snapshot. */
typedef struct reqctx {
    xpv_runlist *rl;
    const xpv_run *run;
    const xpv_tool *tool;
    const xpv_host **hosts;     /* selected hosts, in run (= name) order */
    size_t nhosts;
    const char *host_label;     /* host name, or ALL_HOSTS */
} reqctx;

/* A rendered answer as the cache holds it. */
typedef struct rendered {
    char *body;
    size_t len;
    unsigned char *gz;
    size_t gz_len;
} rendered;

/* ---- responses (routes.c) ---- */
void resp_init(xpv_response *r);
void resp_take_buf(xpv_response *r, xpv_buf *b);
void resp_error(xpv_response *r, const xpv_err *e);
/* A CSV download: content type, and a file name made of the printf'd
 * words with anything but [A-Za-z0-9._-] replaced by '_' (+ ".csv"). */
void resp_csv(xpv_response *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void resp_errorf(xpv_response *r, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
const xpv_tool *find_tool(const xpv_app *a, const char *name);
int is_trace_tool(const xpv_tool *t);

/* ---- pipeline.c ---- */
void host_identity(xpv_buf *b, const xpv_host *h);
/* The cached profile of `h` (a referenced entry), or NULL with `err`.
 * `holds`: whether the caller already holds cache entries. */
xpv_centry *get_profile(xpv_app *a, const xpv_host *h, int holds, xpv_err *err);
/* The JSON list of the tools the profile of `h` offers (XProf decides
 * from one host file), cached per file identity; a referenced entry whose
 * value is a NUL-terminated string, or NULL with `err`. */
xpv_centry *get_tool_list(xpv_app *a, const xpv_host *h, xpv_err *err);
/* The query's pairs in a canonical order (stable-sorted by key). */
void canonical_query(xpv_buf *b, const xpv_query *q);
void reqctx_release(reqctx *c);
/* The request's run (and tool, when need_tool), then its hosts. */
int resolve_run(xpv_app *a, const xpv_request *rq, int need_tool, reqctx *c, xpv_err *err);
int resolve_hosts(const xpv_request *rq, reqctx *c, xpv_err *err);
/* The rendered answer of rc's tool for `rq` (a referenced entry): the
 * JSON, or with csv_table >= 0 that DataTable as CSV. */
xpv_centry *get_rendered(xpv_app *a, reqctx *rc, const xpv_request *rq, long csv_table,
                         xpv_err *err);
/* The full trace as a streamed body: 0 when `r` now carries the producer,
 * else the answer is rendered as usual. */
int stream_body(xpv_app *a, reqctx *rc, const xpv_request *rq, xpv_response *r);

/* The profiles and derived data rc's tool works on, referenced. */
typedef struct tool_input {
    size_t n;
    xpv_centry **entries;       /* the profiles' cache entries */
    const xpv_profile **profiles;
    const char **names;
    xpv_centry *dentry;         /* derived data, or NULL */
    xpv_hostset hs;             /* over profiles / names */
    const void *derived;        /* the tool's derived data, or NULL */
} tool_input;
int get_tool_input(xpv_app *a, const reqctx *rc, int holds, tool_input *in, xpv_err *err);
void tool_input_release(xpv_app *a, tool_input *in);

/* ---- validators.c ---- */
/* Seconds since the epoch of an HTTP-date (any of RFC 9110's three
 * forms, GMT), or -1. */
int64_t parse_http_date(const char *s);
int set_validators(xpv_app *a, xpv_response *r, const char *route,
                   const xpv_host *const *hosts, size_t n, const xpv_query *q,
                   const char *inm);

/* ---- data_routes.c ---- */
void data_route(xpv_app *a, const char *route, const xpv_query *q, const char *inm,
                xpv_response *r);
void route_statz(xpv_app *a, xpv_response *r);

/* ---- diff_route.c: diff (JSON) and diff_csv ---- */
void route_diff(xpv_app *a, const xpv_request *rq, const char *inm, xpv_response *r);
void route_diff_csv(xpv_app *a, const xpv_request *rq, const char *inm, xpv_response *r);

/* ---- legacy_routes.c: each returns 1 when it answered `r` ---- */
void legacy_run_tools(xpv_app *a, const reqctx *rc, const char *inm, xpv_response *r);
int legacy_hosts(xpv_app *a, const xpv_request *rq, xpv_response *r);
int legacy_data(xpv_app *a, const xpv_request *rq, const char *inm, xpv_response *r, int csv);
void legacy_profile_info(const reqctx *rc, xpv_response *r);
/* Whether a Chrome-trace run's run_tools lists canonical tool `name`. */
int legacy_trace_run_offers(xpv_app *a, const reqctx *rc, const char *name);

#endif
