/*
 * hlo_fixture.h - what the HLO tests share (test_analysis_hlo.c,
 * test_analysis_hlo_memory.c, test_tool_graph_viewer.c): packing a
 * hand-built module, and one host with its op stats.  Header-only.
 */
#ifndef XPV_HLO_FIXTURE_H
#define XPV_HLO_FIXTURE_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hlo.pb-c.h"
#include "opstats.h"
#include "testutil.h"
#include "tool_xspace.h"

/* An HloProto holding `mod` (borrowed), packed into malloc'ed bytes; their
 * count in `*len`.  The caller frees them. */
__attribute__((unused)) static uint8_t *hf_pack_module(Xla__HloModuleProto *mod, size_t *len) {
    Xla__HloProto p = XLA__HLO_PROTO__INIT;
    p.hlo_module = mod;
    *len = xla__hlo_proto__get_packed_size(&p);
    uint8_t *out = malloc(*len ? *len : 1);
    xla__hlo_proto__pack(&p, out);
    return out;
}

/* Event metadata `meta` of plane `pl` carrying the serialized HloProto
 * p[0..n) as its `Hlo Proto` bytes stat (copied) and `program_id` `pid`,
 * as JAX writes them on /host:metadata. */
__attribute__((unused)) static void hf_meta_proto(tx_space *s, int pl, const char *meta,
                                                  const uint8_t *p, size_t n, int64_t pid) {
    Tensorflow__Profiler__XEventMetadata *m = tx_meta(s, pl, meta);
    tx_stat_t *st = tx_new_stat(s, pl, &m->n_stats, &m->stats, "Hlo Proto");
    st->value_case = TENSORFLOW__PROFILER__XSTAT__VALUE_BYTES_VALUE;
    st->bytes_value.data = tx_alloc(s, n ? n : 1);
    if (n) memcpy(st->bytes_value.data, p, n);
    st->bytes_value.len = n;
    tx_meta_int(s, pl, meta, "program_id", pid);
}

/* One host ("host") and its op stats (which read the HLO protos). */
typedef struct os_host {
    xpv_profile *p;
    const xpv_profile *ps[1];
    const char *hn[1];
    xpv_hostset hs;             /* borrows ps and hn: keep the struct in place */
    xpv_op_stats *os;
} os_host;

/* Take `p` (freed by os_host_close) and build its op stats; fails the
 * test when they do not build. */
__attribute__((unused)) static void os_host_open(os_host *h, xpv_profile *p) {
    h->p = p;
    h->ps[0] = p;
    h->hn[0] = "host";
    h->hs = (xpv_hostset){1, h->ps, h->hn};
    xpv_err err;
    memset(&err, 0, sizeof err);
    h->os = xpv_op_stats_build(&h->hs, &err);
    assert_non_null(h->os);
}

__attribute__((unused)) static void os_host_close(os_host *h) {
    xpv_op_stats_free(h->os);
    xpv_profile_free(h->p);
}

#endif
