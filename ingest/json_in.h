/*
 * json_in.h - a pull JSON tokenizer over a refillable window, for the
 * importers that parse JSON as they read it (Chrome / Kineto traces).
 *
 * The window is refilled from an xpv_ct_read_fn (see base/instream.h);
 * errors are recorded once in the xpv_ct_error with their byte offset,
 * and every function returns -1 after one.
 */
#ifndef XPV_JSON_IN_H
#define XPV_JSON_IN_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "chrome_trace.h"
#include "err.h"

#define MAX_NEST 512              /* nesting accepted inside skipped values */
#define MAX_NUM_TEXT 80           /* longest number token accepted */

typedef struct jin {
    xpv_ct_read_fn rd;
    void *ctx;
    unsigned char *b;
    size_t pos, len, cap;
    uint64_t base;                /* stream offset of b[0] */
    uint64_t max;                 /* byte cap, 0 = none */
    int eof;
    xpv_ct_error *err;            /* set once: err->msg[0] != 0 */
} jin;

/* Record the first error (status, message, offset); returns -1. */
int jfail(jin *j, int status, const char *msg);
int jfailed(const jin *j);
/* Refill the window; returns 1 when bytes were added. */
int jfill(jin *j);
/* Next byte (not consumed / consumed), -1 at the end. */
static inline int jpeek(jin *j) {
    if (j->pos == j->len && !jfill(j)) return -1;
    return j->b[j->pos];
}

static inline int jget(jin *j) {
    if (j->pos == j->len && !jfill(j)) return -1;
    return j->b[j->pos++];
}

/* Skip whitespace; next byte (not consumed) or -1 at end. */
static inline int jws(jin *j) {
    for (;;) {
        while (j->pos < j->len) {
            unsigned char c = j->b[j->pos];
            if (c != ' ' && c != '\n' && c != '\r' && c != '\t') return c;
            j->pos++;
        }
        if (!jfill(j)) return -1;
    }
}

/* Consume `c` after whitespace, else fail with `msg`. */
int jexpect(jin *j, int c, const char *msg);
/* Read a string (the opening quote is next).  Decoded bytes are appended
 * to `dst` (NULL: skip).  With `raw` set, the bytes are appended exactly
 * as written, quotes and escapes included (for re-emitting JSON text). */
int jstring(jin *j, xpv_buf *dst, int raw);
/* A bare token (number, true/false/null, or a lenient unquoted word such
 * as N/A) into `t` (NUL-terminated); returns its length or -1. */
int jbare(jin *j, char *t, size_t cap);
/* Skip one value; with `cap` set, append it as compact JSON text. */
int jskip(jin *j, xpv_buf *cap);
/* After a member value: ',' (returns 1, more follow) or `close` (0). */
int jnext(jin *j, int close);

#endif /* XPV_JSON_IN_H */
