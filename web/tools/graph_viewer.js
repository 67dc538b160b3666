// graph_viewer.js - the Graph Viewer page: the HLO graph around one op.
//
// Data: `data?tag=graph_viewer&module_name=M&node_name=N&graph_width=W
// &merge_fusion=0|1&expand=a,b` -> {module, programId, computation, center,
// chosenBy, graphWidth, nodes [{id, name, opcode, shape, category, color
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
// Page state (deep links): gv.module, gv.program, gv.node, gv.width,
// gv.merge, gv.expand.
import { el } from '../lib/dom.js';
import { formatNumber } from '../lib/chart.js';
import { layout } from '../lib/graph_layout.js';
import * as pagestate from '../lib/pagestate.js';

const SVGNS = 'http://www.w3.org/2000/svg';
const CHAR_W = 7, LINE_H = 15, MAX_CHARS = 44;

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

const cut = (s) => (s.length > MAX_CHARS ? `${s.slice(0, MAX_CHARS - 1)}\u2026` : s);

// XLA GetInstructionNodeLabel: the name alone when it starts with the opcode.
function labelLines(n) {
  const lines = [];
  if (n.opcode === 'parameter') lines.push([`Parameter ${n.parameter}`, true], [n.name, false]);
  else if (n.name.startsWith(n.opcode)) lines.push([n.name, true]);
  else lines.push([n.opcode, true], [n.name, false]);
  lines.push([n.shape, false]);
  if (n.selfTimePs > 0) lines.push([`${formatNumber(n.selfTimePs / 1e6)} \u00b5s self \u00b7 ${n.occurrences}\u00d7`, false]);
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
  root.append(bar, summary, msg, main);

  const svgEl = svg('svg', { class: 'xpv-gv-svg', width: '100%', height: '100%' });
  svgEl.style.display = 'block';
  svgEl.style.cursor = 'grab';
  const view = svg('g', { class: 'xpv-gv-view' });
  svgEl.append(svg('defs', {}, svg('marker', { id: 'xpv-gv-arrow', viewBox: '0 0 10 10', refX: '10', refY: '5',
    markerWidth: '7', markerHeight: '7', orient: 'auto-start-reverse' }, svg('path', { d: 'M0,0 L10,5 L0,10 z', fill: '#555' }))), view);
  canvas.append(svgEl);

  let data = null, pos = null, selected = null;
  const good = { expand: [] };   // the expand list of the graph shown
  const tf = { x: 0, y: 0, k: 1 };
  const apply = () => view.setAttribute('transform', `translate(${tf.x},${tf.y}) scale(${tf.k})`);
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
      expand: st.expand.length ? st.expand.join(',') : undefined }, extra || {});
  }
  function save() {
    pagestate.set({ 'gv.module': st.module, 'gv.program': st.module ? null : st.program, 'gv.node': st.node,
      'gv.width': st.width === '3' ? null : st.width, 'gv.merge': st.merge ? '1' : null,
      'gv.expand': st.expand.length ? st.expand.join(',') : null });
  }

  function showDetails(n) {
    selected = n ? n.id : null;
    for (const g of view.querySelectorAll('.xpv-gv-node')) g.classList.toggle('xpv-gv-selected', n && g.dataset.id === String(n.id));
    for (const g of view.querySelectorAll('.xpv-gv-node rect')) g.setAttribute('stroke-width', g.parentNode.classList.contains('xpv-gv-selected') ? '3' : '1');
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
    if (n.selfTimePs > 0) row('device self time', `${formatNumber(n.selfTimePs / 1e6)} \u00b5s over ${n.occurrences} occurrence(s)`);
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
    search.value = name;
    load();
  }

  function draw() {
    view.textContent = '';
    const nodes = data.nodes.filter((n) => !n.expanded);
    const byId = new Map(data.nodes.map((n) => [n.id, n]));
    const sizes = new Map(nodes.map((n) => {
      const lines = labelLines(n);
      return [n.id, { lines, w: Math.max(60, Math.max(...lines.map(([t]) => t.length)) * CHAR_W + 16), h: lines.length * LINE_H + 10 }];
    }));
    // a cluster's label names its fusion (or caller)
    const clusterLabel = (c) => {
      const caller = byId.get(c.instr), fusion = c.kind === 'fusion';
      return [cut(`${fusion ? 'Fused expression for' : 'Subcomputation for'} ${caller ? caller.name : ''}`),
        cut(fusion && caller ? caller.category : c.name)];
    };
    const clusters = data.clusters.map((c) => ({ id: c.id, parent: c.parent,
      minWidth: Math.max(...clusterLabel(c).map((t) => t.length)) * 6.5 + 16 }));
    pos = layout({ nodes: nodes.map((n) => ({ id: n.id, w: sizes.get(n.id).w, h: sizes.get(n.id).h, cluster: n.cluster })),
      edges: data.edges.map((e) => ({ from: e.from, to: e.to })), clusters }, { rankGap: 46, labelHeight: 34 });
    const depth = (c) => { let d = 0; for (let k = c; k !== null && k !== undefined && d < 64; d++) { const cc = data.clusters.find((x) => x.id === k); k = cc ? cc.parent : null; } return d; };
    for (const c of data.clusters.slice().sort((a, b) => depth(a.id) - depth(b.id))) {
      const b = pos.clusters.get(c.id);
      if (!b) continue;
      const caller = byId.get(c.instr);
      const hl = caller && caller.center;
      const fusion = c.kind === 'fusion';
      const g = svg('g', { class: 'xpv-gv-cluster', 'data-name': caller ? caller.name : c.name, 'data-kind': c.kind });
      g.append(svg('rect', { x: b.x, y: b.y, width: b.w, height: b.h, rx: 8, fill: fusion ? (hl ? '#ffcdd2' : '#f5f5f5') : 'none',
        stroke: fusion ? (hl ? '#b71c1c' : '#c2c2c2') : '#000', 'stroke-width': fusion ? 2 : 1 }));
      const t = svg('text', { x: b.x + b.w / 2, y: b.y + 14, 'text-anchor': 'middle', 'font-size': '11', fill: '#333' });
      const [l1, l2] = clusterLabel(c);
      t.append(svg('tspan', { 'font-weight': 'bold' }, document.createTextNode(l1)));
      t.append(svg('tspan', { x: b.x + b.w / 2, dy: '13' }, document.createTextNode(l2)));
      g.append(t);
      g.style.cursor = 'pointer';
      if (caller) {
        t.addEventListener('click', (ev) => { ev.stopPropagation(); showDetails(caller); });
        t.addEventListener('dblclick', (ev) => { ev.stopPropagation(); recenter(caller.name); });
      }
      view.append(g);
    }
    const kinds = new Map(data.edges.map((e) => [`${e.from}>${e.to}`, e.kind]));
    for (const e of pos.edges) {
      const p = e.points;
      let d = `M${p[0][0]},${p[0][1]}`;
      for (let k = 1; k < p.length; k++) {
        const [x0, y0] = p[k - 1], [x1, y1] = p[k], my = (y0 + y1) / 2;
        d += ` C${x0},${my} ${x1},${my} ${x1},${y1}`;
      }
      const kind = kinds.get(`${e.from}>${e.to}`);
      view.append(svg('path', { class: 'xpv-gv-edge', d, fill: 'none', stroke: '#555', 'stroke-width': 1.2,
        'stroke-dasharray': kind === 'call' ? '6 4' : kind === 'control' ? '2 3' : null, 'marker-end': 'url(#xpv-gv-arrow)',
        'data-from': byId.get(e.from).name, 'data-to': byId.get(e.to).name }));
    }
    for (const n of nodes) {
      const b = pos.nodes.get(n.id), sz = sizes.get(n.id);
      const [fill, stroke, font] = n.center ? SCHEMES.darkRed : DASHED.has(n.state) ? ['white', '#757575', '#757575'] : (SCHEMES[n.color] || SCHEMES.white);
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
      view.append(g);
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
        view.append(m);
      }
    }
  }

  function fillModules() {
    modSel.textContent = '';
    for (const m of data.modules) {
      const t = m.timePs > 0 ? ` \u00b7 ${formatNumber(m.timePs / 1e6)} \u00b5s` : '';
      modSel.append(el('option', { value: m.name }, `${m.name}${t}`));
    }
    modSel.value = data.module;
  }

  let seq = 0;   // only the latest request draws (controls may fire twice)
  async function load() {
    msg.textContent = '';
    const my = ++seq;
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
        return;
      }
      throw e;
    }
    if (my !== seq) return;
    data = d;
    good.expand = st.expand.slice();
    st.module = d.module;
    st.node = d.center || st.node;
    save();
    fillModules();
    if (!search.value) search.value = d.center;
    names.textContent = '';
    for (const n of d.nodes) names.append(el('option', { value: n.name }));
    const how = { node_name: 'the op asked for', most_expensive: "the module's most expensive op",
      entry_root: 'the root of the entry computation (no device op of this module names an instruction)' }[d.chosenBy] || d.chosenBy;
    summary.textContent = `Module ${d.module} \u00b7 computation ${d.computation} \u00b7 centre ${d.center || '(whole computation)'}: ${how} ` +
      `\u00b7 ${d.nodes.length} instructions drawn, graph width ${d.graphWidth}` + (st.expand.length ? ` (+ neighbours of ${st.expand.join(', ')})` : '');
    dot.setAttribute('href', ctx.api.url('data', params({ format: 'dot' })));
    draw();
    fitView(d.nodes.find((n) => n.center) ? d.nodes.find((n) => n.center).id : null);
    const c = d.nodes.find((n) => n.id === selected) || d.nodes.find((n) => n.center);
    showDetails(c || null);
  }

  const submit = () => {
    const v = search.value.trim();
    if (!v) return;
    recenter(v.replace(/^%/, ''));
  };
  go.addEventListener('click', submit);
  search.addEventListener('keydown', (ev) => { if (ev.key === 'Enter') submit(); });
  width.addEventListener('change', () => {
    const v = String(Math.max(0, Math.min(10, Number(width.value) || 0)));
    if (v === st.width) return;   // a second change event (blur) redraws nothing
    st.width = v;
    st.expand = [];
    load();
  });
  merge.addEventListener('change', () => { st.merge = merge.checked; load(); });
  modSel.addEventListener('change', () => { st.module = modSel.value; st.node = ''; st.expand = []; search.value = ''; load(); });
  if (st.node) search.value = st.node;
  await load();
}
