/*
 * bench_util.h - helpers shared by the benchmark programs in bench/:
 * clocks, reading a whole input file, the free callback handed to
 * xpv_decode, and a qsort comparator for timing samples.
 *
 * Compiled into every bench executable (bench/CMakeLists.txt); never part of
 * the product libraries.  Failures here are fatal: a bench prints the reason
 * and exits 1.
 */
#ifndef XPV_BENCH_UTIL_H
#define XPV_BENCH_UTIL_H

#include <stddef.h>

#include "analysis.h"
#include "model.h"
#include "xplane.h"

/* Wall-clock seconds from CLOCK_MONOTONIC (only differences are meaningful). */
double bench_now(void);

/* CPU seconds used by the whole process (CLOCK_PROCESS_CPUTIME_ID). */
double bench_cpu_now(void);

/*
 * Read the file at `path` into one malloc'ed buffer and store its size in
 * `*len`.  The caller owns the result and frees it with free(3), or hands it
 * to xpv_decode with bench_buf_free.  On any error (open, stat, read, out of
 * memory) prints the reason to stderr and exits 1; never returns NULL.
 */
void *bench_read_all(const char *path, size_t *len);

/*
 * Decode `len` bytes at `buf` with xpv_decode (passing `free_fn` on, NULL
 * to keep `buf` the caller's) and store the seconds it took in `*secs`.
 * Returns the profile (free it with xpv_profile_free).  When the bytes do
 * not decode, prints "decode failed: MSG" to stderr and exits 1.
 */
xpv_profile *bench_decode(void *buf, size_t len, void (*free_fn)(void *, size_t), double *secs);

/* xpv_decode free callback for buffers from bench_read_all: free(b). */
void bench_buf_free(void *b, size_t n);

/* Without a FILE argument, prints "usage: NAME FILE.xplane.pb `args`"
 * (NAME: argv[0]'s last component) and exits 2. */
void bench_need_file(int argc, char **argv, const char *args);

/* The repetitions of a bench run as `NAME FILE.xplane.pb [reps] ...`:
 * argv[2], at least 1 (`dflt` when absent).  Without FILE prints the usage
 * line and exits 2. */
int bench_reps(int argc, char **argv, int dflt);

/* One decoded profile as a one-host set named "host" (hs borrows the
 * struct's arrays: keep it where it is). */
typedef struct bench_host {
    const xpv_profile *profiles[1];
    const char *names[1];
    xpv_hostset hs;
    size_t len;       /* bench_load_host: the file's size */
    double decode_s;  /* bench_load_host: the decode's seconds */
} bench_host;
void bench_host_init(bench_host *h, const xpv_profile *p);

/* Read and decode the xplane at `path` (bench_read_all + bench_decode; the
 * profile owns the bytes) and make it the one host of `h`, with the file's
 * size and the decode's seconds.  Returns the profile (free it with
 * xpv_profile_free); exits 1 when it cannot. */
xpv_profile *bench_load_host(const char *path, bench_host *h);

/* qsort comparator for an array of double, ascending. */
int bench_cmp_double(const void *a, const void *b);

#endif
