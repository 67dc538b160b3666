/*
 * grpc.c - a unary gRPC client on libnghttp2 (see grpc.h).
 *
 * One connection per call: connect (non-blocking, bounded by the
 * deadline), send the HTTP/2 preface and SETTINGS, one POST stream whose
 * body is the length-prefixed request, then read until the stream closes.
 * The socket is driven by poll() with the time left to the deadline, so a
 * server that accepts and never answers costs exactly the deadline.
 */
#include "grpc.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <nghttp2/nghttp2.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util.h"

#define RECV_CHUNK 65536
#define WINDOW (16 << 20)       /* stream + connection receive window */

static const char *const status_names[] = {
    "OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED",
    "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL",
    "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED",
};

const char *xpv_grpc_status_name(int code) {
    if (code < 0 || code >= (int)(sizeof status_names / sizeof status_names[0]))
        return "UNKNOWN";
    return status_names[code];
}

typedef struct call_state {
    const xpv_grpc_call *c;
    int32_t stream_id;
    /* request body: 5-byte prefix + message */
    uint8_t prefix[5];
    size_t sent;                /* bytes of prefix+message handed to nghttp2 */
    /* response */
    int http_status;            /* :status, 0 = none yet */
    char content_type[128];
    int grpc_status;            /* -1 = no grpc-status header yet */
    char grpc_message[384];
    int got_frames;             /* any HTTP/2 frame received */
    int closed;                 /* our stream closed */
    uint32_t close_code;        /* its RST_STREAM / close error code */
    int goaway;
    /* gRPC message deframing */
    uint8_t hdr[5];
    size_t hdr_got;
    uint64_t msg_left;          /* bytes of the current message still due */
    int in_msg;
    int nmsgs;
    int compressed;
    /* a sink failure */
    int sink_failed;
    char sink_err[512];
} call_state;

