/*
 * arena.h - bump allocator.  Everything a profile (or a converter's derived
 * data) allocates comes from one arena and is released in one call.
 * Allocation failure aborts the process (like Redis' zmalloc): the server
 * bounds memory before decoding, by the configured size caps.
 */
#ifndef XPV_ARENA_H
#define XPV_ARENA_H

#include <stddef.h>

typedef struct xpv_arena_chunk xpv_arena_chunk;

typedef struct xpv_arena {
    xpv_arena_chunk *head;   /* newest chunk first */
    size_t chunk_size;       /* default size of the next chunk */
    size_t total;            /* bytes obtained from the system */
} xpv_arena;

void xpv_arena_init(xpv_arena *a, size_t chunk_size);
/* Uninitialised memory, aligned to 16 bytes. */
void *xpv_arena_alloc(xpv_arena *a, size_t n);
/* Zeroed memory. */
void *xpv_arena_calloc(xpv_arena *a, size_t count, size_t size);
/* Copy `n` bytes and append a NUL. */
char *xpv_arena_strndup(xpv_arena *a, const char *s, size_t n);
void xpv_arena_free(xpv_arena *a);

/* Checked malloc family: abort with a message on OOM. */
void *xpv_xmalloc(size_t n);
void *xpv_xcalloc(size_t count, size_t size);
void *xpv_xrealloc(void *p, size_t n);
char *xpv_xstrdup(const char *s);

#endif
