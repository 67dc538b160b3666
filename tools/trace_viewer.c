/*
 * trace_viewer.c - the trace viewer tool: Chrome trace-event JSON from the
 * trace index (analysis/trace/trace_index.h), written with the buffered writer.
 *
 * Modes (xprof-reference.md §2.12), chosen by the query:
 *   full       tag=trace_viewer with no window params: every event with all
 *              its args, process/thread metadata, flows, counters.  Loads
 *              unchanged in Perfetto UI and chrome://tracing.  No event cap.
 *              Gigabytes on big profiles, so it is also offered as a
 *              resumable writer (`xpv_trace_viewer_stream`) that the
 *              server sends chunk by chunk; render() runs the same writer
 *              to the end.
 *   streaming  tag=trace_viewer@, or start_time_ms / end_time_ms /
 *              resolution given: the events visible in the window at the
 *              resolution (XProf's rule), each with args {uid, group_id}
 *              only, plus fullTimespan and the step markers of the window.
 *              A flow is decided by its launching end: when that is
 *              visible, its other ends in the window come with it.
 *              The answer ends with XProf's showCounterMessage ("") and
 *              totalCounterEvents (the counter samples in it).
 *              A total budget bounds the answer whatever the number of
 *              rows (max_events=N, default 50000; xpv_trace_budget): when
 *              it binds, `viewportBudget` says how.  With format=columns
 *              (our page's, opt-in) the same answer carries its complete
 *              events as columns with a name table (col_writer below).
 *   details    unique_id=N (or uid=N): one event with all its args.
 *   search     search=TEXT or search_prefix=P [search_limit=N]
 *              [search_start_ms=T]: events whose name or string args
 *              contain TEXT (case-insensitive), or whose name starts with
 *              P, in time order, with totalMatches.
 *
 * Event JSON: {"pid","tid","ts","dur","ph":"X","name"[,"bind_id","cat",
 * "flow_in"|"flow_out"],"args"}; ts/dur are exact microseconds (ps / 1e6,
 * at least 3 decimals, never through a double); dur is at least 1 ps.
 * Args: `long_name` when a display name is shown, metadata stats, then
 * event stats, minus XProf's internal ones (_pt _p _ct _c _r flops
 * program_id symbol_id) and `flow`.  Names come from display_name, else
 * name, replaced by a `step_name` stat.  Flows: a `flow` stat (bits 0-1
 * direction, 2-57 id, 58-63 category: "cat" is XProf's name of it,
 * absent for generic / legacy), else `correlation_id` (host side
 * flow_out, device side flow_in, category "gpu_launch").  Counter samples
 * (`_counters_` lines) become standard "ph":"C" events with their numeric
 * stats as args.
 * Async events (XProf's AddAsyncEvent, xplane_to_trace_container.cc): an
 * event with an integer `_a` stat and a `flow` stat of a non-zero
 * direction is written without a tid as {"pid","name","ts","id","cat",
 * "ph":"b"|"e","args"} (trace_events_to_json.h): direction out "b" at its
 * start, in "e" at its start, in+out "b" at its start and an "e" (args:
 * group_id only) at its end; id = the flow id, cat = XProf's context type
 * string ("" for generic).  In the full download and the streaming
 * window; details and search answer such an event as a complete one.  In
 * the streaming window it is kept or dropped with its line's events
 * (XProf drops async events per name at the resolution, as counters).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checked.h"
#include "collections.h"
#include "group_events.h"
#include "tool.h"
#include "trace_index.h"
#include "util.h"

#define MAX_LONG_NAME 10000
#define MAX_SAFE_INT ((int64_t)1 << 53)
#define MAX_STEPS_OUT 5000
#define MAX_RESOLUTION 65536     /* viewport pixels: bounds a response */
/* The total budget of a viewport answer (xpv_trace_budget): 50k events
 * draw in a frame (limits-and-ui.md) and, at ~130 bytes an event, gzip to
 * about 1 MB; the byte bound (the JSON before gzip, ~8x larger) holds rows
 * of long names to the same ~2 MB gzipped.  `max_events` overrides it. */
#define DEFAULT_MAX_EVENTS 50000
#define DEFAULT_MAX_BYTES (16u << 20)
#define MAX_MAX_EVENTS 5000000

/* `_a` (integer) is consumed as the async mark, as `flow` is. */
static const char *const internal_stats[] = {"_pt", "_p", "_ct", "_c", "_r", "flops",
                                             "program_id", "symbol_id", "flow", "_a"};

/* XProf's GetContextTypeString (tsl context_types), the "cat" of async
 * events and of complete events' flows; kinds past the last known one are
 * generic (GetSafeContextType). */
static const char *const xprof_context_types[] = {
    "", "", "tf_exec", "tfrt_exec", "batch_sched", "PjRt", "as_batch_sched", "tfrt_rt",
    "tpu_embed", "gpu_launch", "batcher", "tpu_stream", "tpu_launch", "pathways_exec",
    "pjrt_library_call", "threadpool_event",
};

static const char *ctx_type_name(unsigned cat) {
    return cat < sizeof xprof_context_types / sizeof xprof_context_types[0] ? xprof_context_types[cat]
                                                                           : "";
}

static int is_internal_stat(xpv_str name) {
    for (size_t i = 0; i < sizeof internal_stats / sizeof internal_stats[0]; i++)
        if (xpv_str_eq(name, internal_stats[i])) return 1;
    return 0;
}

/* What an event's stats say about how to draw it. */
typedef struct ev_info {
    xpv_str step_name;
    int has_step_name;
    int64_t group_id;
    int has_group_id;
    uint64_t corr;
    int has_corr;
    uint64_t flow;
    int has_flow;
    int is_async;              /* an integer `_a` stat */
} ev_info;

static void write_int_value(xpv_buf *b, int64_t v) {
    if (v > MAX_SAFE_INT || v < -MAX_SAFE_INT) {
        xpv_buf_putc(b, '"');
        xpv_buf_i64(b, v);
        xpv_buf_putc(b, '"');
    } else {
        xpv_buf_i64(b, v);
    }
}

/* A stat value as JSON; returns 0 (and writes nothing) for values it does
 * not show. */
