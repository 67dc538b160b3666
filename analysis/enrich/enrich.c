/*
 * enrich.c - the once-per-profile enrichment pass (see enrich.h):
 * XProf's PreprocessSingleHostXSpace order, grouping then derived lines.
 */
#include "enrich.h"

#include <stdlib.h>

static void enrichment_free(xpv_profile_ext *ext) {
    xpv_enrichment *e = (xpv_enrichment *)ext;
    xpv_groups_free(e->groups);
    xpv_derived_lines_free(e->derived);
    free(e);
}

static xpv_enrichment *enrichment_build(const xpv_profile *p) {
    xpv_enrichment *e = xpv_xcalloc(1, sizeof *e);
    e->head.free = enrichment_free;
    e->groups = xpv_group_events(p);
    xpv_groups_fill_gpu(e->groups, p);
    e->bytes = sizeof *e + xpv_groups_size(e->groups);
    return e;
}

const xpv_enrichment *xpv_enrich(const xpv_profile *p) {
    if (!p) return NULL;
    xpv_profile_ext *cur = __atomic_load_n(&p->ext, __ATOMIC_ACQUIRE);
    if (cur) return (const xpv_enrichment *)cur;
    xpv_enrichment *e = enrichment_build(p);
    /* The profile is shared read-only; its extension slot is the one field
     * set after decoding, once, by whichever builder gets there first. */
    xpv_profile *mp = (xpv_profile *)p;
    xpv_profile_ext *expected = NULL;
    if (!__atomic_compare_exchange_n(&mp->ext, &expected, &e->head, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE)) {
        enrichment_free(&e->head);
        return (const xpv_enrichment *)expected;
    }
    return e;
}

const xpv_derived_lines *xpv_profile_derived_lines(const xpv_profile *p) {
    if (!p) return NULL;
    xpv_enrichment *e = (xpv_enrichment *)xpv_enrich(p);
    xpv_derived_lines *cur = __atomic_load_n(&e->derived, __ATOMIC_ACQUIRE);
    if (cur) return cur;
    xpv_derived_lines *d = xpv_derived_lines_build(p, e->groups);
    xpv_derived_lines *expected = NULL;
    if (!__atomic_compare_exchange_n(&e->derived, &expected, d, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE)) {
        xpv_derived_lines_free(d);
        return expected;
    }
    return d;
}

size_t xpv_enrichment_bytes(const xpv_profile *p) {
    if (!p) return 0;
    const xpv_enrichment *e = xpv_enrich(p);
    const xpv_derived_lines *d = __atomic_load_n(&e->derived, __ATOMIC_ACQUIRE);
    return e->bytes + (d ? d->bytes : 0);
}
