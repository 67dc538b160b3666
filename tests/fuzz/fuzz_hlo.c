/*
 * fuzz_hlo.c - libFuzzer target: HLO proto decoding (analysis/hlo/hlo.c,
 * XProf's hlo_proto_map.cc) and everything the HLO tools read from a
 * decoded module (instruction lookups, XLA's expression and shape text,
 * op categories, XLA's GPU cost analysis of the entry computation's
 * instructions and of 64 others).
 *
 * Input: first byte 'X': the rest is a whole XSpace (seeds: the JAX
 * captures in tests/data/device and small real files), decoded and its
 * `Hlo Proto` stats indexed; any other first byte: the rest is one
 * HloProto, wrapped here as the `Hlo Proto` bytes stat of a /host:metadata
 * event metadata (so mutations hit the proto decoder directly).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "hlo.h"
#include "hlo_cost.h"
#include "model.h"
#include "xplane.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void put_varint(xpv_buf *b, uint64_t v) {
    while (v >= 0x80) {
        xpv_buf_putc(b, (char)((v & 0x7f) | 0x80));
        v >>= 7;
    }
    xpv_buf_putc(b, (char)v);
}

/* Field `num` (length-delimited) holding `b`'s bytes, appended to `out`. */
static void put_field(xpv_buf *out, unsigned num, const void *p, size_t n) {
    put_varint(out, (uint64_t)num << 3 | 2);
    put_varint(out, n);
    xpv_buf_add(out, p, n);
}

/* XSpace { plane { name "/host:metadata", event_metadata {1: {id 1, name
 * "jit_f", stats {metadata_id 1, bytes_value PROTO}}}, stat_metadata {1:
 * {id 1, name "Hlo Proto"}} } } */
static void wrap_proto(const uint8_t *proto, size_t n, xpv_buf *out) {
    xpv_buf stat, em, ent, sm, sent, plane;
    xpv_buf_init(&stat);
    xpv_buf_init(&em);
    xpv_buf_init(&ent);
    xpv_buf_init(&sm);
    xpv_buf_init(&sent);
    xpv_buf_init(&plane);
    xpv_buf_add(&stat, "\x08\x01", 2);                 /* metadata_id 1 */
    put_field(&stat, 6, proto, n);                      /* bytes_value */
    xpv_buf_add(&em, "\x08\x01", 2);                   /* id 1 */
    put_field(&em, 2, "jit_f", 5);
    put_field(&em, 5, stat.data, stat.len);
    xpv_buf_add(&ent, "\x08\x01", 2);                  /* key 1 */
    put_field(&ent, 2, em.data, em.len);
    xpv_buf_add(&sm, "\x08\x01", 2);
    put_field(&sm, 2, "Hlo Proto", 9);
    xpv_buf_add(&sent, "\x08\x01", 2);
    put_field(&sent, 2, sm.data, sm.len);
    put_field(&plane, 2, "/host:metadata", 14);
    put_field(&plane, 4, ent.data, ent.len);
    put_field(&plane, 5, sent.data, sent.len);
    put_field(out, 1, plane.data, plane.len);
    xpv_buf_free(&stat);
    xpv_buf_free(&em);
    xpv_buf_free(&ent);
    xpv_buf_free(&sm);
    xpv_buf_free(&sent);
    xpv_buf_free(&plane);
}

/* Read back everything the HLO tools read from one decoded program. */
static void walk_program(const xpv_hlo_program *pr) {
    volatile size_t sink = 0;
    const Xla__HloModuleProto *mod = pr->module;
    if (!mod) return;
    xpv_buf b;
    xpv_buf_init(&b);
    /* XLA's cost analysis of the entry computation's instructions (those
     * the GPU op metrics ask about) and of the first 64 others */
    size_t costed = 0;
    for (size_t c = 0; c < mod->n_computations; c++) {
        const Xla__HloComputationProto *comp = mod->computations[c];
        if (!comp) continue;
        if (xpv_hlo_computation(pr, comp->id) == NULL) abort();
        for (size_t i = 0; i < comp->n_instructions; i++) {
            const Xla__HloInstructionProto *ins = comp->instructions[i];
            if (!ins) continue;
            if (ins->name && ins->name[0] && ins->name[0] != '%') {
                xpv_hlo_instr by_name = xpv_hlo_instr_by_name(pr, ins->name, strlen(ins->name));
                if (!by_name.ins) abort();   /* every named instruction is found */
            }
            xpv_hlo_instr in = xpv_hlo_instr_by_id(pr, ins->id);
            if (!in.ins) in = (xpv_hlo_instr){ins, comp};
            xpv_buf_reset(&b);
            xpv_hlo_expression(&b, pr, in);
            if (comp->id == mod->entry_computation_id || costed++ < 64) {
                xpv_hlo_cost k = xpv_hlo_gpu_cost(pr, in);
                sink += (size_t)(k.model_flops ^ k.device_flops ^ k.bytes_accessed);
            }
            const char *cat = xpv_hlo_category(ins);
            if (cat) sink += strlen(cat);
            if (ins->shape) xpv_hlo_shape_text(&b, ins->shape);
            sink += b.len;
        }
    }
    xpv_buf_free(&b);
    (void)sink;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!size) return 0;
    xpv_buf x;
    xpv_buf_init(&x);
    if (data[0] == 'X') xpv_buf_add(&x, data + 1, size - 1);
    else wrap_proto(data + 1, size - 1, &x);
    size_t len = x.len;
    uint8_t *buf = (uint8_t *)xpv_buf_steal(&x, &len);
    xpv_decode_error derr;
    xpv_profile *p = xpv_decode_limited(buf, len, NULL, 256u << 20, &derr);
    if (p) {
        const xpv_profile *ps[1] = {p};
        const char *names[1] = {"h"};
        xpv_hostset hs = {1, ps, names};
        xpv_hlo_map *m = xpv_hlo_map_build(&hs);
        for (size_t i = 0; i < m->n; i++) {
            xpv_err err;
            memset(&err, 0, sizeof err);
            const xpv_hlo_program *pr = xpv_hlo_decode(m, &hs, &m->progs[i], &err);
            if (!pr && err.status == 0) abort();   /* failures say why */
            if (pr) walk_program(pr);
            if (xpv_hlo_find(m, m->progs[i].program_id) == NULL) abort();
        }
        xpv_hlo_map_free(m);
        xpv_profile_free(p);
    }
    free(buf);
    return 0;
}