static int write_stat_value(xpv_buf *b, const xpv_stat *st) {
    switch (st->kind) {
    case XPV_STAT_DOUBLE: xpv_buf_double(b, st->v.d); return 1;
    case XPV_STAT_INT: write_int_value(b, st->v.i); return 1;
    case XPV_STAT_UINT:
        if (st->v.u > (uint64_t)MAX_SAFE_INT) {
            xpv_buf_putc(b, '"');
            xpv_buf_u64(b, st->v.u);
            xpv_buf_putc(b, '"');
        } else {
            xpv_buf_u64(b, st->v.u);
        }
        return 1;
    case XPV_STAT_STR: xpv_buf_json_str(b, st->v.s.ptr, st->v.s.len); return 1;
    case XPV_STAT_BYTES: xpv_buf_printf(b, "\"<%u bytes>\"", st->v.s.len); return 1;
    case XPV_STAT_GZSTR: {
        char *tmp = xpv_xmalloc(1 << 16);
        long n = xpv_stat_gzstr(st, tmp, 1 << 16);
        if (n >= 0) xpv_buf_json_str(b, tmp, (size_t)n);
        else xpv_buf_puts(b, "\"<compressed>\"");
        free(tmp);
        return 1;
    }
    default: return 0;
    }
}

/* Append `"key":value` pairs of the stat (with a leading comma when
 * *first is 0). */
static void write_arg(xpv_buf *b, const xpv_plane *pl, const xpv_stat *st, int *first) {
    if (st->meta < 0 || (uint32_t)st->meta >= pl->nstat_meta) return;
    xpv_str name = pl->stat_meta[st->meta].name;
    if (!name.len || is_internal_stat(name)) return;
    size_t mark = b->len;
    if (!*first) xpv_buf_putc(b, ',');
    xpv_buf_json_str(b, name.ptr, name.len);
    xpv_buf_putc(b, ':');
    if (!write_stat_value(b, st)) {
        b->len = mark;
        return;
    }
    *first = 0;
}

static void note_stat(const xpv_trace_row *r, const xpv_stat *st, ev_info *info) {
    int64_t v;
    if (st->meta < 0) return;
    if (st->meta == r->st_step_name && st->kind == XPV_STAT_STR) {
        info->step_name = st->v.s;
        info->has_step_name = 1;
    } else if (st->meta == r->st_group_id && xpv_stat_as_int(st, &v)) {
        info->group_id = v;
        info->has_group_id = 1;
    } else if (st->meta == r->st_corr && xpv_stat_as_int(st, &v)) {
        info->corr = (uint64_t)v;
        info->has_corr = 1;
    } else if (st->meta == r->st_flow && (st->kind == XPV_STAT_UINT || st->kind == XPV_STAT_INT)) {
        info->flow = st->v.u;
        info->has_flow = 1;
    } else if (st->meta == r->st_async && (st->kind == XPV_STAT_UINT || st->kind == XPV_STAT_INT)) {
        info->is_async = 1;
    }
}

/* Scan the event's stats once: fill `info`; when `args` is not NULL also
 * write the event's args (without braces) into it. */
static void scan_event(const xpv_plane *pl, const xpv_line *ln, const xpv_trace_row *r,
                       const xpv_event *e, ev_info *info, xpv_buf *args) {
    memset(info, 0, sizeof *info);
    int first = 1;
    const xpv_event_meta *m = &pl->event_meta[e->meta];
    if (args && m->display_name.len && m->name.len) {
        xpv_buf_puts(args, "\"long_name\":");
        xpv_buf_json_str(args, m->name.ptr, m->name.len > MAX_LONG_NAME ? MAX_LONG_NAME : m->name.len);
        first = 0;
    }
    if (args)
        for (uint32_t i = 0; i < m->nstats; i++) write_arg(args, pl, &m->stats[i], &first);
    if (e->wire == XPV_NO_STATS) return;
    if (!args && r->st_step_name < 0 && r->st_group_id < 0 && r->st_corr < 0 && r->st_flow < 0 &&
        r->st_async < 0)
        return;
    xpv_stat_iter it;
    xpv_stat st;
    xpv_stat_iter_init(&it, pl, ln, e);
    while (xpv_stat_next(&it, &st)) {
        note_stat(r, &st, info);
        if (args) write_arg(args, pl, &st, &first);
    }
}

/* scan_event, then the computed grouping of the host (files without group
 * ids): the event's group_id and, on a root, its step_name, as XProf adds
 * them before drawing; with `args` they are appended there too. */
static void scan_event_grouped(const xpv_trace_index *ix, const xpv_plane *pl,
                               const xpv_line *ln, const xpv_trace_row *r, uint32_t ev,
                               ev_info *info, xpv_buf *args) {
    scan_event(pl, ln, r, &ln->events[ev], info, args);
    const xpv_groups *g = r->host < ix->nhosts ? ix->hgroups[r->host] : NULL;
    if (!g) return;
    int32_t gid = xpv_group_of(g, r->plane, r->line, ev);
    if (gid < 0 || info->has_group_id) return;
    info->group_id = gid;
    info->has_group_id = 1;
    const char *sn = info->has_step_name ? NULL : xpv_groups_step_name(g, r->plane, r->line, ev);
    if (sn) {
        info->step_name = xpv_cstr(sn);
        info->has_step_name = 1;
    }
    if (args) {
        if (args->len) xpv_buf_putc(args, ',');
        xpv_buf_puts(args, "\"group_id\":");
        write_int_value(args, gid);
        if (sn) {
            xpv_buf_puts(args, ",\"step_name\":");
            xpv_buf_json_cstr(args, sn);
        }
    }
}

static xpv_str shown_name(const xpv_plane *pl, const xpv_event *e, const ev_info *info) {
    if (info->has_step_name && info->step_name.len) return info->step_name;
    return xpv_event_display_name(pl, e);
}

static void write_id(xpv_buf *b, uint64_t id) {
    if (id > (uint64_t)MAX_SAFE_INT) {
        xpv_buf_putc(b, '"');
        xpv_buf_u64(b, id);
        xpv_buf_putc(b, '"');
    } else {
        xpv_buf_u64(b, id);
    }
}

/* The flow an event takes part in (write_flow's rule): its id, its
 * direction (1 in, 2 out, 3 both) and XProf's name of its category.
 * Returns 0 when it has none. */
static int flow_of(const xpv_trace_row *r, const ev_info *info, uint64_t *id, unsigned *dir,
                   const char **cat) {
    if (info->has_flow) {
        uint64_t v = info->flow;
        *dir = (unsigned)(v & 3);
        *id = (v >> 2) & (((uint64_t)1 << 56) - 1);
        *cat = ctx_type_name((unsigned)(v >> 58));
        return *dir != 0;
    }
    if (!info->has_corr) return 0;
    *id = ((uint64_t)1 << 50) | ((uint64_t)(r->host & 0x3ff) << 40) |
          (info->corr & (((uint64_t)1 << 40) - 1));
    *dir = r->is_host ? 2 : 1;
    *cat = "gpu_launch";
    return 1;
}

