/*
 * err.h - the one error record of every layer: importers, analysis, tools
 * and the server fill it; routes turn its status into the HTTP answer.
 */
#ifndef XPV_ERR_H
#define XPV_ERR_H

#include <stdint.h>

/* An error for the user: HTTP-like status, message, and when the error is
 * about a profile file, the file (relative to the logdir) and the byte
 * offset where decoding failed (-1 when unknown). */
typedef struct xpv_err {
    int status;          /* 400, 404, 405, 413, 422, 500 */
    char msg[384];
    char file[512];      /* "" when not about a file */
    int64_t offset;      /* -1 when unknown */
} xpv_err;

/* Reset `e` to "no error". */
void xpv_err_clear(xpv_err *e);
/* Fill status and a printf-style message; returns -1 for `return
 * xpv_err_set(...)` convenience.  file/offset are left unchanged. */
int xpv_err_set(xpv_err *e, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
