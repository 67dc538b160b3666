// graph_viewer.js - the Graph Viewer page: the HLO graph around one op.
//
// Data: `data?tag=graph_viewer&module_name=M&node_name=N&graph_width=W
// &merge_fusion=0|1&expand=a,b&max_nodes=K` -> {module, programId,
// computation, center, chosenBy, graphWidth, [maxNodes, totalNodes,
// omittedNodes: only when the limit K left nodes out], nodes [{id, name, opcode, shape, category, color
// (XLA's scheme), expression, opName, opType, source, cluster, state,
// center, distance, moreOperands, moreUsers, expanded, selfTimePs ...}],
// clusters [{id, name, kind, instr, root, parent}], edges [{from, to,
// kind}], modules [{name, programId, timePs}]}.  Without module_name the
// server opens the module with the most device time, without node_name its
// most expensive op.  `format=dot` is XLA-style DOT (the download link).
// Draws: module selector, instruction search, graph width, merge fusion,
// zoom / fit, the graph laid out offline by lib/graph_layout.js as SVG
// (pan by dragging, zoom with the wheel), fusions as boxes, "+N" markers
// on cut-off nodes (a click adds that node's neighbours), node details on
// click (double-click or "Centre here" re-centres), links to HLO Op Stats.
// Wide neighbourhoods never freeze the tab: the server answers at most
// max_nodes instructions (2,000 at first, the nearest to the centre), a
// note says how many were left out and "Show more" asks for 4x as many;
// the layout runs in a Web Worker (lib/graph_layout_worker.js; on the
// main thread only where a browser has no module workers) while the page
// says "Laying out N nodes"; a graph of more than FULL_MAX nodes is drawn
// windowed (only what is in view is in the DOM, plain boxes when zoomed
// out), so no step holds the main thread for long.  For tests, the
// canvas's data-state (loading, layout, drawing, ready, error), data-nodes
// (nodes laid out), data-lod (all: every element; detail / boxes: the
// windowed drawing with / without labels) and data-layout-by (worker,
// page).
// Page state (deep links): gv.module, gv.program, gv.node, gv.width,
// gv.merge, gv.expand, gv.max.
import { el } from '../lib/dom.js';
import { formatNumber } from '../lib/chart.js';
import { fmtDur } from '../lib/format.js';
import { layout } from '../lib/graph_layout.js';
import { unpack } from '../lib/graph_layout_worker.js';
import * as pagestate from '../lib/pagestate.js';

const SVGNS = 'http://www.w3.org/2000/svg';
const CHAR_W = 7, LINE_H = 15, MAX_CHARS = 44;
// the node limit: at first, the factor of "Show more", the server's most
const MAX_NODES = 2000, MORE = 4, MAX_NODES_CAP = 1000000;
// Up to FULL_MAX nodes every element is built at once.  A larger graph is
// drawn windowed: only what lies in (or near) the view is in the DOM
// (a browser needs ~0.5 ms per labelled SVG node: 2,000 took a second to
// render); nodes with their labels at zoom >= DETAIL_K, else as plain
// boxes merged into one path per colour; edges always merged into one
// path per kind; at most NEW_PER_FRAME labelled nodes built per frame.
const FULL_MAX = 300, DETAIL_K = 0.5, NEW_PER_FRAME = 80;

// XLA hlo_graph_dumper NodeColorsForScheme: [fill, stroke, font].
const SCHEMES = {
  blue: ['#bbdefb', '#8aacc8', 'black'], brown: ['#bcaaa4', '#8c7b75', 'black'],
  darkBlue: ['#1565c0', '#003c8f', 'white'], darkGreen: ['#2e7d32', '#005005', 'white'],
  darkOrange: ['#ffb74d', '#c88719', 'black'], darkRed: ['#b71c1c', '#7f0000', 'white'],
  gray: ['#cfd8dc', '#9ea7aa', 'black'], green: ['#c8e6c9', '#97b498', 'black'],
  orange: ['#ffe0b2', '#cbae82', 'black'], purple: ['#e1bee7', '#af8eb5', 'black'],
  red: ['#ffcdd2', '#cb9ca1', 'black'], white: ['white', 'black', 'black'],
  yellow: ['#fff9c4', '#cbc693', 'black'],
};
const DASHED = new Set(['someOperandsOmitted', 'allOperandsOmitted', 'someUsersOmitted']);

function svg(tag, attrs = {}, ...kids) {
  const e = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null) e.setAttribute(k, v);
  for (const k of kids) if (k) e.append(k);
  return e;
}

// 20002 -> "20,002" (toLocaleString's first call costs tens of ms)
const count = (v) => String(Math.round(Number(v))).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
const cut = (s) => (s.length > MAX_CHARS ? `${s.slice(0, MAX_CHARS - 1)}\u2026` : s);