static void write_flow(xpv_buf *b, const xpv_trace_row *r, const ev_info *info) {
    uint64_t id;
    unsigned dir;
    const char *cn;
    if (!flow_of(r, info, &id, &dir, &cn)) return;
    xpv_buf_puts(b, ",\"bind_id\":");
    write_id(b, id);
    /* WriteEvent (trace_events_to_json.h): the category's name, none for
     * generic and legacy flows. */
    if (*cn) {
        xpv_buf_puts(b, ",\"cat\":");
        xpv_buf_json_cstr(b, cn);
    }
    if (dir & 1) xpv_buf_puts(b, ",\"flow_in\":true");
    if (dir & 2) xpv_buf_puts(b, ",\"flow_out\":true");
}

/* The head of an async event: {"pid","name","ts","id","cat","ph". */
static void async_head(xpv_buf *b, const xpv_trace_row *r, const xpv_event *e,
                       const ev_info *info, int64_t ts_ps, const char *ph) {
    uint64_t v = info->flow;
    unsigned cat = (unsigned)(v >> 58);
    xpv_buf_puts(b, "{\"pid\":");
    xpv_buf_i64(b, r->pid);
    xpv_buf_puts(b, ",\"name\":");
    if (info->has_step_name && info->step_name.len)
        xpv_buf_json_str(b, info->step_name.ptr, info->step_name.len);
    else
        xpv_buf_add(b, r->jname[e->meta], r->jname_len[e->meta]);
    xpv_buf_puts(b, ",\"ts\":");
    xpv_buf_ps_as_us(b, ts_ps);
    xpv_buf_puts(b, ",\"id\":");
    write_id(b, (v >> 2) & (((uint64_t)1 << 56) - 1));
    xpv_buf_puts(b, ",\"cat\":");
    xpv_buf_json_cstr(b, ctx_type_name(cat));
    xpv_buf_puts(b, ",\"ph\":\"");
    xpv_buf_puts(b, ph);
    xpv_buf_putc(b, '"');
}

/* An async event (see the top): "b" or "e" with the event's args, and for
 * a flow in and out an "e" at its end with only its group_id.  `args`
 * holds the full args when `full`. */
static void write_async(xpv_buf *b, const xpv_trace_row *r, uint32_t ri, uint32_t ev,
                        const ev_info *info, int full, const xpv_buf *args) {
    const xpv_event *e = &r->ln->events[ev];
    unsigned dir = (unsigned)(info->flow & 3);
    async_head(b, r, e, info, e->start_ps, dir == 1 ? "e" : "b");
    xpv_buf_puts(b, ",\"args\":{");
    if (full && args->len) {
        xpv_buf_add(b, args->data, args->len);
        xpv_buf_putc(b, ',');
    } else if (!full && info->has_group_id) {
        xpv_buf_puts(b, "\"group_id\":");
        write_int_value(b, info->group_id);
        xpv_buf_putc(b, ',');
    }
    xpv_buf_puts(b, "\"uid\":");
    xpv_buf_u64(b, ((uint64_t)ri << 32) | ev);
    xpv_buf_puts(b, "}}");
    if (dir != 3) return;
    xpv_buf_putc(b, ',');
    async_head(b, r, e, info, e->start_ps + (e->dur_ps > 0 ? e->dur_ps : 0), "e");
    if (info->has_group_id) {
        xpv_buf_puts(b, ",\"args\":{\"group_id\":");
        write_int_value(b, info->group_id);
        xpv_buf_putc(b, '}');
    }
    xpv_buf_putc(b, '}');
}

/* One event: complete, or with `async_ok` an async one when its stats
 * make it so.  `full`: all args; else args {uid, group_id}. */
static void write_event(xpv_buf *b, const xpv_hostset *hs, const xpv_trace_index *ix,
                        const xpv_trace_row *r, uint32_t ri, uint32_t ev, int full, int async_ok,
                        xpv_buf *args) {
    const xpv_plane *pl = r->pl;
    const xpv_line *ln = r->ln;
    const xpv_event *e = &ln->events[ev];
    ev_info info;
    xpv_buf_reset(args);
    scan_event_grouped(ix, pl, ln, r, ev, &info, full ? args : NULL);
    if (async_ok && info.is_async && info.has_flow && (info.flow & 3)) {
        write_async(b, r, ri, ev, &info, full, args);
        return;
    }
    xpv_str name = shown_name(pl, e, &info);
    xpv_buf_puts(b, "{\"pid\":");
    xpv_buf_i64(b, r->pid);
    xpv_buf_puts(b, ",\"tid\":");
    xpv_buf_i64(b, r->tid);
    xpv_buf_puts(b, ",\"ts\":");
    xpv_buf_ps_as_us(b, e->start_ps);
    xpv_buf_puts(b, ",\"dur\":");
    xpv_buf_ps_as_us(b, e->dur_ps > 1 ? e->dur_ps : 1);
    xpv_buf_puts(b, ",\"ph\":\"X\",\"name\":");
    if (info.has_step_name && info.step_name.len) {
        xpv_buf_json_str(b, name.ptr, name.len);
    } else {
        xpv_buf_add(b, r->jname[e->meta], r->jname_len[e->meta]);
    }
    write_flow(b, r, &info);
    xpv_buf_puts(b, ",\"args\":{");
    if (full) {
        xpv_buf_add(b, args->data, args->len);
        if (args->len) xpv_buf_putc(b, ',');
        xpv_buf_puts(b, "\"uid\":");
    } else {
        if (info.has_group_id) {
            xpv_buf_puts(b, "\"group_id\":");
            write_int_value(b, info.group_id);
            xpv_buf_putc(b, ',');
        }
        xpv_buf_puts(b, "\"uid\":");
    }
    xpv_buf_u64(b, ((uint64_t)ri << 32) | ev);
    xpv_buf_puts(b, "}}");
}

/* A counter sample's numeric stats into `args`: "name":value,... when
 * `named`, else value,...; the first stat's name in *first.  Returns how
 * many (0: not a sample to write). */
