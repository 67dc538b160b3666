/*
 * hlo.h - the HLO protos of a run's profiles (XProf hlo_proto_map.cc).
 *
 * JAX and TF/XLA profiles carry each compiled program as an `Hlo Proto`
 * (older spelling `HLO Proto`) bytes stat on an event metadata of the
 * `/host:metadata` plane; the program id is that metadata's `program_id`
 * stat, else the metadata id read as unsigned.  xpv_hlo_map_build() only
 * indexes them (no decoding); a program's proto is decoded with protobuf-c
 * (proto/hlo.proto, XLA's field numbers) the first time a tool asks for it
 * and kept until the map is freed.  The map is shared by concurrent
 * requests: decoding is serialised by its mutex.
 *
 * The map borrows each program's proto bytes: from the profiles
 * (xpv_hlo_map_build: keep them alive as long as the map), or from copies
 * made per host (xpv_hlo_list, so that a run's hosts can be analysed one
 * at a time and their profiles released: keep the lists alive instead).
 */
#ifndef XPV_HLO_H
#define XPV_HLO_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis.h"
#include "arena.h"
#include "buf.h"
#include "err.h"
#include "hlo.pb-c.h"
#include "model.h"

/* One instruction with the computation holding it. */
typedef struct xpv_hlo_instr {
    const Xla__HloInstructionProto *ins;
    const Xla__HloComputationProto *comp;
} xpv_hlo_instr;

typedef struct xpv_hlo_program {
    uint64_t program_id;
    char *meta_name;            /* the metadata's name, "jit_f(123)" */
    const uint8_t *bytes;       /* the serialized HloProto (borrowed), or
                                 * NULL when it was larger than its file */
    size_t nbytes;
    size_t file_size;           /* of the profile it came from (0: unknown) */
    /* Lazily decoded (state: 0 not yet, 1 decoded, -1 failed). */
    int state;
    int error_status;          /* when state == -1: 422, or 413 (out of memory) */
    char error[200];
    Xla__HloProto *proto;
    const Xla__HloModuleProto *module;   /* proto->hlo_module, or NULL */
    /* instruction name -> instruction, open addressing */
    xpv_hlo_instr *slots;
    size_t nslots;
    /* instruction id -> instruction, same layout */
    xpv_hlo_instr *id_slots;
    /* computations sorted by (id, position in the module) */
    const Xla__HloComputationProto **comps_by_id;
    size_t ncomps_by_id;
    /* work units left for the GPU cost analysis of all of this program's
     * instructions together (hlo_cost.c; atomic) */
    int64_t cost_units_left;
} xpv_hlo_program;

/* The GPU cost analysis' work budget of one program, all instructions
 * together (one instruction's is hlo_cost.c's WORK_BUDGET): past it costs
 * read 0, so a profile of thousands of ops over a hostile module costs
 * about a second, not one budget per op. */
#define XPV_HLO_COST_PROGRAM_BUDGET 25000000

typedef struct xpv_hlo_map {
    xpv_hlo_program *progs;     /* sorted by program id */
    size_t n;
    size_t total_bytes;         /* sum of nbytes */
    size_t decoded_bytes;       /* proto bytes decoded so far */
    size_t decoded_heap;        /* heap the decoded protos and their indexes
                                 * took, as allocated (measured) */
    pthread_mutex_t mu;
} xpv_hlo_map;

/* Index the HLO protos of every host of `hs` (the first host holding a
 * program wins).  Never fails; an empty map when there are none.  The map
 * points into the profiles. */
xpv_hlo_map *xpv_hlo_map_build(const xpv_hostset *hs);
void xpv_hlo_map_free(xpv_hlo_map *m);

/* One HLO proto of a profile, copied out of it. */
typedef struct xpv_hlo_blob {
    uint64_t program_id;
    const char *meta_name;
    const uint8_t *bytes;       /* NULL when nbytes > file_size */
    size_t nbytes, file_size;
} xpv_hlo_blob;

/* The HLO protos of profile `p` (the first of each program id, in file
 * order), names and bytes copied into `a`.  Returns the count; *out is
 * allocated in `a` (NULL when there are none). */
size_t xpv_hlo_list(const xpv_profile *p, xpv_arena *a, xpv_hlo_blob **out);

/* The map of the hosts whose lists are lists[0..n) (host order: the first
 * host holding a program wins, as xpv_hlo_map_build).  The map borrows the
 * lists' bytes. */
xpv_hlo_map *xpv_hlo_map_from_lists(const xpv_hlo_blob *const *lists, const size_t *counts,
                                    size_t n);

/* Number of `Hlo Proto` / `HLO Proto` bytes stats on the profile's
 * /host:metadata plane. */
size_t xpv_hlo_count_protos(const xpv_profile *p);

/* The program with this id, or NULL. */
const xpv_hlo_program *xpv_hlo_find(const xpv_hlo_map *m, uint64_t program_id);

