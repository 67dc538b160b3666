/*
 * derived_count_hlo.h - an independent count, for tests, of the GPU
 * `Framework Ops` and `Source code` events XProf derives for XLA kernels
 * from their HLO instructions' metadata (derived_timeline.cc), counted
 * another way than analysis/enrich/derived_lines.c: the HLO protos are unpacked
 * here with protobuf-c straight from the `/host:metadata` plane (program
 * id: the `program_id` stat, else the metadata id), the instruction found
 * by a linear search of every computation.
 *
 * On each GPU plane without derived lines, per line, kernels (events with
 * `kernel_details`) in (start, longer first) order; a kernel's key is its
 * `XLA Modules` run (a new one when `hlo_module(program_id)` or group_id
 * changes, as derived_count.h counts them).  For kernels with `hlo_op` and
 * `program_id`: the framework op is the instruction's `op_name` (else the
 * kernel's `tf_op`), a new Framework Ops event when it or the key changes
 * (these JAX names have no TF `:Type`, so no name scopes); the source is
 * `file:line`, a new Source code event when it or the key changes.
 */
#ifndef XPV_DERIVED_COUNT_HLO_H
#define XPV_DERIVED_COUNT_HLO_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "derived_count.h"
#include "hlo.pb-c.h"
#include "model.h"

typedef struct dch_prog {
    int64_t id;
    Xla__HloProto *proto;
} dch_prog;

static inline size_t dch_programs(const xpv_profile *p, dch_prog **out) {
    size_t n = 0;
    *out = NULL;
    const xpv_plane *pl = xpv_find_plane(p, "/host:metadata");
    for (uint32_t m = 1; pl && m < pl->nevent_meta; m++) {
        const xpv_event_meta *em = &pl->event_meta[m];
        dch_prog d = {(int64_t)em->id, NULL};
        const xpv_stat *bytes = NULL;
        for (uint32_t i = 0; i < em->nstats; i++) {
            const xpv_stat *st = &em->stats[i];
            if (st->meta < 0 || (uint32_t)st->meta >= pl->nstat_meta) continue;
            xpv_str nm = pl->stat_meta[st->meta].name;
            int64_t v;
            if ((xpv_str_eq(nm, "Hlo Proto") || xpv_str_eq(nm, "HLO Proto")) &&
                (st->kind == XPV_STAT_BYTES || st->kind == XPV_STAT_STR))
                bytes = st;
            else if (xpv_str_eq(nm, "program_id") && xpv_stat_as_int(st, &v))
                d.id = v;
        }
        if (!bytes) continue;
        d.proto = xla__hlo_proto__unpack(NULL, bytes->v.s.len, (const uint8_t *)bytes->v.s.ptr);
        if (!d.proto) continue;
        *out = realloc(*out, (n + 1) * sizeof **out);
        (*out)[n++] = d;
    }
    return n;
}

static inline const Xla__OpMetadata *dch_metadata(const dch_prog *ps, size_t n, int64_t prog,
                                                  const char *name, size_t len) {
    for (size_t i = 0; i < n; i++) {
        if (ps[i].id != prog || !ps[i].proto->hlo_module) continue;
        const Xla__HloModuleProto *mod = ps[i].proto->hlo_module;
        for (size_t c = 0; c < mod->n_computations; c++)
            for (size_t k = 0; k < mod->computations[c]->n_instructions; k++) {
                const Xla__HloInstructionProto *in = mod->computations[c]->instructions[k];
                if (strlen(in->name) == len && !memcmp(in->name, name, len)) return in->metadata;
            }
    }
    return NULL;
}

typedef struct dch_k {
    int64_t start, dur;
    uint32_t ev;
} dch_k;

static inline int dch_cmp(const void *a, const void *b) {
    const dch_k *x = a, *y = b;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    if (x->dur != y->dur) return x->dur > y->dur ? -1 : 1;
    return (x->ev > y->ev) - (x->ev < y->ev);
}

