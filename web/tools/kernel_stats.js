// kernel_stats.js - the GPU Kernel Stats page.
//
// Data: `data?tag=kernel_stats` -> one XProf DataTable (rank, kernel_name,
// registers_per_thread, shmem_bytes, block_dim, grid_dim, occupancy_pct,
// is_op_tensor_core_eligible, is_kernel_using_tensor_core, op_name,
// occurrences, total/avg/min/max duration in us), top 1000 kernels by total
// duration.
// Draws: summary cards (kernel time, TensorCore share), pies of the top
// kernels and of the ops by total kernel duration (a slice click filters the
// table), and the full sortable, filterable, paginated table with
// "Export as CSV" (the rows shown, in the order shown).
import { createTable } from '../lib/table.js';
import { compareSection } from '../lib/compare.js';
import { pieChart } from '../lib/chart.js';
import * as DT from '../lib/datatable.js';
import { el, card } from '../lib/dom.js';
import { formatNumber, fmtDur } from '../lib/format.js';

// µs in the unit that reads best ("315 s", not "315M µs")
const us = (v) => fmtDur(Number(v));

const summaryCard = (parent, title, value, sub, key) =>
  card(parent, title, value, sub, { 'data-key': key });

export default async function render(root, ctx) {
  const t = await ctx.api.json('data', { run: ctx.run, tag: ctx.tool, host: ctx.host });
  if (!DT.isDataTable(t)) throw new Error('unexpected kernel_stats data: want a DataTable');
  root.textContent = '';
  root.append(el('h2', {}, 'GPU Kernel Stats'));
  compareSection(root, ctx);
  const rows = DT.toObjects(t);
  if (!rows.length) {
    root.append(el('p', { class: 'xpv-empty-state' },
      'No GPU kernels were captured in this profile: there is no /device:GPU plane, or ' +
      'its kernel events carry no kernel_details (a CPU-only or TPU run).'));
    return;
  }
  root.append(el('p', { class: 'xpv-muted' },
    'Kernels with the same name, launch dimensions, registers, shared memory and ' +
    'framework op are one row; durations are in microseconds.'));

  // ---- summary ----
  const total = rows.reduce((s, r) => s + (Number(r.total_duration_us) || 0), 0);
  const launches = rows.reduce((s, r) => s + (Number(r.occurrences) || 0), 0);
  const tcTime = rows.filter((r) => r.is_kernel_using_tensor_core)
    .reduce((s, r) => s + (Number(r.total_duration_us) || 0), 0);
  const eligible = rows.filter((r) => r.is_op_tensor_core_eligible);
  const eligibleTime = eligible.reduce((s, r) => s + (Number(r.total_duration_us) || 0), 0);
  const cards = el('div', { class: 'xpv-cards xpv-kstats-summary' });
  summaryCard(cards, rows.length >= 1000 ? 'Total kernel time (top 1,000 kernels)' : 'Total kernel time', us(total),
    `${launches.toLocaleString('en-US')} launches of ${rows.length.toLocaleString('en-US')} kernels`,
    'total');
  summaryCard(cards, 'Time in TensorCore kernels', total ? `${(100 * tcTime / total).toFixed(1)}%` : 'n/a',
    us(tcTime), 'tensorcore');
  summaryCard(cards, 'TensorCore-eligible op time', total ? `${(100 * eligibleTime / total).toFixed(1)}%` : 'n/a',
    `${eligible.filter((r) => !r.is_kernel_using_tensor_core).length} eligible kernels not using TensorCore`,
    'eligible');
  root.append(cards);

  // ---- pies ----
  const pies = el('div', { class: 'xpv-grid2 xpv-kstats-pies' });
  root.append(pies);
  const tableBox = el('div', { class: 'xpv-kstats-table' });
  let table = null;
  const filterTo = (item) => { if (table && !item.other) table.setFilter(item.label); };
  const kBox = el('div', { class: 'xpv-card xpv-kstats-pie', 'data-by': 'kernel_name' });
  const oBox = el('div', { class: 'xpv-card xpv-kstats-pie', 'data-by': 'op_name' });
  kBox.style.minWidth = oBox.style.minWidth = '0'; // long names must not widen the grid
  pies.append(kBox, oBox);
  pieChart(kBox, {
    title: 'Top kernels by total duration',
    data: DT.sumBy(t, 'kernel_name', 'total_duration_us'),
    format: us, height: 200, onClick: filterTo,
  });
  pieChart(oBox, {
    title: 'Top framework ops by total kernel duration',
    data: DT.sumBy(t, 'op_name', 'total_duration_us', (r) => r.op_name),
    format: us, height: 200, onClick: filterTo,
    emptyText: 'No kernel carries a framework op name.',
  });

  // ---- table ----
  root.append(tableBox);
  // Occupancy is 0 in every row of profiles whose writer did not record it:
  // say "n/a" then rather than 0%.
  const occ = DT.column(t, 'occupancy_pct') || [];
  const noOcc = !occ.some((v) => Number(v) > 0);
  table = createTable(tableBox, {
    persist: 'kernels',
    data: t,
    columnOverrides: {
      kernel_name: { maxWidth: '16em' },
      op_name: { maxWidth: '14em' },
      occupancy_pct: { format: (v) => (noOcc ? 'n/a' : v === null || v === undefined ? '' : `${formatNumber(v)}%`) },
    },
    filterColumns: ['kernel_name', 'op_name'],
    filterPlaceholder: 'Filter by kernel or op name',
    csv: 'kernel_stats.csv',
    pageSize: 25,
  });
}
