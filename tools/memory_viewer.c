/*
 * memory_viewer.c - the memory viewer tool (XProf memory_viewer:
 * xprof/convert/hlo_to_tools_data.cc and
 * hlo_proto_to_memory_visualization_utils.cc).
 *
 * One program (HLO module) of the run: `module_name` as XProf names it
 * ("jit_f(123)": the module name and its program id, the /host:metadata
 * event name), else `program_id` (a module whose name contains it, as
 * XProf looks it up), else the module the device spent most time in (the
 * first one /module_list lists).  `memory_space` (default 0) picks the
 * buffers' colour.  The analysis is analysis/hlo/hlo_memory.c; this file writes
 * XProf's PreprocessResult as protobuf JSON (lowerCamelCase, int64 as
 * strings, every primitive field printed, sizes in MiB), plus one key of
 * ours, "memorySpaces" (the colours the program's allocations use, for a
 * memory-space selector).  Not produced: allocationTimeline (XProf renders
 * it with Graphviz; empty here), bufferBlocks and the scoped VMEM fields of
 * newer XProf versions, sourceInfo.stackFrame (empty).
 *
 * Errors name the program: a proto that does not decode (422), a program
 * without a buffer assignment (404), an inconsistent heap trace (422).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hlo.h"
#include "hlo_memory.h"
#include "opstats.h"
#include "tool.h"

#define MIB (1024.0 * 1024.0)

static void key(xpv_buf *b, const char *k) {
    xpv_buf_putc(b, '"');
    xpv_buf_puts(b, k);
    xpv_buf_puts(b, "\":");
}

static void mib(xpv_buf *b, int64_t bytes) { xpv_buf_double(b, (double)bytes / MIB); }

static void heap_object(xpv_buf *b, const xpv_heap_object *o) {
    xpv_buf_printf(b, "{\"numbered\":%d,\"label\":", (int)o->color);
    xpv_buf_json_cstr(b, o->label);
    xpv_buf_printf(b, ",\"logicalBufferId\":%lld,\"logicalBufferSizeMib\":",
                   (long long)o->logical_buffer_id);
    mib(b, o->size);
    xpv_buf_puts(b, ",\"unpaddedShapeMib\":");
    mib(b, o->unpadded_size);
    xpv_buf_puts(b, ",\"instructionName\":");
    xpv_buf_json_cstr(b, o->instruction_name);
    xpv_buf_puts(b, ",\"shapeString\":");
    xpv_buf_json_cstr(b, o->shape);
    xpv_buf_puts(b, ",\"tfOpName\":");
    xpv_buf_json_cstr(b, o->tf_op_name);
    xpv_buf_puts(b, ",\"groupName\":");
    xpv_buf_json_cstr(b, o->group_name);
    xpv_buf_puts(b, ",\"opCode\":");
    xpv_buf_json_cstr(b, o->op_code);
    if (o->source_file[0]) {
        xpv_buf_puts(b, ",\"sourceInfo\":{\"fileName\":");
        xpv_buf_json_cstr(b, o->source_file);
        xpv_buf_printf(b, ",\"lineNumber\":%lld,\"stackFrame\":\"\"}", (long long)o->source_line);
    }
    xpv_buf_putc(b, '}');
}

static void objects(xpv_buf *b, const xpv_hlo_memory *m, const int32_t *order) {
    xpv_buf_putc(b, '[');
    for (size_t i = 0; i < m->nobjects; i++) {
        if (i) xpv_buf_putc(b, ',');
        heap_object(b, &m->objects[order ? (size_t)order[i] : i]);
    }
    xpv_buf_putc(b, ']');
}

static void heap_sizes(xpv_buf *b, const xpv_hlo_memory *m, const int64_t *v) {
    xpv_buf_putc(b, '[');
    for (size_t i = 0; i < m->ntimeline; i++) {
        if (i) xpv_buf_putc(b, ',');
        xpv_buf_double(b, (double)v[i] / MIB + (double)m->indefinite_bytes / MIB);
    }
    xpv_buf_putc(b, ']');
}

static void i32_list(xpv_buf *b, const int32_t *v, size_t n) {
    xpv_buf_putc(b, '[');
    for (size_t i = 0; i < n; i++) xpv_buf_printf(b, i ? ",%d" : "%d", (int)v[i]);
    xpv_buf_putc(b, ']');
}

static void indefinite(xpv_buf *b, const xpv_hlo_memory *m) {
    xpv_buf_putc(b, '[');
    for (size_t i = 0; i < m->nindefinite; i++) {
        const xpv_alloc_info *a = &m->indefinite[i];
        if (i) xpv_buf_putc(b, ',');
        xpv_buf_printf(b, "{\"id\":\"%lld\",\"sizeMib\":", (long long)a->id);
        mib(b, a->size);
        xpv_buf_puts(b, ",\"attributes\":[");
        int first = 1;
        const char *attrs[3] = {a->entry_parameter ? "entry computation parameter" : NULL,
                                a->maybe_live_out ? "may-be live out" : NULL,
                                a->reusable ? "reusable" : NULL};
        for (int k = 0; k < 3; k++)
            if (attrs[k]) {
                if (!first) xpv_buf_putc(b, ',');
                xpv_buf_json_cstr(b, attrs[k]);
                first = 0;
            }
        xpv_buf_puts(b, "],\"logicalBuffers\":[");
        for (size_t j = 0; j < a->nbuffers; j++) {
            const xpv_alloc_buffer *lb = &a->buffers[j];
            if (j) xpv_buf_putc(b, ',');
            xpv_buf_printf(b, "{\"id\":\"%lld\",\"shape\":", (long long)lb->id);
            xpv_buf_json_cstr(b, lb->shape ? lb->shape : "");
            xpv_buf_puts(b, ",\"sizeMib\":");
            mib(b, lb->size);
            xpv_buf_puts(b, ",\"hloName\":");
            xpv_buf_json_cstr(b, lb->hlo_name ? lb->hlo_name : "");
            xpv_buf_puts(b, ",\"shapeIndex\":[");
            for (size_t k = 0; k < lb->nshape_index; k++)
                xpv_buf_printf(b, k ? ",\"%lld\"" : "\"%lld\"", (long long)lb->shape_index[k]);
            xpv_buf_puts(b, "]}");
        }
        xpv_buf_puts(b, "],\"commonShape\":");
        xpv_buf_json_cstr(b, a->common_shape);
        xpv_buf_putc(b, '}');
    }
    xpv_buf_putc(b, ']');
}

/* PreprocessResult, fields in the proto's declaration order. */
static void write_result(xpv_buf *b, const xpv_hlo_memory *m, const Xla__HloProto *proto) {
    xpv_buf_putc(b, '{');
    key(b, "heapSizes");
    heap_sizes(b, m, m->heap);
    xpv_buf_putc(b, ',');
    key(b, "unpaddedHeapSizes");
    heap_sizes(b, m, m->unpadded_heap);
    xpv_buf_putc(b, ',');
    key(b, "hloInstructionNames");
    xpv_buf_putc(b, '[');
    for (size_t i = 0; i < m->ntimeline; i++) {
        if (i) xpv_buf_putc(b, ',');
        xpv_buf_json_cstr(b, m->instruction_names[i]);
    }
    xpv_buf_puts(b, "],");
    key(b, "maxHeap");
    objects(b, m, NULL);
    xpv_buf_putc(b, ',');
    key(b, "maxHeapBySize");
    objects(b, m, m->by_size);
    xpv_buf_putc(b, ',');
    key(b, "logicalBufferSpans");
    xpv_buf_putc(b, '{');
    for (size_t i = 0; i < m->nspans; i++)
        xpv_buf_printf(b, "%s\"%lld\":{\"start\":%d,\"limit\":%d}", i ? "," : "",
                       (long long)m->spans[i].id, (int)m->spans[i].start,
                       (int)m->spans[i].limit);
    xpv_buf_puts(b, "},");
    key(b, "maxHeapToBySize");
    i32_list(b, m->to_by_size, m->nobjects);
    xpv_buf_putc(b, ',');
    key(b, "bySizeToMaxHeap");
    i32_list(b, m->by_size, m->nobjects);
    xpv_buf_putc(b, ',');
    key(b, "moduleName");
    xpv_buf_json_cstr(b, m->module_name);
    xpv_buf_putc(b, ',');
    key(b, "entryComputationName");
    xpv_buf_json_cstr(b, m->entry_computation_name);
    xpv_buf_putc(b, ',');
    double add = (double)m->indefinite_bytes / MIB;
    key(b, "peakHeapMib");
    xpv_buf_double(b, (double)m->peak / MIB + add);
    xpv_buf_putc(b, ',');
    key(b, "peakUnpaddedHeapMib");
    xpv_buf_double(b, (double)m->peak_unpadded / MIB + add);
    xpv_buf_printf(b, ",\"peakHeapSizePosition\":%d,", (int)m->peak_position);
    key(b, "entryComputationParametersMib");
    mib(b, m->entry_parameters_bytes);
    xpv_buf_putc(b, ',');
    key(b, "nonReusableMib");
    mib(b, m->non_reusable_bytes);
    xpv_buf_putc(b, ',');
    key(b, "maybeLiveOutMib");
    mib(b, m->maybe_live_out_bytes);
    xpv_buf_putc(b, ',');
    key(b, "totalBufferAllocationMib");
    mib(b, m->total_allocation_bytes);
    xpv_buf_putc(b, ',');
    key(b, "indefiniteBufferAllocationMib");
    mib(b, m->indefinite_allocation_bytes);
    xpv_buf_putc(b, ',');
    key(b, "indefiniteLifetimes");
    indefinite(b, m);
    xpv_buf_puts(b, ",\"allocationTimeline\":\"\",\"memorySpaces\":[");
    int64_t spaces[64];
    size_t ns = xpv_hlo_memory_spaces(proto, spaces, 64);
    for (size_t i = 0; i < ns; i++) xpv_buf_printf(b, i ? ",%lld" : "%lld", (long long)spaces[i]);
    xpv_buf_puts(b, "]}");
}

