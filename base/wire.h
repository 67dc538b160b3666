/*
 * wire.h - protobuf wire-format primitives shared by the decoder (ingest/)
 * and the lazy stat iterator (model/).
 *
 * All readers take a cursor and an end pointer and return 0 on malformed or
 * truncated input (the cursor is then unspecified).
 */
#ifndef XPV_WIRE_H
#define XPV_WIRE_H

#include <stdint.h>
#include <string.h>

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };

static inline int wire_varint(const uint8_t **pp, const uint8_t *end, uint64_t *out) {
    const uint8_t *p = *pp;
    if (p < end && *p < 0x80) {
        *out = *p;
        *pp = p + 1;
        return 1;
    }
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (p >= end) return 0;
        uint8_t b = *p++;
        v |= (uint64_t)(b & 0x7F) << shift;
        if (b < 0x80) {
            *out = v;
            *pp = p;
            return 1;
        }
    }
    return 0; /* more than 10 bytes */
}

/* Length-delimited payload: sets *sub to its start, advances past it. */
static inline int wire_len(const uint8_t **pp, const uint8_t *end, const uint8_t **sub,
                           uint64_t *len) {
    uint64_t n;
    if (!wire_varint(pp, end, &n)) return 0;
    if (n > (uint64_t)(end - *pp)) return 0;
    *sub = *pp;
    *len = n;
    *pp += n;
    return 1;
}

/* Skip a field's value of wire type `wt`. */
static inline int wire_skip(const uint8_t **pp, const uint8_t *end, unsigned wt) {
    uint64_t v;
    const uint8_t *s;
    switch (wt) {
    case WT_VARINT: return wire_varint(pp, end, &v);
    case WT_I64:
        if (end - *pp < 8) return 0;
        *pp += 8;
        return 1;
    case WT_LEN: return wire_len(pp, end, &s, &v);
    case WT_I32:
        if (end - *pp < 4) return 0;
        *pp += 4;
        return 1;
    default: return 0; /* groups (3, 4) and 6, 7 are not valid here */
    }
}

/* Advance *pp to the next length-delimited field number `field` of a
 * message whose fields were already validated.  Returns 1 with the payload
 * in [*sub, *sub + *len), or 0 at the end of the message. */
static inline int wire_next_len(const uint8_t **pp, const uint8_t *end, unsigned field,
                                const uint8_t **sub, uint64_t *len) {
    const uint64_t want = ((uint64_t)field << 3) | WT_LEN;
    while (*pp < end) {
        uint64_t tag = 0;
        if (!wire_varint(pp, end, &tag)) return 0;
        if (tag == want) return wire_len(pp, end, sub, len);
        if (!wire_skip(pp, end, (unsigned)(tag & 7))) return 0;
    }
    return 0;
}

static inline double wire_double(const uint8_t *p) {
    uint64_t u = (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 |
                 (uint64_t)p[3] << 24 | (uint64_t)p[4] << 32 | (uint64_t)p[5] << 40 |
                 (uint64_t)p[6] << 48 | (uint64_t)p[7] << 56;
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

#endif
