// tf_data_bottleneck_analysis.js - the tf.data bottleneck analysis page.
//
// Data: `data?tag=tf_data_bottleneck_analysis` -> [graphTable, summaryTable,
// bottleneckTable] (XProf's three DataTables, tools/tf_data_bottleneck_
// analysis.c).  The page shows:
//   - the performance analysis summary (summary_message, input bound or not),
//   - the bottleneck table (one row per host input pipeline, slowest call,
//     with the bottleneck iterator and the suggestion),
//   - the table of all input pipelines (latency stats, calls, slow calls),
//   - the input pipeline graph of one call: host, pipeline and call
//     selectors; one SVG node per iterator (name, start time, total duration,
//     self time, #calls); the critical path (blocking iterators) in bold, the
//     bottleneck iterator in red.
// Server HTML (bottleneck / suggestion cells) is rebuilt through a tag
// whitelist (b, u, br, code, a[href^=https:]) before it is shown.
import { createTable } from '../lib/table.js';
import { el } from '../lib/dom.js';
import { fmtUs } from '../lib/format.js';

const SVGNS = 'http://www.w3.org/2000/svg';

function svg(tag, attrs) {
  const e = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  return e;
}

const ALLOWED = new Set(['B', 'U', 'BR', 'CODE', 'A', 'DIV', 'I']);

// A DocumentFragment holding the whitelisted part of `html`.
export function safeHtml(html) {
  const doc = new DOMParser().parseFromString(`<body>${html}</body>`, 'text/html');
  const out = document.createDocumentFragment();
  const copy = (src, dst) => {
    for (const n of src.childNodes) {
      if (n.nodeType === 3) { dst.append(document.createTextNode(n.textContent)); continue; }
      if (n.nodeType !== 1) continue;
      if (!ALLOWED.has(n.tagName)) { copy(n, dst); continue; }
      const e = document.createElement(n.tagName.toLowerCase());
      if (n.tagName === 'A') {
        const href = n.getAttribute('href') || '';
        if (/^https:\/\//.test(href)) {
          e.href = href;
          e.target = '_blank';
          e.rel = 'noopener noreferrer';
        }
      }
      copy(n, e);
      dst.append(e);
    }
  };
  copy(doc.body, out);
  return out;
}

const idx = (dt, id) => (dt.cols || []).findIndex((c) => c.id === id);
const cellV = (row, i) => (row.c[i] ? row.c[i].v : '');

// Graph rows of one (host, pipeline, rank): [{id, parent, type, name, p}].
export function graphNodes(graph, host, pipe, rank) {
  const h = idx(graph, 'host'), ip = idx(graph, 'input_pipeline'), rk = idx(graph, 'rank');
  const nm = idx(graph, 'name'), pa = idx(graph, 'parent'), ty = idx(graph, 'type');
  const out = [];
  for (const r of graph.rows || []) {
    if (cellV(r, h) !== host || cellV(r, ip) !== pipe || Number(cellV(r, rk)) !== rank) continue;
    const c = r.c[nm] || {};
    out.push({ id: String(c.v), parent: String(cellV(r, pa) || ''), type: Number(cellV(r, ty)) || 0,
      p: c.p || {}, f: c.f || '' });
  }
  return out;
}

// Tidy-ish tree layout: leaves take successive columns, parents are centred
// over their children, depth gives the row.  Returns {nodes, edges, cols, rows}.
export function layoutTree(nodes) {
  const byId = new Map(nodes.map((n) => [n.id, Object.assign({ kids: [] }, n)]));
  const roots = [];
  for (const n of byId.values()) {
    const p = n.parent && byId.get(n.parent);
    if (p && p !== n) p.kids.push(n);
    else roots.push(n);
  }
  let col = 0, maxDepth = 0;
  const seen = new Set();
  const place = (n, depth) => {
    if (seen.has(n.id)) return;
    seen.add(n.id);
    n.depth = depth;
    maxDepth = Math.max(maxDepth, depth);
    const kids = n.kids.filter((k) => !seen.has(k.id));
    if (!kids.length) { n.col = col++; return; }
    for (const k of kids) place(k, depth + 1);
    const placed = kids.filter((k) => k.col !== undefined);
    n.col = placed.length ? (placed[0].col + placed[placed.length - 1].col) / 2 : col++;
  };
  for (const r of roots) place(r, 0);
  const list = [...byId.values()].filter((n) => n.col !== undefined);
  const edges = [];
  for (const n of list) for (const k of n.kids) if (k.col !== undefined) edges.push([n, k]);
  return { nodes: list, edges, cols: Math.max(col, 1), rows: maxDepth + 1 };
}

