/*
 * http.c - libmicrohttpd adapter (see http.h).  Nothing else includes
 * microhttpd.h: every decision about a request is made by routes.c.
 *
 * Threads: MHD's pool of HTTP threads (internal polling, epoll) answers
 * what needs no heavy work: /healthz, static files and every answer the
 * cache already holds (the route runs in the cache's inline mode, which
 * refuses to build or wait, see cache.h).  A request that needs a build
 * (decode, tool, trace query) is suspended (MHD_suspend_connection) and
 * queued for a bounded pool of worker threads, which run the route again
 * and resume the connection with the answer.  A request that waited for a
 * worker longer than `queue_wait_s`, or finds the queue full, gets a 503
 * with Retry-After; so the HTTP threads never block on a decode.
 */
#include "http.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "arena.h"
#include "cache.h"
#include "capture_route.h"
#include "host_check.h"
#include "util.h"

#define MEMORY_LIMIT (32u * 1024)   /* request line + headers, per connection */
/* MHD stores each query parameter in that same per-connection pool; a few
 * hundred exhaust it and MHD then neither answers nor calls the handler.
 * No route takes more than a dozen, so more than this is refused early. */
#define MAX_QUERY_PARAMS 256

const char xpv_http_csp[] =
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; font-src 'self'; connect-src 'self'; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'self'";

/* Per-connection state (MHD's socket context), for the request-head
 * deadline.  Guarded by xpv_http.mu; freed when MHD closes the
 * connection, which it does only after our CLOSED notification, so the fd
 * is still this connection's while it is in the list. */
struct conn {
    int fd;
    int busy;                   /* in the handler or sending a response */
    int killed;
    int64_t since_ms;           /* connected / previous response done */
    struct req *pending;        /* this connection's request context until
                                 * MHD's completion callback takes it back */
    unsigned served;            /* responses completed on it */
    unsigned char addr[16];     /* client address (IPv4 mapped into IPv6) */
    struct conn *prev, *next;
};

struct xpv_http {
    struct MHD_Daemon *d;
    xpv_app *app;
    int port;
    unsigned timeout_s, grace_s;
    unsigned head_timeout_s;    /* a fresh connection's first request head */
    unsigned conn_limit, per_ip_limit;
    unsigned nconns;            /* in the list */
    uint64_t evicted, refused;  /* admission counters (logged) */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct conn *conns;         /* open connections */
    unsigned inflight;          /* requests between head and completion */
    int stopping;
    pthread_t watchdog;
    int watchdog_started;
    /* Worker pool (see the top of the file). */
    pthread_mutex_t qmu;
    pthread_cond_t qcv;
    struct job *qhead, *qtail;
    unsigned qlen, qmax;        /* queued + slots reserved; the bound */
    int64_t queue_wait_ms;
    int qstop;
    pthread_t *workers;
    unsigned nworkers;
    uint64_t busy_refused;      /* 503s for a full queue or a long wait */
    xpv_host_policy hosts;      /* Host headers answered (host_check.h) */
};

/* A request waiting for (or run by) a worker; its connection is
 * suspended until the worker has filled `h`. */
struct job {
    struct MHD_Connection *conn;
    char *method, *uri, *inm, *ims;
    int64_t queued_ms;
    struct holder *h;           /* the answer */
    struct job *next;
};

/* Per-request state (MHD's con_cls). */
struct req {
    char *uri;                  /* raw request target */
    int counted;                /* included in xpv_http.inflight */
    int close;                  /* answer with "Connection: close" */
    struct job *job;            /* answered by a worker, when resumed */
};

static void job_free(struct job *j);

static void req_free(struct req *rq) {
    if (!rq) return;
    job_free(rq->job);
    free(rq->uri);
    free(rq);
}

/* Whether the request announces no body (GET/HEAD as browsers send them). */
static int bodyless(struct MHD_Connection *c, const char *method) {
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) return 0;
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
    const char *te = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Transfer-Encoding");
    return !te && (!cl || !strcmp(cl, "0"));
}

/* What a response's body buffer hangs on until MHD is done with it.  A
 * streamed body (r.produce) is pulled chunk by chunk as MHD sends it:
 * `pending` holds the bytes of one chunk not handed to MHD yet, deflated
 * on the way when the client takes gzip. */
