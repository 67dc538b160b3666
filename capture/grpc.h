/*
 * grpc.h - one unary gRPC call over HTTP/2 cleartext (h2c, "prior
 * knowledge"), on libnghttp2.  Enough for tensorflow.ProfilerService/
 * Profile: no TLS, no compression, no streaming requests.
 *
 * The response message is not kept: its bytes go to a sink as they
 * arrive, so a response of any size passes through a bounded buffer (the
 * socket read buffer, 64 KiB, plus HTTP/2 flow control).
 */
#ifndef XPV_GRPC_H
#define XPV_GRPC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* Receives the response message's bytes (after the 5-byte gRPC prefix),
 * in order.  Return 0, or -1 to abort the call (the sink writes its own
 * reason into `err`). */
typedef int (*xpv_grpc_sink)(void *ctx, const uint8_t *p, size_t n, char *err,
                             size_t errlen);

typedef struct xpv_grpc_call {
    const char *host;           /* name or address ("::1" without brackets) */
    const char *port;
    const char *path;           /* "/tensorflow.ProfilerService/Profile" */
    const void *req;            /* the serialized request message */
    size_t req_len;
    int64_t deadline_ms;        /* absolute, on xpv_now_ms()'s clock */
    xpv_grpc_sink sink;
    void *sink_ctx;
    /* Where to connect, already resolved (and checked by the caller's
     * policy): tried in order, `host` is then only the :authority.  NULL:
     * resolve host:port here. */
    const struct sockaddr_storage *addrs;
    size_t naddrs;
    /* Out, optional: set to 1 once the peer has answered as a gRPC server
     * (HTTP/2 response headers with :status 200 and content-type
     * application/grpc), else 0.  Until then nothing it sent is quoted in
     * `err`: callers tell network clients only "could not reach". */
    int *grpc_answer;
} xpv_grpc_call;

/* Outcome classes, for retry decisions. */
enum {
    XPV_GRPC_OK = 0,
    XPV_GRPC_CONNECT = 1,       /* could not connect (refused, no route, DNS) */
    XPV_GRPC_DEADLINE = 2,      /* no complete answer before the deadline */
    XPV_GRPC_PROTOCOL = 3,      /* not an HTTP/2 gRPC answer */
    XPV_GRPC_STATUS = 4,        /* the server answered a grpc-status != 0 */
    XPV_GRPC_SINK = 5,          /* the sink refused the data */
};

/* Make the call.  Returns XPV_GRPC_OK when the server answered
 * grpc-status 0 (the whole message has gone to the sink), else one of the
 * codes above with a message in `err` (without the address: the caller
 * names it).  *grpc_status gets the status (-1 when there was none).
 * `err` never quotes the peer's bytes, except a gRPC server's
 * grpc-message (printable ASCII only, at most 200 characters). */
int xpv_grpc_unary(const xpv_grpc_call *c, int *grpc_status, char *err, size_t errlen);

/* "UNAVAILABLE" for 14, ... ("UNKNOWN" past the table). */
const char *xpv_grpc_status_name(int code);

#endif
