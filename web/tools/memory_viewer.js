// memory_viewer.js - the memory viewer page.
//
// Data: `module_list` (the run's HLO modules, "jit_f(123)", the one the
// device spent most time in first) and `data?tag=memory_viewer&module_name=
// ..&memory_space=..` -> XProf's PreprocessResult JSON (tools/memory_viewer.c):
// the heap size after every heap-simulator event in program order (padded
// and unpadded, MiB), the peak, and the buffers alive at the peak.  The page
// shows, for the module picked in its selector (and the memory space, when
// the program uses more than one):
//   - summary cards (peak with and without padding, arguments, temporaries,
//     outputs, total allocations),
//   - "Memory Allocation Size vs. Program Order": both heap sizes over the
//     program points, the peak marked; hovering shows the program point,
//     its instruction and the heap sizes,
//   - the buffers alive at the peak: a bar chart by size and a table
//     (size, unpadded size, shape, instruction, op, framework op, type);
//     hovering a bar or a row shows the buffer's details card.
import { lineChart, barChart } from '../lib/chart.js';
import { createTable } from '../lib/table.js';
import { el } from '../lib/dom.js';
import { formatBytes } from '../lib/format.js';
import * as pagestate from '../lib/pagestate.js';

const MIB = 1024 * 1024;
const num = (v) => Number(v) || 0;
// A size given in MiB: "20480 MiB", below 1 MiB in smaller units ("32 B").
export function mib(v) {
  const x = num(v);
  return Math.abs(x) >= 1 ? `${+x.toFixed(3)} MiB` : formatBytes(x * MIB);
}

// XLA's memory space numbers (colours); others are shown by number.
const SPACE_NAMES = { 0: 'HBM / device memory', 1: 'VMEM', 5: 'Host' };
export function spaceName(c) {
  return SPACE_NAMES[c] ? `${c} (${SPACE_NAMES[c]})` : `Memory space ${c}`;
}

// Lines of the details card of one heap object (XProf's buffer card).
export function bufferDetails(o) {
  const size = num(o.logicalBufferSizeMib), unpadded = num(o.unpaddedShapeMib);
  const lines = [];
  if (o.instructionName) lines.push(['Instruction', o.instructionName]);
  else lines.push(['Buffer', o.label || '']);
  lines.push(['Size', mib(size)]);
  if (o.logicalBufferId !== -1) {
    lines.push(['Unpadded size', mib(unpadded)]);
    if (size > unpadded) lines.push(['Padding overhead', `${mib(size - unpadded)} (${((size - unpadded) / size * 100).toFixed(1)}%)`]);
  }
  if (o.shapeString) lines.push(['Shape', o.shapeString]);
  if (o.opCode) lines.push(['Op code', o.opCode]);
  if (o.tfOpName) lines.push(['Framework op', o.tfOpName]);
  if (o.groupName) lines.push(['Allocation type', o.groupName]);
  if (o.sourceInfo && o.sourceInfo.fileName) {
    lines.push(['Source', `${o.sourceInfo.fileName}:${o.sourceInfo.lineNumber}`]);
  }
  return lines;
}

// A summary card; `raw` (MiB) is kept in data-mib for tests and tools.
function card(parent, label, raw, sub) {
  const c = el('div', 'xpv-card mv-card');
  const v = el('div', { class: 'mv-card-value', 'data-mib': String(num(raw)) }, mib(raw));
  v.style.fontSize = '20px';
  c.append(el('div', 'xpv-muted', label), v);
  if (sub) c.append(el('div', 'xpv-muted', sub));
  parent.append(c);
}

function renderSummary(parent, d) {
  const cards = el('div', 'xpv-cards mv-summary');
  const peak = num(d.peakHeapMib), unpadded = num(d.peakUnpaddedHeapMib);
  const pad = peak > 0 ? (peak - unpadded) / peak * 100 : 0;
  card(cards, 'Peak memory allocation', peak, `${mib(unpadded)} without padding (${pad.toFixed(1)}% padding)`);
  card(cards, 'Arguments (entry parameters)', d.entryComputationParametersMib);
  card(cards, 'Temporaries at peak', peak - num(d.indefiniteBufferAllocationMib),
    'buffers the heap simulator allocates');
  card(cards, 'Outputs (maybe live out)', d.maybeLiveOutMib);
  card(cards, 'Indefinite allocations', d.indefiniteBufferAllocationMib,
    'parameters, outputs, constants, thread-local');
  card(cards, 'Total buffer allocations', d.totalBufferAllocationMib);
  parent.append(cards);
}

function detailsCard(title, hintText) {
  const box = el('div', 'xpv-card mv-hover');
  box.setAttribute('aria-live', 'polite');
  const hint = el('p', 'xpv-muted', hintText);
  const dl = el('dl', 'xpv-kv');
  box.append(el('h4', null, title), hint);
  return {
    element: box,
    show(lines, index) {
      dl.textContent = '';
      for (const [k, v] of lines) dl.append(el('dt', null, k), el('dd', null, v));
      if (!dl.parentNode) { hint.remove(); box.append(dl); }
      box.dataset.index = String(index);
    },
  };
}

