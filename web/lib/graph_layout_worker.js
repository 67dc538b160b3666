// graph_layout_worker.js - runs lib/graph_layout.js off the page's main
// thread (a module Web Worker, same origin: the CSP's script-src 'self'
// covers it), so laying out a wide graph never freezes the tab.
//
// Message in:  {id, graph, opts}   (graph and opts as layout() takes them)
// Message out: {id, packed}        layout()'s answer in typed arrays, their
//                                  buffers transferred (a structured clone
//                                  of 50,000 small objects costs the page
//                                  ~40 ms to read; unpack() rebuilds them in
//                                  a few): node and cluster ids must be
//                                  numbers (else {id, result}, the answer
//                                  as it is)
//          or  {id, error}         (the message of what layout() threw)
//
// pack(result) -> the typed arrays (or null: an id not a number);
// unpack(packed) -> layout()'s answer ({nodes: Map, clusters: Map, edges,
// width, height}); pages import it from here (importing this file in a
// page or in node only defines functions: onmessage is set in a worker).
import { layout } from './graph_layout.js';

export function pack(r) {
  const nodeIds = new Float64Array(r.nodes.size), nodes = new Float64Array(4 * r.nodes.size);
  let k = 0;
  for (const [id, b] of r.nodes) {
    if (typeof id !== 'number') return null;
    nodeIds[k] = id;
    nodes.set([b.x, b.y, b.w, b.h], 4 * k++);
  }
  const clusterIds = new Float64Array(r.clusters.size), clusters = new Float64Array(4 * r.clusters.size);
  k = 0;
  for (const [id, b] of r.clusters) {
    if (typeof id !== 'number') return null;
    clusterIds[k] = id;
    clusters.set([b.x, b.y, b.w, b.h], 4 * k++);
  }
  const m = r.edges.length, from = new Float64Array(m), to = new Float64Array(m), ptOff = new Int32Array(m + 1);
  let np = 0;
  for (const e of r.edges) np += e.points.length;
  const pts = new Float64Array(2 * np);
  np = 0;
  r.edges.forEach((e, i) => {
    from[i] = e.from;
    to[i] = e.to;
    ptOff[i] = np;
    for (const [x, y] of e.points) { pts[2 * np] = x; pts[2 * np + 1] = y; np++; }
  });
  ptOff[m] = np;
  return { nodeIds, nodes, clusterIds, clusters, from, to, ptOff, pts, width: r.width, height: r.height };
}

export function unpack(p) {
  const nodes = new Map(), clusters = new Map(), edges = [];
  for (let k = 0; k < p.nodeIds.length; k++) {
    const o = 4 * k;
    nodes.set(p.nodeIds[k], { x: p.nodes[o], y: p.nodes[o + 1], w: p.nodes[o + 2], h: p.nodes[o + 3] });
  }
  for (let k = 0; k < p.clusterIds.length; k++) {
    const o = 4 * k;
    clusters.set(p.clusterIds[k], { x: p.clusters[o], y: p.clusters[o + 1], w: p.clusters[o + 2], h: p.clusters[o + 3] });
  }
  for (let i = 0; i < p.from.length; i++) {
    const points = [];
    for (let j = p.ptOff[i]; j < p.ptOff[i + 1]; j++) points.push([p.pts[2 * j], p.pts[2 * j + 1]]);
    edges.push({ from: p.from[i], to: p.to[i], points });
  }
  return { nodes, clusters, edges, width: p.width, height: p.height };
}

// a dedicated worker's global scope (not a page, not node)
if (typeof WorkerGlobalScope !== 'undefined' && self instanceof WorkerGlobalScope) {
  self.onmessage = (ev) => {
    const { id, graph, opts } = ev.data || {};
    let r;
    try {
      r = layout(graph, opts);
    } catch (e) {
      self.postMessage({ id, error: String(e && e.message ? e.message : e) });
      return;
    }
    const packed = pack(r);
    if (!packed) {
      self.postMessage({ id, result: r });
      return;
    }
    self.postMessage({ id, packed }, [packed.nodeIds, packed.nodes, packed.clusterIds, packed.clusters, packed.from,
      packed.to, packed.ptOff, packed.pts].map((a) => a.buffer));
  };
}
