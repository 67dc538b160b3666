// framework_op_stats.js - the TensorFlow Stats page.
//
// Data: `data?tag=framework_op_stats` -> [tableWithIdle, tableWithoutIdle]
// (XProf DataTables: rank, host_or_device, type, operation, occurrences,
// times in us, self-time fractions 0..1, flop rate, bandwidth, bound_by,
// eager; p: task_type, architecture_type).
// Draws: summary cards (self-time and idle share on device and host), an
// "Include IDLE time" toggle, a Host/Device selector, up to four pie charts
// of total self-time (device / host x by op type / by op; a slice click
// filters the table), and the sortable, filterable, paginated table of ops
// with "Export as CSV" (the rows shown, in the order shown).
import { createTable } from '../lib/table.js';
import { compareSection } from '../lib/compare.js';
import { pieChart } from '../lib/chart.js';
import * as DT from '../lib/datatable.js';
import { el, card } from '../lib/dom.js';
import { formatNumber, pct, fmtDur } from '../lib/format.js';

// Columns holding fractions (0..1) shown as percentages.
const FRACTION_COLS = new Set(['device_total_self_time_percent',
  'device_cumulative_total_self_time_percent', 'host_total_self_time_percent',
  'Host_cumulative_total_self_time_percent', 'gpu_tensorcore_utilization']);

// µs in the unit that reads best ("315 s", not "315M µs")
const us = (v) => fmtDur(Number(v));

// DataTable restricted to rows whose host_or_device is `side` (or all).
function sideTable(dt, side) {
  if (side === 'all') return dt;
  const i = DT.colIndex(dt, 'host_or_device');
  return Object.assign({}, dt, {
    rows: (dt.rows || []).filter((r) => r && r.c && r.c[i] && r.c[i].v === side),
  });
}

const summaryCard = (parent, title, value, sub, key) =>
  card(parent, title, value, sub, { 'data-key': key });