// Fraction (0..1) of the plot width under the pointer, from the chart's overlay rect.
function overlayFraction(ev, box, n) {
  const ov = box.querySelector('.xpv-overlay');
  if (!ov || ev.target !== ov || n < 1) return -1;
  const r = ov.getBoundingClientRect();
  if (!r.width) return -1;
  return Math.min(1, Math.max(0, (ev.clientX - r.left) / r.width));
}

// Where the peak is: XProf's peak position is the event that made it
// (`by`, the instruction of that event); the heap sizes are taken before
// each event, so the curve reaches the peak at the next program point
// (`at`), where the chart marks it and the text names it (issue 29: the
// marker said 4, the text 3).
function peakPoint(d) {
  const heap = d.heapSizes || [];
  const pos = num(d.peakHeapSizePosition);
  const at = pos + 1 < heap.length && num(heap[pos + 1]) === num(d.peakHeapMib) ? pos + 1 : pos;
  return { at, by: (d.hloInstructionNames || [])[pos] };
}

function renderTimeline(parent, d, signal) {
  const box = el('div', 'xpv-card mv-timeline');
  box.append(el('h3', null, 'Memory Allocation Size vs. Program Order'));
  parent.append(box);
  let heap = d.heapSizes || [], unpadded = d.unpaddedHeapSizes || [];
  const names = d.hloInstructionNames || [];
  if (heap.length <= 1) {
    box.append(el('p', 'xpv-muted mv-no-trace',
      'This memory space has no heap simulator trace: every buffer of it lives for the whole ' +
      'program (parameters, outputs, constants), so the heap size is constant.'));
  }
  const constant = heap.length <= 1;
  if (constant) {
    // no trace: the constant heap as a line over the program, not an
    // empty axis box
    const h = heap.length ? heap[0] : num(d.peakHeapMib);
    const u = unpadded.length ? unpadded[0] : num(d.peakUnpaddedHeapMib);
    heap = [h, h];
    unpadded = [u, u];
  }
  const x = heap.map((_, i) => i);
  const chartBox = el('div', 'mv-chart');
  chartBox.style.position = 'relative';
  box.append(chartBox);
  const { at } = peakPoint(d);
  const chart = lineChart(chartBox, {
    x,
    series: [
      { name: 'Heap size', values: heap.map(num), color: '#1a73e8', area: true },
      { name: 'Unpadded heap size', values: unpadded.map(num), color: '#e8710a' },
    ],
    height: 320, xLabel: 'Program order (heap simulator event)', xFormat: (v) => (Number.isInteger(v) ? String(v) : ''),
    yLabel: 'Allocated (MiB)', yFormat: (v) => (+v.toFixed(3)).toString(),
    markers: !constant ? [{ x: at, label: `peak ${mib(d.peakHeapMib)}` }] : [],
  });
  const hover = detailsCard('Program point', 'Hover over the chart to see the instruction at that program point.');
  box.append(hover.element);
  chartBox.addEventListener('mousemove', (ev) => {
    const f = overlayFraction(ev, chartBox, heap.length);
    if (f < 0) return;
    const i = Math.min(heap.length - 1, Math.round(f * (heap.length - 1)));
    hover.show([
      ['Program point', String(i)],
      ['Instruction', names[i] || '(end of program)'],
      ['Heap size', mib(heap[i])],
      ['Unpadded heap size', mib(unpadded[i])],
    ], i);
  });
  if (signal) signal.addEventListener('abort', () => chart.destroy(), { once: true });
}

