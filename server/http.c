/*
 * http.c - libmicrohttpd adapter (see http.h).  Nothing else includes
 * microhttpd.h: every decision about a request is made by routes.c.
 */
#include "http.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "arena.h"

const char xpv_http_csp[] =
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; font-src 'self'; connect-src 'self'; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'self'";

struct xpv_http {
    struct MHD_Daemon *d;
    xpv_app *app;
    int port;
};

/* What a response's body buffer hangs on until MHD is done with it. */
struct holder {
    xpv_response r;
    unsigned char *gz;          /* compressed on the fly, or NULL */
};

static void holder_free(void *cls) {
    struct holder *h = cls;
    xpv_response_release(&h->r);
    free(h->gz);
    free(h);
}

/* Whether Accept-Encoding allows gzip ("gzip;q=0" does not). */
static int accepts_gzip(const char *ae) {
    if (!ae) return 0;
    const char *p = strstr(ae, "gzip");
    if (!p) return 0;
    p += 4;
    while (*p == ' ') p++;
    if (*p == ';') {
        const char *q = strstr(p, "q=");
        if (q && q < p + 8) {
            double v = atof(q + 2);
            if (v <= 0) return 0;
        }
    }
    return 1;
}

/* The raw request target, captured before MHD decodes it: routes.c does
 * its own (stricter) path and query decoding. */
static void *uri_logger(void *cls, const char *uri, struct MHD_Connection *c) {
    (void)cls;
    (void)c;
    return xpv_xstrdup(uri ? uri : "/");
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
                      enum MHD_RequestTerminationCode toe) {
    (void)cls;
    (void)c;
    (void)toe;
    free(*con_cls);
    *con_cls = NULL;
}

static void add_common_headers(struct MHD_Response *resp) {
    MHD_add_response_header(resp, "Content-Security-Policy", xpv_http_csp);
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
    MHD_add_response_header(resp, "X-Frame-Options", "SAMEORIGIN");
    MHD_add_response_header(resp, "Cross-Origin-Resource-Policy", "same-origin");
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *conn,
                               const char *url, const char *method,
                               const char *version, const char *upload_data,
                               size_t *upload_data_size, void **con_cls) {
    struct xpv_http *srv = cls;
    (void)url;
    (void)version;
    (void)upload_data;
    const char *uri = *con_cls ? (const char *)*con_cls : url;
    struct holder *h = xpv_xcalloc(1, sizeof *h);
    const char *inm = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "If-None-Match");
    xpv_app_route(srv->app, method, uri, inm, &h->r);
    if (*upload_data_size) *upload_data_size = 0;  /* bodies are ignored */

    xpv_response *r = &h->r;
    const void *body = r->body;
    size_t len = r->len;
    int gz = 0;
    int vary = r->gz != NULL || r->compress;
    if (r->status == 304) {
        body = "";
        len = 0;
    } else if (accepts_gzip(MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                                        "Accept-Encoding"))) {
        if (r->gz) {
            body = r->gz;
            len = r->gz_len;
            gz = 1;
        } else if (r->compress && r->len >= 1024 && strcmp(method, "HEAD") != 0) {
            h->gz = xpv_gzip(r->body, r->len, 1, &len);
            body = h->gz;
            gz = 1;
        }
    }
    struct MHD_Response *resp = MHD_create_response_from_buffer_with_free_callback_cls(
        len, (void *)(uintptr_t)body, holder_free, h);
    if (!resp) {
        holder_free(h);
        return MHD_NO;
    }
    add_common_headers(resp);
    if (r->status != 304)
        MHD_add_response_header(resp, "Content-Type", r->content_type);
    if (gz) MHD_add_response_header(resp, "Content-Encoding", "gzip");
    if (vary) MHD_add_response_header(resp, "Vary", "Accept-Encoding");
    if (r->etag) MHD_add_response_header(resp, "ETag", r->etag);
    if (r->cache_control) MHD_add_response_header(resp, "Cache-Control", r->cache_control);
    if (r->disposition[0])
        MHD_add_response_header(resp, "Content-Disposition", r->disposition);
    if (r->location[0]) MHD_add_response_header(resp, "Location", r->location);
    if (r->allow) MHD_add_response_header(resp, "Allow", r->allow);
    enum MHD_Result ret = MHD_queue_response(conn, (unsigned)r->status, resp);
    MHD_destroy_response(resp);
    return ret;
}

