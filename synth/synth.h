/*
 * synth.h - synthetic but realistic TensorFlow-GPU-shaped XSpaces.
 *
 * Used for the demo logdir, tests and benchmarks.  Generation is pure
 * (options -> bytes); xpv_synth_logdir() is the one function that writes
 * files.  Output is deterministic for a given seed.
 */
#ifndef XPV_SYNTH_H
#define XPV_SYNTH_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

typedef struct xpv_synth_opts {
    uint64_t size_bytes;   /* approximate bytes per host file (default 2 MB) */
    int hosts;             /* host files per run (default 1) */
    int steps;             /* training steps (default 10) */
    int gpus;              /* GPU planes per host (default 1) */
    uint64_t seed;         /* default 1 */
} xpv_synth_opts;

/* Fill unset (zero) fields with the defaults above. */
void xpv_synth_defaults(xpv_synth_opts *o);

/* Blocks per step R (see docs/synth.md): derived from size_bytes, steps and
 * gpus so that a host file comes out near size_bytes.  88 for the defaults. */
int xpv_synth_blocks(const xpv_synth_opts *o);

/* Approximate bytes of one host file for these options.  xpv_synth_host()
 * refuses (-1) above 24 GiB. */
uint64_t xpv_synth_estimate(const xpv_synth_opts *o);

/* Host name (= file name minus .xplane.pb) of host `host_index`:
 * "localhost" for a one-host run, else "worker<N>". */
void xpv_synth_hostname(const xpv_synth_opts *o, int host_index, char *buf, size_t n);

/* Serialize host `host_index` (0-based) of a run into `out` (appended).
 * Returns 0, or -1 (nothing appended) for a bad index or a profile too
 * large to frame. */
int xpv_synth_host(const xpv_synth_opts *o, int host_index, xpv_buf *out);

/* Write `<out_dir>/plugins/profile/<run>/<host>.xplane.pb` for every host.
 * `run` may be NULL (a timestamp-like default is used).  Returns 0, or -1
 * with a message in err. */
int xpv_synth_logdir(const xpv_synth_opts *o, const char *out_dir,
                     const char *run, char *err, size_t errlen);

#endif