static void set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_err(char *err, size_t errlen, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* ---- nghttp2 callbacks ---------------------------------------------------- */

static ssize_t read_body(nghttp2_session *s, int32_t sid, uint8_t *buf, size_t len,
                         uint32_t *flags, nghttp2_data_source *src, void *user) {
    (void)s;
    (void)sid;
    (void)src;
    call_state *st = user;
    size_t total = 5 + st->c->req_len, n = 0;
    while (n < len && st->sent < total) {
        if (st->sent < 5) {
            buf[n++] = st->prefix[st->sent++];
            continue;
        }
        size_t off = st->sent - 5, k = st->c->req_len - off;
        if (k > len - n) k = len - n;
        memcpy(buf + n, (const uint8_t *)st->c->req + off, k);
        n += k;
        st->sent += k;
    }
    if (st->sent == total) *flags |= NGHTTP2_DATA_FLAG_EOF;
    return (ssize_t)n;
}

static int on_header(nghttp2_session *s, const nghttp2_frame *frame, const uint8_t *name,
                     size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                     void *user) {
    (void)s;
    (void)flags;
    call_state *st = user;
    if (frame->hd.type != NGHTTP2_HEADERS || frame->hd.stream_id != st->stream_id) return 0;
    char v[384];
    size_t vl = valuelen < sizeof v - 1 ? valuelen : sizeof v - 1;
    memcpy(v, value, vl);
    v[vl] = '\0';
    if (namelen == 7 && !memcmp(name, ":status", 7)) {
        st->http_status = atoi(v);
    } else if (namelen == 12 && !memcmp(name, "content-type", 12)) {
        snprintf(st->content_type, sizeof st->content_type, "%.120s", v);
    } else if (namelen == 11 && !memcmp(name, "grpc-status", 11)) {
        st->grpc_status = atoi(v);
    } else if (namelen == 12 && !memcmp(name, "grpc-message", 12)) {
        /* percent-encoded; decode what decodes, keep the rest; only
         * printable ASCII is kept (the message is shown to users), at most
         * 200 characters */
        size_t o = 0;
        for (size_t i = 0; i < vl && o < sizeof st->grpc_message - 1 && o < 200; i++) {
            unsigned hx;
            char ch = v[i];
            if (v[i] == '%' && i + 2 < vl && sscanf(v + i + 1, "%2x", &hx) == 1) {
                ch = (char)hx;
                i += 2;
            }
            st->grpc_message[o++] = ch >= 32 && ch < 127 ? ch : '?';
        }
        st->grpc_message[o] = '\0';
    }
    return 0;
}

static int on_data(nghttp2_session *s, uint8_t flags, int32_t sid, const uint8_t *data,
                   size_t len, void *user) {
    (void)s;
    (void)flags;
    call_state *st = user;
    if (sid != st->stream_id) return 0;
    while (len > 0) {
        if (!st->in_msg) {
            size_t k = 5 - st->hdr_got;
            if (k > len) k = len;
            memcpy(st->hdr + st->hdr_got, data, k);
            st->hdr_got += k;
            data += k;
            len -= k;
            if (st->hdr_got < 5) break;
            st->hdr_got = 0;
            st->compressed = st->hdr[0] & 1;
            st->msg_left = (uint64_t)st->hdr[1] << 24 | (uint64_t)st->hdr[2] << 16 |
                           (uint64_t)st->hdr[3] << 8 | st->hdr[4];
            st->in_msg = 1;
            st->nmsgs++;
            if (st->compressed || st->nmsgs > 1) {
                st->sink_failed = 1;
                snprintf(st->sink_err, sizeof st->sink_err, "%s",
                         st->compressed ? "the answer is compressed (not requested)"
                                        : "more than one message in a unary answer");
                return NGHTTP2_ERR_CALLBACK_FAILURE;
            }
        }
        size_t k = st->msg_left < len ? (size_t)st->msg_left : len;
        if (k && st->c->sink(st->c->sink_ctx, data, k, st->sink_err, sizeof st->sink_err)) {
            st->sink_failed = 1;
            return NGHTTP2_ERR_CALLBACK_FAILURE;
        }
        data += k;
        len -= k;
        st->msg_left -= k;
        if (st->msg_left == 0) st->in_msg = 0;
    }
    return 0;
}

static int on_frame(nghttp2_session *s, const nghttp2_frame *frame, void *user) {
    (void)s;
    call_state *st = user;
    st->got_frames = 1;
    if (frame->hd.type == NGHTTP2_GOAWAY) st->goaway = 1;
    return 0;
}

static int on_close(nghttp2_session *s, int32_t sid, uint32_t code, void *user) {
    (void)s;
    call_state *st = user;
    if (sid == st->stream_id) {
        st->closed = 1;
        st->close_code = code;
    }
    return 0;
}

/* ---- socket ------------------------------------------------------------------ */

static int wait_fd(int fd, short ev, int64_t deadline) {
    for (;;) {
        int64_t left = deadline - xpv_now_ms();
        if (left <= 0) return 0;
        struct pollfd p = {fd, ev, 0};
        int r = poll(&p, 1, left > 1000 ? 1000 : (int)left);
        if (r > 0) return 1;
        if (r < 0 && errno != EINTR) return -1;
    }
}

static socklen_t sa_len(const struct sockaddr_storage *sa) {
    return sa->ss_family == AF_INET6 ? (socklen_t)sizeof(struct sockaddr_in6)
                                     : (socklen_t)sizeof(struct sockaddr_in);
}

/* Connect to c->addrs (or what c->host:c->port resolves to), in order,
 * each within the deadline.  The socket, or -1 with `err`. */
static int dial(const xpv_grpc_call *c, char *err, size_t errlen) {
    struct addrinfo hints, *res = NULL;
    struct sockaddr_storage own[16];
    const struct sockaddr_storage *addrs = c->addrs;
    size_t naddrs = c->naddrs;
    if (!addrs) {
        memset(&hints, 0, sizeof hints);
        hints.ai_socktype = SOCK_STREAM;
        hints.ai_flags = AI_NUMERICSERV;
        int gai = getaddrinfo(c->host, c->port, &hints, &res);
        if (gai != 0) {
            set_err(err, errlen, "cannot resolve %s: %s", c->host, gai_strerror(gai));
            return -1;
        }
        naddrs = 0;
        for (struct addrinfo *ai = res; ai && naddrs < 16; ai = ai->ai_next)
            if ((ai->ai_family == AF_INET || ai->ai_family == AF_INET6) &&
                ai->ai_addrlen <= sizeof own[0]) {
                memset(&own[naddrs], 0, sizeof own[0]);
                memcpy(&own[naddrs++], ai->ai_addr, ai->ai_addrlen);
            }
        freeaddrinfo(res);
        addrs = own;
    }
    int fd = -1, last = ENOENT, timed_out = 0;
    for (size_t i = 0; i < naddrs && fd < 0; i++) {
        const struct sockaddr_storage *sa = &addrs[i];
        fd = socket(sa->ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0) {
            last = errno;
            continue;
        }
        if (connect(fd, (const struct sockaddr *)sa, sa_len(sa)) != 0) {
            if (errno != EINPROGRESS) {
                last = errno;
                close(fd);
                fd = -1;
                continue;
            }
            int w = wait_fd(fd, POLLOUT, c->deadline_ms);
            int soerr = 0;
            socklen_t sl = sizeof soerr;
            if (w <= 0) {
                timed_out = w == 0;
                last = w == 0 ? ETIMEDOUT : errno;
            } else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) != 0 || soerr) {
                last = soerr ? soerr : errno;
            } else {
                break;
            }
            close(fd);
            fd = -1;
            if (timed_out) break;
        }
    }
    if (fd < 0) {
        if (timed_out)
            set_err(err, errlen, "cannot connect: no answer before the deadline");
        else
            set_err(err, errlen, "cannot connect: %s", strerror(last));
        return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

/* Write all of p[0..n) before the deadline. */
static int write_all(int fd, const uint8_t *p, size_t n, int64_t deadline) {
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w > 0) {
            p += w;
            n -= (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int r = wait_fd(fd, POLLOUT, deadline);
            if (r <= 0) return r == 0 ? -2 : -1;
            continue;
        }
        return -1;
    }
    return 0;
}