struct holder {
    xpv_response r;
    unsigned char *gz;          /* compressed on the fly, or NULL */
    xpv_buf raw;                /* streamed: the producer's last chunk */
    xpv_buf pending;            /* streamed: bytes for MHD (maybe gzip) */
    size_t off;                 /* of `pending`, handed to MHD already */
    int deflating;              /* streamed with Content-Encoding: gzip */
    int z_ready;                /* `z` initialised */
    int done;                   /* the producer has written its last byte */
    z_stream z;
};

static void holder_free(void *cls) {
    struct holder *h = cls;
    xpv_response_release(&h->r);
    free(h->gz);
    if (h->z_ready) deflateEnd(&h->z);
    xpv_buf_free(&h->raw);
    xpv_buf_free(&h->pending);
    free(h);
}

/* ==== Worker pool ====================================================== */

static char *dup_or_null(const char *s) { return s ? xpv_xstrdup(s) : NULL; }

static void job_free(struct job *j) {
    if (!j) return;
    if (j->h) holder_free(j->h);
    free(j->method);
    free(j->uri);
    free(j->inm);
    free(j->ims);
    free(j);
}

/* The answer to a request for a Host the server is not known by (a page
 * of another site whose name was rebound to this address): no data. */
static void misdirected_response(xpv_response *r) {
    static const char body[] =
        "{\"error\":\"misdirected request: this server does not answer for that Host "
        "name (DNS rebinding protection); a reverse proxy's public name is allowed "
        "with --allowed_hosts NAME\"}";
    memset(r, 0, sizeof *r);
    r->status = 421;
    r->content_type = "application/json";
    r->body = body;
    r->len = sizeof body - 1;
    r->cache_control = "no-store";
    r->ims = -1;
}

/* The answer to a request no worker could take in time (or at all). */
static void busy_response(xpv_response *r) {
    static const char body[] =
        "{\"error\":\"busy: every worker is taken by other requests (profiles being "
        "loaded or converted); retry in a moment\"}";
    xpv_response_release(r);
    memset(r, 0, sizeof *r);
    r->status = XPV_E_BUSY;
    r->content_type = "application/json";
    r->body = body;
    r->len = sizeof body - 1;
    r->cache_control = "no-store";
    r->ims = -1;
}

static void *worker_main(void *arg) {
    struct xpv_http *srv = arg;
    pthread_mutex_lock(&srv->qmu);
    for (;;) {
        while (!srv->qhead && !srv->qstop) pthread_cond_wait(&srv->qcv, &srv->qmu);
        struct job *j = srv->qhead;
        if (!j) break;                      /* stopping and drained */
        srv->qhead = j->next;
        if (!srv->qhead) srv->qtail = NULL;
        srv->qlen--;
        int late = srv->qstop || xpv_now_ms() - j->queued_ms > srv->queue_wait_ms;
        if (late) srv->busy_refused++;
        pthread_mutex_unlock(&srv->qmu);
        if (late)
            busy_response(&j->h->r);
        else
            xpv_app_route_cond(srv->app, j->method, j->uri, j->inm, j->ims, &j->h->r);
        /* The handler picks the answer up when MHD calls it again. */
        MHD_resume_connection(j->conn);
        pthread_mutex_lock(&srv->qmu);
    }
    pthread_mutex_unlock(&srv->qmu);
    return NULL;
}

/* Hand the request to the worker pool: reserve a queue slot, suspend the
 * connection, queue the job.  Returns 0 (suspended; `h` is the job's now)
 * or -1 when the queue is full or the server stops (nothing changed). */
