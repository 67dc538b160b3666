/*
 * arena.h - bump allocator.  Everything a profile (or a converter's derived
 * data) allocates comes from one arena and is released in one call.
 * Allocation failure aborts the process (like Redis' zmalloc) unless the
 * thread runs inside xpv_oom_run() (the server runs every build of a
 * request's answer there), which then fails that one build instead; the
 * decoder, whose sizes come from the file, uses xpv_arena_try_alloc() and
 * checks them against its memory budget first.
 */
#ifndef XPV_ARENA_H
#define XPV_ARENA_H

#include <stddef.h>

typedef struct xpv_arena_chunk xpv_arena_chunk;

typedef struct xpv_arena_block xpv_arena_block;

typedef struct xpv_arena {
    xpv_arena_chunk *head;   /* newest chunk first */
    xpv_arena_block *adopted; /* malloc'ed blocks freed with the arena */
    size_t chunk_size;       /* default size of the next chunk */
    size_t total;            /* bytes obtained from the system */
} xpv_arena;

void xpv_arena_init(xpv_arena *a, size_t chunk_size);
/* Uninitialised memory, aligned to 16 bytes. */
void *xpv_arena_alloc(xpv_arena *a, size_t n);
/* xpv_arena_alloc() that returns NULL instead of aborting when memory
 * runs out (allocations sized by untrusted input: the decoder). */
void *xpv_arena_try_alloc(xpv_arena *a, size_t n);
/* Zeroed memory. */
void *xpv_arena_calloc(xpv_arena *a, size_t count, size_t size);
/* Copy `n` bytes and append a NUL. */
char *xpv_arena_strndup(xpv_arena *a, const char *s, size_t n);
/* Take ownership of a malloc'ed block of `n` bytes: it is freed by
 * xpv_arena_free.  Lets a caller grow a big array with realloc (mremap, no
 * copy) and hand it over instead of copying it into the arena. */
void xpv_arena_adopt(xpv_arena *a, void *p, size_t n);
void xpv_arena_free(xpv_arena *a);

/* Checked malloc family: on OOM, unwind to the thread's innermost
 * xpv_oom_run(), or abort with a message when there is none.  The
 * environment variable XPV_ALLOC_LIMIT (bytes, like git's GIT_ALLOC_LIMIT)
 * makes any single allocation above it fail, for tests. */
void *xpv_xmalloc(size_t n);
void *xpv_xcalloc(size_t count, size_t size);
void *xpv_xrealloc(void *p, size_t n);
char *xpv_xstrdup(const char *s);

/* Run fn(arg) so that an allocation failure inside it (xpv_x*alloc,
 * xpv_arena_alloc, on this thread) returns here instead of aborting the
 * process.  Returns fn's result, or XPV_OOM_FAILED with the size of the
 * allocation that failed in *failed (may be NULL).  The unwinding skips
 * fn's cleanup: whatever fn allocated before the failure is lost, and fn
 * must not hold a lock or a reference it cannot lose while it allocates
 * (run such sections in a nested xpv_oom_run that releases them).
 * Nests; a thread started inside fn has no such scope of its own. */
#define XPV_OOM_FAILED (-12345)
int xpv_oom_run(int (*fn)(void *arg), void *arg, size_t *failed);
/* Report that an allocation of `n` bytes failed: unwinds to the innermost
 * xpv_oom_run() of this thread, or aborts.  For a failure seen on another
 * thread (base/par.h) or by a caller of a non-aborting allocator. */
_Noreturn void xpv_oom_raise(size_t n);

#endif