/* The first bytes a server sent, when they are not HTTP/2 (whose first
 * frame is SETTINGS): 1 with the reason in `err`, else 0.  The bytes
 * themselves are never quoted (an SSH banner, an HTTP status line: what
 * runs on a port is not the business of whoever asked for a capture). */
static int not_h2(const uint8_t *b, size_t n, char *err, size_t errlen) {
    if (n >= 5 && !memcmp(b, "HTTP/", 5)) {
        set_err(err, errlen, "not a gRPC server: it answered HTTP/1");
        return 1;
    }
    if (n >= 4 && b[3] != NGHTTP2_SETTINGS) {
        set_err(err, errlen, "not a gRPC server: its answer is not HTTP/2");
        return 1;
    }
    return 0;
}

/* ---- the call ------------------------------------------------------------------ */

/* One call's connection: the socket, the nghttp2 session, where errors
 * are written, and the receive buffer. */
typedef struct conn {
    const xpv_grpc_call *c;
    int fd;
    nghttp2_session *s;
    call_state *st;
    char *err;
    size_t errlen;
    uint8_t *rbuf;
    int64_t got_bytes;            /* bytes received so far */
    int64_t left_ms;              /* time budget when the call began */
} conn;

/* A client session on `st` with our settings (no push, a large window). */
static int session_open(conn *k) {
    nghttp2_session_callbacks *cbs;
    if (nghttp2_session_callbacks_new(&cbs) != 0) {
        set_err(k->err, k->errlen, "out of memory");
        return -1;
    }
    nghttp2_session_callbacks_set_on_header_callback(cbs, on_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, on_data);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, on_frame);
    nghttp2_session_callbacks_set_on_stream_close_callback(cbs, on_close);
    int e = nghttp2_session_client_new(&k->s, cbs, k->st);
    nghttp2_session_callbacks_del(cbs);
    if (e != 0) {
        k->s = NULL;
        set_err(k->err, k->errlen, "nghttp2: %s", nghttp2_strerror(e));
        return -1;
    }
    nghttp2_settings_entry iv[] = {
        {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
        {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, WINDOW},
    };
    nghttp2_submit_settings(k->s, NGHTTP2_FLAG_NONE, iv, sizeof iv / sizeof iv[0]);
    nghttp2_session_set_local_window_size(k->s, NGHTTP2_FLAG_NONE, 0, WINDOW);
    return 0;
}