static int counter_values(const xpv_trace_row *r, uint32_t ev, int named, xpv_buf *args,
                          xpv_str *first) {
    const xpv_plane *pl = r->pl;
    const xpv_line *ln = r->ln;
    xpv_stat_iter it;
    xpv_stat st;
    int n = 0;
    xpv_buf_reset(args);
    xpv_stat_iter_init(&it, pl, ln, &ln->events[ev]);
    while (xpv_stat_next(&it, &st)) {
        if (st.kind != XPV_STAT_DOUBLE && st.kind != XPV_STAT_INT && st.kind != XPV_STAT_UINT)
            continue;
        if (st.meta < 0) continue;
        xpv_str sn = pl->stat_meta[st.meta].name;
        if (!sn.len) continue;
        if (n) xpv_buf_putc(args, ',');
        else *first = sn;
        if (named) {
            xpv_buf_json_str(args, sn.ptr, sn.len);
            xpv_buf_putc(args, ':');
        }
        double d;
        xpv_stat_as_double(&st, &d);
        if (st.kind == XPV_STAT_DOUBLE) xpv_buf_double(args, d);
        else write_stat_value(args, &st);
        n++;
    }
    return n;
}

/* The head of a counter event: {"pid":P,"name":N,"ph":"C" */
static void counter_head(xpv_buf *b, int64_t pid, xpv_str name) {
    xpv_buf_puts(b, "{\"pid\":");
    xpv_buf_i64(b, pid);
    xpv_buf_puts(b, ",\"name\":");
    xpv_buf_json_str(b, name.ptr, name.len);
    xpv_buf_puts(b, ",\"ph\":\"C\"");
}

/* A counter sample as a Chrome event (the full download, which Perfetto
 * and chrome://tracing read): {"pid","name","ph":"C","ts","args":{stat:
 * value...}}; returns 0 (nothing written) when it has no numeric stat. */
static int write_counter(xpv_buf *b, const xpv_trace_row *r, uint32_t ev, xpv_buf *args) {
    xpv_str first;
    if (!counter_values(r, ev, 1, args, &first)) return 0;
    const xpv_event *e = &r->ln->events[ev];
    counter_head(b, r->pid, xpv_event_display_name(r->pl, e));
    xpv_buf_puts(b, ",\"ts\":");
    xpv_buf_ps_as_us(b, e->start_ps);
    xpv_buf_puts(b, ",\"args\":{");
    xpv_buf_add(b, args->data, args->len);
    xpv_buf_puts(b, "}}");
    return 1;
}

/* The streaming answer's counters in XProf's grouped form
 * (trace_events_to_json.h, JsonEventWriter::AddCounterEvent and the
 * TraceEventsToJson loop): consecutive samples of one (pid, name) are one
 * event {"pid","name","ph":"C","event_stats":<first stat's name>,
 * "entries":[[ts,value...],...]}, closed by the next event that is not a
 * sample of the same counter.  (XProf remembers the last counter across
 * other events and then writes a bare entry without its header; here a
 * group is reopened with its header instead.) */
typedef struct counter_group {
    int open;
    int64_t pid;
    xpv_str name;
} counter_group;

static void counter_group_close(xpv_buf *b, counter_group *g) {
    if (g->open) xpv_buf_puts(b, "]}");
    g->open = 0;
}

/* Returns 0 (nothing written) for a sample without a numeric stat. */
static int write_counter_entry(xpv_buf *b, counter_group *g, int *first, const xpv_trace_row *r,
                               uint32_t ev, xpv_buf *vals) {
    xpv_str stat;
    if (!counter_values(r, ev, 0, vals, &stat)) return 0;
    const xpv_event *e = &r->ln->events[ev];
    xpv_str name = xpv_event_display_name(r->pl, e);
    if (g->open && g->pid == r->pid && g->name.len == name.len &&
        (!name.len || !memcmp(g->name.ptr, name.ptr, name.len))) {
        xpv_buf_putc(b, ',');
    } else {
        counter_group_close(b, g);
        if (!*first) xpv_buf_putc(b, ',');
        xpv_buf_putc(b, '\n');
        counter_head(b, r->pid, name);
        xpv_buf_puts(b, ",\"event_stats\":");
        xpv_buf_json_str(b, stat.ptr, stat.len);
        xpv_buf_puts(b, ",\"entries\":[");
        *g = (counter_group){1, r->pid, name};
    }
    xpv_buf_putc(b, '[');
    xpv_buf_ps_as_us(b, e->start_ps);
    xpv_buf_putc(b, ',');
    xpv_buf_add(b, vals->data, vals->len);
    xpv_buf_putc(b, ']');
    *first = 0;
    return 1;
}

/* Process and thread metadata events.  `with_host`: process names are
 * "<host> <plane>" (XProf's streaming path; also used for multi-host
 * full traces), else the plane name. */