function drawGraph(parent, nodes) {
  parent.textContent = '';
  if (!nodes.length) {
    parent.append(el('p', 'xpv-muted', 'No iterator in this call.'));
    return;
  }
  const L = layoutTree(nodes);
  const W = 210, H = 92, GX = 24, GY = 40, PAD = 10;
  const width = L.cols * (W + GX) - GX + 2 * PAD, height = L.rows * (H + GY) - GY + 2 * PAD;
  const s = svg('svg', { width, height, viewBox: `0 0 ${width} ${height}`, role: 'img',
    'aria-label': 'Input pipeline graph', class: 'td-graph-svg' });
  const pos = (n) => ({ x: PAD + n.col * (W + GX), y: PAD + n.depth * (H + GY) });
  for (const [a, b] of L.edges) {
    const pa = pos(a), pb = pos(b);
    const crit = a.type > 0 && b.type > 0;
    s.append(svg('line', { x1: pa.x + W / 2, y1: pa.y + H, x2: pb.x + W / 2, y2: pb.y,
      stroke: crit ? '#202124' : '#9aa0a6', 'stroke-width': crit ? 2.5 : 1, class: 'td-edge' }));
  }
  for (const n of L.nodes) {
    const p = pos(n);
    const g = svg('g', { class: `td-node td-type-${n.type}`, 'data-id': n.id, transform: `translate(${p.x},${p.y})` });
    const bottleneck = n.type === 2, crit = n.type >= 1;
    g.append(svg('rect', { width: W, height: H, rx: 6,
      fill: bottleneck ? '#fce8e6' : '#fff', stroke: bottleneck ? '#d93025' : crit ? '#202124' : '#9aa0a6',
      'stroke-width': crit ? 2.5 : 1 }));
    const lines = [
      [n.p.name || n.id, true],
      [`Start Time: ${fmtUs(n.p.start_time_us)}`], [`Total Duration: ${fmtUs(n.p.duration_us)}`],
      [`Self Duration: ${fmtUs(n.p.self_time_us)}`], [`# Calls: ${n.p.num_calls || 0}`],
    ];
    lines.forEach(([t, head], i) => {
      const tx = svg('text', { x: 8, y: 18 + i * 17, 'font-size': head ? 13 : 11.5,
        'font-weight': head || crit ? 'bold' : 'normal', fill: bottleneck ? '#a50e0e' : '#202124' });
      tx.textContent = t;
      g.append(tx);
    });
    const title = svg('title');
    title.textContent = `${n.p.long_name || n.p.name || n.id} (id ${n.id})` +
      (bottleneck ? ' - bottleneck' : crit ? ' - on the critical path' : '');
    g.append(title);
    s.append(g);
  }
  const scroll = el('div', 'td-graph-scroll');
  scroll.style.overflow = 'auto';
  scroll.append(s);
  parent.append(scroll);
}

function select(id, label, options) {
  const lab = el('label', 'xpv-field');
  lab.append(el('span', null, label));
  const s = el('select');
  s.id = id;
  for (const [v, t] of options) {
    const o = el('option', null, t);
    o.value = v;
    s.append(o);
  }
  lab.append(s);
  return { lab, s };
}

function renderBottlenecks(root, bt) {
  const box = el('div', 'xpv-card td-bottlenecks');
  box.append(el('h3', null, 'Input Pipelines With Bottlenecks'));
  const rows = bt.rows || [];
  if (!rows.length) {
    box.append(el('p', 'xpv-muted', 'No host input pipeline was captured.'));
    root.append(box);
    return;
  }
  const t = el('table', 'xpv-table-el td-bottleneck-table');
  const head = el('tr');
  for (const c of bt.cols) head.append(el('th', null, c.label));
  const thead = el('thead');
  thead.append(head);
  const tbody = el('tbody');
  const html = new Set(['bottleneck', 'suggestion']);
  for (const r of rows) {
    const tr = el('tr');
    bt.cols.forEach((c, i) => {
      const td = el('td');
      td.style.whiteSpace = 'normal';
      td.style.verticalAlign = 'top';
      const v = r.c[i] ? r.c[i].v : '';
      if (html.has(c.id)) td.append(safeHtml(String(v)));
      else td.textContent = c.id === 'max_latency' ? Number(v).toLocaleString('en-US') : String(v);
      tr.append(td);
    });
    tbody.append(tr);
  }
  t.append(thead, tbody);
  box.append(t);
  root.append(box);
}

