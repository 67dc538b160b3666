/*
 * http.h - the libmicrohttpd front end over routes.h.
 *
 * server/http/http.c is the only file that includes microhttpd.h.  It serves
 * GET and HEAD (405 otherwise), gzip-compresses when the client accepts it
 * (pre-compressed bytes when the route has them, else zlib level 1), adds
 * the security headers to every response and enforces connection limits
 * and timeouts:
 *   - request line + headers must fit in 32 KiB (else 414/431, by MHD);
 *   - at most `conn_limit` connections, `per_ip_limit` from one address:
 *     at a cap, a connection doing nothing (stalled before its first
 *     request head, else the oldest idle keep-alive) is closed to admit
 *     the new one; only when all are in requests is the new one refused
 *     (both logged);
 *   - a new connection must deliver its first request head within
 *     `head_timeout_s` (10 s), a kept-alive one its next within
 *     `timeout_s` of its previous response, and any connection is closed
 *     after `timeout_s` without traffic (slowloris);
 *   - heavy requests (anything the cache cannot answer at once) run on a
 *     bounded pool of `workers` threads; the HTTP threads keep answering
 *     /healthz, static files and cached results meanwhile, and a request
 *     that waits for a worker past `queue_wait_s` (or finds `queue_max`
 *     waiting) gets 503 with Retry-After;
 *   - xpv_http_stop() stops accepting, lets the requests in flight finish
 *     (up to `grace_s`), then closes everything.
 */
#ifndef XPV_HTTP_H
#define XPV_HTTP_H

#include <stddef.h>

#include "routes.h"

typedef struct xpv_http xpv_http;

typedef struct xpv_http_config {
    const char *host;        /* address to bind: "127.0.0.1", "::1", "0.0.0.0" */
    int bind_all;            /* 1: every interface (IPv6 + IPv4 when possible) */
    int port;                /* 0 = an ephemeral port (see xpv_http_port) */
    unsigned threads;        /* 0 = default (2 x cores, at least 4) */
    unsigned conn_limit;     /* 0 = default (512) */
    unsigned timeout_s;      /* idle / request-head timeout; 0 = default (30) */
    unsigned grace_s;        /* shutdown: wait for in-flight requests; 0 = 60 */
    unsigned head_timeout_s; /* a new connection's first complete request head;
                              * 0 = default (10), at most timeout_s */
    unsigned per_ip_limit;   /* connections per client address; 0 = conn_limit/2 */
    unsigned workers;        /* worker threads for heavy requests; 0 = default
                              * (two per core, 4 to 16) */
    unsigned queue_wait_s;   /* longest wait for a worker, then 503 with
                              * Retry-After; 0 = default (120, as long as a
                              * decode may queue for memory) */
    unsigned queue_max;      /* requests waiting for a worker at most (more:
                              * 503 at once); 0 = default (256) */
    const char *allowed_hosts; /* Host names answered beside the built-in
                              * ones (comma-separated; see host_check.h) */
} xpv_http_config;

/* Start serving `app` (borrowed; it must outlive the server).  Returns
 * NULL with a message in err (errlen bytes) when the address cannot be
 * bound. */
xpv_http *xpv_http_start(xpv_app *app, const xpv_http_config *cfg,
                         char *err, size_t errlen);

/* The port actually bound. */
int xpv_http_port(const xpv_http *h);

/* Requests whose head has been received and whose response is not fully
 * sent yet. */
unsigned xpv_http_inflight(xpv_http *h);

/* Stop accepting, let the requests in flight finish (at most grace_s
 * seconds), close the remaining connections, free everything.  Returns 0;
 * or 1 when workers were still building past the grace period: nothing
 * is freed then and the caller must exit at once (_exit) without freeing
 * the app the workers use. */
int xpv_http_stop(xpv_http *h);

/* The Content-Security-Policy sent with every response. */
extern const char xpv_http_csp[];

#endif