static void write_metadata(xpv_buf *b, const xpv_trace_index *ix, int with_host, int *first) {
    for (uint32_t p = 0; p < ix->nprocs; p++) {
        const xpv_trace_proc *pr = &ix->procs[p];
        if (!pr->nthreads) continue;
        if (!*first) xpv_buf_putc(b, ',');
        *first = 0;
        xpv_buf_puts(b, "\n{\"args\":{\"name\":");
        size_t hn = with_host ? strlen(pr->host_name) : 0, pn = strlen(pr->plane_name);
        if (hn) {
            char *s = xpv_xmalloc(hn + pn + 2);
            memcpy(s, pr->host_name, hn);
            s[hn] = ' ';
            memcpy(s + hn + 1, pr->plane_name, pn + 1);
            xpv_buf_json_str(b, s, hn + pn + 1);
            free(s);
        } else {
            xpv_buf_json_str(b, pr->plane_name, pn);
        }
        xpv_buf_puts(b, "},\"name\":\"process_name\",\"ph\":\"M\",\"pid\":");
        xpv_buf_i64(b, pr->pid);
        xpv_buf_puts(b, ",\"thread_count\":");
        xpv_buf_u64(b, pr->nthreads);
        xpv_buf_puts(b, "},\n{\"args\":{\"sort_index\":");
        xpv_buf_i64(b, pr->pid);
        xpv_buf_puts(b, "},\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":");
        xpv_buf_i64(b, pr->pid);
        xpv_buf_putc(b, '}');
    }
    for (uint32_t i = 0; i < ix->nrows; i++) {
        const xpv_trace_row *r = &ix->rows[i];
        if (r->is_counter) continue;
        if (i && ix->rows[i - 1].pid == r->pid && ix->rows[i - 1].tid == r->tid &&
            !ix->rows[i - 1].is_counter)
            continue;       /* several lines, one thread */
        if (!*first) xpv_buf_putc(b, ',');
        *first = 0;
        xpv_buf_puts(b, "\n{\"args\":{\"name\":");
        xpv_buf_json_cstr(b, r->name);
        xpv_buf_puts(b, "},\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":");
        xpv_buf_i64(b, r->pid);
        xpv_buf_puts(b, ",\"tid\":");
        xpv_buf_i64(b, r->tid);
        xpv_buf_puts(b, "},\n{\"args\":{\"sort_index\":");
        xpv_buf_i64(b, r->tid);
        xpv_buf_puts(b, "},\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":");
        xpv_buf_i64(b, r->pid);
        xpv_buf_puts(b, ",\"tid\":");
        xpv_buf_i64(b, r->tid);
        xpv_buf_putc(b, '}');
    }
}

static const char HEADER[] = "{\"displayTimeUnit\":\"ns\",\"metadata\":{\"highres-ticks\":true}";

/* ==== The compact viewport answer (format=columns) ====================== */

/* The streaming answer for our page (opt-in, `format=columns`): the same
 * header, steps, metadata, counters and async events, but the complete
 * events ("ph":"X") as columns instead of one object each:
 *   "columns":{"rows":[[row,pid,tid],...],   the rows met (row: the index
 *                                             row, the high half of a uid)
 *              "names":[...],                 the distinct shown names
 *              "row":[...], "ev":[...],      per event: rows[] index, and
 *                                             its index in its line (uid =
 *                                             row * 2^32 + ev)
 *              "ts_us":[...], "ts_ps":[...], start: whole µs (floor; each
 *                                             after the first as a delta
 *                                             from the one before) and the
 *                                             ps past it (0..999999)
 *              "dur":[...],                   duration (ps, at least 1)
 *              "name":[...], "group":[...],  names[] index; group_id or null
 *              "flows":[[i,bind_id,cat,dir]]} event i's flow (dir: 1 in,
 *                                             2 out, 3 both; cat as "cat")
 * in the order the JSON answer writes them; the JSON answer's ts/dur (µs)
 * are (us * 1e6 + ps) / 1e6 and dur / 1e6.  Every number stays below 2^53
 * (a start in ps would not past 2.5 hours of trace, nor would a delta in
 * ps), so a JSON reader gets them exactly.  ~3x fewer bytes, and far less
 * for the page to parse and to turn into objects. */
typedef struct col_writer {
    xpv_buf rows, names, row, ev, ts, tsps, dur, name, group, flows, scratch;
    strmap name_ix;
    xpv_arena arena;
    uint32_t *row_slot;         /* per index row: rows[] index + 1, 0: none */
    uint32_t nrows, nnames, nflows;
    size_t n;
    int64_t last_us;
} col_writer;

static void col_open(col_writer *w, const xpv_trace_index *ix) {
    memset(w, 0, sizeof *w);
    xpv_buf *bufs[] = {&w->rows, &w->names, &w->row, &w->ev, &w->ts, &w->tsps,
                       &w->dur, &w->name, &w->group, &w->flows, &w->scratch};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) xpv_buf_init(bufs[i]);
    xpv_arena_init(&w->arena, 1 << 16);
    w->row_slot = xpv_xcalloc(ix->nrows ? ix->nrows : 1, sizeof *w->row_slot);
}

static void col_close(col_writer *w) {
    xpv_buf *bufs[] = {&w->rows, &w->names, &w->row, &w->ev, &w->ts, &w->tsps,
                       &w->dur, &w->name, &w->group, &w->flows, &w->scratch};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) xpv_buf_free(bufs[i]);
    strmap_free(&w->name_ix);
    xpv_arena_free(&w->arena);
    free(w->row_slot);
}

/* The names[] index of a name given as a JSON string literal. */
static uint32_t col_name(col_writer *w, const char *lit, size_t n) {
    int found;
    strmap_ent *e = strmap_put(&w->name_ix, &w->arena, lit, n, &found);
    if (!found) {
        if (w->nnames) xpv_buf_putc(&w->names, ',');
        xpv_buf_add(&w->names, lit, n);
        e->val = w->nnames++;
    }
    return e->val;
}

/* The flow of an event (flow_of) into w->flows. */
static void col_flow(col_writer *w, const xpv_trace_row *r, const ev_info *info) {
    uint64_t id;
    unsigned dir;
    const char *cat;
    if (!flow_of(r, info, &id, &dir, &cat)) return;
    if (w->nflows++) xpv_buf_putc(&w->flows, ',');
    xpv_buf_putc(&w->flows, '[');
    xpv_buf_u64(&w->flows, w->n);
    xpv_buf_putc(&w->flows, ',');
    write_id(&w->flows, id);
    xpv_buf_putc(&w->flows, ',');
    xpv_buf_json_cstr(&w->flows, cat);
    xpv_buf_putc(&w->flows, ',');
    xpv_buf_u64(&w->flows, dir);
    xpv_buf_putc(&w->flows, ']');
}

/* One event of the window: a complete one into the columns (an open
 * counter group of `out` stays open across it: the page reads a group
 * split in two as one); an async one (as write_event decides) into `out`
 * as the JSON answer writes it. */
static void col_event(col_writer *w, xpv_buf *out, counter_group *cg, const xpv_trace_index *ix,
                      uint32_t ri, uint32_t ev, xpv_buf *args, int *first) {
    const xpv_trace_row *r = &ix->rows[ri];
    const xpv_event *e = &r->ln->events[ev];
    ev_info info;
    scan_event_grouped(ix, r->pl, r->ln, r, ev, &info, NULL);
    if (info.is_async && info.has_flow && (info.flow & 3)) {
        counter_group_close(out, cg);
        if (!*first) xpv_buf_putc(out, ',');
        xpv_buf_putc(out, '\n');
        write_async(out, r, ri, ev, &info, 0, args);
        *first = 0;
        return;
    }
    const char *sep = w->n ? "," : "";
    if (!w->row_slot[ri]) {
        if (w->nrows) xpv_buf_putc(&w->rows, ',');
        xpv_buf_printf(&w->rows, "[%u,", ri);
        xpv_buf_i64(&w->rows, r->pid);
        xpv_buf_putc(&w->rows, ',');
        xpv_buf_i64(&w->rows, r->tid);
        xpv_buf_putc(&w->rows, ']');
        w->row_slot[ri] = ++w->nrows;
    }
    uint32_t nm;
    if (info.has_step_name && info.step_name.len) {
        xpv_buf_reset(&w->scratch);
        xpv_buf_json_str(&w->scratch, info.step_name.ptr, info.step_name.len);
        nm = col_name(w, w->scratch.data, w->scratch.len);
    } else {
        nm = col_name(w, r->jname[e->meta], r->jname_len[e->meta]);
    }
    col_flow(w, r, &info);
    xpv_buf_puts(&w->row, sep);
    xpv_buf_u64(&w->row, w->row_slot[ri] - 1);
    xpv_buf_puts(&w->ev, sep);
    xpv_buf_u64(&w->ev, ev);
    int64_t us = e->start_ps / 1000000, ps = e->start_ps % 1000000;
    if (ps < 0) {
        ps += 1000000;
        us--;
    }
    xpv_buf_puts(&w->ts, sep);
    xpv_buf_i64(&w->ts, w->n ? us - w->last_us : us);
    w->last_us = us;
    xpv_buf_puts(&w->tsps, sep);
    xpv_buf_i64(&w->tsps, ps);
    xpv_buf_puts(&w->dur, sep);
    xpv_buf_i64(&w->dur, e->dur_ps > 1 ? e->dur_ps : 1);
    xpv_buf_puts(&w->name, sep);
    xpv_buf_u64(&w->name, nm);
    xpv_buf_puts(&w->group, sep);
    if (info.has_group_id) write_int_value(&w->group, info.group_id);
    else xpv_buf_puts(&w->group, "null");
    w->n++;
}

/* ,"columns":{...} from the writer. */
static void col_finish(col_writer *w, xpv_buf *out) {
    static const char *const keys[] = {"rows", "names", "row",  "ev",    "ts_us", "ts_ps",
                                       "dur",  "name",  "group", "flows"};
    const xpv_buf *bufs[] = {&w->rows, &w->names, &w->row,  &w->ev,    &w->ts,
                             &w->tsps, &w->dur,   &w->name, &w->group, &w->flows};
    xpv_buf_puts(out, ",\"columns\":{");
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        xpv_buf_printf(out, "%s\"%s\":[", i ? "," : "", keys[i]);
        xpv_buf_add(out, bufs[i]->data, bufs[i]->len);
        xpv_buf_putc(out, ']');
    }
    xpv_buf_putc(out, '}');
}

