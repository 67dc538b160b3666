/*
 * hlo_memory.h - the memory viewer's analysis of one compiled program
 * (XProf xprof/convert/hlo_proto_to_memory_visualization_utils.cc).
 *
 * From the buffer assignment of a decoded HloProto and one memory space
 * (the buffers' `color`): the heap simulator trace of that space replayed
 * in program order (heap size after each event, padded and unpadded), the
 * peak and the logical buffers alive there, each buffer's live span, and
 * the allocations of indefinite lifetime (parameters, outputs, constants,
 * thread-local), whose sizes XProf adds to every heap size.  A pure
 * function of the proto: nothing is cached, nothing is read elsewhere.
 */
#ifndef XPV_HLO_MEMORY_H
#define XPV_HLO_MEMORY_H

#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "buf.h"
#include "err.h"
#include "hlo.pb-c.h"

/* XProf's default: buffers under 16 KiB at peak are summed into one
 * "small" object (hlo_to_tools_data.cc kSmallBufferSize). */
#define XPV_HLO_SMALL_BUFFER_SIZE (16 * 1024)

/* One object of the peak heap (XProf HeapObject). */
typedef struct xpv_heap_object {
    int32_t color;              /* "numbered": its colour index */
    const char *label;          /* "fusion.3: f32[8]{0} # jit(f)/mul" */
    int64_t logical_buffer_id;  /* -1 for the small-buffers object */
    int64_t size;               /* bytes (the logical buffer's) */
    int64_t unpadded_size;      /* bytes, shape without layout padding */
    const char *instruction_name;   /* "fusion.3" or "tuple.1{0}" */
    const char *shape;          /* XLA text with layout: "f32[8,4]{1,0}" */
    const char *tf_op_name;     /* the instruction's metadata op_name */
    const char *group_name;     /* Parameter, Output, Thread-local, Constant, Temporary */
    const char *op_code;
    const char *source_file;    /* "" when the instruction has none */
    int64_t source_line;
} xpv_heap_object;

/* A logical buffer's live span in the trace (events, inclusive). */
typedef struct xpv_buffer_span {
    int64_t id;
    int32_t start, limit;
} xpv_buffer_span;

/* A logical buffer of an indefinite allocation (XProf LogicalBuffer). */
typedef struct xpv_alloc_buffer {
    int64_t id;
    int64_t size;
    const char *hlo_name;       /* NULL when the buffer is unknown */
    const int64_t *shape_index;
    size_t nshape_index;
    const char *shape;
} xpv_alloc_buffer;

/* An allocation of indefinite lifetime (XProf BufferAllocation). */
typedef struct xpv_alloc_info {
    int64_t id;
    int64_t size;
    int entry_parameter, maybe_live_out, reusable;
    xpv_alloc_buffer *buffers;
    size_t nbuffers;
    const char *common_shape;   /* "" unless every buffer has the same shape */
} xpv_alloc_info;

typedef struct xpv_hlo_memory {
    int64_t color;
    int has_trace;              /* a heap simulator trace of this space was replayed */
    int64_t trace_index;        /* which one, or -1 */
    /* After each trace event, then once more at the end (bytes, without the
     * indefinite allocations). */
    int64_t *heap, *unpadded_heap;
    const char **instruction_names;   /* the event's instruction ("" last) */
    size_t ntimeline;
    int64_t peak, peak_unpadded;      /* bytes, without the indefinite ones */
    int64_t peak_position;
    int64_t indefinite_bytes;         /* added to every heap size */
    /* Peak heap: indefinite buffers first, then the simulated ones alive at
     * the peak in the order they were allocated, small ones last. */
    xpv_heap_object *objects;
    size_t nobjects;
    int32_t *by_size;           /* object indices by size, largest first */
    int32_t *to_by_size;        /* object index -> its rank in by_size */
    xpv_buffer_span *spans;     /* sorted by id */
    size_t nspans;
    const char *module_name, *entry_computation_name;
    int64_t entry_parameters_bytes, non_reusable_bytes, maybe_live_out_bytes;
    int64_t total_allocation_bytes, indefinite_allocation_bytes;
    xpv_alloc_info *indefinite;
    size_t nindefinite;
    xpv_arena arena;
} xpv_hlo_memory;

/* Analyse memory space `color` of `proto` (its module and buffer
 * assignment).  Returns NULL with err filled (422) when the trace is
 * inconsistent (a heap size below zero, a buffer freed twice, events of
 * several allocations), as XProf refuses it; the proto is only read and
 * must outlive the result (the result points into it). */
xpv_hlo_memory *xpv_hlo_memory_compute(const Xla__HloProto *proto, int64_t color,
                                       int64_t small_buffer_size, xpv_err *err);
void xpv_hlo_memory_free(xpv_hlo_memory *m);

/* Whether `proto` has a buffer assignment with at least one allocation. */
int xpv_hlo_has_buffer_assignment(const Xla__HloProto *proto);

/* The memory spaces (allocation colours) of `proto`, ascending, written to
 * out[0..max); returns how many there are. */
size_t xpv_hlo_memory_spaces(const Xla__HloProto *proto, int64_t *out, size_t max);

/* Number of heap simulator trace events of `proto` (XProf sorts modules by
 * it when it has nothing better). */
size_t xpv_hlo_heap_trace_events(const Xla__HloProto *proto);


/* Bytes of a shape with the default (unpadded) layout; a tuple counts one
 * 8-byte pointer per element (XProf ShapeUnpaddedSize). */
int64_t xpv_hlo_shape_unpadded_bytes(const Xla__ShapeProto *s);

#endif /* XPV_HLO_MEMORY_H */
