// input_pipeline_analyzer.js - the Input Pipeline Analyzer page.
//
// Data: `data?tag=input_pipeline_analyzer` -> an array of 5 DataTables (XProf
// shape): [max_infeed_core, step_table, host_input_ops_table,
// recommendation_table, diagnostics_table].
// Draws: 1. the summary verdict (input-bound or not) and next step;
// 2. device side: step-time statistics, the stacked step-time graph and the
// per-category averages; 3. host side: the input-time breakdown (enqueue,
// file reads, preprocessing) and the sortable input-op table, with the
// tf.data recommendations.
import { createTable } from '../lib/table.js';
import { pieChart } from '../lib/chart.js';
import * as DT from '../lib/datatable.js';
import { el, richText } from '../lib/dom.js';
import { fmt } from '../lib/format.js';
import { stepChart, diagnosticsBox, STEP_SERIES, isTpuStepTable } from '../lib/steps.js';

// p key prefix of each stacked category (`<key>_time_ms_avg` / `_sdv`).
const CAT_KEYS = {
  deviceComputeTimeMs: 'device_compute', deviceToDeviceTimeMs: 'device_to_device',
  deviceCollectivesTimeMs: 'device_collectives', hostComputeTimeMs: 'host_compute',
  kernelLaunchTimeMs: 'kernel_launch', infeedTimeMs: 'infeed', outfeedTimeMs: 'outfeed',
  compileTimeMs: 'compile', otherTimeMs: 'other',
};

