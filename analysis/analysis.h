/*
 * analysis.h - what the analysis layer works on: the set of host profiles
 * a request covers, and the shared derivations (XProf's OpStats, the trace
 * index) built once per host set and cached by the server.
 */
#ifndef XPV_ANALYSIS_H
#define XPV_ANALYSIS_H

#include <stddef.h>

#include "err.h"
#include "model.h"

/* The hosts a request covers, in sorted host-name order. */
typedef struct xpv_hostset {
    size_t n;
    const xpv_profile *const *profiles;
    const char *const *hostnames;   /* file name minus ".xplane.pb" */
} xpv_hostset;

/* Shared intermediate built once per (run, host set) and cached. */
typedef struct xpv_derived_kind {
    const char *name;
    void *(*build)(const xpv_hostset *hs, xpv_err *err);
    void (*free)(void *d);
    size_t (*size)(const void *d);  /* bytes held, for the cache budget */
} xpv_derived_kind;

#endif
