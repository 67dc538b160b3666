/*
 * enrich.h - the enrichment pass XProf runs on every profile before any
 * tool reads it (xprof/convert/preprocess_single_host_xplane.cc, spec
 * modern-profiles.md §1): event grouping (group_events.h), then the derived
 * timeline lines (derived_lines.h).
 *
 * It runs once per profile and is kept with it (xpv_profile.ext, freed
 * with the profile): steps, op metrics and the trace index all read the
 * same result.  The grouping runs on first use (the server: right after
 * decoding, inside the profile's cache entry, so its memory is counted
 * there); the derived lines, which only the trace viewer reads, on the
 * first xpv_profile_derived_lines() (XProf's preprocessing takes the same
 * choice per tool: its `derived_timeline` argument), after which the
 * server grows the profile's charge by their bytes (xpv_enrichment_bytes).
 * Other callers (CLI export, tests, benchmarks) get both on first use.
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
    xpv_derived_lines *derived; /* NULL until xpv_profile_derived_lines
                                 * (then never NULL; may hold no plane);
                                 * read and set atomically */
    size_t bytes;               /* memory held by the grouping */
} xpv_enrichment;

/* The profile's enrichment, built on first call (thread-safe: concurrent
 * first calls may both build; one result is kept).  Never NULL for a
 * non-NULL profile. */
const xpv_enrichment *xpv_enrich(const xpv_profile *p);

/* Shortcuts. */
static inline const xpv_groups *xpv_profile_groups(const xpv_profile *p) {
    return xpv_enrich(p)->groups;
}
/* The profile's derived lines, built on first call (thread-safe, as
 * xpv_enrich).  Never NULL for a non-NULL profile. */
const xpv_derived_lines *xpv_profile_derived_lines(const xpv_profile *p);
/* Memory the enrichment holds so far (grouping, and the derived lines
 * once built). */
size_t xpv_enrichment_bytes(const xpv_profile *p);

#endif /* XPV_ENRICH_H */