/* ==== Modes ============================================================= */

/* The full trace as a resumable writer: the position is kept between
 * calls, so the body can be sent chunk by chunk (xpv_tool_stream) and the
 * whole-body render is the same loop run to the end. */
enum { FULL_HEAD, FULL_EVENTS, FULL_TAIL, FULL_DONE };

typedef struct full_writer {
    xpv_hostset hs;             /* copy; arrays borrowed from the caller */
    const xpv_trace_index *ix;  /* borrowed */
    int phase;                  /* FULL_* */
    uint32_t ri;                /* row being written */
    uint32_t ev;                /* next event of that row */
    int first;                  /* nothing written into traceEvents yet */
    const xpv_plane *last_pl;   /* plane `dropped` was computed for */
    uint8_t *dropped;           /* per event metadata: internal, not shown */
    size_t cap;
    xpv_buf args;               /* scratch for one event's args */
} full_writer;

static full_writer *full_open(const xpv_hostset *hs, const xpv_trace_index *ix) {
    full_writer *w = xpv_xcalloc(1, sizeof *w);
    w->hs = *hs;
    w->ix = ix;
    w->phase = FULL_HEAD;
    w->first = 1;
    xpv_buf_init(&w->args);
    return w;
}

static void full_free(full_writer *w) {
    if (!w) return;
    free(w->dropped);
    xpv_buf_free(&w->args);
    free(w);
}

/* Append about `max` bytes (0 = all) of the output; 1 while more remains. */
static int full_next(full_writer *w, xpv_buf *out, size_t max) {
    const xpv_hostset *hs = &w->hs;
    const xpv_trace_index *ix = w->ix;
    size_t start = out->len;
    if (w->phase == FULL_HEAD) {
        xpv_buf_puts(out, HEADER);
        xpv_buf_puts(out, ",\"traceEvents\":[");
        write_metadata(out, ix, hs->n > 1, &w->first);
        w->phase = FULL_EVENTS;
    }
    while (w->phase == FULL_EVENTS) {
        if (w->ri >= ix->nrows) {
            w->phase = FULL_TAIL;
            break;
        }
        const xpv_trace_row *r = &ix->rows[w->ri];
        const xpv_plane *pl = r->pl;
        const xpv_line *ln = r->ln;
        if (pl != w->last_pl) {
            if (pl->nevent_meta + 1 > w->cap) {
                w->cap = pl->nevent_meta + 1;
                w->dropped = xpv_xrealloc(w->dropped, w->cap);
            }
            for (uint32_t k = 0; k < pl->nevent_meta; k++)
                w->dropped[k] = (uint8_t)xpv_trace_is_internal(pl->event_meta[k].name);
            w->last_pl = pl;
        }
        while (w->ev < ln->nevents) {
            if (max && out->len - start >= max) return 1;
            uint32_t i = w->ev++;
            if (w->dropped[ln->events[i].meta]) continue;
            size_t mark = out->len;
            if (!w->first) xpv_buf_putc(out, ',');
            xpv_buf_putc(out, '\n');
            if (r->is_counter) {
                if (!write_counter(out, r, i, &w->args)) {
                    out->len = mark;
                    continue;
                }
            } else {
                write_event(out, hs, ix, r, w->ri, i, 1, 1, &w->args);
            }
            w->first = 0;
        }
        w->ri++;
        w->ev = 0;
    }
    if (w->phase == FULL_TAIL) {
        xpv_buf_puts(out, "\n]}");
        w->phase = FULL_DONE;
    }
    return 0;
}

static int render_full(const xpv_hostset *hs, const xpv_trace_index *ix, xpv_buf *out) {
    full_writer *w = full_open(hs, ix);
    while (full_next(w, out, 0)) {
    }
    full_free(w);
    return 0;
}

/* Parse a decimal number of ms ("-?digits[.digits]") into ps.  Returns 0
 * on bad input. */
static int parse_ms(const char *s, int64_t *ps) {
    double v;
    if (!xpv_parse_decimal_strict(s, 9.2e9, &v)) return 0;
    *ps = (int64_t)(v * 1e9 + (v < 0 ? -0.5 : 0.5));
    return 1;
}

static int parse_u64(const char *s, uint64_t *v) {
    return xpv_parse_u64_strict(s, UINT64_MAX, v);
}

static int bad(xpv_err *err, const char *key, const char *val) {
    err->status = XPV_E_BAD_REQUEST;
    snprintf(err->msg, sizeof err->msg, "bad parameter %s=%.100s", key, val);
    return -1;
}

static void write_span(xpv_buf *out, const char *key, int64_t a, int64_t b) {
    xpv_buf_puts(out, key);
    xpv_buf_putc(out, '[');
    xpv_buf_ps_as_ms(out, a);
    xpv_buf_putc(out, ',');
    xpv_buf_ps_as_ms(out, b);
    xpv_buf_putc(out, ']');
}

