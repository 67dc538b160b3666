/*
 * wire_write.h - the protobuf wire-format writer: the one used by every
 * producer of protobuf bytes (the Chrome-trace importer's XSpace, the
 * synthetic profile generator).  The readers are in wire.h.
 *
 * Everything appends to an xpv_buf (which aborts on out-of-memory like
 * every xpv_buf append).  Length-delimited fields whose size is not known
 * in advance are written in place with wire_frame_open()/..._close(), so a
 * message is never built in one buffer and then copied into another.
 */
#ifndef XPV_WIRE_WRITE_H
#define XPV_WIRE_WRITE_H

#include <stdint.h>
#include <string.h>

#include "buf.h"
#include "wire.h"

/* Bytes of the varint encoding of v (1..10). */
static inline size_t wire_varint_size(uint64_t v) {
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

/* Encode v at p (room for 10 bytes); returns the bytes written. */
static inline size_t wire_varint_at(uint8_t *p, uint64_t v) {
    size_t n = 0;
    while (v >= 0x80) {
        p[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (uint8_t)v;
    return n;
}

static inline void wire_put_varint(xpv_buf *b, uint64_t v) {
    if (b->cap - b->len < 10) xpv_buf_reserve(b, 10);
    b->len += wire_varint_at((uint8_t *)b->data + b->len, v);
}

static inline void wire_put_tag(xpv_buf *b, unsigned field, unsigned wt) {
    wire_put_varint(b, (uint64_t)field << 3 | wt);
}

/* Varint field, always written (oneof members, required values). */
static inline void wire_put_uint(xpv_buf *b, unsigned field, uint64_t v) {
    wire_put_tag(b, field, WT_VARINT);
    wire_put_varint(b, v);
}

/* Varint field, left out when 0 (proto3 default). */
static inline void wire_put_int(xpv_buf *b, unsigned field, int64_t v) {
    if (v) wire_put_uint(b, field, (uint64_t)v);
}

static inline void wire_put_bytes(xpv_buf *b, unsigned field, const void *p, size_t n) {
    wire_put_tag(b, field, WT_LEN);
    wire_put_varint(b, n);
    xpv_buf_add(b, p, n);
}

static inline void wire_put_str(xpv_buf *b, unsigned field, const char *s) {
    wire_put_bytes(b, field, s, strlen(s));
}

/* Fixed 64-bit double field (little-endian IEEE 754). */
static inline void wire_put_double(xpv_buf *b, unsigned field, double d) {
    uint64_t u;
    uint8_t le[8];
    memcpy(&u, &d, sizeof u);
    for (int i = 0; i < 8; i++) le[i] = (uint8_t)(u >> (8 * i));
    wire_put_tag(b, field, WT_I64);
    xpv_buf_add(b, le, 8);
}

/* Open length-delimited field `field` before its length is known: the tag
 * and 5 reserved bytes (lengths below 32 GiB).  Returns the offset of the
 * body, for one of the two closes below. */
static inline size_t wire_frame_open(xpv_buf *b, unsigned field) {
    wire_put_tag(b, field, WT_LEN);
    xpv_buf_add(b, "\x80\x80\x80\x80\x00", 5);
    return b->len;
}

/* Close with the length as a 5-byte padded varint (which protobuf decoders
 * accept): nothing moves, for frames holding gigabytes. */
static inline void wire_frame_close_padded(xpv_buf *b, size_t body) {
    uint64_t n = b->len - body;
    uint8_t *p = (uint8_t *)b->data + body - 5;
    for (int i = 0; i < 5; i++) {
        p[i] = (uint8_t)((n & 0x7f) | (i < 4 ? 0x80 : 0));
        n >>= 7;
    }
}

/* Close with the canonical (shortest) length varint, sliding the body
 * down over the unused reserved bytes: the bytes protoc would write. */
static inline void wire_frame_close(xpv_buf *b, size_t body) {
    size_t len = b->len - body;
    size_t k = wire_varint_size(len);
    uint8_t *p = (uint8_t *)b->data + body - 5;
    if (k < 5) memmove(p + k, p + 5, len);
    wire_varint_at(p, len);
    b->len -= 5 - k;
}

#endif /* XPV_WIRE_WRITE_H */
