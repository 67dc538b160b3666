// hlo_stats.js - the HLO Op Stats page.
//
// Data: `data?tag=hlo_stats` -> one XProf DataTable, one row per HLO op of
// the device op database (IDLE included), sorted by self time: rank,
// program_id, category, hlo_op_name, hlo_op_expression, tf_op_name,
// occurrences, times in us, self-time percent (0..100), flop rates,
// bandwidths, bound_by, hlo_rematerialization, outside_compilation,
// source_info, core_type ...
// Draws: summary cards, an "Include IDLE time" toggle, pie charts of total
// self-time by HLO category, by HLO op, by rematerialisation and by
// outside compilation (a slice click filters the table), and the sortable,
// filterable table with "Export as CSV"; a row click links the op to the
// Graph Viewer.
import { createTable } from '../lib/table.js';
import { pieChart, formatNumber } from '../lib/chart.js';
import { fmtDur } from '../lib/format.js';
import * as DT from '../lib/datatable.js';
import { el, card as summaryCard } from '../lib/dom.js';

// µs in the unit that reads best ("315 s", not "315M µs")
const us = (v) => fmtDur(Number(v));

function withoutIdle(dt) {
  const i = DT.colIndex(dt, 'category');
  return Object.assign({}, dt, {
    rows: (dt.rows || []).filter((r) => !(r && r.c && r.c[i] && r.c[i].v === 'IDLE')),
  });
}

export default async function render(root, ctx) {
  const data = await ctx.api.json('data', { run: ctx.run, tag: ctx.tool, host: ctx.host });
  if (!DT.isDataTable(data)) throw new Error('unexpected hlo_stats data: want a DataTable');
  root.textContent = '';
  root.append(el('h2', {}, 'HLO Op Stats'));
  root.append(el('p', { class: 'xpv-muted' },
    'One row per HLO op executed on the device; times are in microseconds, summed over ' +
    'occurrences; self-time excludes the time of nested ops.'));
  const objs = DT.toObjects(data);
  const ops = objs.filter((o) => o.category !== 'IDLE');
  if (!ops.length) {
    root.append(el('p', { class: 'xpv-empty-state' },
      'No HLO ops were captured on a device in this profile (no XLA op line on a TPU ' +
      'and no XLA kernel on a GPU).'));
    return;
  }
  const idle = objs.find((o) => o.category === 'IDLE');
  const busy = ops.reduce((s, o) => s + (Number(o.total_self_time) || 0), 0);
  const idleUs = idle ? Number(idle.total_self_time) || 0 : 0;
  const programs = new Set(ops.map((o) => o.program_id));
  const cards = el('div', { class: 'xpv-cards xpv-hlo-summary' });
  const card = (title, value, sub, key) => summaryCard(cards, title, value, sub, { 'data-key': key });
  card('Total self-time of HLO ops', us(busy),
    `${ops.length.toLocaleString('en-US')} ops in ${programs.size} program(s)`, 'busy');
  card('Device idle time', busy + idleUs > 0 ? `${(100 * idleUs / (busy + idleUs)).toFixed(1)}%` : 'n/a',
    us(idleUs), 'idle');
  card('Occurrences', ops.reduce((s, o) => s + (Number(o.occurrences) || 0), 0)
    .toLocaleString('en-US'), 'HLO op executions', 'occurrences');
  root.append(cards);

  const bar = el('div', { class: 'xpv-hlo-controls' });
  bar.style.margin = '4px 0 8px';
  const idleBox = el('input', { type: 'checkbox', id: 'xpv-hlo-include-idle' });
  bar.append(el('label', { for: 'xpv-hlo-include-idle' }, idleBox, ' Include IDLE time in statistics'));
  root.append(bar);

  const pies = el('div', { class: 'xpv-grid2 xpv-hlo-pies' });
  pies.style.gridTemplateColumns = 'repeat(auto-fit, minmax(min(420px, 100%), 1fr))';
  root.append(pies);

  const tableCard = el('div', { class: 'xpv-hlo-table' });
  root.append(tableCard);
  const pctFmt = { format: (v) => (v === null || v === undefined ? '' : `${Number(v).toFixed(2)}%`) };
  const table = createTable(tableCard, {
    persist: 'hlo',
    data: withoutIdle(data),
    columnOverrides: {
      hlo_op_expression: { maxWidth: '40em' },
      tf_op_name: { maxWidth: '24em' },
      total_self_time_percent: pctFmt,
      cumulative_total_self_time_percent: pctFmt,
    },
    hideColumns: ['dma_stall_percent', 'cmem_read_bw', 'cmem_write_bw', 'autotuned',
      'parent_op_name', 'vdd_energy'],
    filterColumns: ['category', 'hlo_op_name', 'hlo_op_expression', 'tf_op_name', 'program_id'],
    filterPlaceholder: 'Filter by category, HLO op, framework op or program',
    csv: 'hlo_stats.csv',
    pageSize: 25,
    emptyText: 'No ops.',
    onRowClick: (row) => showPicked(row),
  });
  const current = () => (idleBox.checked ? data : withoutIdle(data));
  // A row click offers the op in the Graph Viewer (its HLO neighbourhood).
  const picked = el('p', { class: 'xpv-hlo-picked xpv-muted' });
  root.insertBefore(picked, tableCard);
  const showPicked = (row) => {
    picked.textContent = '';
    if (!row || row.category === 'IDLE') return;
    picked.append(`Selected: ${row.hlo_op_name} (program ${row.program_id}) `);
    if (!ctx.tools || ctx.tools.includes('graph_viewer')) {
      const a = el('a', { href: '#', class: 'xpv-hlo-to-graph', 'data-op': row.hlo_op_name }, 'Show in Graph Viewer');
      a.addEventListener('click', (ev) => {
        ev.preventDefault();
        ctx.navigate({ tool: 'graph_viewer' }, { 'gv.program': row.program_id, 'gv.node': row.hlo_op_name });
      });
      picked.append(a);
    }
  };

  function drawPies() {
    pies.textContent = '';
    const t = current();
    const specs = [
      ['category', 'Total self-time by HLO category'],
      ['hlo_op_name', 'Total self-time by HLO op'],
      ['hlo_rematerialization', 'Total self-time by rematerialization'],
      ['outside_compilation', 'Total self-time by outside compilation'],
    ];
    for (const [by, title] of specs) {
      const box = el('div', { class: 'xpv-card xpv-hlo-pie', 'data-by': by });
      box.style.minWidth = '0';
      pies.append(box);
      pieChart(box, {
        title,
        data: DT.sumBy(t, by, 'total_self_time'),
        format: us,
        height: 200,
        emptyText: 'No op time.',
        onClick: (item) => { if (!item.other) table.setFilter(item.label); },
      });
    }
  }
  idleBox.addEventListener('change', () => { drawPies(); table.setData(current()); });
  drawPies();
}
