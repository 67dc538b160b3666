// graph_layout.test.js - web/lib/graph_layout.js in node (no browser): on
// a chain, a fan-in, a graph with a cycle, nested clusters and a random
// DAG of 300 nodes, every edge goes down (target below source, when not
// closing a cycle), no two nodes overlap, every clustered node lies inside
// its cluster box (and each box inside its parent's), no outside node
// overlaps a box, and two runs give the same answer.  The random DAG laid
// out with the viewer's options gives the very answer of the layout before
// its speed-ups (crossings counted as inversions, no per-layer copies): a
// digest.  A fan of 20,000 nodes (a centre with 20,000 operands, issue 26
// item 11) lays out (no call spreading 20,000 arguments).  The worker's
// packing (lib/graph_layout_worker.js: typed arrays) round-trips an answer.
const crypto = require('crypto');
const path = require('path');
const { pathToFileURL } = require('url');

let failures = 0;
function ok(c, msg) {
  if (!c) { failures++; console.log(`    FAIL ${msg}`); } else console.log(`    ok ${msg}`);
}
const overlap = (a, b) => a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
const inside = (a, b) => a.x >= b.x - 1e-6 && a.y >= b.y - 1e-6 && a.x + a.w <= b.x + b.w + 1e-6 &&
  a.y + a.h <= b.y + b.h + 1e-6;

function check(name, g, layout, opts = {}) {
  const r = layout(g);
  const ns = [...r.nodes.entries()];
  ok(ns.length === g.nodes.length, `${name}: every node placed`);
  let bad = 0;
  for (let i = 0; i < ns.length; i++)
    for (let j = i + 1; j < ns.length; j++) if (overlap(ns[i][1], ns[j][1])) bad++;
  ok(bad === 0, `${name}: no overlapping nodes (${bad})`);
  let up = 0;
  for (const e of g.edges) {
    if (opts.cycle && opts.cycle.has(`${e.from}>${e.to}`)) continue;
    const a = r.nodes.get(e.from), b = r.nodes.get(e.to);
    if (!(b.y >= a.y + a.h)) up++;
  }
  ok(up === 0, `${name}: layers respect edges (${up} edges not going down)`);
  const byId = new Map(g.nodes.map((n) => [n.id, n]));
  let out = 0, stray = 0;
  for (const [id, p] of ns) {
    const c = byId.get(id).cluster;
    if (c !== null && c !== undefined && !inside(p, r.clusters.get(c))) out++;
    for (const [cid, box] of r.clusters) {
      // a node outside cluster cid (not in it nor a descendant) must not overlap it
      let k = c, inIt = false;
      while (k !== null && k !== undefined) {
        if (k === cid) inIt = true;
        const cc = g.clusters.find((x) => x.id === k);
        k = cc ? cc.parent : null;
      }
      if (!inIt && overlap(p, box)) stray++;
    }
  }
  ok(out === 0, `${name}: clustered nodes inside their box (${out})`);
  ok(stray === 0, `${name}: no outside node overlaps a box (${stray})`);
  for (const c of g.clusters || [])
    if (c.parent !== null && c.parent !== undefined)
      ok(inside(r.clusters.get(c.id), r.clusters.get(c.parent)), `${name}: cluster ${c.id} inside ${c.parent}`);
  ok(r.edges.length === g.edges.length && r.edges.every((e) => e.points.length >= 2), `${name}: edges routed`);
  ok(JSON.stringify([...layout(g).nodes]) === JSON.stringify(ns), `${name}: deterministic`);
  return r;
}

