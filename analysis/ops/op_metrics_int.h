/*
 * op_metrics_int.h - what the op metrics builder (op_metrics.c) shares with
 * its TPU part (op_metrics_tpu.c); private to those two.
 */
#ifndef XPV_OP_METRICS_INT_H
#define XPV_OP_METRICS_INT_H

#include "op_metrics.h"

static inline int str_is(xpv_str a, const char *lit) { return xpv_str_eq(a, lit); }

static inline xpv_str mkstr(const char *p, size_t n) {
    xpv_str s = {p, (uint32_t)n};
    return s;
}

/* Pointer-keyed memo (op_metrics.c). */
typedef struct memo_key {
    uint64_t w[6];
} memo_key;

typedef struct memo_val {
    uint32_t row;               /* a table row index */
    xpv_str a, b;               /* free for the caller (parsed slices) */
} memo_val;

typedef struct memo {
    memo_key *keys;
    memo_val *vals;
    uint8_t *used;
    size_t n, nslots;
} memo;

/* Op table: name (+ program id) -> row. */
typedef struct optab {
    xpv_op_metric *rows;
    uint64_t *hash;
    int64_t *pid;
    uint32_t *len;              /* strlen(rows[i].name) */
    size_t n, cap;
    uint32_t *slots;            /* row index + 1 */
    size_t nslots;
    xpv_arena *arena;
} optab;

/* Kernel reports table. */
typedef struct ktab {
    xpv_kernel_report *rows;
    uint64_t *hash;
    size_t n, cap;
    uint32_t *slots;
    size_t nslots;
} ktab;

/* The device op metrics being built. */
typedef struct dev_acc {
    optab tab;
    ktab kern;
    int64_t total_time_ps, total_op_time_ps, idle_ps;
    uint64_t kernel_events, kernel_total_ns;
    char *scratch;
    size_t capscratch;
    memo tfop;                  /* (meta, tf_op ptr, len) -> row, type, op name */
    memo hlo;                   /* (hlo op ptr, len, program id) -> row */
    memo kern_memo;             /* kernel key pointers -> ktab row */
    size_t tpu_ops;             /* (program, symbol) rows over TPU planes */
    int64_t tpu_busy_ps, tpu_idle_ps; /* duty-cycle tracker, summed over cores */
    /* GPU planes read so far, and per row the last one (1-based) it ran on:
     * an op's is_eager is its first execution's on each plane. */
    uint32_t plane_no;
    uint32_t *row_plane;
    size_t caprow;
} dev_acc;

/* Row of (pid, name) in the table, created empty when new. */
uint32_t xpv_om_optab_row(optab *t, int64_t pid, xpv_str name);
void xpv_om_optab_init(optab *t, xpv_arena *a);
void xpv_om_optab_free(optab *t);
/* Doubles a row table's slot array (slot = row index + 1, 0 empty; linear
 * probing on hash[row]). */
void xpv_om_slots_rehash(uint32_t **slots, size_t *nslots, const uint64_t *hash, size_t n);
/* The build's byte hash, from `h`; XPV_OM_HASH_SEED (per process) to start. */
uint64_t xpv_om_hash_bytes(uint64_t h, const void *p, size_t n);
#define XPV_OM_HASH_SEED (0xcbf29ce484222325ull ^ xpv_hash_seed)
/* `s` copied into the arena, NUL-terminated. */
const char *xpv_om_arena_str(xpv_arena *a, xpv_str s);
/* The TPU op database of TensorCore planes (op_metrics_tpu.c), in two
 * steps so that planes are read on several threads and the device db
 * still gets them in plane order: xpv_om_tpu_read reads pls[0..n) (on up
 * to one thread per CPU; the array is the caller's, freed with
 * xpv_om_tpu_res_free), xpv_om_tpu_add adds the result of pls[i] to `d`. */
typedef struct xpv_om_tpu_res xpv_om_tpu_res;
xpv_om_tpu_res *xpv_om_tpu_read(const xpv_plane *const *pls, size_t n);
void xpv_om_tpu_add(dev_acc *d, xpv_om_tpu_res *res, size_t i);
void xpv_om_tpu_res_free(xpv_om_tpu_res *res, size_t n);

#endif
