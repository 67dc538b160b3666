/*
 * trace_fixture.h - one decoded host ("host0") and its trace index, the
 * starting point of the trace index tests.  Header-only (static inline).
 */
#ifndef XPV_TRACE_FIXTURE_H
#define XPV_TRACE_FIXTURE_H

#include "analysis.h"
#include "tool_xspace.h"
#include "trace_index.h"

#define NS 1000LL       /* ps per ns */
#define US 1000000LL    /* ps per us */

typedef struct fixture {
    xpv_profile *p;
    xpv_hostset hs;             /* one host: ps / names below */
    const xpv_profile *ps[1];
    const char *names[1];
    xpv_trace_index *ix;
} fixture;

/* Decode `s` (freed by this call) and build its index; fails the test
 * when either fails.  Release with fx_close. */
static inline void fx_open(fixture *f, tx_space *s) {
    f->p = tx_decode(s);
    assert_non_null(f->p);
    f->ps[0] = f->p;
    f->names[0] = "host0";
    f->hs = (xpv_hostset){1, f->ps, f->names};
    f->ix = xpv_trace_index_build(&f->hs);
    assert_non_null(f->ix);
}

static inline void fx_close(fixture *f) {
    xpv_trace_index_free(f->ix);
    xpv_profile_free(f->p);
}

#endif
