/*
 * capture_route.h - XProf's Capture Profile route:
 *
 *   GET /data/plugin/profile/capture_profile?service_addr=A[,B]&duration=MS
 *       &num_retry=N&worker_list=A,B&host_tracer_level=L&device_tracer_level=L
 *       &python_tracer_level=L&delay=MS[&timeout_ms=MS]
 *
 * starts a capture (capture/capture.h) into a new run of the served logdir
 * in a thread of its own and answers at once {"running": true,
 * "capture_id": "N", "run": "...", "expected_ms": N}; the HTTP threads never
 * wait for a job.  capture_profile?capture_id=N then answers the job's
 * state: {"running": true, ...} while it runs, and when it is done XProf's
 * {"result": "Capture profile successfully. Please refresh.", "run": ...,
 * "files": [...]} or {"error": "..."} (naming each failed address).
 * worker_list, when given, is the list of targets (else service_addr).
 *
 * Who may capture what.  A request is "local" when its peer is a
 * loopback address and it carries no X-Forwarded-For, Forwarded or
 * X-Real-IP header (a reverse proxy's request is a network client's);
 * any other request, or one whose peer is unknown, is a "network" one.
 *   - Local requests are served when capture is on for local clients (a
 *     loopback server) or --allow_capture; network requests only with
 *     --allow_capture.
 *   - Targets: with --capture_allow exactly those (hosts literally); else
 *     any for a local request, and for a network request only this
 *     machine: an IP address or "localhost" (nothing is sent to DNS) all
 *     of whose addresses are loopback (127/8, ::1) or 0.0.0.0 / ::.
 *   - Every target is resolved when the capture starts and the capture
 *     connects only to those addresses; targets are counted on them
 *     (xpv_capture_resolve's canonical keys), so 127.0.0.1, 127.1,
 *     0x7f000001 and localhost are one target: one capture per target at
 *     a time (409), and one target once per capture (400).
 *   - duration, delay and timeout_ms: at most XPV_CAPTURE_MAX_MS (10
 *     minutes) and duration + delay below it (400); each file at most the
 *     server's --max_file_size.
 *   - The status never quotes what a peer sent, and does not tell a
 *     refused port from a silent or non-gRPC one (pub_err); the details go
 *     to the server's stderr.
 * State (the token, the jobs) is per process: behind a proxy with
 * replicas, route both capture routes to one replica
 * (docs/deploy/nginx.conf).
 *
 * Refusals: 403 when capture is off for this request (configure) or a
 * target is not allowed, 409 while a capture from the same target runs,
 * 400 for bad parameters, 503 when too many captures run.
 */
#ifndef XPV_CAPTURE_ROUTE_H
#define XPV_CAPTURE_ROUTE_H

#include "query.h"
#include "request.h"
#include "routes.h"

struct sockaddr;

/* xpv_capture_route_configure's `on`: for which requests capture is on. */
#define XPV_CAPTURE_ON_LOCAL 1      /* local requests (a loopback server) */
#define XPV_CAPTURE_ON_NETWORK 2    /* network requests too (--allow_capture) */

/* Process-wide.  `on` 0: every capture request is a 403 carrying
 * `why_off`; XPV_CAPTURE_ON_LOCAL: network requests get 403 naming
 * --allow_capture.  `allow` (NULL = the default rule above):
 * "HOST[:PORT],...".  Until this is called capture is off. */
void xpv_capture_route_configure(int on, const char *why_off, const char *allow);

/* Who sends the request routed next on this thread: server/http/http.c calls
 * it before routing each request and with peer NULL after.  `peer` the
 * connection's client address (NULL: unknown, a network request),
 * `forwarded` whether the request carries X-Forwarded-For, Forwarded or
 * X-Real-IP. */
void xpv_capture_route_client(const struct sockaddr *peer, int forwarded);

/* Whether a --host value is a loopback address (127.x, ::1, localhost). */
int xpv_capture_route_is_loopback(const char *host);

/* The route, in routes.c's data-route table. */
void xpv_capture_route(xpv_app *a, const xpv_request *rq, const char *inm, xpv_response *r);

/* GET capture_token: {"token": T}, the per-process value capture_profile
 * requires as token=T (against cross-site request forgery). */
void xpv_capture_token_route(xpv_app *a, const xpv_request *rq, const char *inm,
                             xpv_response *r);

#endif
