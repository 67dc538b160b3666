// graph_layout.js - an offline layered ("Sugiyama") layout for small
// directed graphs with nested clusters, for the Graph Viewer (what XProf
// gets from Graphviz's dot, compiled to WASM and downloaded; here no
// download and no DOM: pure, deterministic, testable in node).
//
// API (stable):
//   layout({nodes, edges, clusters}, opts?) ->
//     {nodes: Map(id -> {x, y, w, h}),        // x, y: top-left corner
//      clusters: Map(id -> {x, y, w, h}),
//      edges: [{from, to, points: [[x, y], ...]}],   // source bottom -> target top
//      width, height}
//   nodes:    [{id, w, h, cluster?}]   (cluster: id of the innermost cluster, or null)
//   edges:    [{from, to}]             (node ids; unknown ids are ignored)
//   clusters: [{id, parent?, minWidth?}] (parent: enclosing cluster id, or null;
//             minWidth: at least this wide, e.g. for its label; content centred)
//   opts: {rankGap: 40, nodeGap: 20, pad: 12, labelHeight: 20, sweeps: 8}
//
// Method: each cluster is laid out first (innermost first) and then stands
// as one box in its parent, so boxes never overlap outside nodes.  Within
// a group: cycles broken (DFS back edges reversed), longest-path layering
// (sources on top) with nodes then pulled down next to their users, long
// edges split by dummy nodes, crossings reduced by barycenter sweeps (down
// and up, ties kept in input order), x from the mean of two compactions
// that pull each node towards its neighbours' barycenter (order and gaps
// kept), y by layer with each layer as tall as its tallest box.

const DEFAULTS = { rankGap: 40, nodeGap: 20, pad: 12, labelHeight: 20, sweeps: 8 };

// Cycle removal: edges closing a cycle (DFS back edges) are reversed.
function acyclic(n, edges) {
  const out = Array.from({ length: n }, () => []);
  edges.forEach((e, i) => out[e.u].push(i));
  const state = new Uint8Array(n); // 0 new, 1 on stack, 2 done
  const rev = new Uint8Array(edges.length);
  for (let s = 0; s < n; s++) {
    if (state[s]) continue;
    const stack = [[s, 0]];
    state[s] = 1;
    while (stack.length) {
      const top = stack[stack.length - 1];
      const [v, k] = top;
      if (k < out[v].length) {
        top[1]++;
        const ei = out[v][k], w = edges[ei].v;
        if (state[w] === 1) rev[ei] = 1;
        else if (!state[w]) { state[w] = 1; stack.push([w, 0]); }
      } else {
        state[v] = 2;
        stack.pop();
      }
    }
  }
  return edges.map((e, i) => (rev[i] ? { u: e.v, v: e.u, rev: true } : { u: e.u, v: e.v, rev: false }));
}

// Longest-path ranks (sources at 0), then each node with users pulled down
// to just above its nearest user.
function rank(n, edges) {
  const indeg = new Int32Array(n), succ = Array.from({ length: n }, () => []);
  const pred = Array.from({ length: n }, () => []);
  for (const e of edges) { if (e.u === e.v) continue; indeg[e.v]++; succ[e.u].push(e.v); pred[e.v].push(e.u); }
  const r = new Int32Array(n), order = [];
  const queue = [];
  for (let i = 0; i < n; i++) if (!indeg[i]) queue.push(i);
  for (let h = 0; h < queue.length; h++) {
    const v = queue[h];
    order.push(v);
    for (const w of succ[v]) {
      r[w] = Math.max(r[w], r[v] + 1);
      if (--indeg[w] === 0) queue.push(w);
    }
  }
  for (let k = order.length - 1; k >= 0; k--) {
    const v = order[k];
    if (!succ[v].length) continue;
    let m = Infinity;
    for (const w of succ[v]) m = Math.min(m, r[w]);
    if (m - 1 > r[v]) r[v] = m - 1;
  }
  return r;
}