export default async function render(root, ctx) {
  const data = await ctx.api.json('data', { run: ctx.run, tag: ctx.tool, host: ctx.host });
  if (!Array.isArray(data) || data.length < 3) throw new Error('unexpected tf_data_bottleneck_analysis data');
  const [graph, summary, bott] = data;
  root.textContent = '';
  root.append(el('h2', null, 'tf.data Bottleneck Analysis'));

  const p = bott.p || {};
  const sumCard = el('div', 'xpv-card td-summary');
  sumCard.append(el('h3', null, 'Performance Analysis Summary'));
  const bound = p.is_input_bound === 'true';
  // Slow calls the bottleneck analysis does not cover (device-side
  // pipelines): the verdict must not say "nothing slow" above them.
  const slowCol = (summary.cols || []).findIndex((c) => c.id === 'num_slow_calls');
  const slowCalls = slowCol < 0 ? 0 : (summary.rows || [])
    .reduce((a, r) => a + (Number(r.c[slowCol] && r.c[slowCol].v) || 0), 0);
  const verdict = el('p', 'td-verdict', bound ? 'Your program is input bound (tf.data).'
    : slowCalls ? `${slowCalls.toLocaleString()} slow tf.data call${slowCalls === 1 ? '' : 's'} ` +
      'in device-side pipelines (not covered by the bottleneck analysis).'
      : 'No slow tf.data input pipeline found.');
  verdict.style.fontWeight = 'bold';
  verdict.style.color = bound ? '#d93025' : slowCalls ? 'var(--warn)' : '#188038';
  sumCard.append(verdict, el('p', 'td-summary-message', p.summary_message || ''));
  root.append(sumCard);

  renderBottlenecks(root, bott);

  const allBox = el('div', 'xpv-card td-pipelines');
  allBox.append(el('h3', null, 'All Input Pipelines'));
  root.append(allBox);
  createTable(allBox, {
    data: summary, sort: { id: 'max', dir: 'desc' },
    filterPlaceholder: 'Filter by host or pipeline', csv: 'tf_data_input_pipelines.csv',
    emptyText: 'No input pipeline was captured.',
  });

  // Graph with host / pipeline / call selectors.
  const gBox = el('div', 'xpv-card td-graph');
  gBox.append(el('h3', null, 'Input Pipeline Graph'));
  root.append(gBox);
  const sh = idx(summary, 'host'), sp = idx(summary, 'input_pipeline'), sc = idx(summary, 'num_calls');
  const smax = idx(summary, 'max');
  const pipes = (summary.rows || []).map((r) => ({ host: String(cellV(r, sh)), pipe: String(cellV(r, sp)),
    calls: Number(cellV(r, sc)) || 0, max: Number(cellV(r, smax)) || 0 }));
  if (!pipes.length) {
    gBox.append(el('p', 'xpv-muted', 'No tf.data iterator activity to draw.'));
    return;
  }
  const legend = el('p', 'xpv-muted', 'Bold: critical path (blocking iterators). Red: the bottleneck iterator. ' +
    'Calls are ranked slowest first.');
  const bar = el('div', 'td-selectors');
  bar.style.display = 'flex';
  bar.style.gap = '12px';
  bar.style.flexWrap = 'wrap';
  const hosts = [...new Set(pipes.map((x) => x.host))];
  const hs = select('td-host', 'Host', hosts.map((h) => [h, h]));
  const ps = select('td-pipeline', 'Input pipeline', []);
  const cs = select('td-call', 'Call', []);
  bar.append(hs.lab, ps.lab, cs.lab);
  const area = el('div', 'td-graph-area');
  gBox.append(bar, legend, area);
  const fillPipes = () => {
    ps.s.textContent = '';
    for (const x of pipes.filter((q) => q.host === hs.s.value)) {
      const o = el('option', null, `${x.pipe} (max ${x.max.toLocaleString('en-US')} us)`);
      o.value = x.pipe;
      ps.s.append(o);
    }
  };
  const fillCalls = () => {
    cs.s.textContent = '';
    const x = pipes.find((q) => q.host === hs.s.value && q.pipe === ps.s.value);
    const n = x ? x.calls : 0;
    for (let i = 0; i < n; i++) {
      const o = el('option', null, i === 0 ? 'Slowest call (#1)' : `#${i + 1}`);
      o.value = String(i);
      cs.s.append(o);
    }
  };
  const draw = () => drawGraph(area, graphNodes(graph, hs.s.value, ps.s.value, Number(cs.s.value) || 0));
  hs.s.addEventListener('change', () => { fillPipes(); fillCalls(); draw(); });
  ps.s.addEventListener('change', () => { fillCalls(); draw(); });
  cs.s.addEventListener('change', draw);
  // Start on the slowest host pipeline when there is one.
  const first = pipes.slice().sort((a, b) => b.max - a.max).find((x) => /^Host:/.test(x.pipe)) || pipes[0];
  hs.s.value = first.host;
  fillPipes();
  ps.s.value = first.pipe;
  fillCalls();
  draw();
}
