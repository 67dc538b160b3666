/*
 * hlo_graph.h - the instruction graph of one decoded HLO module and the
 * neighbourhood of an instruction, as XProf's graph_viewer draws it
 * (xprof/convert/hlo_proto_to_graph_view.cc, which calls XLA's
 * hlo_graph_dumper.cc: MakeNodeRadiusAroundFilter and HloDotDumper).
 *
 * The graph indexes every instruction of the module (computation after
 * computation, in proto order) with its operands and users as indices.
 * A neighbourhood follows XLA's filter: breadth-first from the centre along
 * operand and user edges up to `radius` steps, not into the operands of a
 * tuple (unless it is the centre), not into the users of a constant, not
 * into the users of an instruction with more than 16 of them (marked "some
 * users omitted"), and into the root of the computations a while / call /
 * conditional / async op calls.  Constants feeding a drawn node are always
 * drawn (XLA inlines them into the user).  A fusion is drawn expanded (a
 * cluster holding its whole fused computation) unless merge_fusion is set
 * or some of its operands are cut off (the centre always expands).
 * Differences from XLA, on purpose: get-tuple-element and constant
 * operands are nodes of their own (XLA merges them into their users), and
 * the body of a while / call is drawn as far as the radius reaches (XLA
 * draws it whole); reducer computations (reduce, sort, scatter...) are not
 * drawn (their name is in the instruction's text).
 */
#ifndef XPV_HLO_GRAPH_H
#define XPV_HLO_GRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "hlo.h"

typedef struct xpv_hlo_graph {
    const xpv_hlo_program *prog;
    size_t n;                  /* instructions */
    xpv_hlo_instr *ins;        /* by index */
    int32_t *comp;             /* computation index of each instruction */
    uint32_t *op_off;          /* operands of i: ops[op_off[i] .. op_off[i+1]) */
    int32_t *ops;              /* instruction index, -1 for an unknown id */
    uint32_t *use_off;         /* users of i: uses[use_off[i] .. use_off[i+1]) */
    int32_t *uses;
    size_t ncomps;             /* = module->n_computations */
    int32_t *comp_root;        /* root instruction of each computation, or -1 */
    int32_t *comp_caller;      /* first instruction calling it, or -1 */
    int32_t entry;             /* entry computation index, or -1 */
    int32_t *id_slots;         /* instruction id -> index, open addressing */
    size_t nid_slots;
} xpv_hlo_graph;

/* Index the decoded program `p` (its module must be there).  Never fails. */
xpv_hlo_graph *xpv_hlo_graph_build(const xpv_hlo_program *p);
void xpv_hlo_graph_free(xpv_hlo_graph *g);

/* Index of the instruction with this name (a leading '%' ignored) or id;
 * -1 when absent. */
int32_t xpv_hlo_graph_find(const xpv_hlo_graph *g, const char *name);
int32_t xpv_hlo_graph_by_id(const xpv_hlo_graph *g, int64_t id);
/* Computation index by name, or -1. */
int32_t xpv_hlo_graph_comp(const xpv_hlo_graph *g, const char *name);

/* How a drawn node is shown (XLA NodeFilterResult). */
enum {
    XPV_HOOD_HIDDEN = 0,
    XPV_HOOD_NORMAL,
    XPV_HOOD_SOME_OPERANDS_OMITTED,
    XPV_HOOD_ALL_OPERANDS_OMITTED,
    XPV_HOOD_SOME_USERS_OMITTED,
    XPV_HOOD_CENTER,
};

typedef struct xpv_hlo_hood {
    uint8_t *state;            /* per instruction: XPV_HOOD_*, 0 = not drawn */
    int32_t *depth;            /* steps from the nearest seed; -1 inside an
                                * expanded fusion (drawn whole) */
    uint8_t *expanded;         /* fusion drawn as a cluster */
    int32_t *cluster;          /* computation drawn as the box holding the
                                * node, -1 for the top computation */
    int32_t top;               /* the computation drawn */
    int32_t center;            /* centre instruction, -1 for a whole computation */
    size_t nshown;
} xpv_hlo_hood;

/* The neighbourhood of `center` within `radius` steps, plus (when given)
 * the radius-1 neighbourhoods of the drawn nodes `expand[0..nexpand)`
 * (the viewer's "show more" clicks: all users of such a node, even past
 * XLA's 16; nodes not drawn are ignored).  With
 * center -1 and `comp` >= 0 the whole computation is drawn (XProf's
 * node_name naming a computation).  Returns 0, or -1 when nothing to draw. */
int xpv_hlo_hood_build(const xpv_hlo_graph *g, int32_t center, int32_t comp, int radius,
                       const int32_t *expand, size_t nexpand, int merge_fusion,
                       xpv_hlo_hood *h);
void xpv_hlo_hood_free(xpv_hlo_hood *h);

/* The node an edge to / from instruction i attaches to: an expanded fusion
 * is drawn as its fused root (XLA GetNodeForEdge). */
int32_t xpv_hlo_hood_edge_node(const xpv_hlo_graph *g, const xpv_hlo_hood *h, int32_t i);

/* Calls fn(ctx, from, to, operand_number, kind) for each edge between
 * drawn nodes, in node order: kind 0 data (operand -> user; into an
 * expanded fusion it goes to the fused parameter), 1 control, 2 a
 * subcomputation's root -> the instruction calling it. */
typedef void (*xpv_hlo_edge_fn)(void *ctx, int32_t from, int32_t to, int operand, int kind);
void xpv_hlo_hood_edges(const xpv_hlo_graph *g, const xpv_hlo_hood *h, xpv_hlo_edge_fn fn,
                        void *ctx);

/* Operands / users of drawn node i that are not drawn. */
int xpv_hlo_hood_more_operands(const xpv_hlo_graph *g, const xpv_hlo_hood *h, int32_t i);
int xpv_hlo_hood_more_users(const xpv_hlo_graph *g, const xpv_hlo_hood *h, int32_t i);

/* XLA's colour scheme of an instruction (hlo_graph_dumper
 * GetInstructionColor): "yellow", "white", "green", "darkBlue", "purple",
 * "gray", "brown", "darkGreen", "orange", "darkOrange", "red". */
const char *xpv_hlo_color(const xpv_hlo_graph *g, int32_t i);

#endif /* XPV_HLO_GRAPH_H */