function crossings(layers, down) {
  // edges between layer i and i+1: pairs (a, b) with a's ends strictly
  // left of b's at the top and strictly right at the bottom, counted as
  // inversions (segments sorted by top, then bottom position; a Fenwick
  // tree over bottom positions): n log n, the pairwise count's answer
  let c = 0;
  for (let i = 0; i + 1 < layers.length; i++) {
    const below = layers[i + 1], pos = new Map(below.map((v, k) => [v, k]));
    const segs = [];
    layers[i].forEach((v, k) => { for (const w of down[v]) segs.push(k * below.length + pos.get(w)); });
    if (segs.length < 2) continue;
    segs.sort((a, b) => a - b);
    const m = below.length, tree = new Int32Array(m + 1);
    let seen = 0, start = 0;
    for (let s = 0; s <= segs.length; s++) {
      // a run of segments from one top node: counted against the earlier
      // runs only, then added (equal tops never cross)
      if (s === segs.length || (s > start && Math.floor(segs[s] / m) !== Math.floor(segs[start] / m))) {
        for (let q = start; q < s; q++) {
          const b = segs[q] % m;
          let le = 0;
          for (let j = b + 1; j > 0; j -= j & -j) le += tree[j];
          c += seen - le;
        }
        for (let q = start; q < s; q++) {
          for (let j = segs[q] % m + 1; j <= m; j += j & -j) tree[j]++;
          seen++;
        }
        start = s;
      }
    }
  }
  return c;
}

function sweep(layers, down, up, sweeps) {
  let best = layers.map((l) => l.slice()), bestC = crossings(layers, down);
  const order = (layer, nbrs, ref) => {
    const pos = new Map(ref.map((v, k) => [v, k]));
    const keyed = layer.map((v, k) => {
      const ps = nbrs[v].map((w) => pos.get(w)).filter((p) => p !== undefined);
      return { v, k, b: ps.length ? ps.reduce((a, p) => a + p, 0) / ps.length : k };
    });
    keyed.sort((a, b) => a.b - b.b || a.k - b.k);
    return keyed.map((x) => x.v);
  };
  for (let s = 0; s < sweeps; s++) {
    if (s % 2 === 0) for (let i = 1; i < layers.length; i++) layers[i] = order(layers[i], up, layers[i - 1]);
    else for (let i = layers.length - 2; i >= 0; i--) layers[i] = order(layers[i], down, layers[i + 1]);
    const c = crossings(layers, down);
    if (c < bestC) { bestC = c; best = layers.map((l) => l.slice()); }
  }
  return best;
}

// x centres for one layer: pulled to `want`, order and gaps kept.
function place(layer, w, want, gap) {
  const n = layer.length, left = new Array(n), right = new Array(n);
  for (let k = 0; k < n; k++) {
    const v = layer[k];
    left[k] = k ? Math.max(want[v], left[k - 1] + (w[layer[k - 1]] + w[v]) / 2 + gap) : want[v];
  }
  for (let k = n - 1; k >= 0; k--) {
    const v = layer[k];
    right[k] = k < n - 1 ? Math.min(want[v], right[k + 1] - (w[layer[k + 1]] + w[v]) / 2 - gap) : want[v];
  }
  return layer.map((v, k) => (left[k] + right[k]) / 2);
}

