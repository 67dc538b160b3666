// memory_profile.js - the memory profile page.
//
// Data: `data?tag=memory_profile` -> XProf's MemoryProfile protobuf JSON
// (tools/memory_profile.c): per memory id (allocator) a profile summary,
// <= 1000 sampled timeline snapshots and the breakdown of live allocations
// at the peak.  The page shows, for the memory id picked in its dropdown:
//   - summary cards (the numbers XProf's summary shows; #allocations and
//     #deallocations are counted over the timeline snapshots, as XProf does),
//   - the memory timeline: stack / heap / free stacked in GiB on the left
//     axis, fragmentation (%) on the right axis; hovering shows a card with
//     the event under the cursor (timestamp, event, sizes, TF op, step,
//     region, data type, shape, memory in use),
//   - the memory breakdown table at the peak (sortable, filterable by op
//     name; like XProf it hides allocations under 0.001 GiB unless asked).
import { lineChart } from '../lib/chart.js';
import { createTable } from '../lib/table.js';
import { compareSection } from '../lib/compare.js';
import { el } from '../lib/dom.js';
import { formatBytes } from '../lib/format.js';

const GIB = 1024 * 1024 * 1024;

const num = (v) => Number(v) || 0;
const psToMs = (ps) => num(ps) / 1e9;
const toGiB = (b) => num(b) / GIB;

// Lines of the hover card for one snapshot (the fields XProf's tooltip
// lists, in its order).
export function snapshotDetails(s) {
  const st = s.aggregationStats || {};
  const m = s.activityMetadata || {};
  const sign = m.memoryActivity === 'DEALLOCATION' ? -1 : 1;
  const lines = [['Timestamp (ms)', psToMs(s.timeOffsetPs).toFixed(3)]];
  lines.push(['Event', String(m.memoryActivity || '').toLowerCase()]);
  if (num(m.requestedBytes) > 0) lines.push(['Requested size', formatBytes(sign * num(m.requestedBytes))]);
  lines.push(['Allocation size', formatBytes(sign * num(m.allocationBytes))]);
  if (m.tfOpName) lines.push(['TF op', m.tfOpName]);
  if (m.stepId !== undefined) lines.push(['Step id', String(m.stepId)]);
  if (m.regionType) lines.push(['Region type', m.regionType]);
  if (m.dataType && m.dataType !== 'INVALID') lines.push(['Data type', m.dataType]);
  if (m.tensorShape) lines.push(['Shape', m.tensorShape]);
  lines.push(['Memory in use', formatBytes(num(st.stackReservedBytes) + num(st.heapAllocatedBytes))]);
  lines.push(['Stack', formatBytes(st.stackReservedBytes)]);
  lines.push(['Heap', formatBytes(st.heapAllocatedBytes)]);
  lines.push(['Free', formatBytes(st.freeMemoryBytes)]);
  lines.push(['Fragmentation', `${(num(st.fragmentation) * 100).toFixed(2)}%`]);
  return lines;
}

function card(parent, label, value, sub) {
  const c = el('div', 'xpv-card mp-card');
  c.append(el('div', 'xpv-muted', label), el('div', 'mp-card-value', value));
  if (sub) c.append(el('div', 'xpv-muted', sub));
  c.querySelector('.mp-card-value').style.fontSize = '20px';
  parent.append(c);
  return c;
}

function renderSummary(parent, data, prof) {
  const sum = prof.profileSummary || {};
  const peak = sum.peakStats || {};
  const snaps = (data.version === 1 ? prof.sampledTimelineSnapshots : prof.memoryProfileSnapshots) || [];
  let nAlloc = 0, nDealloc = 0;
  for (const s of snaps) {
    const a = s.activityMetadata && s.activityMetadata.memoryActivity;
    if (a === 'ALLOCATION') nAlloc++;
    else if (a === 'DEALLOCATION') nDealloc++;
  }
  const cards = el('div', 'xpv-cards mp-summary');
  card(cards, '#Allocation', String(nAlloc));
  card(cards, '#Deallocation', String(nDealloc));
  card(cards, 'Memory Capacity', formatBytes(sum.memoryCapacity));
  card(cards, 'Peak Heap Usage Lifetime', formatBytes(sum.peakBytesUsageLifetime));
  card(cards, 'Peak Memory Usage in Profile', formatBytes(peak.peakBytesInUse),
    `at ${psToMs(sum.peakStatsTimePs).toFixed(1)} ms`);
  card(cards, 'Stack Reservation at Peak', formatBytes(peak.stackReservedBytes));
  card(cards, 'Heap Allocation at Peak', formatBytes(peak.heapAllocatedBytes));
  card(cards, 'Free Memory at Peak', formatBytes(peak.freeMemoryBytes));
  card(cards, 'Fragmentation at Peak', `${(num(peak.fragmentation) * 100).toFixed(2)}%`);
  parent.append(cards);
}