static int submit_job(struct xpv_http *srv, struct MHD_Connection *conn, struct req *rq,
                      const char *method, const char *uri, const char *inm,
                      const char *ims, struct holder *h) {
    pthread_mutex_lock(&srv->qmu);
    int full = srv->qstop || !srv->nworkers || srv->qlen >= srv->qmax;
    if (full) srv->busy_refused++;
    else srv->qlen++;                       /* the slot, before suspending */
    uint64_t refused = srv->busy_refused;
    pthread_mutex_unlock(&srv->qmu);
    if (full) {
        if (refused == 1 || refused % 100 == 0)
            fprintf(stderr, "xpview: worker queue full (%u requests): refused %llu so far "
                    "with 503\n", srv->qmax, (unsigned long long)refused);
        return -1;
    }
    struct job *j = xpv_xcalloc(1, sizeof *j);
    j->conn = conn;
    j->method = xpv_xstrdup(method);
    j->uri = xpv_xstrdup(uri);
    j->inm = dup_or_null(inm);
    j->ims = dup_or_null(ims);
    j->queued_ms = xpv_now_ms();
    j->h = h;
    rq->job = j;
    /* Suspended before any worker can see the job, so its resume always
     * finds the connection suspended. */
    MHD_suspend_connection(conn);
    pthread_mutex_lock(&srv->qmu);
    if (srv->qtail) srv->qtail->next = j;
    else srv->qhead = j;
    srv->qtail = j;
    pthread_cond_signal(&srv->qcv);
    pthread_mutex_unlock(&srv->qmu);
    return 0;
}

/* Deflate `in` into h->pending: Z_SYNC_FLUSH keeps each chunk decodable
 * as soon as it arrives, Z_FINISH writes the gzip trailer.  0 or -1. */
static int deflate_chunk(struct holder *h, const xpv_buf *in, int flush) {
    z_stream *z = &h->z;
    z->next_in = (Bytef *)in->data;
    z->avail_in = (uInt)in->len;
    for (;;) {
        xpv_buf_reserve(&h->pending, 64 * 1024);
        size_t room = h->pending.cap - h->pending.len;
        z->next_out = (Bytef *)h->pending.data + h->pending.len;
        z->avail_out = (uInt)(room > (1u << 30) ? (1u << 30) : room);
        uInt before = z->avail_out;
        int zr = deflate(z, flush);
        h->pending.len += before - z->avail_out;
        if (zr == Z_STREAM_ERROR) return -1;
        if (flush == Z_FINISH ? zr == Z_STREAM_END : (z->avail_in == 0 && z->avail_out > 0))
            return 0;
    }
}

/* Refill h->pending with the next chunk of a streamed body.  0 or -1. */
static int stream_refill(struct holder *h) {
    xpv_buf_reset(&h->pending);
    h->off = 0;
    xpv_buf *dst = h->deflating ? &h->raw : &h->pending;
    xpv_buf_reset(dst);
    int more = h->r.produce(h->r.state, dst);
    if (more < 0) return -1;    /* the producer failed: cut the body */
    if (!more) h->done = 1;
    if (!h->deflating) return 0;
    return deflate_chunk(h, &h->raw, more ? Z_SYNC_FLUSH : Z_FINISH);
}

/* MHD's content reader for streamed bodies (chunked transfer). */
static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max) {
    struct holder *h = cls;
    (void)pos;
    while (h->off == h->pending.len) {
        if (h->done) return MHD_CONTENT_READER_END_OF_STREAM;
        if (stream_refill(h) != 0) return MHD_CONTENT_READER_END_WITH_ERROR;
    }
    size_t n = h->pending.len - h->off;
    if (n > max) n = max;
    memcpy(buf, h->pending.data + h->off, n);
    h->off += n;
    return (ssize_t)n;
}

/* The reader for HEAD answers to streamed bodies: headers only, the
 * producer never runs. */