// Lay out one group: items [{w, h}], edges [{u, v}] between item indices.
// Returns {pos: [{x, y}] (top-left), width, height, routes: per edge the
// dummy points (centres) between its ends}.
function layoutGroup(items, gedges, o) {
  const n0 = items.length;
  const es = acyclic(n0, gedges);
  const r = rank(n0, es);
  // dummies
  const w = items.map((it) => it.w), h = items.map((it) => it.h), rk = Array.from(r);
  const down = Array.from({ length: n0 }, () => []), up = Array.from({ length: n0 }, () => []);
  const chains = es.map((e) => {
    if (e.u === e.v) return [];
    let prev = e.u;
    const chain = [];
    for (let k = rk[e.u] + 1; k < rk[e.v]; k++) {
      const d = w.length;
      w.push(2); h.push(0); rk.push(k); down.push([]); up.push([]);
      down[prev].push(d); up[d].push(prev);
      chain.push(d);
      prev = d;
    }
    down[prev].push(e.v); up[e.v].push(prev);
    return chain;
  });
  const n = w.length;
  let nl = 0;   // (no spread: a wide graph passes the argument limit)
  for (let v = 0; v < n; v++) if (rk[v] + 1 > nl) nl = rk[v] + 1;
  let layers = Array.from({ length: nl }, () => []);
  for (let v = 0; v < n; v++) layers[rk[v]].push(v);
  layers = sweep(layers, down, up, o.sweeps);
  // x: initial packing, then pulls towards neighbours
  let x = new Array(n).fill(0);
  for (const layer of layers) {
    let cur = 0;
    for (const v of layer) { x[v] = cur + w[v] / 2; cur += w[v] + o.nodeGap; }
  }
  const want = new Array(n).fill(0);
  for (let it = 0; it < 6; it++) {
    const fromUp = it % 2 === 0;
    const seq = fromUp ? layers : layers.slice().reverse();
    for (const layer of seq) {
      // want[v]: the mean x of v's neighbours (same sum order), else x[v]
      for (const v of layer) {
        const a = fromUp ? up[v] : down[v], b = it >= 4 ? (fromUp ? down[v] : up[v]) : [];
        let sum = 0;
        for (const u of a) sum += x[u];
        for (const u of b) sum += x[u];
        want[v] = a.length + b.length ? sum / (a.length + b.length) : x[v];
      }
      const xs = place(layer, w, want, o.nodeGap);
      layer.forEach((v, k) => { x[v] = xs[k]; });
    }
  }
  let minX = Infinity, maxX = -Infinity;
  for (let v = 0; v < n; v++) { minX = Math.min(minX, x[v] - w[v] / 2); maxX = Math.max(maxX, x[v] + w[v] / 2); }
  if (!n) { minX = 0; maxX = 0; }
  x = x.map((v) => v - minX);
  const ly = [];
  let y = 0;
  for (let l = 0; l < nl; l++) {
    let lh = 0;
    for (const v of layers[l]) if (h[v] > lh) lh = h[v];
    ly.push({ y, h: lh });
    y += lh + o.rankGap;
  }
  const pos = [];
  for (let v = 0; v < n0; v++) {
    const L = ly[rk[v]];
    pos.push({ x: x[v] - w[v] / 2, y: L.y + (L.h - h[v]) / 2 });
  }
  const routes = chains.map((c) => c.map((d) => [x[d], ly[rk[d]].y + ly[rk[d]].h / 2]));
  return { pos, width: maxX - minX, height: nl ? y - o.rankGap : 0, routes, reversed: es.map((e) => e.rev) };
}

