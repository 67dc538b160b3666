// overview_page.js - the Overview Page.
//
// Data: `data?tag=overview_page` -> an array of 7 DataTables (XProf shape):
//   [analysis, step_time, run_environment, recommendation,
//    inference_latency, {}, diagnostics]
// Draws: diagnostics (when any), performance summary cards, the stacked
// step-time graph (red = waiting for input, green = device compute), the
// recommendation for next steps (links to the other tools), the run
// environment and the top-10 device ops table.
//
// Shared with input_pipeline_analyzer.js: el, richText, stepChart,
// stepRows, diagnosticsBox, STEP_SERIES.
import { createTable } from '../lib/table.js';
import { compareSection } from '../lib/compare.js';
import { barChart } from '../lib/chart.js';
import * as DT from '../lib/datatable.js';
import { el, richText, card as summaryCard } from '../lib/dom.js';
import { fmt } from '../lib/format.js';
import { stepChart, diagnosticsBox, isTpuStepTable } from '../lib/steps.js';

const card = (parent, title, value, sub, cls) => summaryCard(parent, title, value, sub, { class: cls });

const KNOWN_TOOLS = ['input_pipeline_analyzer', 'trace_viewer', 'framework_op_stats',
  'kernel_stats', 'memory_profile', 'op_profile', 'hlo_stats'];

// A tip "tool_name (explanation)": the tool name becomes a link to that page.
function tipItem(ctx, link) {
  const li = el('li');
  const m = /^([a-z_]+) (\(.*\))$/.exec(link);
  // Only tools this run has become links (ctx.tools: its run_tools).
  if (m && KNOWN_TOOLS.includes(m[1]) && (!ctx.tools || ctx.tools.includes(m[1]))) {
    const a = el('a', { href: '#', class: 'xpv-tool-link', 'data-tool': m[1] }, m[1]);
    a.addEventListener('click', (ev) => { ev.preventDefault(); ctx.navigate({ tool: m[1] }); });
    li.append(a, ' ' + m[2]);
  } else {
    richText(li, link);
  }
  return li;
}