export default async function render(root, ctx) {
  const data = await ctx.api.json('data', { run: ctx.run, tag: ctx.tool, host: ctx.host });
  if (!Array.isArray(data) || data.length < 2 || !DT.isDataTable(data[0]) ||
      !DT.isDataTable(data[1])) {
    throw new Error('unexpected framework_op_stats data: want [tableWithIdle, tableWithoutIdle]');
  }
  const [withIdle, withoutIdle] = data;
  root.textContent = '';
  // "TensorFlow Stats" only for TensorFlow profiles: PyTorch (aten::...)
  // and JAX (jit(...)) ops get the neutral name.
  const allOps = DT.toObjects(withIdle);
  const notTf = allOps.some((o) => /^(aten|autograd|c10d|nccl)::|^ProfilerStep#|^p?jit\(/.test(String(o.operation)));
  root.append(el('h2', {}, notTf ? 'Framework Op Stats' : 'TensorFlow Stats'));
  compareSection(root, ctx);
  root.append(el('p', { class: 'xpv-muted xpv-tfstats-meta' },
    `Task type: ${DT.prop(withIdle, 'task_type', 'Unknown')} \u00b7 ` +
    `Architecture: ${DT.prop(withIdle, 'architecture_type', 'Unknown')} \u00b7 ` +
    'times are in microseconds; self-time excludes the time of child ops.'));

  const objs = DT.toObjects(withIdle);
  const sides = ['Device', 'Host'].filter((s) => objs.some((o) => o.host_or_device === s));
  if (!objs.length || !sides.length) {
    root.append(el('p', { class: 'xpv-empty-state' },
      'No TensorFlow ops were captured in this profile (no framework op, tf.data ' +
      'iterator or GPU kernel with a tf_op annotation was found).'));
    return;
  }

  // ---- summary cards ----
  const cards = el('div', { class: 'xpv-cards xpv-tfstats-summary' });
  // Totals come from the IDLE row's share (the table lists at most 500 ops
  // per side, the shares are of the whole profile).
  for (const side of sides) {
    const rows = objs.filter((o) => o.host_or_device === side);
    const ops = rows.filter((o) => o.type !== 'IDLE');
    const idle = rows.find((o) => o.type === 'IDLE');
    const idleUs = idle ? Number(idle.total_self_time) || 0 : 0;
    const frac = idle ? Number(idle[side === 'Device' ? 'device_total_self_time_percent'
      : 'host_total_self_time_percent']) || 0 : 0;
    const listed = ops.reduce((s, o) => s + (Number(o.total_self_time) || 0), 0);
    const busy = frac > 0 && frac < 1 ? idleUs / frac - idleUs : listed;
    const key = side.toLowerCase();
    summaryCard(cards, `${side}: total self-time of ops`, us(busy),
      `${ops.length.toLocaleString('en-US')} ops listed` + (ops.length >= 499 ? ' (top 500)' : ''),
      `${key}_busy`);
    summaryCard(cards, `${side}: idle time`,
      busy + idleUs > 0 ? pct(idleUs / (busy + idleUs)) : 'n/a', us(idleUs), `${key}_idle`);
  }
  root.append(cards);

  // ---- controls ----
  const bar = el('div', { class: 'xpv-tfstats-controls' });
  bar.style.display = 'flex';
  bar.style.flexWrap = 'wrap';
  bar.style.alignItems = 'center';
  bar.style.gap = '16px';
  bar.style.margin = '4px 0 8px';
  const idleBox = el('input', { type: 'checkbox', id: 'xpv-include-idle' });
  const idleLabel = el('label', { for: 'xpv-include-idle', title:
    'IDLE is the time the host threads / the device had no op running' }, idleBox,
  ' Include IDLE time in statistics');
  const sideSel = el('select', { id: 'xpv-tfstats-side', 'aria-label': 'Host or device' });
  sideSel.append(el('option', { value: 'all' }, 'Host and device'));
  for (const s of sides) sideSel.append(el('option', { value: s }, `${s} only`));
  bar.append(idleLabel, el('label', {}, 'Show ', sideSel));
  root.append(bar);

  // ---- pies ----
  const pies = el('div', { class: 'xpv-grid2 xpv-tfstats-pies' });
  pies.style.gridTemplateColumns = 'repeat(auto-fit, minmax(min(420px, 100%), 1fr))'; // 2 x 2
  root.append(pies);

  // ---- table ----
  const tableCard = el('div', { class: 'xpv-tfstats-table' });
  root.append(tableCard);
  const overrides = {};
  for (const id of FRACTION_COLS) overrides[id] = { format: (v) => (v === null || v === undefined ? '' : pct(v)) };
  overrides.operation = { maxWidth: '30em' };
  const table = createTable(tableCard, {
    persist: 'ops',
    data: withoutIdle,
    columnOverrides: overrides,
    filterColumns: ['type', 'operation'],
    filterPlaceholder: 'Filter by operation type or name',
    csv: 'framework_op_stats.csv',
    pageSize: 25,
    emptyText: 'No ops.',
  });

  const current = () => (idleBox.checked ? withIdle : withoutIdle);

  // The table lists at most 500 ops per side, while its percentages are of
  // the side's whole time: a slice for the ops not listed keeps the pie's
  // percentages equal to the table's.
  function withUnlisted(items, t, side) {
    const col = side === 'Device' ? 'device_total_self_time_percent' : 'host_total_self_time_percent';
    const rows = DT.toObjects(t).filter((o) => o.host_or_device === side);
    const ref = rows.find((o) => Number(o[col]) > 0 && Number(o.total_self_time) > 0);
    if (!ref) return items;
    const total = Number(ref.total_self_time) / Number(ref[col]);
    const listed = items.reduce((a, it) => a + it.value, 0);
    const rest = total - listed;
    if (!(rest > total * 1e-6)) return items;
    return items.concat([{ label: 'ops not listed (beyond the top 500)', value: rest }]);
  }

  function drawPies() {
    pies.textContent = '';
    const t = current();
    const shown = sideSel.value === 'all' ? sides : [sideSel.value];
    for (const side of shown) {
      const pred = (o) => o.host_or_device === side;
      for (const [by, what] of [['type', 'by op type'], ['operation', 'by op']]) {
        const box = el('div', { class: 'xpv-card xpv-tfstats-pie', 'data-side': side, 'data-by': by });
        box.style.minWidth = '0'; // long legend labels must not widen the grid
        pies.append(box);
        pieChart(box, {
          title: `${side}: total self-time ${what}`,
          data: withUnlisted(DT.sumBy(t, by, 'total_self_time', pred), t, side),
          format: us,
          height: 200,
          emptyText: `No ${side.toLowerCase()} op time.`,
          onClick: (item) => { if (!item.other) table.setFilter(item.label); },
        });
      }
    }
  }

  function update() {
    drawPies();
    table.setData(sideTable(current(), sideSel.value));
  }
  idleBox.addEventListener('change', update);
  sideSel.addEventListener('change', update);
  drawPies();
}
