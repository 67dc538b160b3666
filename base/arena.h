/*
 * arena.h - bump allocator.  Everything a profile (or a converter's derived
 * data) allocates comes from one arena and is released in one call.
 * Allocation failure aborts the process (like Redis' zmalloc), except in
 * xpv_arena_try_alloc(): the decoder, whose sizes come from the file,
 * checks them against its memory budget first and fails the file (not the
 * server) when memory still runs out.
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

/* Checked malloc family: abort with a message on OOM. */
void *xpv_xmalloc(size_t n);
void *xpv_xcalloc(size_t count, size_t size);
void *xpv_xrealloc(void *p, size_t n);
char *xpv_xstrdup(const char *s);

#endif