export function layout(graph, opts) {
  const o = Object.assign({}, DEFAULTS, opts || {});
  const nodes = graph.nodes || [], clusters = graph.clusters || [];
  const cl = new Map(clusters.map((c) => [c.id, c]));
  const parentOf = (c) => (cl.has(c) && cl.get(c).parent !== undefined && cl.has(cl.get(c).parent) ? cl.get(c).parent : null);
  const nodeCluster = new Map(nodes.map((nd) => [nd.id, cl.has(nd.cluster) ? nd.cluster : null]));
  // chain of clusters from the outside in, for a node
  const chains = new Map();
  const chainOf = (id) => {
    let ch = chains.get(id);
    if (ch) return ch;
    ch = [];
    for (let c = nodeCluster.get(id); c !== null && c !== undefined && ch.length < 64; c = parentOf(c)) ch.unshift(c);
    chains.set(id, ch);
    return ch;
  };
  // group -> items (nodes and child clusters) in input order
  const groups = new Map([[null, []]]);
  for (const c of clusters) groups.set(c.id, []);
  for (const c of clusters) groups.get(parentOf(c.id)).push({ kind: 'c', id: c.id });
  for (const nd of nodes) groups.get(nodeCluster.get(nd.id)).push({ kind: 'n', id: nd.id, w: nd.w, h: nd.h });
  const size = new Map(), rel = new Map(), routes = [];
  const edges = (graph.edges || []).filter((e) => nodeCluster.has(e.from) && nodeCluster.has(e.to));
  // the edges a group may hold (its item holds both ends: the group is the
  // top or in the chain of the source), in input order
  const candidates = new Map([[null, []]]);
  for (const e of edges) {
    const gs = new Set([null, ...chainOf(e.from)]);
    for (const g of gs) {
      if (!candidates.has(g)) candidates.set(g, []);
      candidates.get(g).push(e);
    }
  }
  // item of group g that holds node id (or -1)
  const itemIndex = (g, index, id) => {
    const ch = chainOf(id);
    if (g === null) return index.get(ch.length ? 'c' + ch[0] : 'n' + id) ?? -1;
    const k = ch.indexOf(g);
    if (k < 0) return -1;
    return index.get(k + 1 < ch.length ? 'c' + ch[k + 1] : 'n' + id) ?? -1;
  };
  const doGroup = (g, depth) => {
    const items = groups.get(g);
    for (const it of items) if (it.kind === 'c' && depth < 64) doGroup(it.id, depth + 1);
    const index = new Map(items.map((it, k) => [it.kind + it.id, k]));
    const boxes = items.map((it) => (it.kind === 'n' ? { w: it.w, h: it.h } : size.get(it.id)));
    const gedges = [], owners = [];
    for (const e of candidates.get(g) || []) {
      const u = itemIndex(g, index, e.from), v = itemIndex(g, index, e.to);
      if (u < 0 || v < 0 || u === v) continue;
      gedges.push({ u, v });
      owners.push(e);
    }
    const res = layoutGroup(boxes, gedges, o);
    const top = g === null ? 0 : o.labelHeight;
    const boxW = g === null ? res.width : Math.max(res.width + 2 * o.pad, 60, cl.get(g).minWidth || 0);
    const padX = g === null ? 0 : (boxW - res.width) / 2;
    items.forEach((it, k) => rel.set(it.kind + it.id, { x: res.pos[k].x + padX, y: res.pos[k].y + top + (g === null ? 0 : o.pad / 2) }));
    if (g !== null) size.set(g, { w: boxW, h: res.height + top + o.pad * 1.5 });
    owners.forEach((e, k) => routes.push({ e, g, pts: res.routes[k].map(([x, y]) => [x + padX, y + top + (g === null ? 0 : o.pad / 2)]), rev: res.reversed[k] }));
    if (g === null) size.set(null, { w: res.width, h: res.height });
  };
  doGroup(null, 0);
  // absolute positions, outside in
  const origin = new Map([[null, { x: 0, y: 0 }]]);
  const outCl = new Map(), outN = new Map();
  const place = (g, depth) => {
    const base = origin.get(g);
    for (const it of groups.get(g)) {
      const p = rel.get(it.kind + it.id);
      const ax = base.x + p.x, ay = base.y + p.y;
      if (it.kind === 'n') outN.set(it.id, { x: ax, y: ay, w: it.w, h: it.h });
      else {
        const s = size.get(it.id);
        outCl.set(it.id, { x: ax, y: ay, w: s.w, h: s.h });
        origin.set(it.id, { x: ax, y: ay });
        if (depth < 64) place(it.id, depth + 1);
      }
    }
  };
  place(null, 0);
  const outE = [];
  const routeOf = new Map(routes.map((r) => [r.e, r]));
  for (const e of edges) {
    const a = outN.get(e.from), b = outN.get(e.to);
    const r = routeOf.get(e);
    const base = r ? origin.get(r.g) : { x: 0, y: 0 };
    let mid = r ? r.pts.map(([x, y]) => [x + base.x, y + base.y]) : [];
    if (r && r.rev) mid = mid.reverse();
    outE.push({ from: e.from, to: e.to, points: [[a.x + a.w / 2, a.y + a.h], ...mid, [b.x + b.w / 2, b.y]] });
  }
  const root = size.get(null);
  return { nodes: outN, clusters: outCl, edges: outE, width: root.w, height: root.h };
}

export default { layout };