export default async function render(root, ctx) {
  const data = await ctx.api.json('data', { run: ctx.run, tag: ctx.tool, host: ctx.host });
  // XProf's 7 tables, or the 6 of TF 2.2-era stored overview_page.json
  // files (Cloud TPU: no diagnostics table, TPU step columns).
  if (!Array.isArray(data) || data.length < 6 || !DT.isDataTable(data[1])) {
    throw new Error('unexpected overview_page data');
  }
  const [analysis, steps, env, rec, , , diag] = data;
  const tpuSteps = isTpuStepTable(steps);
  root.textContent = '';
  root.append(el('h2', {}, 'Overview Page'));
  compareSection(root, ctx);
  diagnosticsBox(root, diag);

  // ---- performance summary ----
  const p = (t, k, d = '') => DT.prop(t, k, d);
  const nsteps = (steps.rows || []).length;
  const stepAvg = Number(p(steps, 'steptime_ms_average', '0'));
  root.append(el('h3', {}, 'Performance Summary'));
  const cards = el('div', { class: 'xpv-cards xpv-summary' });
  root.append(cards);
  card(cards, 'Average step time',
    nsteps ? `${p(steps, 'steptime_ms_average')} ms` : 'unknown',
    nsteps ? `σ ${p(steps, 'steptime_ms_standard_deviation')} ms, ` +
      `min ${p(steps, 'steptime_ms_minimum')}, max ${p(steps, 'steptime_ms_maximum')} ` +
      `(${nsteps} step${nsteps === 1 ? '' : 's'})` : 'no step marker', 'xpv-card-steptime');
  const share = (k) => {
    const v = Number(p(steps, k, '0'));
    return stepAvg > 0 ? `${v.toFixed(1)} ms (${(100 * v / stepAvg).toFixed(1)}% of step)` : `${v.toFixed(1)} ms`;
  };
  if (nsteps && tpuSteps) {
    card(cards, 'Input (waiting for input data)', share('input_ms_average'), null, 'xpv-card-input');
    card(cards, 'Compute', share('compute_ms_average'), null, 'xpv-card-compute');
    card(cards, 'Idle', share('idle_ms_average'));
  } else if (nsteps) {
    card(cards, 'Input (waiting for input data)', share('infeed_time_ms_avg'), null, 'xpv-card-input');
    card(cards, 'Device compute', share('device_compute_time_ms_avg'), null, 'xpv-card-compute');
    card(cards, 'Kernel launch', share('kernel_launch_time_ms_avg'));
    card(cards, 'Host compute', share('host_compute_time_ms_avg'));
    card(cards, 'Device to device', share('device_to_device_time_ms_avg'), null, 'xpv-card-d2d');
    if (p(steps, 'device_collectives_time_ms_avg', null) !== null) {
      card(cards, 'Device collective communication', share('device_collectives_time_ms_avg'));
    }
    card(cards, 'Output', share('outfeed_time_ms_avg'), null, 'xpv-card-output');
    card(cards, 'Compilation', share('compile_time_ms_avg'), null, 'xpv-card-compile');
    card(cards, 'All others', share('other_time_ms_avg'));
  }
  // TPU utilisation, when the profile has it.
  for (const [label, key] of [['TPU duty cycle', 'device_duty_cycle_percent'],
    ['MXU utilization', 'mxu_utilization_percent'],
    ['FLOP rate (of roofline)', 'flop_rate_utilization_relative_to_roofline'],
    ['Memory bandwidth (of limit)', 'memory_bw_utilization_relative_to_hw_limit'],
    ['HBM utilization', 'hbm_utilization_percent'],
    ['Device idle', 'device_idle_time_percent'], ['Host idle', 'host_idle_time_percent']]) {
    const v = p(analysis, key, null);
    if (v !== null && v !== '' && (tpuSteps || Number.parseFloat(v) > 0)) {
      card(cards, label, /%$/.test(v) ? v : `${fmt(v, 1)}%`, null, 'xpv-card-' + key);
    }
  }
  if (p(analysis, 'host_tf_op_percent', null) !== null) {
    card(cards, 'TF op placement', `host ${p(analysis, 'host_tf_op_percent')}`,
      `device ${p(analysis, 'device_tf_op_percent')} (share of op executions)`);
  }
  if (p(analysis, 'host_op_time_eager_percent', null) !== null) {
    card(cards, 'Eager execution', `host ${p(analysis, 'host_op_time_eager_percent')}`,
      `device ${p(analysis, 'device_op_time_eager_percent')} of op time`);
  }
  if (p(analysis, 'device_compute_16bit_percent', null) !== null) {
    // Both 0: no device compute was attributed to steps (e.g. no step
    // marker), so the split is unknown, not "0% and 0%".
    const p16 = Number.parseFloat(p(analysis, 'device_compute_16bit_percent')) || 0;
    const p32 = Number.parseFloat(p(analysis, 'device_compute_32bit_percent')) || 0;
    if (p16 + p32 > 0) {
      card(cards, 'Device compute precision', `16-bit ${p(analysis, 'device_compute_16bit_percent')}`,
        `32-bit ${p(analysis, 'device_compute_32bit_percent')}`, 'xpv-card-precision');
    } else {
      card(cards, 'Device compute precision', 'n/a', 'no device compute time in steps', 'xpv-card-precision');
    }
  }

  // ---- step-time graph ----
  const graph = el('div', { class: 'xpv-card' });
  graph.append(el('h3', {}, 'Step-time Graph'));
  root.append(graph);
  stepChart(graph, steps, null);

  // ---- recommendation ----
  const rc = el('div', { class: 'xpv-card xpv-recommendation' });
  rc.append(el('h3', {}, 'Recommendation for Next Step'));
  for (const k of ['statement', 'kernel_launch_statement', 'all_other_statement',
    'device_collectives_statement', 'precision_statement']) {
    const s = p(rec, k);
    if (s) rc.append(richText(el('p', { class: 'xpv-rec-' + k }), s));
  }
  const hidden = new Set(String(p(rec, 'non_bottleneck_tip_types')).split(',').filter(Boolean));
  const groups = new Map();
  for (const r of DT.toObjects(rec)) {
    if (hidden.has(r.tip_type)) continue;
    if (!groups.has(r.description)) groups.set(r.description, []);
    groups.get(r.description).push(r.link);
  }
  for (const [desc, links] of groups) {
    rc.append(el('h4', {}, desc));
    const ul = el('ul');
    for (const l of links) ul.append(tipItem(ctx, l));
    rc.append(ul);
  }
  root.append(rc);

  // ---- run environment + top ops ----
  const envBox = el('div', { class: 'xpv-card xpv-run-env' });
  envBox.append(el('h3', {}, 'Run Environment'));
  const dl = el('dl', { class: 'xpv-kv' });
  for (const [label, key] of [['Number of hosts', 'host_count'], ['Tasks', 'task_count'],
    ['Device type', 'device_type'], ['Device cores', 'device_core_count'],
    ['Training', 'is_training']]) {
    dl.append(el('dt', {}, label), el('dd', { 'data-key': key }, p(env, key, 'unknown')));
  }
  envBox.append(dl);
  root.append(envBox);

  const opsBox = el('div', { class: 'xpv-card xpv-top-ops' });
  opsBox.append(el('h3', {}, 'Top 10 TensorFlow operations on device'));
  if (!(analysis.rows || []).length) {
    opsBox.append(el('p', { class: 'xpv-muted' }, 'No device operation was captured.'));
  }
  root.append(opsBox);   // full width: the TensorCore and FLOP columns stay in view
  const pct = (v) => (Number(v) * 100).toFixed(1) + '%';
  createTable(opsBox, {
    data: analysis, filter: false, pageSize: 0, csv: 'overview_top_ops.csv',
    columnOverrides: {
      selfTimePercent: { format: pct }, cumulativeTimePercent: { format: pct },
      flopRate: { format: (v) => fmt(v, 1) },
    },
  });
}