/* The most heap one map's decoded protos may take (0, the default: no
 * bound); a decode that would pass it fails with 413 naming the program.
 * protobuf-c takes ~224 bytes per 2-byte empty instruction, so 10 MB of
 * hostile proto decoded to 1.2 GB (issue 26, item 10).  The server sets
 * its memory budget (--cache_mb). */
void xpv_hlo_set_decode_budget(size_t bytes);

/* Decode `prog` now if it was not yet.  Returns the program (decoded), or
 * NULL with err filled (422, naming the program) when its proto does not
 * decode; a failure is remembered.  `hs` is not read (the map holds the
 * bytes; the host set of the request may hold no profiles). */
const xpv_hlo_program *xpv_hlo_decode(xpv_hlo_map *m, const xpv_hostset *hs,
                                      const xpv_hlo_program *prog, xpv_err *err);

/* Instruction by name ("fusion.3", a leading '%' is ignored) or by id in a
 * decoded program; {NULL, NULL} when absent. */
xpv_hlo_instr xpv_hlo_instr_by_name(const xpv_hlo_program *p, const char *name, size_t len);
xpv_hlo_instr xpv_hlo_instr_by_id(const xpv_hlo_program *p, int64_t id);
/* Computation by id, or NULL. */
const Xla__HloComputationProto *xpv_hlo_computation(const xpv_hlo_program *p, int64_t id);

/* XLA's text of a shape: "f32[256,128]", "(f32[2], s32[])" (no layout). */
void xpv_hlo_shape_text(xpv_buf *b, const Xla__ShapeProto *s);
/* XLA's text of a shape with its layout (ShapeUtil::HumanStringWithLayout):
 * "f32[8,4]{1,0}", "bf16[128,8]{1,0:T(8,128)(2,1)}", "(f32[2]{0}, s32[])". */
void xpv_hlo_shape_layout_text(xpv_buf *b, const Xla__ShapeProto *s);
/* XLA's one-line text of an instruction (no layouts):
 * "%fusion.1 = f32[8]{...} fusion(f32[8] %p.0, ...), kind=kLoop, calls=%c".
 * Once the text passes XPV_HLO_EXPR_MAX bytes the remaining operands are
 * only counted ("... N more"). */
#define XPV_HLO_EXPR_MAX 16384

/* Slots stepped over by this thread's instruction-id lookups and inserts
 * past the first (a work counter for tests: the tables are seeded, so ids
 * from a file cannot make them linear). */
extern _Thread_local uint64_t xpv_hlo_probes;
void xpv_hlo_expression(xpv_buf *b, const xpv_hlo_program *p, xpv_hlo_instr in);
/* Op category of an instruction, as XProf names HLO categories
 * ("loop fusion", "convolution", "data formatting",
 * "non-fusion elementwise", else the opcode). */
const char *xpv_hlo_category(const Xla__HloInstructionProto *ins);

/* ==== What the HLO tools show for one device op ========================= */

#include "op_metrics.h"

typedef struct xpv_hlo_op {
    const xpv_hlo_program *prog;  /* decoded program, or NULL (none indexed) */
    xpv_hlo_instr in;             /* its instruction, or {NULL, NULL} */
} xpv_hlo_op;

/* The HLO instruction name of a device op: the name in its HLO text
 * ("%fusion.3 = ..." -> "fusion.3") when it has one, else its name. */
xpv_str xpv_hlo_op_name(const xpv_op_metric *op);

/* Resolve `op` (program id + instruction name) in the map, decoding its
 * program when needed.  Returns 0 (out->in.ins NULL when the program or
 * instruction is not there), or -1 with err filled when the op's program
 * has a proto that does not decode. */
int xpv_hlo_resolve(xpv_hlo_map *m, const xpv_hostset *hs, const xpv_op_metric *op,
                    xpv_hlo_op *out, xpv_err *err);

/* ==== Module selector (memory_viewer, module_list) ===================== */

/* The programs of `m` in the order a module selector lists them: by device
 * time (the self time of the device ops of `db` carrying the program's id)
 * descending, then by name.  The first is the default module (the one the
 * device spent most time in).  Returns a malloc'd array of m->n pointers
 * (NULL when the map is empty); `db` may be NULL. */
const xpv_hlo_program **xpv_hlo_programs_by_device_time(const xpv_hlo_map *m,
                                                        const xpv_op_metrics_db *db);

/* The category the HLO tools show: the instruction's (xpv_hlo_category)
 * on GPU, or on TPU when the op's hlo_category stat is empty; else the
 * op's own.  `tpu`: the op db comes from TPU cores. */
const char *xpv_hlo_op_category(int tpu, const xpv_op_metric *op, const xpv_hlo_op *h);
/* "file:line" of the instruction's metadata, or "" (out has n bytes). */
void xpv_hlo_op_source(const xpv_hlo_op *h, char *out, size_t n);

#endif /* XPV_HLO_H */
