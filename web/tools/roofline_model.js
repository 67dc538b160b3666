// roofline_model.js - the Roofline Model page.
//
// Data: `data?tag=roofline_model` -> [roofline DataTable, diagnostics
// DataTable] (XProf op_stats_to_roofline_model.cc).  Roofline rows: step
// ("Total", "Average", a step number), rank, category ("Program" for the
// program records), operation, occurrences, times (us), measured_flop_rate
// / model_flop_rate (GFLOP/s), measured_memory_bw / hbm_bw (GiB/s),
// operational intensities (FLOP/byte), bound_by, roofline_efficiency /
// compute_efficiency / max_mem_bw_utilization (fractions),
// include_infeed_outfeed, hlo_module_id, source_info.  Table properties:
// device_type, peak_flop_rate (GFLOP/s), peak_*_bw (GiB/s), *_ridge_point.
// Draws, as XProf's page: the device information; a program-level section
// (records of category Program: chart + table); an operation-level section
// (step "Total" ops: filters by infeed/outfeed, category, bound-by and name,
// a log-log roofline chart with the HBM (and VMEM / CMEM / Shm-L1) rooflines
// and the ops as points, a pie of self time by category, the table with
// CSV).  Ops with no FLOP rate (bound by "Unknown") have no point.
import { createTable } from '../lib/table.js';
import { pieChart, rooflineChart, formatNumber } from '../lib/chart.js';
import * as DT from '../lib/datatable.js';
import { el } from '../lib/dom.js';
import { pct, fmtDur } from '../lib/format.js';
import { diagnosticsBox } from '../lib/steps.js';

const X_LABEL = 'Operational intensity (FLOP/Byte)';
const Y_LABEL = 'FLOP rate (GFLOP/s)';
const PCT_COLS = ['total_self_time_percent', 'cumulative_total_self_time_percent', 'dma_stall_percent',
  'roofline_efficiency', 'compute_efficiency', 'max_mem_bw_utilization', 'total_time_in_percentage'];
const PROGRAM_COLS = ['step', 'include_infeed_outfeed', 'total_time_per_core', 'measured_flop_rate',
  'bound_by', 'hbm_bw', 'measured_memory_bw', 'operational_intensity'];
const OP_COLS = ['rank', 'hlo_module_id', 'category', 'operation', 'occurrences', 'total_time',
  'total_self_time', 'measured_flop_rate', 'model_flop_rate', 'bound_by', 'hbm_bw',
  'operational_intensity', 'source_info'];
const EFF_COLS = ['roofline_efficiency', 'compute_efficiency', 'max_mem_bw_utilization'];

const num = (v) => (v === null || v === undefined ? '' : Number(v).toLocaleString('en-US', { maximumFractionDigits: 2 }));

// GFLOP/s as XProf's getGigaflopsReadableString: TFLOP/s past 1000.
function gflops(v) {
  const n = Number(v) || 0;
  return n >= 1000 ? `${(n / 1000).toLocaleString('en-US', { maximumFractionDigits: 2 })} TFLOP/s`
    : `${n.toLocaleString('en-US', { maximumFractionDigits: 2 })} GFLOP/s`;
}

function filterRows(dt, pred) {
  const ids = DT.columns(dt).map((c) => c.id);
  const rows = (dt.rows || []).filter((r) => {
    const o = {};
    ids.forEach((id, i) => { const c = r && r.c ? r.c[i] : null; o[id] = c && typeof c === 'object' ? c.v : c; });
    return pred(o);
  });
  return Object.assign({}, dt, { rows });
}

// The rooflines the device has (XProf getRooflineBaseSeries).
function rooflines(p, gpu) {
  const peak = Number(p.peak_flop_rate) || 0;
  const out = [];
  const add = (name, ridge, color) => { if (Number(ridge) > 0) out.push({ name, peak, ridge: Number(ridge), color }); };
  if (gpu) add('Shared Mem / L1 Roofline', p.vmem_write_ridge_point, '#0f9d58');
  else if (p.has_merged_vmem === '1') {
    add('VMEM Read Roofline', p.vmem_read_ridge_point, '#db4437');
    add('VMEM Write Roofline', p.vmem_write_ridge_point, '#0f9d58');
  } else if (p.has_cmem === '1') {
    add('CMEM Read Roofline', p.cmem_read_ridge_point, '#db4437');
    add('CMEM Write Roofline', p.cmem_write_ridge_point, '#0f9d58');
  }
  add('HBM Roofline', p.hbm_ridge_point, '#757575');
  return out;
}

function details(o) {
  return [
    { label: 'Step', value: o.step },
    { label: 'Category', value: o.category },
    o.rank ? { label: 'Rank', value: String(o.rank) } : null,
    o.hlo_module_id && o.hlo_module_id !== '0' ? { label: 'Program ID', value: o.hlo_module_id } : null,
    { label: '# Occurrences', value: num(o.occurrences) },
    { label: 'Total time (us)', value: num(o.total_time) },
    { label: 'Total time / program', value: pct(o.total_time_in_percentage, 2) },
    { label: 'Model FLOP rate (GFLOP/s)', value: num(o.model_flop_rate) },
    { label: 'HBM BW (GiB/s)', value: num(o.hbm_bw) },
    { label: 'Bound by', value: o.bound_by, bold: true },
    { label: 'Roofline efficiency', value: pct(o.roofline_efficiency) },
  ].filter(Boolean);
}