/* The program the query names, or the default one. */
static const xpv_hlo_program *pick_program(const xpv_op_stats *os, const xpv_params *q,
                                           xpv_err *err) {
    const xpv_hlo_map *m = os->hlo;
    const char *name = xpv_param(q, "module_name");
    const char *pid = xpv_param(q, "program_id");
    if (name && *name) {
        for (size_t i = 0; i < m->n; i++)
            if (!strcmp(m->progs[i].meta_name, name)) return &m->progs[i];
        xpv_err_set(err, XPV_E_NOT_FOUND, "no HLO module %.200s in this profile (see module_list)", name);
        return NULL;
    }
    if (pid && *pid) {
        for (size_t i = 0; i < m->n; i++)
            if (strstr(m->progs[i].meta_name, pid)) return &m->progs[i];
        xpv_err_set(err, XPV_E_NOT_FOUND, "no HLO module with program id %.100s in this profile", pid);
        return NULL;
    }
    const xpv_hlo_program **order = xpv_hlo_programs_by_device_time(m, &os->ops->device);
    const xpv_hlo_program *p = order ? order[0] : NULL;
    free(order);
    if (!p) xpv_err_set(err, XPV_E_NOT_FOUND, "this profile has no HLO module (no HLO protos)");
    return p;
}

int xpv_memory_viewer_render(const xpv_hostset *hs, const void *derived, const xpv_params *q,
                             xpv_buf *out, xpv_err *err) {
    const xpv_op_stats *os = derived;
    const xpv_hlo_program *p = pick_program(os, q, err);
    if (!p) return -1;
    p = xpv_hlo_decode(os->hlo, hs, p, err);
    if (!p) return -1;
    if (!xpv_hlo_has_buffer_assignment(p->proto))
        return xpv_err_set(err, XPV_E_NOT_FOUND, "program %s: this program has no buffer assignment",
                           p->meta_name);
    int64_t color = 0;
    const char *ms = xpv_param(q, "memory_space");
    if (ms && *ms) {
        char *end;
        long long v = strtoll(ms, &end, 10);
        /* an int, else 0, as XProf's SimpleAtoi fallback */
        if (end != ms && !*end && v >= -0x7fffffffLL - 1 && v <= 0x7fffffff) color = v;
    }
    xpv_err e2;
    xpv_err_clear(&e2);
    xpv_hlo_memory *m = xpv_hlo_memory_compute(p->proto, color, XPV_HLO_SMALL_BUFFER_SIZE, &e2);
    if (!m)
        return xpv_err_set(err, e2.status, "program %s: heap simulator trace: %s",
                           p->meta_name, e2.msg);
    write_result(out, m, p->proto);
    xpv_hlo_memory_free(m);
    return 0;
}

int xpv_memory_viewer_available(const xpv_profile *p) { return xpv_hlo_count_protos(p) > 0; }