function renderTimeline(parent, data, prof, signal) {
  const box = el('div', 'xpv-card mp-timeline');
  box.append(el('h3', null, 'Memory Timeline Graph'));
  parent.append(box);
  const snaps = ((data.version === 1 ? prof.sampledTimelineSnapshots : prof.memoryProfileSnapshots) || [])
    .filter((s) => s.aggregationStats)
    .slice().sort((a, b) => num(a.timeOffsetPs) - num(b.timeOffsetPs));
  if (!snaps.length) {
    box.append(el('p', 'xpv-muted', 'No memory activity in the profiling window.'));
    return null;
  }
  // The CPU allocator reports no free memory: then no free series.
  const hasFree = snaps.some((s) => num(s.aggregationStats.freeMemoryBytes) !== 0);
  const x = snaps.map((s) => psToMs(s.timeOffsetPs));
  const series = [
    { name: 'Stack', values: snaps.map((s) => toGiB(s.aggregationStats.stackReservedBytes)), color: '#db4437' },
    { name: 'Heap', values: snaps.map((s) => toGiB(s.aggregationStats.heapAllocatedBytes)), color: '#ff9800' },
  ];
  if (hasFree) {
    series.push({ name: 'Free', values: snaps.map((s) => toGiB(s.aggregationStats.freeMemoryBytes)), color: '#0f9d58' });
  }
  series.push({ name: 'Fragmentation', axis: 'right', color: '#5c6bc0',
    values: snaps.map((s) => num(s.aggregationStats.fragmentation) * 100) });
  const chartBox = el('div', 'mp-chart');
  chartBox.style.position = 'relative';
  box.append(chartBox);
  const chart = lineChart(chartBox, {
    x, series, stacked: true, height: 360,
    xLabel: 'Timestamp (ms)', xFormat: (v) => (+v.toFixed(3)).toString(),
    yLabel: 'Memory Usage (GiBs)', yFormat: (v) => (+v.toFixed(3)).toString(),
    y2Label: 'Fragmentation (%)', y2Format: (v) => `${(+v.toFixed(2))}`,
  });

  // The hover card: the snapshot nearest the cursor, from the chart's plot
  // area (its transparent overlay rect).
  const hover = el('div', 'xpv-card mp-hover');
  hover.setAttribute('aria-live', 'polite');
  const hint = el('p', 'xpv-muted', 'Hover over the timeline to see the memory event at that time.');
  hover.append(el('h4', null, 'Memory event'), hint);
  box.append(hover);
  const dl = el('dl', 'xpv-kv');
  const show = (i) => {
    dl.textContent = '';
    for (const [k, v] of snapshotDetails(snaps[i])) dl.append(el('dt', null, k), el('dd', null, v));
    if (!dl.parentNode) { hint.remove(); hover.append(dl); }
    hover.dataset.index = String(i);
  };
  const onMove = (ev) => {
    const ov = chartBox.querySelector('.xpv-overlay');
    if (!ov || ev.target !== ov) return;
    const r = ov.getBoundingClientRect();
    if (!r.width) return;
    const f = Math.min(1, Math.max(0, (ev.clientX - r.left) / r.width));
    const xv = x[0] + f * (x[x.length - 1] - x[0]);
    let lo = 0, hi = x.length - 1;
    while (lo < hi) { const mid = (lo + hi) >> 1; if (x[mid] < xv) lo = mid + 1; else hi = mid; }
    if (lo > 0 && Math.abs(x[lo - 1] - xv) <= Math.abs(x[lo] - xv)) lo--;
    show(lo);
  };
  chartBox.addEventListener('mousemove', onMove);
  if (signal) signal.addEventListener('abort', () => chart.destroy(), { once: true });
  return { chart, show };
}