function point(o, series, extra = {}) {
  return Object.assign({
    x: Number(o.bottleneck_operational_intensity), y: Number(o.measured_flop_rate), series,
    title: o.operation === 'Program' ? `Program (${o.step})` : String(o.operation),
    details: details(o), key: `${o.include_infeed_outfeed}|${o.step}|${o.rank}`,
  }, extra);
}

function deviceInfo(root, p, gpu) {
  const box = el('div', { class: 'xpv-card xpv-roofline-device' });
  box.append(el('h3', {}, 'Device Information'));
  const unit = gpu ? 'per GPU' : 'per TensorCore';
  const rows = [
    ['Device type', p.device_type || 'unknown'],
    [`Peak FLOP rate ${unit}`, gflops(p.peak_flop_rate)],
    [`Peak HBM bandwidth ${unit}`, `${num(p.peak_hbm_bw)} GiB/s`],
    ['HBM ridge point', `${num(p.hbm_ridge_point)} FLOP/Byte`],
  ];
  if (gpu) rows.push([`Peak shared memory / L1 bandwidth ${unit}`, `${num(p.peak_vmem_write_bw)} GiB/s`]);
  else {
    rows.splice(1, 0, ['Megacore', p.megacore === '1' ? 'Yes' : 'No']);
    if (p.has_merged_vmem === '1') {
      rows.push([`Peak VMEM read bandwidth ${unit}`, `${num(p.peak_vmem_read_bw)} GiB/s`]);
      rows.push([`Peak VMEM write bandwidth ${unit}`, `${num(p.peak_vmem_write_bw)} GiB/s`]);
    }
    if (p.has_cmem === '1') {
      rows.push([`Peak CMEM read bandwidth ${unit}`, `${num(p.peak_cmem_read_bw)} GiB/s`]);
      rows.push([`Peak CMEM write bandwidth ${unit}`, `${num(p.peak_cmem_write_bw)} GiB/s`]);
    }
  }
  const dl = el('dl', { class: 'xpv-roofline-peaks' });
  dl.style.display = 'grid';
  dl.style.gridTemplateColumns = 'max-content 1fr';
  dl.style.gap = '4px 16px';
  dl.style.margin = '0';
  for (const [k, v] of rows) {
    const dd = el('dd', { 'data-key': k }, v);
    dd.style.margin = '0';
    dd.style.fontWeight = '600';
    dl.append(el('dt', { class: 'xpv-muted' }, k), dd);
  }
  box.append(dl);
  if (!(Number(p.peak_flop_rate) > 0)) {
    box.append(el('p', { class: 'xpv-muted' },
      'The profile does not say the device\'s peak FLOP rate, so no roofline can be drawn.'));
  }
  root.append(box);
}

function select(label, values, all) {
  const s = el('select', { 'aria-label': label });
  if (all) s.append(el('option', { value: '' }, all));
  for (const v of values) s.append(el('option', { value: v }, v));
  return { wrap: el('label', { class: 'xpv-roofline-filter' }, `${label} `, s), s };
}

function tableOpts(dt, show, persist, csv) {
  const hide = DT.columns(dt).map((c) => c.id).filter((id) => !show.includes(id));
  const pctFmt = { format: (v) => (v === null || v === undefined ? '' : pct(v)) };
  const overrides = {};
  for (const id of PCT_COLS) overrides[id] = pctFmt;
  overrides.operation = { maxWidth: '28em' };
  overrides.source_info = { maxWidth: '24em' };
  return { persist, data: dt, hideColumns: hide, columnOverrides: overrides, csv, pageSize: 25 };
}

function programSection(root, data, lines) {
  const sec = el('section', { class: 'xpv-roofline-program' });
  sec.append(el('h3', {}, 'Program-level analysis'));
  sec.append(el('p', { class: 'xpv-muted' },
    '"Total" aggregates every operation of the profile (incomplete steps included). ' +
    'Per-step records need steps seen on the device.'));
  const inf = select('Include infeed/outfeed', ['true', 'false']);
  sec.append(el('div', { class: 'xpv-roofline-controls' }, inf.wrap));
  const chartBox = el('div', { class: 'xpv-roofline-chart', 'data-level': 'program' });
  const tableBox = el('div');
  sec.append(chartBox, tableBox);
  root.append(sec);
  const programs = filterRows(data, (o) => o.category === 'Program');
  const current = () => filterRows(programs, (o) => String(o.include_infeed_outfeed) === inf.s.value);
  const pts = () => DT.toObjects(current()).map((o) => point(o, /^\d+$/.test(o.step) ? 'Step' : o.step));
  const chart = rooflineChart(chartBox, { title: 'Program roofline', rooflines: lines, points: pts(),
    xLabel: X_LABEL, yLabel: Y_LABEL, height: 320 });
  const show = [...PROGRAM_COLS, ...EFF_COLS];
  const table = createTable(tableBox, tableOpts(current(), show, 'roofline-program',
    'roofline_model_program.csv'));
  inf.s.addEventListener('change', () => { chart.update({ points: pts() }); table.setData(current()); });
}

