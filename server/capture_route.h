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
 * Refusals: 403 when capture is off (configure) or a target is not in the
 * --capture_allow list, 409 while a capture from the same target runs,
 * 400 for bad parameters, 503 when too many captures run.
 */
#ifndef XPV_CAPTURE_ROUTE_H
#define XPV_CAPTURE_ROUTE_H

#include "query.h"
#include "request.h"
#include "routes.h"

/* Process-wide.  `enabled` 0: every capture request is a 403 carrying
 * `why_off`.  `allow` (NULL = any target): "HOST[:PORT],...".  Until this
 * is called capture is off. */
void xpv_capture_route_configure(int enabled, const char *why_off, const char *allow);

/* Whether a --host value is a loopback address (127.x, ::1, localhost). */
int xpv_capture_route_is_loopback(const char *host);

/* The route, in routes.c's data-route table. */
void xpv_capture_route(xpv_app *a, const xpv_request *rq, const char *inm, xpv_response *r);

/* GET capture_token: {"token": T}, the per-process value capture_profile
 * requires as token=T (against cross-site request forgery). */
void xpv_capture_token_route(xpv_app *a, const xpv_request *rq, const char *inm,
                             xpv_response *r);

#endif
