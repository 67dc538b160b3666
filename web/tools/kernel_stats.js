// kernel_stats.js - the GPU kernel stats page.
//
// Data: `data?tag=kernel_stats` -> one DataTable (see docs/design.md).
// Shows a pie of the top kernels by total duration, the full sortable /
// filterable table and "Export as CSV".
import { renderPie, renderTable } from './framework_op_stats.js';

export default async function render(root, ctx) {
  const t = await ctx.api.json('data', { run: ctx.run, tag: ctx.tool, host: ctx.host });
  if (!t || !Array.isArray(t.cols)) throw new Error('unexpected kernel_stats data');
  root.textContent = '';
  const h = document.createElement('h2');
  h.textContent = 'GPU Kernel Stats';
  root.appendChild(h);
  const csv = document.createElement('a');
  csv.className = 'xpv-csv';
  csv.download = 'kernel_stats.csv';
  csv.href = ctx.api.url('data_csv', { run: ctx.run, tag: ctx.tool, host: ctx.host });
  csv.textContent = 'Export as CSV';
  root.appendChild(csv);
  const rows = t.rows || [];
  if (!rows.length) {
    const p = document.createElement('p');
    p.textContent = 'No GPU kernels were captured in this profile.';
    root.appendChild(p);
  }
  const ids = t.cols.map((c) => c.id);
  const name = ids.indexOf('kernel_name'), total = ids.indexOf('total_duration_us');
  const pies = document.createElement('div');
  root.appendChild(pies);
  if (rows.length) {
    renderPie(pies, 'Top kernels by total duration',
      rows.map((r) => ({ label: String(r.c[name].v), value: Number(r.c[total].v) || 0 })));
  }
  const box = document.createElement('div');
  root.appendChild(box);
  renderTable(box, t, {
    filterPlaceholder: 'Filter by kernel or op name',
    filterColumns: ['kernel_name', 'op_name'],
  });
}
