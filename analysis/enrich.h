/*
 * enrich.h - the enrichment pass XProf runs on every profile before any
 * tool reads it (xprof/convert/preprocess_single_host_xplane.cc, spec
 * modern-profiles.md §1): event grouping (group_events.h), then the derived
 * timeline lines (derived_lines.h).
 *
 * It runs once per profile and is kept with it (xpv_profile.ext, freed
 * with the profile): steps, op metrics and the trace index all read the
 * same result.  The server runs it right after decoding, inside the
 * profile's cache entry, so its memory is counted there; other callers
 * (CLI export, tests, benchmarks) get it on first use.
 */
#ifndef XPV_ENRICH_H
#define XPV_ENRICH_H

#include <stddef.h>

#include "derived_lines.h"
#include "group_events.h"
#include "model.h"

typedef struct xpv_enrichment {
    xpv_profile_ext head;       /* how the profile frees it */
    xpv_groups *groups;         /* never NULL */
    xpv_derived_lines *derived; /* never NULL (may hold no plane) */
    size_t bytes;               /* memory held */
} xpv_enrichment;

/* The profile's enrichment, built on first call (thread-safe: concurrent
 * first calls may both build; one result is kept).  Never NULL for a
 * non-NULL profile. */
const xpv_enrichment *xpv_enrich(const xpv_profile *p);

/* Shortcuts. */
static inline const xpv_groups *xpv_profile_groups(const xpv_profile *p) {
    return xpv_enrich(p)->groups;
}
static inline const xpv_derived_lines *xpv_profile_derived_lines(const xpv_profile *p) {
    return xpv_enrich(p)->derived;
}

#endif /* XPV_ENRICH_H */
