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
import { el, richText } from '../lib/dom.js';
import { fmt } from '../lib/format.js';
import { stepChart, diagnosticsBox } from '../lib/steps.js';

function card(parent, title, value, sub, cls) {
  const c = el('div', { class: 'xpv-card' + (cls ? ' ' + cls : '') });
  c.append(el('div', { class: 'xpv-muted' }, title));
  const v = el('div', { class: 'xpv-card-value' }, value);
  v.style.fontSize = '18px';
  v.style.fontWeight = '600';
  c.append(v);
  if (sub) c.append(el('div', { class: 'xpv-muted' }, sub));
  parent.append(c);
  return c;
}

const KNOWN_TOOLS = ['input_pipeline_analyzer', 'trace_viewer', 'framework_op_stats',
  'kernel_stats', 'memory_profile'];

// A tip "tool_name (explanation)": the tool name becomes a link to that page.
function tipItem(ctx, link) {
  const li = el('li');
  const m = /^([a-z_]+) (\(.*\))$/.exec(link);
  if (m && KNOWN_TOOLS.includes(m[1])) {
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
  if (!Array.isArray(data) || data.length < 7 || !DT.isDataTable(data[1])) {
    throw new Error('unexpected overview_page data');
  }
  const [analysis, steps, env, rec, , , diag] = data;
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
  if (nsteps) {
    card(cards, 'Input (waiting for input data)', share('infeed_time_ms_avg'), null, 'xpv-card-input');
    card(cards, 'Device compute', share('device_compute_time_ms_avg'), null, 'xpv-card-compute');
    card(cards, 'Kernel launch', share('kernel_launch_time_ms_avg'));
    card(cards, 'Host compute', share('host_compute_time_ms_avg'));
    card(cards, 'All others', share('other_time_ms_avg'));
  }
  card(cards, 'TF op placement', `host ${p(analysis, 'host_tf_op_percent')}`,
    `device ${p(analysis, 'device_tf_op_percent')} (share of op executions)`);
  card(cards, 'Eager execution', `host ${p(analysis, 'host_op_time_eager_percent')}`,
    `device ${p(analysis, 'device_op_time_eager_percent')} of op time`);
  if (p(analysis, 'device_compute_16bit_percent', null) !== null) {
    card(cards, 'Device compute precision', `16-bit ${p(analysis, 'device_compute_16bit_percent')}`,
      `32-bit ${p(analysis, 'device_compute_32bit_percent')}`);
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
  const grid = el('div', { class: 'xpv-grid2' });
  root.append(grid);
  const envBox = el('div', { class: 'xpv-card xpv-run-env' });
  envBox.append(el('h3', {}, 'Run Environment'));
  const dl = el('dl', { class: 'xpv-kv' });
  for (const [label, key] of [['Number of hosts', 'host_count'], ['Tasks', 'task_count'],
    ['Device type', 'device_type'], ['Device cores', 'device_core_count'],
    ['Training', 'is_training']]) {
    dl.append(el('dt', {}, label), el('dd', { 'data-key': key }, p(env, key, 'unknown')));
  }
  envBox.append(dl);
  grid.append(envBox);

  const opsBox = el('div', { class: 'xpv-card xpv-top-ops' });
  opsBox.append(el('h3', {}, 'Top 10 TensorFlow operations on device'));
  if (!(analysis.rows || []).length) {
    opsBox.append(el('p', { class: 'xpv-muted' }, 'No device operation was captured.'));
  }
  grid.append(opsBox);
  const pct = (v) => (Number(v) * 100).toFixed(1) + '%';
  createTable(opsBox, {
    data: analysis, filter: false, pageSize: 0, csv: 'overview_top_ops.csv',
    columnOverrides: {
      selfTimePercent: { format: pct }, cumulativeTimePercent: { format: pct },
      flopRate: { format: (v) => fmt(v, 1) },
    },
  });
}