(async () => {
  const { layout } = await import(pathToFileURL(path.join(__dirname, '../../web/lib/graph_layout.js')).href);
  const N = (id, cluster = null) => ({ id, w: 80 + (id % 3) * 20, h: 30, cluster });
  check('chain', { nodes: [0, 1, 2, 3].map((i) => N(i)), edges: [{ from: 0, to: 1 }, { from: 1, to: 2 }, { from: 2, to: 3 }] }, layout);
  const fan = check('fan-in', { nodes: [0, 1, 2, 3, 4].map((i) => N(i)),
    edges: [{ from: 0, to: 4 }, { from: 1, to: 4 }, { from: 2, to: 4 }, { from: 3, to: 4 }, { from: 0, to: 3 }] }, layout);
  ok(fan.nodes.get(0).y < fan.nodes.get(3).y, 'fan-in: 0 above 3 (longest path)');
  check('cycle', { nodes: [0, 1, 2].map((i) => N(i)), edges: [{ from: 0, to: 1 }, { from: 1, to: 2 }, { from: 2, to: 0 }] },
    layout, { cycle: new Set(['2>0']) });
  // a fusion cluster (7) inside a while body (9), edges across boxes
  check('clusters', {
    nodes: [N(0), N(1), N(2, 7), N(3, 7), N(4, 7), N(5, 9), N(6)],
    clusters: [{ id: 9, parent: null }, { id: 7, parent: 9 }],
    edges: [{ from: 0, to: 2 }, { from: 1, to: 3 }, { from: 2, to: 4 }, { from: 3, to: 4 }, { from: 4, to: 5 }, { from: 5, to: 6 }, { from: 0, to: 6 }],
  }, layout);
  // a random DAG (fixed seed), 300 nodes, some in clusters
  let seed = 7;
  const rnd = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648; };
  const nodes = [], edges = [], clusters = [{ id: 1000, parent: null }, { id: 1001, parent: null }];
  for (let i = 0; i < 300; i++) nodes.push(N(i, i >= 100 && i < 110 ? 1000 : i >= 200 && i < 206 ? 1001 : null));
  for (let i = 1; i < 300; i++) {
    const k = 1 + Math.floor(rnd() * 2);
    for (let j = 0; j < k; j++) edges.push({ from: Math.floor(rnd() * i), to: i });
  }
  const t0 = Date.now();
  check('random 300', { nodes, edges, clusters }, layout);
  console.log(`    random 300: ${Date.now() - t0} ms (two layouts)`);
  const ser = (r) => JSON.stringify([[...r.nodes], [...r.clusters], r.edges, r.width, r.height]);
  const viewer = layout({ nodes, edges, clusters }, { rankGap: 46, labelHeight: 34 });
  const digest = crypto.createHash('sha256').update(ser(viewer)).digest('hex');
  ok(digest === '710b94b24634e92288c2969a1b6ef906ee02882c09f3f5099f1403995145d0de',
    `random 300, viewer options: the answer of the layout before its speed-ups (${digest.slice(0, 12)})`);
  // a fan: source -> 20,000 -> sink
  const W = 20000, wide = { nodes: [N(0)], edges: [], clusters: [] };
  for (let i = 1; i <= W; i++) { wide.nodes.push(N(i)); wide.edges.push({ from: 0, to: i }, { from: i, to: W + 1 }); }
  wide.nodes.push(N(W + 1));
  const t1 = Date.now();
  const fr = layout(wide, { rankGap: 46, labelHeight: 34 });
  console.log(`    fan of ${W}: ${Date.now() - t1} ms`);
  ok(fr.nodes.size === W + 2 && fr.edges.length === 2 * W, `fan of ${W}: every node and edge placed`);
  const ys = new Set();
  for (let i = 1; i <= W; i++) ys.add(fr.nodes.get(i).y);
  ok(ys.size === 1 && fr.nodes.get(0).y < fr.nodes.get(1).y && fr.nodes.get(W + 1).y > fr.nodes.get(1).y,
    `fan of ${W}: one layer between source and sink`);
  let over = 0;
  const row = [...fr.nodes.entries()].filter(([id]) => id >= 1 && id <= W).map(([, b]) => b).sort((a, b) => a.x - b.x);
  for (let i = 1; i < row.length; i++) if (row[i].x < row[i - 1].x + row[i - 1].w) over++;
  ok(over === 0, `fan of ${W}: no overlapping nodes in the layer (${over})`);
  // the worker's packing
  const { pack, unpack } = await import(pathToFileURL(path.join(__dirname, '../../web/lib/graph_layout_worker.js')).href);
  ok(ser(unpack(pack(viewer))) === ser(viewer), 'worker packing: unpack(pack(answer)) is the answer');
  ok(pack({ nodes: new Map([['a', { x: 0, y: 0, w: 1, h: 1 }]]), clusters: new Map(), edges: [], width: 1, height: 1 }) === null,
    'worker packing: ids not numbers are sent as they are');
  if (failures) { console.log(`FAIL ${failures}`); process.exit(1); }
})().catch((e) => { console.error(e); process.exit(1); });
