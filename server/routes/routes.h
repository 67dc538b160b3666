/*
 * routes.h - the HTTP API as plain functions: (method, URI) -> response.
 *
 * No sockets here: server/http/http.c adapts these responses to libmicrohttpd,
 * `xpview export` calls xpv_app_route() directly, and the tests call it
 * with URIs.  Routes (all under the configured path prefix):
 *
 *   /, /index.html, /<file>            the embedded web/ tree
 *   /data/plugin/profile/runs          ["run", ...] newest first
 *   /data/plugin/profile/run_tools     ?run=R -> ["tool", ...]
 *   /data/plugin/profile/hosts         ?run=R&tag=T -> [{"hostname": h}]
 *   /data/plugin/profile/data          ?run=R&tag=T[&host=H|&hosts=a,b] -> tool JSON
 *   /data/plugin/profile/data_csv      same -> CSV of a DataTable
 *   /data/plugin/profile/profile_info  ?run=R[&host=H] -> about-this-profile
 *   /data/plugin/profile/version       text/plain version
 *   /healthz                           {"status":"ok"}
 *   /statz                             counters: decodes, cache, requests
 *
 * Errors are JSON {"error": "...", "file": "...", "offset": N} (file and
 * offset only for profile files) with 400, 404, 405, 413, 422 or 500.
 */
#ifndef XPV_ROUTES_H
#define XPV_ROUTES_H

#include <stddef.h>
#include <stdint.h>

#include "cache.h"
#include "diskcache.h"
#include "query.h"
#include "request.h"
#include "tool.h"
#include "util.h"

typedef struct xpv_app xpv_app;

typedef struct xpv_app_config {
    const char *logdir;         /* directory to serve */
    int session;                /* 1: `logdir` is itself the only run dir */
    const char *path_prefix;    /* "" or "/sub/path" */
    uint64_t max_file_size;     /* 0 = default (4 GiB) */
    uint64_t cache_bytes;       /* 0 = default (1/2 of RAM, at most 8 GiB) */
    int scan_interval_ms;       /* < 0 = default (1000) */
} xpv_app_config;

/* A response.  Body bytes are borrowed from static data, owned, or pinned
 * in the cache; xpv_response_release() frees whatever it holds. */
typedef struct xpv_response {
    int status;
    const char *content_type;
    const char *body;
    size_t len;
    const unsigned char *gz;    /* same body, gzip-compressed, or NULL */
    size_t gz_len;
    int compress;               /* 1: worth gzip-compressing on the fly */
    const char *etag;           /* quoted ETag or NULL */
    char etag_buf[40];          /* storage for computed ETags */
    char last_modified[40];     /* Last-Modified value (HTTP-date) or "" */
    const char *cache_control;  /* or NULL */
    char disposition[256];      /* Content-Disposition value or "" */
    char location[512];         /* Location value or "" (redirects) */
    const char *allow;          /* Allow value (405) or NULL */
    /* Streamed body (the full trace), instead of body/len when `produce`
     * is set: each call appends the next chunk (about 1 MiB) to `out` and
     * returns 1 while more follows, 0 once the body is complete, -1 when
     * it cannot be completed (the body is cut off).  The state
     * keeps what it reads (profiles, derived data) pinned in the cache until
     * xpv_response_release() frees it, whether or not it ran to the end. */
    int (*produce)(void *state, xpv_buf *out);
    void (*free_state)(void *state);
    void *state;
    /* Ownership (private). */
    char *owned;
    unsigned char *owned_gz;
    xpv_centry *pin;
    xpv_cache *pin_cache;
    int64_t ims;                /* the request's If-Modified-Since (s since
                                 * the epoch), -1 = none: for the validators */
} xpv_response;

/* A server over cfg->logdir.  Returns NULL with `err` filled when the
 * logdir cannot be read.  Free with xpv_app_free. */
xpv_app *xpv_app_new(const xpv_app_config *cfg, xpv_err *err);
void xpv_app_free(xpv_app *app);

/* Replace the tool list (NULL-terminated; default: xpv_tools()).  For
 * tests; call before serving. */
void xpv_app_set_tools(xpv_app *app, const xpv_tool *const *tools);

/* Persist derived data (the trace viewer's index) under `dir`
 * (server/cache/diskcache.h), shared with other processes using the same
 * directory.  Returns 0, or -1 with a 400 `err` when `dir` is inside the
 * logdir or cannot be resolved.  Call before serving. */
int xpv_app_set_cache_dir(xpv_app *app, const char *dir, xpv_err *err);

/* The app's cache (for statistics). */
xpv_cache *xpv_app_cache(xpv_app *app);

/* The logdir actually served (resolved path). */
const char *xpv_app_logdir(const xpv_app *app);

/* Handle one request.  `uri` is the raw request target ("/a/b?x=1", still
 * percent-encoded); `if_none_match` the If-None-Match header or NULL.
 * Always fills `r` (release it with xpv_response_release).
 *
 * Responses computed from profile files (data, data_csv, run_tools,
 * profile_info) carry an ETag derived from the server version, the route,
 * the files' identities (path, size, mtime, inode) and the canonical query,
 * plus Last-Modified (see xpv_app_route_cond); a matching If-None-Match is
 * answered 304 before any file is read. */
void xpv_app_route(xpv_app *app, const char *method, const char *uri,
                   const char *if_none_match, xpv_response *r);

/* xpv_app_route() with the request's If-Modified-Since header too (NULL:
 * none).  It matters only on routes that send Last-Modified and only
 * without If-None-Match (RFC 9110 13.2.2): a valid HTTP-date not in the
 * future and not older than Last-Modified gets a 304 before any file is
 * read.  Last-Modified is the newest of the files' mtime and ctime (a file
 * replaced with its mtime set back still counts as modified) and the
 * server binary's mtime (new code, new bodies), at one-second precision. */
void xpv_app_route_cond(xpv_app *app, const char *method, const char *uri,
                        const char *if_none_match, const char *if_modified_since,
                        xpv_response *r);

/* A data route ("runs", "data", "data_csv", ...) with an already parsed
 * query: what /data/plugin/profile/<route> answers.  Used by export. */
void xpv_app_data_route(xpv_app *app, const char *route, const xpv_query *q,
                        xpv_response *r);

void xpv_response_release(xpv_response *r);

/* Two runs compared in one tool (server/routes/diff_route.c, compare/compare.h).
 * `rq`: run, host (the new side, looked up in `new_app`), base_run,
 * base_host (default: host; looked up in `base_app`), tag (default
 * overview_page).  Host to host or ALL_HOSTS to ALL_HOSTS.  Returns 0 with
 * *out (free with xpv_compare_free), or -1 with `err` (err->file names a
 * profile that could not be loaded). */
struct xpv_compare;
int xpv_app_diff(xpv_app *base_app, xpv_app *new_app, const xpv_request *rq,
                 struct xpv_compare **out, xpv_err *err);

/* Server counters (for /statz and tests). */
typedef struct xpv_app_stats {
    uint64_t decodes;           /* profile files loaded and decoded */
    uint64_t decode_failures;   /* loads that failed */
    uint64_t not_modified;      /* 304 answers */
    uint64_t stale_reloads;     /* profiles dropped: their file changed under them */
    xpv_cache_stats cache;
    int has_disk;               /* 1 with a --cache_dir: `disk` is set */
    xpv_diskcache_stats disk;
} xpv_app_stats;

void xpv_app_get_stats(xpv_app *app, xpv_app_stats *st);

#endif