/* The events of a viewport answer, from the metadata to XProf's tail
 * (without the closing brace): every hit as a JSON event, or with
 * `columns` the complete events as columns (col_writer). */
static void write_window_events(xpv_buf *out, const xpv_hostset *hs, const xpv_trace_index *ix,
                                const xpv_trace_hit *hits, size_t n, int columns) {
    int first = 1;
    size_t ncounter = 0;
    counter_group cg = {0, 0, {"", 0}};
    xpv_buf args;
    col_writer cw;
    xpv_buf_init(&args);
    if (columns) col_open(&cw, ix);
    write_metadata(out, ix, 1, &first);
    for (size_t i = 0; i < n; i++) {
        const xpv_trace_row *r = &ix->rows[hits[i].row];
        if (r->is_counter) {
            ncounter += (size_t)write_counter_entry(out, &cg, &first, r, hits[i].ev, &args);
            continue;
        }
        if (columns) {
            col_event(&cw, out, &cg, ix, hits[i].row, hits[i].ev, &args, &first);
            continue;
        }
        counter_group_close(out, &cg);
        if (!first) xpv_buf_putc(out, ',');
        xpv_buf_putc(out, '\n');
        write_event(out, hs, ix, r, hits[i].row, hits[i].ev, 0, 1, &args);
        first = 0;
    }
    counter_group_close(out, &cg);
    /* XProf's tail (TraceEventsToJson): the counter samples written; its
     * message is for its 10M-sample cap, which the budget keeps us under */
    xpv_buf_puts(out, "\n],\"showCounterMessage\":\"\",\"totalCounterEvents\":");
    xpv_buf_u64(out, ncounter);
    if (columns) {
        col_finish(&cw, out);
        col_close(&cw);
    }
    xpv_buf_free(&args);
}

static int render_stream(const xpv_hostset *hs, const xpv_trace_index *ix, const xpv_params *q,
                         xpv_buf *out, xpv_err *err) {
    const char *s_start = xpv_param(q, "start_time_ms");
    const char *s_end = xpv_param(q, "end_time_ms");
    const char *s_res = xpv_param(q, "resolution");
    int64_t ws = ix->min_ps, we = ix->max_ps;
    int64_t v;
    uint64_t res = 8000;
    if (s_start && *s_start) {
        if (!parse_ms(s_start, &v)) return bad(err, "start_time_ms", s_start);
        if (v > 0) ws = v;
    }
    if (s_end && *s_end) {
        if (!parse_ms(s_end, &v)) return bad(err, "end_time_ms", s_end);
        if (v > 0) we = v;
    }
    if (s_res && *s_res && !xpv_parse_u64_strict(s_res, UINT64_MAX, &res))
        return bad(err, "resolution", s_res);
    /* 0 used to mean "every event": unbounded.  The level of detail always
     * applies, at most MAX_RESOLUTION pixels wide. */
    if (res == 0 || res > MAX_RESOLUTION) res = MAX_RESOLUTION;
    if (ws < ix->min_ps) ws = ix->min_ps;
    if (we > ix->max_ps) we = ix->max_ps;
    if (we <= ws) we = ws + 1;
    int64_t res_ps = 0;
    if (res) {
        uint64_t span = (uint64_t)(we - ws);
        res_ps = (int64_t)((span + res / 2) / res);
        if (res_ps < 1) res_ps = 0;     /* finer than 1 ps: every event */
    }
    xpv_trace_budget budget = {DEFAULT_MAX_EVENTS, DEFAULT_MAX_BYTES, NULL};
    xpv_trace_budget_info binfo;
    uint64_t me;
    const char *s_max = xpv_param(q, "max_events");
    if (s_max && *s_max) {
        if (!xpv_parse_u64_strict(s_max, MAX_MAX_EVENTS, &me) || !me)
            return bad(err, "max_events", s_max);
        budget.max_events = (size_t)me;
        /* the byte bound follows the event count */
        budget.max_bytes = me > DEFAULT_MAX_EVENTS ? (size_t)me * (DEFAULT_MAX_BYTES / DEFAULT_MAX_EVENTS)
                                                   : DEFAULT_MAX_BYTES;
    }
    /* format=columns: the compact answer of our page (col_writer) */
    const char *s_fmt = xpv_param(q, "format");
    int columns = s_fmt && !strcmp(s_fmt, "columns");
    if (s_fmt && *s_fmt && !columns) return bad(err, "format", s_fmt);
    xpv_trace_hit *hits = NULL;
    size_t n = xpv_trace_query_budget(hs, ix, ws, we + 1, res_ps, &budget, &binfo, &hits);
    xpv_buf_puts(out, HEADER);
    write_span(out, ",\"fullTimespan\":", ix->min_ps, ix->max_ps);
    write_span(out, ",\"window\":", ws, we);
    xpv_buf_puts(out, ",\"resolutionPs\":");
    xpv_buf_i64(out, res_ps);
    xpv_buf_puts(out, ",\"filteredByVisibility\":");
    xpv_buf_puts(out, res_ps > 0 ? "true" : "false");
    xpv_buf_puts(out, ",\"returnedEventsSize\":");
    xpv_buf_u64(out, n);
    /* Only when the budget changed the answer (answers within it are
     * byte-identical to those before the budget existed). */
    if (binfo.rows_coarsened) {
        xpv_buf_puts(out, ",\"viewportBudget\":{\"maxEvents\":");
        xpv_buf_u64(out, budget.max_events);
        xpv_buf_puts(out, ",\"visibleEvents\":");
        xpv_buf_u64(out, binfo.candidates);
        xpv_buf_puts(out, ",\"rowCap\":");
        xpv_buf_u64(out, binfo.row_cap);
        xpv_buf_puts(out, ",\"rowsCoarsened\":");
        xpv_buf_u64(out, binfo.rows_coarsened);
        xpv_buf_puts(out, ",\"rowsCut\":");
        xpv_buf_u64(out, binfo.rows_cut);
        xpv_buf_puts(out, ",\"coarsestRowResolutionPs\":");
        xpv_buf_i64(out, binfo.max_row_res_ps);
        xpv_buf_putc(out, '}');
    }
    /* Step markers overlapping the window: [ts_us, dur_us, name]. */
    xpv_buf_puts(out, ",\"steps\":[");
    size_t ns = 0;
    for (uint32_t i = 0; i < ix->nsteps && ns < MAX_STEPS_OUT; i++) {
        const xpv_trace_step *st = &ix->steps[i];
        if (st->start_ps > we || xpv_add_i64(st->start_ps, st->dur_ps, NULL) < ws) continue;
        const xpv_trace_row *r = &ix->rows[st->row];
        const xpv_plane *pl = r->pl;
        const xpv_line *ln = r->ln;
        ev_info info;
        scan_event_grouped(ix, pl, ln, r, st->ev, &info, NULL);
        xpv_str name = shown_name(pl, &ln->events[st->ev], &info);
        if (ns++) xpv_buf_putc(out, ',');
        xpv_buf_putc(out, '[');
        xpv_buf_ps_as_us(out, st->start_ps);
        xpv_buf_putc(out, ',');
        xpv_buf_ps_as_us(out, st->dur_ps);
        xpv_buf_putc(out, ',');
        xpv_buf_json_str(out, name.ptr, name.len);
        xpv_buf_putc(out, ']');
    }
    xpv_buf_puts(out, "],\"traceEvents\":[");
    write_window_events(out, hs, ix, hits, n, columns);
    xpv_buf_putc(out, '}');
    free(hits);
    return 0;
}