static ssize_t empty_read(void *cls, uint64_t pos, char *buf, size_t max) {
    (void)cls;
    (void)pos;
    (void)buf;
    (void)max;
    return MHD_CONTENT_READER_END_OF_STREAM;
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

/* Number of parameters in the query part of a request target. */
static size_t query_params(const char *uri) {
    const char *q = strchr(uri, '?');
    if (!q) return 0;
    size_t n = 1;
    for (q++; *q; q++) n += *q == '&' || *q == ';';
    return n;
}

/* Answers 414 on the raw socket and ends the connection: called before MHD
 * parses the parameters, while nothing has been written on it yet.  MHD
 * then sees the connection closed and cleans it up. */
static void refuse_params(int fd) {
    static const char body[] = "too many query parameters (at most 256)\n";
    char msg[256];
    int n = snprintf(msg, sizeof msg,
                     "HTTP/1.1 414 URI Too Long\r\nContent-Type: text/plain\r\n"
                     "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
                     sizeof body - 1, body);
    if (n > 0 && (size_t)n < sizeof msg) (void)!send(fd, msg, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
    shutdown(fd, SHUT_RDWR);
}

/* The raw request target, captured before MHD decodes it: routes.c does
 * its own (stricter) path and query decoding. */
static struct conn *conn_of(struct MHD_Connection *c) {
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? (struct conn *)ci->socket_context : NULL;
}

/* The raw request target, captured before MHD decodes it: routes.c does
 * its own (stricter) path and query decoding.  MHD calls the completion
 * callback only for requests that reached the handler; one it rejects
 * itself (a head over the memory limit, a malformed request line, too many
 * query parameters) never comes back, so the connection keeps the context
 * and frees it on its next request or when it closes. */
static void *uri_logger(void *cls, const char *uri, struct MHD_Connection *c) {
    struct xpv_http *srv = cls;
    struct req *rq = xpv_xcalloc(1, sizeof *rq);
    rq->uri = xpv_xstrdup(uri ? uri : "/");
    struct req *stale = NULL;
    pthread_mutex_lock(&srv->mu);
    struct conn *cn = conn_of(c);
    if (cn) {
        stale = cn->pending;
        cn->pending = rq;
    }
    pthread_mutex_unlock(&srv->mu);
    req_free(stale);
    if (cn && cn->fd >= 0 && query_params(rq->uri) > MAX_QUERY_PARAMS) refuse_params(cn->fd);
    return rq;
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
                      enum MHD_RequestTerminationCode toe) {
    struct xpv_http *srv = cls;
    struct req *rq = *con_cls;
    (void)toe;
    pthread_mutex_lock(&srv->mu);
    struct conn *cn = conn_of(c);
    if (cn) {
        cn->busy = 0;
        cn->since_ms = xpv_now_ms();
        if (rq && rq->counted) cn->served++;
        if (cn->pending == rq) cn->pending = NULL;
    }
    if (rq && rq->counted) {
        srv->inflight--;
        pthread_cond_broadcast(&srv->cv);
    }
    pthread_mutex_unlock(&srv->mu);
    req_free(rq);
    *con_cls = NULL;
}

/* A client address as 16 bytes (IPv4 as ::ffff:a.b.c.d) for per-address
 * counting. */
static void addr_key(const struct sockaddr *sa, unsigned char out[16]) {
    memset(out, 0, 16);
    if (sa->sa_family == AF_INET) {
        out[10] = out[11] = 0xff;
        memcpy(out + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
    } else if (sa->sa_family == AF_INET6) {
        memcpy(out, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
    }
}

static void notify_conn(void *cls, struct MHD_Connection *c, void **socket_context,
                        enum MHD_ConnectionNotificationCode code) {
    struct xpv_http *srv = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        struct conn *cn = xpv_xcalloc(1, sizeof *cn);
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        cn->fd = ci ? ci->connect_fd : -1;
        cn->since_ms = xpv_now_ms();
        const union MHD_ConnectionInfo *ai =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        if (ai && ai->client_addr) addr_key(ai->client_addr, cn->addr);
        pthread_mutex_lock(&srv->mu);
        srv->nconns++;
        cn->next = srv->conns;
        if (srv->conns) srv->conns->prev = cn;
        srv->conns = cn;
        pthread_mutex_unlock(&srv->mu);
        *socket_context = cn;
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
        struct conn *cn = *socket_context;
        if (!cn) return;
        pthread_mutex_lock(&srv->mu);
        if (cn->prev) cn->prev->next = cn->next;
        else srv->conns = cn->next;
        if (cn->next) cn->next->prev = cn->prev;
        srv->nconns--;
        pthread_mutex_unlock(&srv->mu);
        req_free(cn->pending);   /* a request MHD rejected before the handler */
        free(cn);
        *socket_context = NULL;
    }
}

/* Closes one connection that is doing nothing for anyone (not in a
 * request): one that never completed a request head first (a stalled or
 * slowloris client), the oldest of them, else the oldest idle keep-alive.
 * `addr` non-NULL: only connections from that address.  Caller holds mu.
 * Returns whether one was closed. */
static int evict_idle(struct xpv_http *srv, const unsigned char *addr) {
    struct conn *best = NULL;
    for (struct conn *cn = srv->conns; cn; cn = cn->next) {
        if (cn->busy || cn->killed || cn->fd < 0) continue;
        if (addr && memcmp(cn->addr, addr, 16)) continue;
        if (!best || (cn->served == 0 && best->served != 0) ||
            ((cn->served == 0) == (best->served == 0) && cn->since_ms < best->since_ms))
            best = cn;
    }
    if (!best) return 0;
    shutdown(best->fd, SHUT_RDWR);
    best->killed = 1;
    srv->evicted++;
    return 1;
}

/* MHD's accept policy: at the global cap, or at the per-address cap, a
 * connection doing nothing is closed to make room (stalled clients never
 * lock others out); only when every connection is in a request is the new
 * one refused.  MHD's own limit is set higher, so that closed connections
 * still being torn down do not count. */
static enum MHD_Result accept_policy(void *cls, const struct sockaddr *addr, socklen_t addrlen) {
    struct xpv_http *srv = cls;
    (void)addrlen;
    unsigned char key[16];
    addr_key(addr, key);
    enum MHD_Result ok = MHD_YES;
    pthread_mutex_lock(&srv->mu);
    unsigned total = 0, same = 0;
    for (struct conn *cn = srv->conns; cn; cn = cn->next) {
        if (cn->killed) continue;
        total++;
        if (!memcmp(cn->addr, key, 16)) same++;
    }
    if (same >= srv->per_ip_limit && !evict_idle(srv, key)) ok = MHD_NO;
    else if (ok == MHD_YES && total >= srv->conn_limit && !evict_idle(srv, NULL)) ok = MHD_NO;
    if (ok == MHD_NO) srv->refused++;
    uint64_t ev = srv->evicted, rf = srv->refused;
    pthread_mutex_unlock(&srv->mu);
    /* Log the first time and then every 100th, not once per connection. */
    if (ok == MHD_NO && (rf == 1 || rf % 100 == 0))
        fprintf(stderr, "xpview: connection cap reached (%u, %u per address) with every "
                "connection busy: refused %llu so far\n", srv->conn_limit, srv->per_ip_limit,
                (unsigned long long)rf);
    if (ok == MHD_YES && ev && (total >= srv->conn_limit || same >= srv->per_ip_limit) &&
        (ev == 1 || ev % 100 == 0))
        fprintf(stderr, "xpview: connection cap reached: closed %llu idle or stalled "
                "connection(s) so far to admit new ones\n", (unsigned long long)ev);
    return ok;
}

/* Closes connections that have not delivered a complete request head
 * within timeout_s (MHD's own timeout only counts idle time, so a client
 * sending one header byte every few seconds would otherwise hold its
 * connection forever).  shutdown() makes MHD see the connection end and
 * clean it up in its own thread. */
/* Answer 503 to the queued jobs that waited past --busy_wait: while every
 * worker is in a long build no worker takes them, so the watchdog does
 * (the 503 came after 65 s with --busy_wait 5; issue 26, item 12). */
static void sweep_late_jobs(struct xpv_http *srv) {
    struct job *late = NULL;
    int64_t now = xpv_now_ms();
    pthread_mutex_lock(&srv->qmu);
    struct job **pp = &srv->qhead, *prev = NULL;
    while (*pp) {
        struct job *j = *pp;
        if (now - j->queued_ms > srv->queue_wait_ms) {
            *pp = j->next;
            if (srv->qtail == j) srv->qtail = prev;
            srv->qlen--;
            srv->busy_refused++;
            j->next = late;
            late = j;
        } else {
            prev = j;
            pp = &j->next;
        }
    }
    pthread_mutex_unlock(&srv->qmu);
    while (late) {
        struct job *j = late;
        late = j->next;
        j->next = NULL;
        busy_response(&j->h->r);
        MHD_resume_connection(j->conn);
    }
}

static void *watchdog_main(void *arg) {
    struct xpv_http *srv = arg;
    int64_t limit = (int64_t)srv->timeout_s * 1000;
    int64_t head_limit = (int64_t)srv->head_timeout_s * 1000;
    if (head_limit > limit) head_limit = limit;
    pthread_mutex_lock(&srv->mu);
    while (!srv->stopping) {
        int64_t now = xpv_now_ms();
        for (struct conn *cn = srv->conns; cn; cn = cn->next)
            if (!cn->busy && !cn->killed && cn->fd >= 0 &&
                now - cn->since_ms > (cn->served ? limit : head_limit)) {
                shutdown(cn->fd, SHUT_RDWR);
                cn->killed = 1;
            }
        pthread_mutex_unlock(&srv->mu);
        sweep_late_jobs(srv);
        pthread_mutex_lock(&srv->mu);
        if (srv->stopping) break;
        struct timespec ts = xpv_deadline_in_ms(250);
        pthread_cond_timedwait(&srv->cv, &srv->mu, &ts);
    }
    pthread_mutex_unlock(&srv->mu);
    return NULL;
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
    (void)version;
    (void)upload_data;
    struct req *rq = *con_cls;
    const char *uri = rq ? rq->uri : url;
    int stopping;
    if (rq && !rq->counted) {
        /* First call: the head is complete. */
        pthread_mutex_lock(&srv->mu);
        rq->counted = 1;
        srv->inflight++;
        struct conn *cn = conn_of(conn);
        if (cn) cn->busy = 1;
        pthread_mutex_unlock(&srv->mu);
        /* MHD keeps a connection alive only when the response is queued
         * after the (empty) body has been read, i.e. on the next call.
         * Anything with a body is answered now and the connection closed:
         * bodies are never read. */
        if (bodyless(conn, method)) return MHD_YES;
        rq->close = 1;
    } else if (*upload_data_size) {
        *upload_data_size = 0;  /* unexpected body bytes: dropped */
        return MHD_YES;
    }
    pthread_mutex_lock(&srv->mu);
    stopping = srv->stopping;
    pthread_mutex_unlock(&srv->mu);
    struct holder *h;
    if (rq && rq->job) {
        /* Resumed: a worker has answered. */
        h = rq->job->h;
        rq->job->h = NULL;
        job_free(rq->job);
        rq->job = NULL;
    } else {
        h = xpv_xcalloc(1, sizeof *h);
        if (!xpv_host_allowed(&srv->hosts,
                              MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Host"))) {
            misdirected_response(&h->r);
            if (rq) rq->close = 1;
            goto answer;
        }
        const char *inm = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "If-None-Match");
        const char *ims = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                                      "If-Modified-Since");
        /* Capture Profile: who asks (a loopback peer, a proxy's request?),
         * see capture_route.h. */
        const union MHD_ConnectionInfo *peer =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        xpv_capture_route_client(
            peer ? peer->client_addr : NULL,
            MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Forwarded-For") ||
                MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Forwarded") ||
                MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Real-IP"));
        /* From the cache alone; anything heavier goes to a worker. */
        xpv_cache_inline_begin();
        xpv_app_route_cond(srv->app, method, uri, inm, ims, &h->r);
        int deferred = xpv_cache_inline_end();
        xpv_capture_route_client(NULL, 0);
        if (*upload_data_size) *upload_data_size = 0;  /* bodies are ignored */
        if (deferred && rq) {
            xpv_response_release(&h->r);
            memset(&h->r, 0, sizeof h->r);
            if (submit_job(srv, conn, rq, method, uri, inm, ims, h) == 0) return MHD_YES;
            busy_response(&h->r);
        }
    }

answer:;
    xpv_response *r = &h->r;
    const void *body = r->body;
    size_t len = r->len;
    int gz = 0;
    int vary = r->gz != NULL || r->compress;
    struct MHD_Response *resp = NULL;
    if (r->produce && r->status == 200) {
        /* Streamed (the full trace): chunked, never held whole. */
        int head = !strcmp(method, "HEAD");
        gz = accepts_gzip(MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                                      "Accept-Encoding"));
        if (gz && !head) {
            if (deflateInit2(&h->z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
                holder_free(h);
                return MHD_NO;
            }
            h->z_ready = 1;
            h->deflating = 1;
        }
        resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 32 * 1024,
                                                 head ? empty_read : stream_read, h,
                                                 holder_free);
        if (!resp) {
            holder_free(h);
            return MHD_NO;
        }
        goto headers;
    }
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
    resp = MHD_create_response_from_buffer_with_free_callback_cls(
        len, (void *)(uintptr_t)body, holder_free, h);
    if (!resp) {
        holder_free(h);
        return MHD_NO;
    }
headers:
    add_common_headers(resp);
    if (r->status != 304)
        MHD_add_response_header(resp, "Content-Type", r->content_type);
    if (gz) MHD_add_response_header(resp, "Content-Encoding", "gzip");
    if (vary) MHD_add_response_header(resp, "Vary", "Accept-Encoding");
    if (r->etag) MHD_add_response_header(resp, "ETag", r->etag);
    if (r->last_modified[0])
        MHD_add_response_header(resp, "Last-Modified", r->last_modified);
    /* Request bodies are never read: close rather than parse what follows.
     * While stopping, close so keep-alive clients go away. */
    if (stopping || !rq || rq->close)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    if (r->cache_control) MHD_add_response_header(resp, "Cache-Control", r->cache_control);
    if (r->disposition[0])
        MHD_add_response_header(resp, "Content-Disposition", r->disposition);
    if (r->location[0]) MHD_add_response_header(resp, "Location", r->location);
    if (r->allow) MHD_add_response_header(resp, "Allow", r->allow);
    /* Every 503 is "busy" (workers or memory taken): come back soon. */
    if (r->status == 503) MHD_add_response_header(resp, "Retry-After", "2");
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
                     MHD_USE_ERROR_LOG | MHD_USE_ITC | MHD_ALLOW_SUSPEND_RESUME;
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
    /* HTTP threads only answer from the cache; heavy work runs on the
     * workers: as many as HTTP threads used to do it (2 per core, 4 to 16;
     * a build often waits on I/O or on another build's single flight, and
     * the cache's admission bounds their memory anyway). */
    unsigned threads = cfg->threads ? cfg->threads : (unsigned)(ncpu * 2 < 4 ? 4 : ncpu * 2);
    unsigned nworkers = cfg->workers ? cfg->workers
                                     : (unsigned)(ncpu * 2 < 4 ? 4 : ncpu * 2 > 16 ? 16 : ncpu * 2);
    struct xpv_http *srv = xpv_xcalloc(1, sizeof *srv);
    srv->app = app;
    srv->timeout_s = cfg->timeout_s ? cfg->timeout_s : 30u;
    srv->head_timeout_s = cfg->head_timeout_s ? cfg->head_timeout_s : 10u;
    srv->grace_s = cfg->grace_s ? cfg->grace_s : 60u;
    unsigned conn_limit = cfg->conn_limit ? cfg->conn_limit : 512u;
    srv->conn_limit = conn_limit;
    srv->per_ip_limit = cfg->per_ip_limit ? cfg->per_ip_limit
                                          : (conn_limit / 2 ? conn_limit / 2 : 1);
    if (srv->per_ip_limit > conn_limit) srv->per_ip_limit = conn_limit;
    /* MHD's own cap leaves room for evicted connections still closing. */
    unsigned mhd_limit = conn_limit + 64;
    pthread_mutex_init(&srv->mu, NULL);
    pthread_cond_init(&srv->cv, NULL);
    pthread_mutex_init(&srv->qmu, NULL);
    pthread_cond_init(&srv->qcv, NULL);
    xpv_host_policy_init(&srv->hosts, cfg->bind_all ? NULL : host, cfg->allowed_hosts);
    srv->queue_wait_ms = (int64_t)(cfg->queue_wait_s ? cfg->queue_wait_s : 120u) * 1000;
    srv->qmax = cfg->queue_max ? cfg->queue_max : 256u;
#define START_DAEMON()                                                          \
    MHD_start_daemon(                                                           \
        flags, (uint16_t)cfg->port, accept_policy, srv, handler, srv,           \
        MHD_OPTION_EXTERNAL_LOGGER, log_mhd, NULL,                              \
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,                           \
        MHD_OPTION_THREAD_POOL_SIZE, threads,                                   \
        MHD_OPTION_CONNECTION_LIMIT, mhd_limit,                                 \
        MHD_OPTION_CONNECTION_TIMEOUT, srv->timeout_s,                          \
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)MEMORY_LIMIT,               \
        MHD_OPTION_URI_LOG_CALLBACK, uri_logger, srv,                           \
        MHD_OPTION_NOTIFY_COMPLETED, completed, srv,                            \
        MHD_OPTION_NOTIFY_CONNECTION, notify_conn, srv,                         \
        MHD_OPTION_END)
    srv->d = START_DAEMON();
    if (!srv->d && cfg->bind_all) {
        /* No IPv6 here: fall back to every IPv4 interface. */
        struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
        memset(&ss, 0, sizeof ss);
        s4->sin_family = AF_INET;
        s4->sin_addr.s_addr = htonl(INADDR_ANY);
        s4->sin_port = htons((uint16_t)cfg->port);
        flags &= ~(unsigned)MHD_USE_DUAL_STACK;
        srv->d = START_DAEMON();
    }
#undef START_DAEMON
    if (!srv->d) {
        snprintf(err, errlen, "cannot listen on %s port %d (in use, or not allowed)",
                 cfg->bind_all ? "all interfaces" : host, cfg->port);
        pthread_cond_destroy(&srv->qcv);
        pthread_mutex_destroy(&srv->qmu);
        pthread_cond_destroy(&srv->cv);
        pthread_mutex_destroy(&srv->mu);
        xpv_host_policy_free(&srv->hosts);
        free(srv);
        return NULL;
    }
    srv->workers = xpv_xcalloc(nworkers, sizeof *srv->workers);
    for (unsigned i = 0; i < nworkers; i++) {
        if (pthread_create(&srv->workers[i], NULL, worker_main, srv) != 0) break;
        srv->nworkers++;
    }
    srv->watchdog_started = pthread_create(&srv->watchdog, NULL, watchdog_main, srv) == 0;
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(srv->d, MHD_DAEMON_INFO_BIND_PORT);
    srv->port = info ? info->port : cfg->port;
    return srv;
}

int xpv_http_port(const xpv_http *h) { return h->port; }

unsigned xpv_http_inflight(xpv_http *h) {
    pthread_mutex_lock(&h->mu);
    unsigned n = h->inflight;
    pthread_mutex_unlock(&h->mu);
    return n;
}

int xpv_http_stop(xpv_http *h) {
    if (!h) return 0;
    /* 1. Stop accepting: new connections are refused from here on. */
    MHD_socket ls = MHD_quiesce_daemon(h->d);
    if (ls != MHD_INVALID_SOCKET) close(ls);
    /* 2. Let the requests in flight finish; their responses say
     *    "Connection: close". */
    pthread_mutex_lock(&h->mu);
    h->stopping = 1;
    pthread_cond_broadcast(&h->cv);
    int64_t deadline = xpv_now_ms() + (int64_t)h->grace_s * 1000;
    while (h->inflight > 0 && xpv_now_ms() < deadline) {
        struct timespec ts = xpv_deadline_in_ms(50);
        pthread_cond_timedwait(&h->cv, &h->mu, &ts);
    }
    unsigned left = h->inflight;
    pthread_mutex_unlock(&h->mu);
    if (left)
        fprintf(stderr, "xpview: %u request(s) still running after %us, closing them\n",
                left, h->grace_s);
    if (h->watchdog_started) pthread_join(h->watchdog, NULL);
    /* 3. Workers: queued requests get a 503, the ones running finish; all
     *    resume their connections before MHD stops (it refuses to stop
     *    with connections suspended). */
    pthread_mutex_lock(&h->qmu);
    h->qstop = 1;
    pthread_cond_broadcast(&h->qcv);
    pthread_mutex_unlock(&h->qmu);
    /* A worker still in a build (a decode, a render) when the grace period
     * is over is not waited for: the caller is told, and exits without
     * freeing what the worker uses (SIGTERM ends within --grace whatever
     * runs; issue 26, item 12).  One more second lets finishing workers
     * resume their connections. */
    struct timespec until = xpv_deadline_in_ms(deadline - xpv_now_ms() > 0
                                                   ? deadline - xpv_now_ms() + 1000 : 1000);
    unsigned joined = 0;
    for (unsigned i = 0; i < h->nworkers; i++)
        if (pthread_timedjoin_np(h->workers[i], NULL, &until) == 0) joined++;
        else break;
    if (joined < h->nworkers) {
        fprintf(stderr, "xpview: %u worker(s) still building after %us; exiting without "
                "waiting for them\n", h->nworkers - joined, h->grace_s);
        return 1;
    }
    free(h->workers);
    /* 4. Close idle keep-alive connections and free everything. */
    MHD_stop_daemon(h->d);
    pthread_cond_destroy(&h->qcv);
    pthread_mutex_destroy(&h->qmu);
    pthread_cond_destroy(&h->cv);
    pthread_mutex_destroy(&h->mu);
    xpv_host_policy_free(&h->hosts);
    free(h);
    return 0;
}