function opSection(root, data, lines) {
  const sec = el('section', { class: 'xpv-roofline-ops' });
  sec.append(el('h3', {}, 'Operation-level analysis'));
  sec.append(el('p', { class: 'xpv-muted' },
    'The 1000 ops with the most self time. Ops without FLOPs (data formatting, copies, IDLE) ' +
    'are bound by "Unknown" and have no point on the chart. Hover a point or a row for details.'));
  const ops = filterRows(data, (o) => o.step === 'Total');
  const objs = DT.toObjects(ops).filter((o) => o.category !== 'Program');
  const cats = [...new Set(objs.map((o) => o.category))].sort();
  const bounds = [...new Set(objs.map((o) => o.bound_by))].sort();
  const inf = select('Include infeed/outfeed', ['true', 'false']);
  const cat = select('Category', cats, 'All');
  const bnd = select('Bound by', bounds, 'All');
  const name = el('input', { type: 'search', placeholder: 'Operation name', 'aria-label': 'Operation name' });
  sec.append(el('div', { class: 'xpv-roofline-controls' }, inf.wrap, cat.wrap, bnd.wrap, name));
  const row = el('div', { class: 'xpv-grid2' });
  const chartBox = el('div', { class: 'xpv-roofline-chart', 'data-level': 'op' });
  const pieBox = el('div', { class: 'xpv-roofline-pie' });
  row.append(chartBox, pieBox);
  const tableBox = el('div', { class: 'xpv-roofline-table' });
  sec.append(row, tableBox);
  root.append(sec);

  const keep = (o) => String(o.include_infeed_outfeed) === inf.s.value &&
    (o.category === 'Program' || ((!cat.s.value || o.category === cat.s.value) &&
      (!bnd.s.value || o.bound_by === bnd.s.value) &&
      (!name.value || String(o.operation).toLowerCase().includes(name.value.toLowerCase()))));
  const current = () => filterRows(ops, keep);
  const pts = () => {
    const rows = DT.toObjects(current());
    const out = rows.filter((o) => o.category !== 'Program' && o.bound_by !== 'Unknown')
      .map((o) => point(o, o.category));
    // The program on top, as XProf's red star.
    for (const o of rows) if (o.category === 'Program') out.push(point(o, 'Program', { star: true, color: '#db4437' }));
    return out;
  };
  const chart = rooflineChart(chartBox, { title: 'Operation roofline', rooflines: lines, points: pts(),
    xLabel: X_LABEL, yLabel: Y_LABEL, height: 360 });
  if (!objs.some((o) => Number(o.measured_flop_rate) > 0)) {
    chartBox.append(el('p', { class: 'xpv-muted xpv-roofline-noflops' },
      'No op of this profile has a FLOP count, so no op can be placed on the roofline: the ' +
      'profile carries no flops figures and XLA\'s cost analysis of its HLO (when the profile ' +
      'has HLO protos) gives none. Times, bandwidth peaks and the tables are still shown.'));
  }
  const onlyOps = () => filterRows(current(), (o) => o.category !== 'Program');
  const drawPie = () => {
    pieBox.textContent = '';
    pieChart(pieBox, { title: 'Total self time by category', data: DT.sumBy(onlyOps(), 'category', 'total_self_time'),
      format: (v) => fmtDur(Number(v)), height: 220, emptyText: 'No op time.' });
  };
  drawPie();
  const show = ['step', ...OP_COLS, ...EFF_COLS];
  const opts = tableOpts(onlyOps(), show, 'roofline-ops', 'roofline_model_ops.csv');
  opts.onRowHover = (r) => chart.highlight(r ? `${r.include_infeed_outfeed}|${r.step}|${r.rank}` : null);
  const table = createTable(tableBox, opts);
  const refresh = () => { chart.update({ points: pts() }); table.setData(onlyOps()); drawPie(); };
  for (const c of [inf.s, cat.s, bnd.s]) c.addEventListener('change', refresh);
  name.addEventListener('input', refresh);
}

export default async function render(root, ctx) {
  const data = await ctx.api.json('data', { run: ctx.run, tag: ctx.tool, host: ctx.host });
  if (!Array.isArray(data) || !DT.isDataTable(data[0])) throw new Error('unexpected roofline_model data: want [DataTable, DataTable]');
  root.textContent = '';
  root.append(el('h2', {}, 'Roofline Model'));
  const [table, diag] = data;
  const p = table.p || {};
  const gpu = String(p.device_type || '').includes('GPU');
  diagnosticsBox(root, diag);
  if (!(table.rows || []).length) {
    root.append(el('p', { class: 'xpv-empty-state' },
      'No device ops in this profile (no XLA op line on a TPU and no XLA kernel on a GPU): ' +
      'there is nothing to place on a roofline.'));
    return;
  }
  deviceInfo(root, p, gpu);
  const lines = rooflines(p, gpu);
  programSection(root, table, lines);
  opSection(root, table, lines);
}