static int render_details(const xpv_hostset *hs, const xpv_trace_index *ix, const char *s_uid,
                          xpv_buf *out, xpv_err *err) {
    uint64_t uid;
    xpv_trace_hit h;
    if (!parse_u64(s_uid, &uid)) return bad(err, "unique_id", s_uid);
    if (!xpv_trace_uid_decode(hs, ix, uid, &h) || ix->rows[h.row].is_counter) {
        err->status = XPV_E_NOT_FOUND;
        snprintf(err->msg, sizeof err->msg, "no event with unique_id %.40s", s_uid);
        return -1;
    }
    xpv_buf args;
    xpv_buf_init(&args);
    xpv_buf_puts(out, HEADER);
    xpv_buf_puts(out, ",\"traceEvents\":[");
    write_event(out, hs, ix, &ix->rows[h.row], h.row, h.ev, 1, 0, &args);
    xpv_buf_puts(out, "]}");
    xpv_buf_free(&args);
    return 0;
}

static int render_search(const xpv_hostset *hs, const xpv_trace_index *ix, const xpv_params *q,
                         const char *prefix, int substring, xpv_buf *out, xpv_err *err) {
    const char *s_lim = xpv_param(q, "search_limit");
    const char *s_from = xpv_param(q, "search_start_ms");
    uint64_t limit = 1000, total = 0;
    int64_t from = INT64_MIN;
    if (s_lim && *s_lim && (!parse_u64(s_lim, &limit) || limit > 100000))
        return bad(err, "search_limit", s_lim);
    if (s_from && *s_from && !parse_ms(s_from, &from)) return bad(err, "search_start_ms", s_from);
    if (!*prefix) limit = 0;
    xpv_trace_hit *hits = NULL;
    size_t n = substring ? xpv_trace_search_text(hs, ix, prefix, from, limit, &hits, &total)
                         : xpv_trace_search(hs, ix, prefix, from, limit, &hits, &total);
    if (!*prefix) total = 0;
    xpv_buf args;
    xpv_buf_init(&args);
    xpv_buf_puts(out, HEADER);
    xpv_buf_puts(out, substring ? ",\"search\":" : ",\"searchPrefix\":");
    xpv_buf_json_cstr(out, prefix);
    xpv_buf_puts(out, ",\"totalMatches\":");
    xpv_buf_u64(out, total);
    xpv_buf_puts(out, ",\"traceEvents\":[");
    for (size_t i = 0; i < n; i++) {
        if (i) xpv_buf_putc(out, ',');
        xpv_buf_putc(out, '\n');
        write_event(out, hs, ix, &ix->rows[hits[i].row], hits[i].row, hits[i].ev, 0, 0, &args);
    }
    xpv_buf_puts(out, "\n]}");
    free(hits);
    xpv_buf_free(&args);
    return 0;
}

/* Whether the query asks for a window (XProf's streaming trace viewer:
 * tag=trace_viewer@, any window parameter or `format`) rather than the
 * full trace. */
static int is_windowed(const xpv_params *q) {
    const char *tag = q ? q->tag : NULL;
    size_t tl = tag ? strlen(tag) : 0;
    while (tl && tag[tl - 1] == '^') tl--;
    return (tl && tag[tl - 1] == '@') || xpv_param(q, "start_time_ms") ||
           xpv_param(q, "end_time_ms") || xpv_param(q, "resolution") || xpv_param(q, "format");
}

int xpv_trace_viewer_render(const xpv_hostset *hs, const void *derived, const xpv_params *q,
                            xpv_buf *out, xpv_err *err) {
    const xpv_trace_index *ix = derived;
    if (!ix) {
        err->status = XPV_E_INTERNAL;
        snprintf(err->msg, sizeof err->msg, "trace index missing");
        return -1;
    }
    const char *uid = xpv_param(q, "unique_id");
    if (!uid || !*uid) uid = xpv_param(q, "uid");
    if (uid && *uid) return render_details(hs, ix, uid, out, err);
    const char *text = xpv_param(q, "search");
    if (text) return render_search(hs, ix, q, text, 1, out, err);
    const char *prefix = xpv_param(q, "search_prefix");
    if (prefix) return render_search(hs, ix, q, prefix, 0, out, err);
    if (is_windowed(q)) return render_stream(hs, ix, q, out, err);
    return render_full(hs, ix, out);
}

/* ==== The full trace as a stream (xpv_tool_stream) ===================== */

static int stream_wants(const xpv_params *q) {
    const char *uid = xpv_param(q, "unique_id");
    if (!uid || !*uid) uid = xpv_param(q, "uid");
    if (uid && *uid) return 0;
    if (xpv_param(q, "search_prefix") || xpv_param(q, "search")) return 0;
    return !is_windowed(q);
}

static void *stream_open(const xpv_hostset *hs, const void *derived, const xpv_params *q,
                         xpv_err *err) {
    (void)q;
    if (!derived) {
        err->status = XPV_E_INTERNAL;
        snprintf(err->msg, sizeof err->msg, "trace index missing");
        return NULL;
    }
    return full_open(hs, derived);
}

static int stream_next(void *st, xpv_buf *out, size_t max) {
    return full_next(st, out, max);
}

static void stream_free(void *st) { full_free(st); }

const xpv_tool_stream xpv_trace_viewer_stream = {
    .wants = stream_wants,
    .open = stream_open,
    .next = stream_next,
    .free = stream_free,
};