static inline void dch_count(const xpv_profile *p, size_t *ops, size_t *srcs) {
    *ops = *srcs = 0;
    dch_prog *ps;
    size_t nps = dch_programs(p, &ps);
    for (uint32_t i = 0; i < p->nplanes && nps; i++) {
        const xpv_plane *pl = &p->planes[i];
        if (!dc_raw_gpu_plane(pl)) continue;
        int32_t sk = xpv_stat_id(pl, "kernel_details"), sm = xpv_stat_id(pl, "hlo_module"),
                sp = xpv_stat_id(pl, "program_id"), so = xpv_stat_id(pl, "hlo_op"),
                sg = xpv_stat_id(pl, "group_id"), st_ = xpv_stat_id(pl, "tf_op");
        for (uint32_t l = 0; l < pl->nlines; l++) {
            const xpv_line *ln = &pl->lines[l];
            dch_k *ks = malloc((ln->nevents + 1) * sizeof *ks);
            for (uint32_t k = 0; k < ln->nevents; k++)
                ks[k] = (dch_k){ln->events[k].start_ps, ln->events[k].dur_ps, k};
            qsort(ks, ln->nevents, sizeof *ks, dch_cmp);
            char pm[512] = "", po[1024] = "", psrc[1024] = "";
            long key = 0, kop = -1, ksrc = -1;
            for (uint32_t j = 0; j < ln->nevents; j++) {
                const xpv_event *e = &ln->events[ks[j].ev];
                xpv_stat st;
                int64_t v;
                if (sk < 0 || !xpv_event_stat(pl, ln, e, sk, &st)) continue;
                long long pid = -1, g = -1;
                int has_pid = 0;
                if (sp >= 0 && xpv_event_stat(pl, ln, e, sp, &st) && xpv_stat_as_int(&st, &v))
                    pid = v, has_pid = 1;
                if (sg >= 0 && xpv_event_stat(pl, ln, e, sg, &st) && xpv_stat_as_int(&st, &v)) g = v;
                if (sm >= 0 && xpv_event_stat(pl, ln, e, sm, &st) && st.kind == XPV_STAT_STR &&
                    st.v.s.len) {
                    char km[512];
                    snprintf(km, sizeof km, "%.*s(%lld)|%lld", (int)st.v.s.len, st.v.s.ptr, pid, g);
                    if (strcmp(km, pm)) {
                        key++;
                        strcpy(pm, km);
                    }
                }
                if (!has_pid || so < 0 || !xpv_event_stat(pl, ln, e, so, &st) ||
                    st.kind != XPV_STAT_STR || !st.v.s.len)
                    continue;
                xpv_str op = st.v.s, name = op;
                for (uint32_t c = 0; c + 1 < op.len; c++)
                    if (op.ptr[c] == ':' && op.ptr[c + 1] == ':')
                        name = (xpv_str){op.ptr + c + 2, op.len - c - 2};
                const Xla__OpMetadata *md = dch_metadata(ps, nps, pid, name.ptr, name.len);
                char fw[1024] = "", src[1024] = "";
                if (md && md->op_name && md->op_name[0]) snprintf(fw, sizeof fw, "%s", md->op_name);
                else if (st_ >= 0 && xpv_event_stat(pl, ln, e, st_, &st) && st.kind == XPV_STAT_STR)
                    snprintf(fw, sizeof fw, "%.*s", (int)st.v.s.len, st.v.s.ptr);
                if (md && md->source_file && md->source_file[0])
                    snprintf(src, sizeof src, "%s:%d", md->source_file, (int)md->source_line);
                if (fw[0]) {
                    if (kop != key || strcmp(fw, po)) (*ops)++;
                    kop = key;
                    strcpy(po, fw);
                }
                if (src[0]) {
                    if (ksrc != key || strcmp(src, psrc)) (*srcs)++;
                    ksrc = key;
                    strcpy(psrc, src);
                }
            }
            free(ks);
        }
    }
    for (size_t i = 0; i < nps; i++) xla__hlo_proto__free_unpacked(ps[i].proto, NULL);
    free(ps);
}

#endif