export default async function render(root, ctx) {
  const data = await ctx.api.json('data', { run: ctx.run, tag: ctx.tool, host: ctx.host });
  if (!Array.isArray(data) || data.length < 4 || !DT.isDataTable(data[1])) {
    throw new Error('unexpected input_pipeline_analyzer data');
  }
  // XProf's layout, or the TF 2.2-era stored Cloud TPU file: the step table
  // first (TPU columns, summary in its properties), no diagnostics.
  const tpu = isTpuStepTable(data[0]);
  const [steps, inputOps, recs, diag] = tpu ? [data[0], data[2], data[3], null]
    : [data[1], data[2], data[3], data[4]];
  const p = (t, k, d = '') => DT.prop(t, k, d);
  root.textContent = '';
  root.append(el('h2', {}, 'Input Pipeline Analyzer'));
  diagnosticsBox(root, diag);

  // ---- 1. summary ----
  const sum = el('div', { class: 'xpv-card xpv-ipa-summary' });
  sum.append(el('h3', {}, 'Summary of input-pipeline analysis'));
  const verdict = el('p', { class: 'xpv-verdict' });
  richText(verdict, p(steps, 'input_conclusion') || p(steps, 'summary_conclusion'));
  if (/HIGHLY input-bound/.test(verdict.textContent)) verdict.style.color = 'var(--error)';
  verdict.style.fontWeight = '600';
  sum.append(verdict);
  for (const k of ['kernel_launch_statement', 'all_other_statement', 'device_collectives_statement']) {
    if (p(steps, k)) sum.append(richText(el('p', {}), p(steps, k)));
  }
  const next = el('p', { class: 'xpv-nextstep' });
  next.append(el('strong', {}, 'Recommendation for next step: '));
  richText(next, p(steps, 'summary_nextstep'));
  sum.append(next);
  root.append(sum);

  // ---- 2. device side ----
  const dev = el('div', { class: 'xpv-card xpv-ipa-device' });
  dev.append(el('h3', {}, 'Device-side analysis details'));
  const nsteps = (steps.rows || []).length;
  const stats = el('div', { class: 'xpv-cards xpv-step-stats' });
  for (const [label, key] of [['Average step time', 'steptime_ms_average'],
    ['Standard deviation', 'steptime_ms_standard_deviation'],
    ['Minimum', 'steptime_ms_minimum'], ['Maximum', 'steptime_ms_maximum']]) {
    const c = el('div', { class: 'xpv-card' });
    c.append(el('div', { class: 'xpv-muted' }, label));
    const v = el('div', { 'data-key': key }, nsteps ? `${p(steps, key)} ms` : 'unknown');
    v.style.fontSize = '20px';
    v.style.fontWeight = '600';
    c.append(v);
    stats.append(c);
  }
  dev.append(stats);
  stepChart(dev, steps, 'Step time (ms), stacked by category');
  if (nsteps && tpu) {
    const avgRows = [['Compute', 'compute_ms_average'], ['Input', 'input_ms_average'],
      ['Idle', 'idle_ms_average']].map(([category, k]) => ({ category, avg: Number(p(steps, k, '0')) }));
    createTable(dev, {
      columns: [
        { id: 'category', label: 'Category', type: 'string' },
        { id: 'avg', label: 'Average (ms)', type: 'number', format: (v) => fmt(v, 2) },
      ],
      rows: avgRows, filter: false, pageSize: 0, csv: 'step_breakdown.csv',
      caption: 'Step-time breakdown (average over steps)',
    });
  } else if (nsteps) {
    const avgRows = STEP_SERIES.map((s) => ({
      category: s.name,
      avg: Number(p(steps, CAT_KEYS[s.id] + '_time_ms_avg', '0')),
      sdv: Number(p(steps, CAT_KEYS[s.id] + '_time_ms_sdv', '0')),
    }));
    createTable(dev, {
      columns: [
        { id: 'category', label: 'Category', type: 'string' },
        { id: 'avg', label: 'Average (ms)', type: 'number', format: (v) => fmt(v, 1) },
        { id: 'sdv', label: 'Standard deviation (ms)', type: 'number', format: (v) => fmt(v, 1) },
      ],
      rows: avgRows, filter: false, pageSize: 0, csv: 'step_breakdown.csv',
      caption: 'Step-time breakdown (average over steps)',
    });
  }
  root.append(dev);

  // ---- 3. host side ----
  const host = el('div', { class: 'xpv-card xpv-ipa-host' });
  host.append(el('h3', {}, 'Host-side analysis details'));
  const parts = [
    ['Enqueuing data to the device', 'enqueue_us'],
    ['Reading data from files on demand', 'demanded_file_read_us'],
    ['Reading data from files in advance', 'advanced_file_read_us'],
    ['Data preprocessing', 'preprocessing_us'],
    ['Other data reading or processing', 'unclassified_nonequeue_us'],
  ].map(([label, key]) => ({ label, value: Number(p(inputOps, key, '0')) || 0 }));
  const opRows = inputOps.rows || [];
  if (!opRows.length) {
    host.append(el('p', { class: 'xpv-empty-state xpv-no-input-ops' },
      'No input operation (tf.data iterator, host-to-device copy or infeed enqueue) ' +
      'was captured on the host, so there is no host-side breakdown.'));
  } else {
    const grid = el('div', { class: 'xpv-grid2' });
    const pieBox = el('div', { class: 'xpv-input-breakdown' });
    grid.append(pieBox);
    const list = el('dl', { class: 'xpv-kv' });
    for (const it of parts) list.append(el('dt', {}, it.label), el('dd', {}, `${fmt(it.value / 1000, 3)} ms`));
    grid.append(list);
    host.append(grid);
    if (parts.some((x) => x.value > 0)) {
      pieChart(pieBox, {
        title: 'Input time breakdown', donut: true, height: 220,
        data: parts.filter((x) => x.value > 0),
        format: (v) => `${fmt(v / 1000, 3)} ms`,
      });
    }
    const pct = (v) => (Number(v) * 100).toFixed(1) + '%';
    createTable(host, {
      data: inputOps, sort: { id: 'selfTimeInMs', dir: 'desc' }, columnFilters: true,
      filterPlaceholder: 'Filter input ops', csv: 'input_ops.csv',
      caption: 'Input operations on the host',
      columnOverrides: {
        timeInPercent: { format: pct }, selfTimeInPercent: { format: pct },
        timeInMs: { format: (v) => fmt(v, 3) }, selfTimeInMs: { format: (v) => fmt(v, 3) },
      },
    });
  }
  const recBox = el('div', { class: 'xpv-ipa-recs' });
  recBox.append(el('h4', {}, 'What can be done to reduce the input time'));
  const ul = el('ul');
  for (const r of DT.toObjects(recs)) ul.append(richText(el('li'), r.link));
  recBox.append(ul);
  host.append(recBox);
  root.append(host);
}