function renderPeakBuffers(parent, d, signal) {
  const box = el('div', 'xpv-card mv-peak');
  box.append(el('h3', null, 'Buffers alive at the peak'));
  parent.append(box);
  const objs = d.maxHeapBySize || [];
  if (!objs.length) {
    box.append(el('p', 'xpv-muted', 'No buffer is alive at the peak of this memory space.'));
    return;
  }
  const { at, by } = peakPoint(d);
  box.append(el('p', 'xpv-muted',
    `${objs.length} buffer(s) at the peak (reached at program point ${at}${by ? `, after ${by}` : ''}), ` +
    'largest first; buffers under 16 KiB are summed into one "small" entry.'));
  const top = objs.slice(0, 60);
  const chartBox = el('div', 'mv-bars');
  chartBox.style.position = 'relative';
  box.append(chartBox);
  const chart = barChart(chartBox, {
    categories: top.map((o) => o.instructionName || o.label),
    series: [{ name: 'Size', values: top.map((o) => num(o.logicalBufferSizeMib)), color: '#1a73e8' }],
    stacked: false, height: 240, yLabel: 'Size (MiB)', yUnit: 'MiB',
    yFormat: (v) => (+v.toFixed(3)).toString(),
    tooltipTitle: (i) => `${top[i].instructionName || top[i].label} - ${top[i].shapeString || ''}`,
  });
  const hover = detailsCard('Buffer', 'Hover over a bar or a table row to see the buffer.');
  box.append(hover.element);
  chartBox.addEventListener('mousemove', (ev) => {
    const f = overlayFraction(ev, chartBox, top.length);
    if (f < 0) return;
    const i = Math.min(top.length - 1, Math.floor(f * top.length));
    hover.show(bufferDetails(top[i]), i);
  });
  const rows = objs.map((o, i) => ({
    rank: i + 1,
    name: o.instructionName || o.label,
    size: num(o.logicalBufferSizeMib),
    unpadded: num(o.unpaddedShapeMib),
    shape: o.shapeString || '',
    op: o.opCode || '',
    tfop: o.tfOpName || '',
    type: o.groupName || '',
  }));
  createTable(box, {
    columns: [
      { id: 'rank', label: '#', type: 'number' },
      { id: 'name', label: 'Instruction', type: 'string', maxWidth: '260px' },
      { id: 'size', label: 'Size', type: 'number', format: mib },
      { id: 'unpadded', label: 'Unpadded size', type: 'number', format: mib },
      { id: 'shape', label: 'Shape', type: 'string', maxWidth: '320px' },
      { id: 'op', label: 'Op code', type: 'string' },
      { id: 'tfop', label: 'Framework op', type: 'string', maxWidth: '320px' },
      { id: 'type', label: 'Allocation type', type: 'string' },
    ],
    rows,
    pageSize: 25,
    filterPlaceholder: 'Filter buffers',
    csv: 'memory_viewer_peak_buffers.csv',
    onRowHover: (row) => { if (row) hover.show(bufferDetails(objs[row.rank - 1]), row.rank - 1); },
  });
  if (signal) signal.addEventListener('abort', () => chart.destroy(), { once: true });
}

function selector(id, label, options, value) {
  const lab = el('label', 'xpv-field');
  const sel = el('select', { id });
  for (const [v, text] of options) {
    const o = el('option', null, text);
    o.value = v;
    sel.append(o);
  }
  sel.value = value;
  lab.append(el('span', null, label), sel);
  return { lab, sel };
}

export default async function render(root, ctx) {
  const list = (await ctx.api.text('module_list', { run: ctx.run, host: ctx.host })).trim();
  const modules = list ? list.split(',') : [];
  root.textContent = '';
  root.append(el('h2', null, 'Memory Viewer'));
  if (!modules.length) {
    root.append(el('p', 'xpv-empty-state', 'This profile has no HLO module (no HLO protos on its /host:metadata plane).'));
    return;
  }
  let module = pagestate.get('module');
  if (!modules.includes(module)) module = modules[0];
  let space = pagestate.get('memory_space') || '0';
  const bar = el('div', 'mv-bar');
  bar.style.display = 'flex';
  bar.style.gap = '16px';
  bar.style.flexWrap = 'wrap';
  const ms = selector('mv-module', 'Module', modules.map((m) => [m, m]), module);
  bar.append(ms.lab);
  root.append(bar);
  const body = el('div', 'mv-body');
  root.append(body);
  let spaceSel = null;
  let ctrl = null;
  const load = async () => {
    if (ctrl) ctrl.abort();
    ctrl = new AbortController();
    const signal = ctrl.signal;
    body.textContent = '';
    delete body.dataset.module;
    body.append(el('p', 'xpv-muted', 'Loading...'));
    let d;
    try {
      d = await ctx.api.json('data', { run: ctx.run, tag: ctx.tool, host: ctx.host,
        module_name: module, memory_space: space });
    } catch (e) {
      if (signal.aborted) return;
      body.textContent = '';
      body.append(el('p', 'xpv-error mv-error', `${module}: ${e.message}`));
      return;
    }
    if (signal.aborted) return;
    body.textContent = '';
    const spaces = (d.memorySpaces || []).map(String);
    if (spaces.length > 1 && !spaceSel) {
      spaceSel = selector('mv-memory-space', 'Memory space', spaces.map((c) => [c, spaceName(c)]), space);
      spaceSel.sel.addEventListener('change', () => { space = spaceSel.sel.value; pagestate.set({ memory_space: space }); load(); });
      bar.append(spaceSel.lab);
    }
    body.append(el('p', 'xpv-muted mv-module-info',
      `Module ${d.moduleName} (entry computation ${d.entryComputationName}), memory space ${spaceName(space)}.`));
    renderSummary(body, d);
    renderTimeline(body, d, signal);
    renderPeakBuffers(body, d, signal);
    body.dataset.module = module;   // what is drawn (tests wait for it)
    body.dataset.memorySpace = space;
  };
  ms.sel.addEventListener('change', () => {
    module = ms.sel.value;
    space = '0';
    if (spaceSel) { spaceSel.lab.remove(); spaceSel = null; }
    pagestate.set({ module, memory_space: null });
    load();
  });
  if (ctx.signal) ctx.signal.addEventListener('abort', () => ctrl && ctrl.abort(), { once: true });
  await load();
}
