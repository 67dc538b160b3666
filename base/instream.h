/*
 * instream.h - a pull stream of bytes from memory or a file descriptor,
 * gunzipped on the fly when it starts with the gzip magic (concatenated
 * members included).  With gz.c, the only place that inflates.
 *
 * Used by importers that parse as they read (the Chrome-trace JSON
 * importer), so a large .json.gz is never held inflated in memory.
 */
#ifndef XPV_INSTREAM_H
#define XPV_INSTREAM_H

#include <stddef.h>
#include <stdint.h>

typedef struct xpv_instream xpv_instream;

/* A stream over `len` bytes at `data` (borrowed until free). */
xpv_instream *xpv_instream_mem(const void *data, size_t len);
/* A stream reading `fd` (not closed by free).  The first bytes are read
 * now to probe for gzip; a read error then is kept for
 * xpv_instream_error(). */
xpv_instream *xpv_instream_fd(int fd);
void xpv_instream_free(xpv_instream *s);

/* Up to `cap` bytes of (inflated) content into `buf`: the count, 0 at the
 * end, -1 on a read error or corrupt gzip (see xpv_instream_error).  The
 * signature of xpv_ct_read_fn: pass the stream as the context. */
long xpv_instream_read(void *s, void *buf, size_t cap);

int xpv_instream_is_gzip(const xpv_instream *s);
/* Raw (compressed) bytes taken from the source so far. */
uint64_t xpv_instream_raw_bytes(const xpv_instream *s);
/* Whether the stream failed before any content (the fd probe). */
int xpv_instream_failed_early(const xpv_instream *s);
/* Why the last read failed, written into msg ("read error after N bytes:
 * ...", "corrupt gzip stream (at compressed byte N)", "gzip bomb: ...");
 * returns the HTTP status it calls for (413 for a gzip bomb: past
 * XPV_GZ_RATIO_FLOOR inflated bytes, more than XPV_GZ_MAX_RATIO:1, the
 * rule of gz.c; else 500), 0 when it did not fail. */
int xpv_instream_error(const xpv_instream *s, char *msg, size_t n);

#endif /* XPV_INSTREAM_H */
