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
    /* Optional (all four or none): the same value built host by host, so
     * that a many-host run never needs all its profiles at once.  A part
     * is what one host contributes (small; it owns its memory and keeps no
     * pointer into the profile); combine() builds the value from the
     * parts in host order (NULL entries: hosts without a profile), equal
     * to build() over the same hosts, and borrows them: the caller keeps
     * them alive as long as the value.  A tool whose kind has parts reads
     * nothing of the host set but `n` and `hostnames` (its profiles may be
     * NULL). */
    void *(*part_build)(const xpv_profile *p, xpv_err *err);
    void (*part_free)(void *part);
    size_t (*part_size)(const void *part);
    void *(*combine)(const void *const *parts, const char *const *hostnames, size_t n,
                     xpv_err *err);
} xpv_derived_kind;

#endif
