/*
 * err.h - the one error record of every layer: importers, analysis, tools
 * and the server fill it; routes turn its status into the HTTP answer.
 */
#ifndef XPV_ERR_H
#define XPV_ERR_H

#include <stdint.h>

/* The error table: every kind of failure, by the HTTP status it is
 * answered with (the codes are the statuses, so a code travels unchanged
 * from a decoder to the response).  xpv_err_text() names each. */
enum xpv_errcode {
    XPV_E_BAD_REQUEST = 400,  /* a request or parameter the user can fix */
    XPV_E_FORBIDDEN = 403,    /* not allowed here (capture off, a path outside) */
    XPV_E_NOT_FOUND = 404,    /* no such run, host, tool, module or file */
    XPV_E_METHOD = 405,       /* only GET and HEAD */
    XPV_E_CONFLICT = 409,     /* already running (a capture of that target) */
    XPV_E_TOO_LARGE = 413,    /* over a size, ratio or memory budget */
    XPV_E_URI_TOO_LONG = 414,
    XPV_E_BAD_PROFILE = 422,  /* the file does not decode as what it claims */
    XPV_E_HEADERS_TOO_LARGE = 431,
    XPV_E_INTERNAL = 500,     /* a bug or an I/O failure of ours */
    XPV_E_BUSY = 503,         /* overloaded: retry later (Retry-After) */
};

/* An error for the user: HTTP-like status, message, and when the error is
 * about a profile file, the file (relative to the logdir) and the byte
 * offset where decoding failed (-1 when unknown). */
typedef struct xpv_err {
    int status;          /* an xpv_errcode */
    char msg[384];
    char file[512];      /* "" when not about a file */
    int64_t offset;      /* -1 when unknown */
} xpv_err;

/* The table's short text for a code ("bad request", "profile does not
 * decode", ...); "error" for a code not in it. */
const char *xpv_err_text(int code);

/* Reset `e` to "no error". */
void xpv_err_clear(xpv_err *e);
/* Fill status and a printf-style message; returns -1 for `return
 * xpv_err_set(...)` convenience.  file/offset are left unchanged. */
int xpv_err_set(xpv_err *e, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