/* The POST of the unary call, with the time left as grpc-timeout. */
static int submit_call(conn *k) {
    const xpv_grpc_call *c = k->c;
    char authority[300], timeout[32];
    int v6 = strchr(c->host, ':') != NULL;
    snprintf(authority, sizeof authority, "%s%s%s:%s", v6 ? "[" : "", c->host, v6 ? "]" : "",
             c->port);
    int64_t left = c->deadline_ms - xpv_now_ms();
    if (left < 1) left = 1;
    if (left > 99999999) left = 99999999;          /* grpc-timeout: at most 8 digits */
    k->left_ms = left;
    snprintf(timeout, sizeof timeout, "%lldm", (long long)left);
#define NV(n, v) {(uint8_t *)(n), (uint8_t *)(v), strlen(n), strlen(v), NGHTTP2_NV_FLAG_NONE}
    nghttp2_nv hdrs[] = {
        NV(":method", "POST"),
        NV(":scheme", "http"),
        NV(":path", c->path),
        NV(":authority", authority),
        NV("content-type", "application/grpc"),
        NV("te", "trailers"),
        NV("grpc-timeout", timeout),
        NV("user-agent", "xpview-capture"),
    };
#undef NV
    nghttp2_data_provider prd;
    prd.source.ptr = NULL;
    prd.read_callback = read_body;
    k->st->stream_id = nghttp2_submit_request(k->s, NULL, hdrs, sizeof hdrs / sizeof hdrs[0],
                                              &prd, NULL);
    if (k->st->stream_id < 0) {
        set_err(k->err, k->errlen, "nghttp2: %s", nghttp2_strerror(k->st->stream_id));
        return -1;
    }
    return 0;
}

/* Write what nghttp2 has to send.  0, or an XPV_GRPC_* failure code with
 * the error written. */
static int flush_out(conn *k) {
    for (;;) {
        const uint8_t *out;
        ssize_t n = nghttp2_session_mem_send(k->s, &out);
        if (n < 0) {
            set_err(k->err, k->errlen, "HTTP/2: %s", nghttp2_strerror((int)n));
            return XPV_GRPC_PROTOCOL;
        }
        if (n == 0) return 0;
        int w = write_all(k->fd, out, (size_t)n, k->c->deadline_ms);
        if (w == -2) {
            set_err(k->err, k->errlen, "the request could not be sent before the deadline");
            return XPV_GRPC_DEADLINE;
        }
        if (w < 0) {
            int e2 = errno;
            if (!k->st->got_frames) {
                /* The peer answered and closed before reading it all: what
                 * did it say? */
                ssize_t r = recv(k->fd, k->rbuf, RECV_CHUNK, MSG_DONTWAIT);
                if (k->got_bytes == 0 && r > 0 && not_h2(k->rbuf, (size_t)r, k->err, k->errlen))
                    return XPV_GRPC_PROTOCOL;
                set_err(k->err, k->errlen, "the connection was closed before any HTTP/2 "
                        "answer (%s; not a gRPC server?)", strerror(e2));
                return XPV_GRPC_PROTOCOL;
            }
            set_err(k->err, k->errlen, "connection lost while sending: %s", strerror(e2));
            return XPV_GRPC_CONNECT;
        }
    }
}

/* Wait for and feed the next bytes from the server.  0 to go on, -1 once
 * the session stopped on the sink's failure, or an XPV_GRPC_* failure code
 * (> 0) with the error written. */