// XLA GetInstructionNodeLabel: the name alone when it starts with the opcode.
function labelLines(n) {
  const lines = [];
  if (n.opcode === 'parameter') lines.push([`Parameter ${n.parameter}`, true], [n.name, false]);
  else if (n.name.startsWith(n.opcode)) lines.push([n.name, true]);
  else lines.push([n.opcode, true], [n.name, false]);
  lines.push([n.shape, false]);
  if (n.selfTimePs > 0) lines.push([`${fmtDur(n.selfTimePs / 1e6)} self \u00b7 ${n.occurrences}\u00d7`, false]);
  return lines.map(([t, b]) => [cut(t), b]);
}

export default async function render(root, ctx) {
  root.textContent = '';
  root.append(el('h2', {}, 'Graph Viewer'));
  const st = {
    module: pagestate.get('gv.module') || '',
    program: pagestate.get('gv.program') || '',
    node: pagestate.get('gv.node') || '',
    width: pagestate.get('gv.width') || '3',
    merge: pagestate.get('gv.merge') === '1',
    expand: (pagestate.get('gv.expand') || '').split(',').filter(Boolean),
    max: Math.min(MAX_NODES_CAP, Math.max(1, Math.floor(Number(pagestate.get('gv.max'))) || MAX_NODES)),
  };
  const bar = el('div', { class: 'xpv-gv-controls' });
  Object.assign(bar.style, { display: 'flex', flexWrap: 'wrap', gap: '10px', alignItems: 'center', margin: '4px 0 8px' });
  const modSel = el('select', { id: 'xpv-gv-module', 'aria-label': 'HLO module' });
  modSel.style.maxWidth = '420px';
  const search = el('input', { id: 'xpv-gv-search', type: 'search', list: 'xpv-gv-names',
    placeholder: 'Instruction name, e.g. fusion.3', 'aria-label': 'Find an instruction' });
  search.style.width = '220px';
  const names = el('datalist', { id: 'xpv-gv-names' });
  const go = el('button', { class: 'xpv-btn', id: 'xpv-gv-go', type: 'button' }, 'Search graph');
  const width = el('input', { id: 'xpv-gv-width', type: 'number', min: '0', max: '10', value: st.width });
  width.style.width = '4em';
  const merge = el('input', { id: 'xpv-gv-merge', type: 'checkbox' });
  merge.checked = st.merge;
  const zoomIn = el('button', { class: 'xpv-btn xpv-btn-icon', id: 'xpv-gv-zoom-in', type: 'button', title: 'Zoom in' }, '+');
  const zoomOut = el('button', { class: 'xpv-btn xpv-btn-icon', id: 'xpv-gv-zoom-out', type: 'button', title: 'Zoom out' }, '\u2212');
  const fit = el('button', { class: 'xpv-btn', id: 'xpv-gv-fit', type: 'button' }, 'Fit');
  const dot = el('a', { id: 'xpv-gv-dot', download: 'graph.dot' }, 'Download DOT');
  bar.append(el('label', {}, 'Module ', modSel), search, names, go,
    el('label', { for: 'xpv-gv-width' }, 'Graph width ', width),
    el('label', { for: 'xpv-gv-merge' }, merge, ' Merge fusion'), zoomIn, zoomOut, fit, dot);
  const summary = el('p', { class: 'xpv-muted xpv-gv-summary' });
  // the node limit's note and "Show more"; the layout's progress
  const limitNote = el('span', { class: 'xpv-gv-limit-note' });
  const showMore = el('button', { class: 'xpv-btn', id: 'xpv-gv-show-more', type: 'button' }, 'Show more');
  const limit = el('p', { class: 'xpv-gv-limit', role: 'status' }, limitNote, ' ', showMore);
  Object.assign(limit.style, { margin: '0 0 6px', padding: '4px 8px', background: '#fff8e1', border: '1px solid #ffe082',
    borderRadius: '4px', display: 'none' });
  const progress = el('p', { class: 'xpv-muted xpv-gv-progress', role: 'status', 'aria-live': 'polite' });
  progress.style.margin = '0 0 6px';
  const msg = el('p', { class: 'xpv-gv-msg', role: 'status' });
  msg.style.color = '#c62828';
  const main = el('div', { class: 'xpv-gv-main' });
  Object.assign(main.style, { display: 'flex', gap: '12px', alignItems: 'stretch' });
  const canvas = el('div', { class: 'xpv-card xpv-gv-canvas' });
  Object.assign(canvas.style, { flex: '1 1 auto', height: '70vh', minHeight: '320px', padding: '0', overflow: 'hidden', position: 'relative', background: '#fff' });
  const details = el('div', { class: 'xpv-card xpv-gv-details' });
  Object.assign(details.style, { flex: '0 0 340px', maxHeight: '70vh', overflow: 'auto', fontSize: '13px',
    overflowWrap: 'anywhere' });
  details.append(el('p', { class: 'xpv-muted' }, 'Click a node for its details; double-click to centre the graph on it. ' +
    'A "+N" marker means N operands (above) or users (below) are cut off: click it to draw them.'));
  main.append(canvas, details);
  root.append(bar, summary, limit, progress, msg, main);

  canvas.dataset.state = 'loading';
  const svgEl = svg('svg', { class: 'xpv-gv-svg', width: '100%', height: '100%' });
  svgEl.style.display = 'block';
  svgEl.style.cursor = 'grab';
  const view = svg('g', { class: 'xpv-gv-view' });
  svgEl.append(svg('defs', {}, svg('marker', { id: 'xpv-gv-arrow', viewBox: '0 0 10 10', refX: '10', refY: '5',
    markerWidth: '7', markerHeight: '7', orient: 'auto-start-reverse' }, svg('path', { d: 'M0,0 L10,5 L0,10 z', fill: '#555' }))), view);
  canvas.append(svgEl);

  let data = null, pos = null, selected = null;
  const good = { expand: [], max: MAX_NODES };   // the expand list and node limit of the graph shown
  const tf = { x: 0, y: 0, k: 1 };
  const apply = () => {
    view.setAttribute('transform', `translate(${tf.x},${tf.y}) scale(${tf.k})`);
    scheduleWindow();
  };
  function zoomAt(f, cx, cy) {
    const k = Math.max(0.05, Math.min(4, tf.k * f));
    tf.x = cx - (cx - tf.x) * (k / tf.k);
    tf.y = cy - (cy - tf.y) * (k / tf.k);
    tf.k = k;
    apply();
  }
  function fitView(centerOn) {
    if (!pos) return;
    const W = canvas.clientWidth || 800, H = canvas.clientHeight || 500;
    const c = centerOn !== null && centerOn !== undefined && pos.nodes.get(centerOn);
    // the whole graph when it fits legibly, else readable around the centre
    tf.k = Math.max(c ? 0.55 : 0.05, Math.min(1.2, (W - 40) / (pos.width + 1), (H - 40) / (pos.height + 1)));
    const cx = c ? c.x + c.w / 2 : pos.width / 2, cy = c ? c.y + c.h / 2 : pos.height / 2;
    tf.x = W / 2 - cx * tf.k;
    tf.y = H / 2 - cy * tf.k;
    apply();
  }
  svgEl.addEventListener('wheel', (ev) => {
    ev.preventDefault();
    const r = svgEl.getBoundingClientRect();
    zoomAt(ev.deltaY < 0 ? 1.15 : 1 / 1.15, ev.clientX - r.left, ev.clientY - r.top);
  }, { passive: false });
  let drag = null;
  svgEl.addEventListener('mousedown', (ev) => { drag = { x: ev.clientX, y: ev.clientY, tx: tf.x, ty: tf.y }; svgEl.style.cursor = 'grabbing'; });
  const onMove = (ev) => { if (drag) { tf.x = drag.tx + ev.clientX - drag.x; tf.y = drag.ty + ev.clientY - drag.y; apply(); } };
  const onUp = () => { drag = null; svgEl.style.cursor = 'grab'; };
  window.addEventListener('mousemove', onMove);
  window.addEventListener('mouseup', onUp);
  ctx.signal.addEventListener('abort', () => { window.removeEventListener('mousemove', onMove); window.removeEventListener('mouseup', onUp); });
  zoomIn.addEventListener('click', () => zoomAt(1.25, canvas.clientWidth / 2, canvas.clientHeight / 2));
  zoomOut.addEventListener('click', () => zoomAt(0.8, canvas.clientWidth / 2, canvas.clientHeight / 2));
  fit.addEventListener('click', () => fitView(null));

  function params(extra) {
    return Object.assign({ run: ctx.run, tag: ctx.tool, host: ctx.host,
      module_name: st.module || undefined, program_id: !st.module && st.program ? st.program : undefined,
      node_name: st.node || undefined, graph_width: st.width, merge_fusion: st.merge ? '1' : '0',
      expand: st.expand.length ? st.expand.join(',') : undefined, max_nodes: String(st.max) }, extra || {});
  }
  function save() {
    pagestate.set({ 'gv.module': st.module, 'gv.program': st.module ? null : st.program, 'gv.node': st.node,
      'gv.width': st.width === '3' ? null : st.width, 'gv.merge': st.merge ? '1' : null,
      'gv.expand': st.expand.length ? st.expand.join(',') : null, 'gv.max': st.max === MAX_NODES ? null : String(st.max) });
  }

  // The layout, off the main thread: one module worker per layout, ended
  // when it answers; a newer layout (or leaving the page) ends the one
  // before, whose promise then resolves to null.  Where a browser cannot
  // start a module worker, the layout runs here.
  let worker = null;
  function stopWorker() {
    if (!worker) return;
    worker.w.terminate();
    worker.done(null);
    worker = null;
  }
  const onResize = () => scheduleWindow();
  window.addEventListener('resize', onResize);
  ctx.signal.addEventListener('abort', () => {
    window.removeEventListener('resize', onResize);
    stopWorker();
    scene = null;
    if (windowFrame) cancelAnimationFrame(windowFrame);
  });
  function layoutOffThread(graph, opts) {
    stopWorker();
    return new Promise((resolve) => {
      let w;
      try {
        w = new Worker(new URL('../lib/graph_layout_worker.js', import.meta.url), { type: 'module' });
      } catch (e) {
        canvas.dataset.layoutBy = 'page';
        resolve(layout(graph, opts));
        return;
      }
      canvas.dataset.layoutBy = 'worker';
      const me = { w, done: resolve };
      worker = me;
      const finish = (fn) => {
        if (worker !== me) return;
        worker = null;
        w.terminate();
        fn();
      };
      w.onmessage = (ev) => finish(() => {
        if (ev.data && ev.data.error) {
          msg.textContent = `The graph could not be laid out: ${ev.data.error}`;
          progress.textContent = '';
          canvas.dataset.state = 'error';
          resolve(null);
        } else resolve(ev.data.packed ? unpack(ev.data.packed) : ev.data.result);
      });
      w.onerror = (ev) => {   // no module workers: lay out here
        if (ev && ev.preventDefault) ev.preventDefault();
        canvas.dataset.layoutBy = 'page';
        finish(() => resolve(layout(graph, opts)));
      };
      w.postMessage({ id: 1, graph, opts });
    });
  }

  function showDetails(n) {
    selected = n ? n.id : null;
    for (const g of view.querySelectorAll('.xpv-gv-node')) markSelected(g);
    details.textContent = '';
    if (!n) return;
    details.append(el('h3', { class: 'xpv-gv-details-name' }, n.name));
    const row = (k, v) => { if (v !== undefined && v !== null && v !== '') details.append(el('div', {}, el('strong', {}, `${k}: `), String(v))); };
    row('opcode', n.opcode);
    row('category', n.category);
    row('shape', n.shape);
    row('computation', n.computation);
    row('framework op', n.opName);
    row('op type', n.opType);
    row('source', n.source);
    if (n.selfTimePs > 0) row('device self time', `${fmtDur(n.selfTimePs / 1e6)} over ${n.occurrences} occurrence(s)`);
    row('operands cut off', n.moreOperands || null);
    row('users cut off', n.moreUsers || null);
    const ex = el('pre', { class: 'xpv-gv-expression' }, n.expression);
    Object.assign(ex.style, { whiteSpace: 'pre-wrap', wordBreak: 'break-all' });
    details.append(ex);
    const acts = el('div', {});
    acts.style.display = 'flex';
    acts.style.gap = '8px';
    acts.style.flexWrap = 'wrap';
    if (!n.center) {
      const b = el('button', { class: 'xpv-btn xpv-gv-recenter', type: 'button' }, 'Centre here');
      b.addEventListener('click', () => recenter(n.name));
      acts.append(b);
    }
    if (!ctx.tools || ctx.tools.includes('hlo_stats')) {
      const a = el('a', { href: '#', class: 'xpv-gv-to-hlo-stats' }, 'Show in HLO Op Stats');
      a.addEventListener('click', (ev) => { ev.preventDefault(); ctx.navigate({ tool: 'hlo_stats' }, { 'hlo.q': n.name }); });
      acts.append(a);
    }
    details.append(acts);
  }

  function recenter(name) {
    st.node = name;
    st.expand = [];
    st.max = MAX_NODES;
    search.value = name;
    load();
  }

  function markSelected(g) {
    const on = selected !== null && g.dataset.id === String(selected);
    g.classList.toggle('xpv-gv-selected', on);
    g.querySelector('rect').setAttribute('stroke-width', on ? '3' : '1');
  }

  // ---- SVG elements of one cluster box, edge, node (with its "+N" markers)
  function clusterEl(c, b, caller, labels) {
    const hl = caller && caller.center;
    const fusion = c.kind === 'fusion';
    const g = svg('g', { class: 'xpv-gv-cluster', 'data-name': caller ? caller.name : c.name, 'data-kind': c.kind });
    g.append(svg('rect', { x: b.x, y: b.y, width: b.w, height: b.h, rx: 8, fill: fusion ? (hl ? '#ffcdd2' : '#f5f5f5') : 'none',
      stroke: fusion ? (hl ? '#b71c1c' : '#c2c2c2') : '#000', 'stroke-width': fusion ? 2 : 1 }));
    const t = svg('text', { x: b.x + b.w / 2, y: b.y + 14, 'text-anchor': 'middle', 'font-size': '11', fill: '#333' });
    const [l1, l2] = labels;
    t.append(svg('tspan', { 'font-weight': 'bold' }, document.createTextNode(l1)));
    t.append(svg('tspan', { x: b.x + b.w / 2, dy: '13' }, document.createTextNode(l2)));
    g.append(t);
    g.style.cursor = 'pointer';
    if (caller) {
      t.addEventListener('click', (ev) => { ev.stopPropagation(); showDetails(caller); });
      t.addEventListener('dblclick', (ev) => { ev.stopPropagation(); recenter(caller.name); });
    }
    return g;
  }
  // a cubic per segment, vertical at both ends
  const curve = (p0, p1) => {
    const [x0, y0] = p0, [x1, y1] = p1, my = (y0 + y1) / 2;
    return ` C${x0},${my} ${x1},${my} ${x1},${y1}`;
  };
  const nodeColours = (n) => (n.center ? SCHEMES.darkRed : DASHED.has(n.state) ? ['white', '#757575', '#757575'] : (SCHEMES[n.color] || SCHEMES.white));
  // the node's group, then its markers
  function nodeEls(n, b, sz) {
    const [fill, stroke, font] = nodeColours(n);
    const g = svg('g', { class: `xpv-gv-node${n.center ? ' xpv-gv-center' : ''}`, 'data-name': n.name, 'data-id': n.id, 'data-opcode': n.opcode });
    g.style.cursor = 'pointer';
    g.append(svg('rect', { x: b.x, y: b.y, width: b.w, height: b.h, rx: n.opcode === 'while' ? b.h / 2 : 3, fill, stroke,
      'stroke-width': 1, 'stroke-dasharray': DASHED.has(n.state) && !n.center ? '4 3' : null }));
    const t = svg('text', { x: b.x + b.w / 2, y: b.y + 5 + LINE_H - 3, 'text-anchor': 'middle', 'font-size': '12', fill: font });
    sz.lines.forEach(([s, bold], k) => t.append(svg('tspan', { x: b.x + b.w / 2, dy: k ? LINE_H : 0, 'font-weight': bold ? 'bold' : null }, document.createTextNode(s))));
    g.append(t);
    g.append(svg('title', {}, document.createTextNode(n.expression)));
    g.addEventListener('mousedown', (ev) => ev.stopPropagation());
    g.addEventListener('click', () => showDetails(n));
    g.addEventListener('dblclick', () => recenter(n.name));
    const out = [g];
    for (const [dir, count, y] of [['operands', n.moreOperands, b.y - 9], ['users', n.moreUsers, b.y + b.h + 9]]) {
      if (!count) continue;
      const m = svg('g', { class: 'xpv-gv-more', 'data-name': n.name, 'data-dir': dir });
      m.style.cursor = 'pointer';
      m.append(svg('rect', { x: b.x + b.w - 34, y: y - 8, width: 30, height: 16, rx: 8, fill: '#1976d2' }),
        svg('text', { x: b.x + b.w - 19, y: y + 4, 'text-anchor': 'middle', 'font-size': '11', fill: 'white' }, document.createTextNode(`+${count}`)),
        svg('title', {}, document.createTextNode(`${count} ${dir} not drawn: click to draw the neighbours of ${n.name}`)));
      m.addEventListener('mousedown', (ev) => ev.stopPropagation());
      m.addEventListener('click', (ev) => {
        ev.stopPropagation();
        if (!st.expand.includes(n.name)) st.expand.push(n.name);
        load();
      });
      out.push(m);
    }
    return out;
  }

  // ---- the windowed drawing of a large graph (see FULL_MAX)
  let scene = null, windowFrame = 0;
  function scheduleWindow() {
    if (!scene || windowFrame) return;
    windowFrame = requestAnimationFrame(() => { windowFrame = 0; updateWindow(); });
  }
  function buildScene(nodes, sizes, byId, clusterLabel, depth) {
    const layer = (cls) => { const g = svg('g', { class: cls }); view.append(g); return g; };
    const sc = {
      // bottom to top: boxes of clusters (plain, then labelled), edges,
      // nodes (plain boxes, then labelled with their markers)
      clusterBoxes: layer('xpv-gv-cluster-boxes'), clusterLayer: layer('xpv-gv-clusters'),
      edgeLayer: layer('xpv-gv-edges'), boxLayer: layer('xpv-gv-boxes'), itemLayer: layer('xpv-gv-items'),
      edgePaths: new Map(), arrows: null, boxPaths: new Map(), clusterPaths: new Map(),
      nodes: nodes.map((n) => ({ n, b: pos.nodes.get(n.id), sz: sizes.get(n.id), els: null })),
      clusters: data.clusters.map((c) => ({ c, b: pos.clusters.get(c.id), d: depth(c.id), caller: byId.get(c.instr), el: null }))
        .filter((x) => x.b).sort((x, y) => x.d - y.d),
      edges: [],
    };
    for (const x of sc.clusters) x.labels = clusterLabel(x.c);
    const kinds = new Map(data.edges.map((e) => [`${e.from}>${e.to}`, e.kind]));
    // per edge its segments: bounding boxes, path text made when first in view
    for (const e of pos.edges) {
      const p = e.points, segs = [];
      for (let i = 1; i < p.length; i++) {
        const [ax, ay] = p[i - 1], [bx, by] = p[i];
        segs.push({ x0: Math.min(ax, bx), y0: Math.min(ay, by), x1: Math.max(ax, bx), y1: Math.max(ay, by), a: p[i - 1], b: p[i], d: null });
      }
      const [ex, ey] = p[p.length - 1];
      sc.edges.push({ segs, ex, ey, arrow: null, kind: kinds.get(`${e.from}>${e.to}`) });
    }
    for (const [kind, dash] of [['data', null], ['control', '2 3'], ['call', '6 4']]) {
      const path = svg('path', { class: 'xpv-gv-edge-merged', 'data-kind': kind, fill: 'none', stroke: '#555',
        'stroke-width': 1.2, 'stroke-dasharray': dash });
      sc.edgePaths.set(kind, path);
      sc.edgeLayer.append(path);
    }
    sc.arrows = svg('path', { class: 'xpv-gv-arrows', fill: '#555' });
    sc.edgeLayer.append(sc.arrows);
    return sc;
  }
  // one path per style for many boxes: [key, d, attrs] groups in order
  function mergedPaths(holder, map, groups) {
    const seen = new Set();
    for (const [key, d, attrs] of groups) {
      let p = map.get(key);
      if (!p) { p = svg('path', attrs); map.set(key, p); }
      p.setAttribute('d', d);
      holder.append(p);   // (moves it: the groups' order)
      seen.add(key);
    }
    for (const [key, p] of map) if (!seen.has(key)) p.remove();
  }
  const r1 = (v) => Math.round(v * 10) / 10;   // short numbers: quicker path text
  const rectD = (b) => `M${r1(b.x)},${r1(b.y)}h${r1(b.w)}v${r1(b.h)}h${-r1(b.w)}z`;
  // Puts in the DOM what lies in the view (plus a quarter of it around)
  // and takes out the rest; true when done, else the next frame goes on.
  function updateWindow() {
    const sc = scene;
    if (!sc) return true;
    const W = canvas.clientWidth || 800, H = canvas.clientHeight || 500;
    const k = tf.k, mx = W / k / 4, my = H / k / 4;
    const x0 = -tf.x / k - mx, x1 = (W - tf.x) / k + mx, y0 = -tf.y / k - my, y1 = (H - tf.y) / k + my;
    const hit = (ax, ay, bx, by) => ax <= x1 && bx >= x0 && ay <= y1 && by >= y0;
    const detail = k >= DETAIL_K;
    // edges: each segment in view, one path per kind; arrow heads
    const ds = { data: [], control: [], call: [] }, arrows = [];
    for (const e of sc.edges) {
      const into = ds[e.kind] || ds.data;
      for (const sg of e.segs) {
        if (!hit(sg.x0, sg.y0, sg.x1, sg.y1)) continue;
        if (sg.d === null) sg.d = `M${r1(sg.a[0])},${r1(sg.a[1])}${curve([r1(sg.a[0]), r1(sg.a[1])], [r1(sg.b[0]), r1(sg.b[1])])}`;
        into.push(sg.d);
      }
      const { ex, ey } = e;
      if (detail && hit(ex - 4, ey - 8, ex + 4, ey)) {
        if (e.arrow === null) e.arrow = `M${ex - 3.5},${ey - 7}L${ex},${ey}L${ex + 3.5},${ey - 7}z`;
        arrows.push(e.arrow);
      }
    }
    for (const [kind, path] of sc.edgePaths) path.setAttribute('d', ds[kind].join(''));
    sc.arrows.setAttribute('d', arrows.join(''));
    // clusters: labelled boxes in detail, else merged per depth and style
    const cgroups = new Map();
    let added = false;
    for (const x of sc.clusters) {
      const { b } = x, vis = hit(b.x, b.y, b.x + b.w, b.y + b.h);
      if (vis && detail) {
        if (!x.el) x.el = clusterEl(x.c, b, x.caller, x.labels);
        if (!x.el.isConnected) { sc.clusterLayer.append(x.el); added = true; }
      } else if (x.el && x.el.isConnected) x.el.remove();
      if (vis && !detail) {
        const fusion = x.c.kind === 'fusion', hl = x.caller && x.caller.center;
        const style = fusion ? (hl ? 'h' : 'f') : 'c';
        const key = `${x.d}:${style}`;
        if (!cgroups.has(key)) {
          cgroups.set(key, [key, [], { class: 'xpv-gv-cluster-merged', fill: fusion ? (hl ? '#ffcdd2' : '#f5f5f5') : 'none',
            stroke: fusion ? (hl ? '#b71c1c' : '#c2c2c2') : '#000', 'stroke-width': fusion ? 2 : 1 }]);
        }
        cgroups.get(key)[1].push(rectD(b));
      }
    }
    if (added) for (const x of sc.clusters) if (x.el && x.el.isConnected) sc.clusterLayer.append(x.el);   // depth order
    mergedPaths(sc.clusterBoxes, sc.clusterPaths, [...cgroups.values()].map(([key, d, attrs]) => [key, d.join(''), attrs]));
    // nodes: labelled (a few per frame) in detail, else boxes per colour
    const bgroups = new Map();
    let made = 0, done = true;
    for (const x of sc.nodes) {
      const { b } = x, vis = hit(b.x, b.y - 17, b.x + b.w, b.y + b.h + 17);
      if (vis && detail) {
        if (!x.els) {
          if (made >= NEW_PER_FRAME) { done = false; continue; }
          made++;
          x.els = svg('g', { class: 'xpv-gv-item' }, ...nodeEls(x.n, b, x.sz));
        }
        if (!x.els.isConnected) { markSelected(x.els.firstChild); sc.itemLayer.append(x.els); }
      } else if (x.els && x.els.isConnected) x.els.remove();
      if (vis && !detail) {
        const [fill, stroke] = nodeColours(x.n);
        const key = `${fill}|${stroke}`;
        if (!bgroups.has(key)) bgroups.set(key, [key, [], { class: 'xpv-gv-box-merged', fill, stroke, 'stroke-width': 1 }]);
        bgroups.get(key)[1].push(rectD(b));
      }
    }
    mergedPaths(sc.boxLayer, sc.boxPaths, [...bgroups.values()].map(([key, d, attrs]) => [key, d.join(''), attrs]));
    canvas.dataset.lod = detail ? 'detail' : 'boxes';
    if (!done) scheduleWindow();
    else if (canvas.dataset.state === 'drawing') {
      progress.textContent = '';
      canvas.dataset.state = 'ready';
    }
    return done;
  }

  // Lays out and draws `data`; false when a newer load made it stale.
  async function draw(my) {
    const nodes = data.nodes.filter((n) => !n.expanded);
    const byId = new Map(data.nodes.map((n) => [n.id, n]));
    const sizes = new Map(nodes.map((n) => {
      const lines = labelLines(n);
      let longest = 0;
      for (const [t] of lines) if (t.length > longest) longest = t.length;
      return [n.id, { lines, w: Math.max(60, longest * CHAR_W + 16), h: lines.length * LINE_H + 10 }];
    }));
    // a cluster's label names its fusion (or caller)
    const clusterLabel = (c) => {
      const caller = byId.get(c.instr), fusion = c.kind === 'fusion';
      return [cut(`${fusion ? 'Fused expression for' : 'Subcomputation for'} ${caller ? caller.name : ''}`),
        cut(fusion && caller ? caller.category : c.name)];
    };
    const clusters = data.clusters.map((c) => ({ id: c.id, parent: c.parent,
      minWidth: Math.max(...clusterLabel(c).map((t) => t.length)) * 6.5 + 16 }));
    canvas.dataset.state = 'layout';
    progress.textContent = `Laying out ${count(nodes.length)} node${nodes.length === 1 ? '' : 's'}\u2026`;
    const res = await layoutOffThread({ nodes: nodes.map((n) => ({ id: n.id, w: sizes.get(n.id).w, h: sizes.get(n.id).h, cluster: n.cluster })),
      edges: data.edges.map((e) => ({ from: e.from, to: e.to })), clusters }, { rankGap: 46, labelHeight: 34 });
    if (!res || my !== seq || ctx.signal.aborted) return false;
    // a large graph's steps each get a task of their own (below 100 ms)
    const pause = async () => {
      await new Promise((r) => setTimeout(r, 0));
      return my === seq && !ctx.signal.aborted;
    };
    if (nodes.length > FULL_MAX && !(await pause())) return false;
    pos = res;
    view.textContent = '';
    scene = null;
    canvas.dataset.nodes = String(nodes.length);
    const clusterById = new Map(data.clusters.map((c) => [c.id, c]));
    const depth = (c) => { let d = 0; for (let k = c; k !== null && k !== undefined && d < 64; d++) { const cc = clusterById.get(k); k = cc ? cc.parent : null; } return d; };
    const centre = data.nodes.find((n) => n.center);
    if (nodes.length > FULL_MAX) {
      canvas.dataset.state = 'drawing';
      progress.textContent = `Drawing ${count(nodes.length)} nodes (those in view)\u2026`;
      fitView(centre ? centre.id : null);   // (before the scene: one window update)
      const sc = buildScene(nodes, sizes, byId, clusterLabel, depth);
      if (!(await pause())) return false;
      scene = sc;
      updateWindow();
      return true;
    }
    canvas.dataset.lod = 'all';
    for (const c of data.clusters.slice().sort((a, b) => depth(a.id) - depth(b.id))) {
      const b = pos.clusters.get(c.id);
      if (b) view.append(clusterEl(c, b, byId.get(c.instr), clusterLabel(c)));
    }
    const kinds = new Map(data.edges.map((e) => [`${e.from}>${e.to}`, e.kind]));
    for (const e of pos.edges) {
      const p = e.points;
      let d = `M${p[0][0]},${p[0][1]}`;
      for (let k = 1; k < p.length; k++) d += curve(p[k - 1], p[k]);
      const kind = kinds.get(`${e.from}>${e.to}`);
      view.append(svg('path', { class: 'xpv-gv-edge', d, fill: 'none', stroke: '#555', 'stroke-width': 1.2,
        'stroke-dasharray': kind === 'call' ? '6 4' : kind === 'control' ? '2 3' : null, 'marker-end': 'url(#xpv-gv-arrow)',
        'data-from': byId.get(e.from).name, 'data-to': byId.get(e.to).name }));
    }
    for (const n of nodes) view.append(...nodeEls(n, pos.nodes.get(n.id), sizes.get(n.id)));
    fitView(centre ? centre.id : null);
    progress.textContent = '';
    canvas.dataset.state = 'ready';
    return true;
  }

  function fillModules() {
    modSel.textContent = '';
    for (const m of data.modules) {
      const t = m.timePs > 0 ? ` \u00b7 ${fmtDur(m.timePs / 1e6)}` : '';
      modSel.append(el('option', { value: m.name }, `${m.name}${t}`));
    }
    modSel.value = data.module;
  }

  let seq = 0;   // only the latest request draws (controls may fire twice)
  async function load() {
    msg.textContent = '';
    const my = ++seq;
    canvas.dataset.state = 'loading';
    let d;
    try {
      d = await ctx.api.json('data', params());
    } catch (e) {
      if (e && e.name === 'AbortError') throw e;
      if (my !== seq) return;
      if (data && e && e.status && e.status < 500) {   // a name not found: keep the graph
        msg.textContent = e.message;
        st.module = data.module;
        st.node = data.center;
        st.expand = good.expand.slice();
        st.max = good.max;
        canvas.dataset.state = pos ? 'ready' : 'loading';
        return;
      }
      throw e;
    }
    if (my !== seq) return;
    data = d;
    good.expand = st.expand.slice();
    good.max = st.max;
    st.module = d.module;
    st.node = d.center || st.node;
    save();
    fillModules();
    if (!search.value) search.value = d.center;
    names.textContent = '';   // filled when the search box is used
    namesOf = d;
    if (!(await draw(my))) return;
    // what is drawn, once it is (tests wait for the summary)
    const how = { node_name: 'the op asked for', most_expensive: "the module's most expensive op",
      entry_root: 'the root of the entry computation (no device op of this module names an instruction)' }[d.chosenBy] || d.chosenBy;
    summary.textContent = `Module ${d.module} \u00b7 computation ${d.computation} \u00b7 centre ${d.center || '(whole computation)'}: ${how} ` +
      `\u00b7 ${d.nodes.length} instructions drawn, graph width ${d.graphWidth}` + (st.expand.length ? ` (+ neighbours of ${st.expand.join(', ')})` : '');
    const left = d.omittedNodes > 0 ? d.omittedNodes : 0;
    limit.style.display = left ? '' : 'none';
    limit.dataset.omitted = String(left);
    if (left) {
      limitNote.textContent = `This neighbourhood has ${count(d.totalNodes)} instructions: the ` +
        `${count(d.nodes.length)} nearest the centre are drawn, ${count(left)} left out.`;
      const next = Math.min(MAX_NODES_CAP, st.max * MORE);
      showMore.textContent = `Show more (up to ${count(Math.min(next, d.totalNodes))})`;
      showMore.hidden = next <= st.max;
    }
    dot.setAttribute('href', ctx.api.url('data', params({ format: 'dot' })));
    const c = d.nodes.find((n) => n.id === selected) || d.nodes.find((n) => n.center);
    showDetails(c || null);
  }

  // the search box's suggestions: the names of the graph drawn, made on
  // first use (thousands of options cost the page tens of ms)
  let namesOf = null;
  const fillNames = () => {
    if (!namesOf) return;
    const frag = document.createDocumentFragment();
    for (const n of namesOf.nodes) frag.append(el('option', { value: n.name }));
    namesOf = null;
    names.append(frag);
  };
  search.addEventListener('focus', fillNames);
  search.addEventListener('input', fillNames);
  const submit = () => {
    const v = search.value.trim();
    if (!v) return;
    recenter(v.replace(/^%/, ''));
  };
  go.addEventListener('click', submit);
  showMore.addEventListener('click', () => {
    st.max = Math.min(MAX_NODES_CAP, st.max * MORE);
    load();
  });
  search.addEventListener('keydown', (ev) => { if (ev.key === 'Enter') submit(); });
  width.addEventListener('change', () => {
    const v = String(Math.max(0, Math.min(10, Number(width.value) || 0)));
    if (v === st.width) return;   // a second change event (blur) redraws nothing
    st.width = v;
    st.expand = [];
    load();
  });
  merge.addEventListener('change', () => { st.merge = merge.checked; load(); });
  modSel.addEventListener('change', () => { st.module = modSel.value; st.node = ''; st.expand = []; st.max = MAX_NODES; search.value = ''; load(); });
  if (st.node) search.value = st.node;
  await load();
}