function breakdownRows(prof) {
  const snaps = prof.memoryProfileSnapshots || [];
  const special = prof.specialAllocations || [];
  const rows = [];
  for (const a of prof.activeAllocations || []) {
    const idx = Number(a.snapshotIndex);
    const meta = idx >= 0 ? (snaps[idx] || {}).activityMetadata : special[Number(a.specialIndex)];
    if (!meta) continue;
    rows.push({
      op: meta.tfOpName || '',
      alloc: toGiB(meta.allocationBytes),
      req: toGiB(meta.requestedBytes),
      occ: Number(a.numOccurrences) || 0,
      region: meta.regionType || '',
      dtype: meta.dataType || '',
      shape: meta.tensorShape || '',
    });
  }
  return rows;
}

function renderBreakdown(parent, prof) {
  const box = el('div', 'xpv-card mp-breakdown');
  box.append(el('h3', null, 'Memory Breakdown Table'));
  box.append(el('p', 'xpv-muted', 'Active memory allocations at the peak memory usage in the profiling window.'));
  const all = breakdownRows(prof);
  const label = el('label', 'mp-small-toggle');
  const cb = el('input');
  cb.type = 'checkbox';
  cb.checked = true;
  cb.id = 'mp-hide-small';
  label.append(cb, document.createTextNode(' Hide allocations smaller than 0.001 GiB (as XProf does)'));
  const count = el('span', 'xpv-muted mp-hidden-count');
  count.style.marginLeft = '12px';
  box.append(label, count);
  parent.append(box);
  const fmt = (v) => Number(v).toFixed(3);
  const table = createTable(box, {
    columns: [
      { id: 'op', label: 'Op Name', type: 'string' },
      { id: 'alloc', label: 'Allocation Size (GiBs)', type: 'number', format: fmt },
      { id: 'req', label: 'Requested Size (GiBs)', type: 'number', format: fmt },
      { id: 'occ', label: 'Occurrences', type: 'number' },
      { id: 'region', label: 'Region type', type: 'string' },
      { id: 'dtype', label: 'Data type', type: 'string' },
      { id: 'shape', label: 'Shape', type: 'string' },
    ],
    rows: [],
    filterColumns: ['op'],
    filterPlaceholder: 'Filter by op name',
    csv: 'memory_breakdown.csv',
    emptyText: 'No allocation to show.',
  });
  const apply = () => {
    const rows = cb.checked ? all.filter((r) => r.req >= 0.001) : all;
    const hidden = all.length - rows.length;
    count.textContent = hidden ? `${hidden} smaller allocation row(s) hidden` : '';
    table.setRows(rows);
  };
  cb.addEventListener('change', apply);
  apply();
  return table;
}

export default async function render(root, ctx) {
  const data = await ctx.api.json('data', { run: ctx.run, tag: ctx.tool, host: ctx.host });
  if (!data || typeof data !== 'object' || !data.memoryProfilePerAllocator) {
    throw new Error('unexpected memory_profile data');
  }
  root.textContent = '';
  root.append(el('h2', null, 'Memory Profile'));
  compareSection(root, ctx);
  const ids = data.memoryIds || [];
  if (!ids.length) {
    root.append(el('p', 'xpv-empty-state',
      'No memory profile data: this profile has no MemoryAllocation / MemoryDeallocation ' +
      'events (they are written by TensorFlow\'s BFC allocator when profiling with ' +
      'host_tracer_level >= 2).'));
    return;
  }
  const bar = el('div', 'mp-bar');
  const lab = el('label', 'xpv-field');
  lab.append(el('span', null, 'Memory ID'));
  const sel = el('select');
  sel.id = 'mp-memory-id';
  for (const id of ids) {
    const o = el('option', null, id);
    o.value = id;
    sel.append(o);
  }
  lab.append(sel);
  bar.append(lab);
  root.append(bar);
  const body = el('div', 'mp-body');
  root.append(body);
  let ctrl = null;
  const draw = () => {
    if (ctrl) ctrl.abort();
    ctrl = new AbortController();
    body.textContent = '';
    const prof = data.memoryProfilePerAllocator[sel.value] || {};
    renderSummary(body, data, prof);
    renderTimeline(body, data, prof, ctrl.signal);
    renderBreakdown(body, prof);
  };
  sel.addEventListener('change', draw);
  if (ctx.signal) ctx.signal.addEventListener('abort', () => ctrl && ctrl.abort(), { once: true });
  draw();
}