static int receive_some(conn *k) {
    call_state *st = k->st;
    int r = wait_fd(k->fd, POLLIN, k->c->deadline_ms);
    if (r == 0) {
        set_err(k->err, k->errlen, "no %s within the deadline (%.1f s)",
                st->http_status ? "complete answer" : "answer", (double)k->left_ms / 1000.0);
        return XPV_GRPC_DEADLINE;
    }
    if (r < 0) {
        set_err(k->err, k->errlen, "poll: %s", strerror(errno));
        return XPV_GRPC_PROTOCOL;
    }
    ssize_t n = recv(k->fd, k->rbuf, RECV_CHUNK, 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
    if (n < 0) {
        set_err(k->err, k->errlen, "connection lost: %s", strerror(errno));
        return k->got_bytes ? XPV_GRPC_PROTOCOL : XPV_GRPC_CONNECT;
    }
    if (n == 0) {
        set_err(k->err, k->errlen, st->got_frames
                    ? "the connection was closed before the answer was complete"
                    : "the connection was closed without an HTTP/2 answer (not a gRPC server?)");
        return st->got_frames ? XPV_GRPC_PROTOCOL : XPV_GRPC_CONNECT;
    }
    if (k->got_bytes == 0 && not_h2(k->rbuf, (size_t)n, k->err, k->errlen))
        return XPV_GRPC_PROTOCOL;
    k->got_bytes += n;
    ssize_t used = nghttp2_session_mem_recv(k->s, k->rbuf, (size_t)n);
    if (used < 0) {
        if (st->sink_failed) return -1;
        set_err(k->err, k->errlen, "%s: %s",
                st->got_frames ? "HTTP/2 protocol error" : "not a gRPC server (no HTTP/2 answer)",
                nghttp2_strerror((int)used));
        return XPV_GRPC_PROTOCOL;
    }
    return 0;
}

/* The outcome once the exchange ended without a transport failure. */
static int call_result(const call_state *st, char *err, size_t errlen) {
    if (st->sink_failed) {
        set_err(err, errlen, "%s", st->sink_err);
        return XPV_GRPC_SINK;
    }
    if (!st->closed) {
        set_err(err, errlen, st->got_frames ? "the server ended the connection (GOAWAY) "
                "before answering" : "not a gRPC server (no HTTP/2 answer)");
    } else if (st->http_status == 0) {
        set_err(err, errlen, "the server reset the stream (HTTP/2 error %u, %s)",
                st->close_code, nghttp2_http2_strerror(st->close_code));
    } else if (st->http_status != 200) {
        set_err(err, errlen, "not a gRPC answer: HTTP status %d", st->http_status);
    } else if (st->grpc_status < 0) {
        if (strncmp(st->content_type, "application/grpc", 16) != 0)
            set_err(err, errlen, "not a gRPC server (its answer is not application/grpc)");
        else
            set_err(err, errlen, "the answer has no grpc-status (truncated?)");
    } else if (st->grpc_status != 0) {
        set_err(err, errlen, "the server answered gRPC status %d %s%s%s", st->grpc_status,
                xpv_grpc_status_name(st->grpc_status), st->grpc_message[0] ? ": " : "",
                st->grpc_message);
        return XPV_GRPC_STATUS;
    } else if (st->in_msg || st->hdr_got) {
        set_err(err, errlen, "the answer message is truncated");
    } else {
        return XPV_GRPC_OK;
    }
    return XPV_GRPC_PROTOCOL;
}

/* Send and receive until the stream closes, the sink fails or the
 * session has nothing left to do; 0 or an XPV_GRPC_* failure code. */
static int exchange(conn *k) {
    for (;;) {
        int rc = flush_out(k);
        if (rc) return rc;
        if (k->st->closed || k->st->sink_failed) return 0;
        if (!nghttp2_session_want_read(k->s) && !nghttp2_session_want_write(k->s)) return 0;
        rc = receive_some(k);
        if (rc < 0) return 0;
        if (rc > 0) return rc;
    }
}

int xpv_grpc_unary(const xpv_grpc_call *c, int *grpc_status, char *err, size_t errlen) {
    call_state st;
    memset(&st, 0, sizeof st);
    st.c = c;
    st.grpc_status = -1;
    *grpc_status = -1;
    if (c->grpc_answer) *c->grpc_answer = 0;
    err[0] = '\0';
    if (c->req_len > 0xffffffffu) {
        set_err(err, errlen, "request too large");
        return XPV_GRPC_PROTOCOL;
    }
    st.prefix[1] = (uint8_t)(c->req_len >> 24);
    st.prefix[2] = (uint8_t)(c->req_len >> 16);
    st.prefix[3] = (uint8_t)(c->req_len >> 8);
    st.prefix[4] = (uint8_t)c->req_len;

    conn k = {.c = c, .st = &st, .err = err, .errlen = errlen};
    k.fd = dial(c, err, errlen);
    if (k.fd < 0) return xpv_now_ms() >= c->deadline_ms ? XPV_GRPC_DEADLINE : XPV_GRPC_CONNECT;
    int rc = XPV_GRPC_PROTOCOL;
    if (session_open(&k) == 0 && submit_call(&k) == 0) {
        k.rbuf = malloc(RECV_CHUNK);
        if (!k.rbuf) {
            set_err(err, errlen, "out of memory");
        } else if ((rc = exchange(&k)) == 0) {
            *grpc_status = st.grpc_status;
            rc = call_result(&st, err, errlen);
        }
    }
    free(k.rbuf);
    nghttp2_session_del(k.s);
    close(k.fd);
    if (c->grpc_answer)
        *c->grpc_answer = st.http_status == 200 &&
                          !strncmp(st.content_type, "application/grpc", 16);
    return rc;
}