static void log_mhd(void *cls, const char *fmt, va_list ap) {
    (void)cls;
    fputs("xpview: http: ", stderr);
    vfprintf(stderr, fmt, ap);
}

xpv_http *xpv_http_start(xpv_app *app, const xpv_http_config *cfg,
                         char *err, size_t errlen) {
    struct sockaddr_storage ss;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL |
                     MHD_USE_ERROR_LOG;
    memset(&ss, 0, sizeof ss);
    const char *host = cfg->host && *cfg->host ? cfg->host : "127.0.0.1";
    if (!strcmp(host, "localhost")) host = "127.0.0.1";
    if (cfg->bind_all) {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
        s6->sin6_family = AF_INET6;
        s6->sin6_addr = in6addr_any;
        s6->sin6_port = htons((uint16_t)cfg->port);
        flags |= MHD_USE_DUAL_STACK;
    } else {
        struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
        if (inet_pton(AF_INET, host, &s4->sin_addr) == 1) {
            s4->sin_family = AF_INET;
            s4->sin_port = htons((uint16_t)cfg->port);
        } else if (inet_pton(AF_INET6, host, &s6->sin6_addr) == 1) {
            s6->sin6_family = AF_INET6;
            s6->sin6_port = htons((uint16_t)cfg->port);
            flags |= MHD_USE_IPv6;
        } else {
            snprintf(err, errlen, "--host %s: not an IPv4/IPv6 address", host);
            return NULL;
        }
    }
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    if (ncpu < 1) ncpu = 1;
    /* Decoding a big profile blocks its thread for seconds: keep a few more
     * threads than cores so the UI's other requests keep flowing. */
    unsigned threads = cfg->threads ? cfg->threads : (unsigned)(ncpu * 2 < 4 ? 4 : ncpu * 2);
    struct xpv_http *srv = xpv_xcalloc(1, sizeof *srv);
    srv->app = app;
    srv->d = MHD_start_daemon(
        flags, (uint16_t)cfg->port, NULL, NULL, handler, srv,
        MHD_OPTION_EXTERNAL_LOGGER, log_mhd, NULL,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
        MHD_OPTION_THREAD_POOL_SIZE, threads,
        MHD_OPTION_CONNECTION_LIMIT, cfg->conn_limit ? cfg->conn_limit : 512u,
        MHD_OPTION_CONNECTION_TIMEOUT, cfg->timeout_s ? cfg->timeout_s : 60u,
        MHD_OPTION_URI_LOG_CALLBACK, uri_logger, NULL,
        MHD_OPTION_NOTIFY_COMPLETED, completed, NULL,
        MHD_OPTION_END);
    if (!srv->d && cfg->bind_all) {
        /* No IPv6 here: fall back to every IPv4 interface. */
        struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
        memset(&ss, 0, sizeof ss);
        s4->sin_family = AF_INET;
        s4->sin_addr.s_addr = htonl(INADDR_ANY);
        s4->sin_port = htons((uint16_t)cfg->port);
        flags &= ~(unsigned)MHD_USE_DUAL_STACK;
        srv->d = MHD_start_daemon(
            flags, (uint16_t)cfg->port, NULL, NULL, handler, srv,
            MHD_OPTION_EXTERNAL_LOGGER, log_mhd, NULL,
            MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
            MHD_OPTION_THREAD_POOL_SIZE, threads,
            MHD_OPTION_CONNECTION_LIMIT, cfg->conn_limit ? cfg->conn_limit : 512u,
            MHD_OPTION_CONNECTION_TIMEOUT, cfg->timeout_s ? cfg->timeout_s : 60u,
            MHD_OPTION_URI_LOG_CALLBACK, uri_logger, NULL,
            MHD_OPTION_NOTIFY_COMPLETED, completed, NULL,
            MHD_OPTION_END);
    }
    if (!srv->d) {
        snprintf(err, errlen, "cannot listen on %s port %d (in use, or not allowed)",
                 cfg->bind_all ? "all interfaces" : host, cfg->port);
        free(srv);
        return NULL;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(srv->d, MHD_DAEMON_INFO_BIND_PORT);
    srv->port = info ? info->port : cfg->port;
    return srv;
}

int xpv_http_port(const xpv_http *h) { return h->port; }

void xpv_http_stop(xpv_http *h) {
    if (!h) return;
    MHD_stop_daemon(h->d);
    free(h);
}
