// compare.js - "Compare with" another run (or host): baseline and change
// columns for the stats pages (issue 15).
//
// API (stable):
//   compareSection(root, ctx, opts?) -> {element, setBase(run, host)}
//     Appends a <div class="xpv-card xpv-compare"> to root: a run selector
//     (#xpv-compare-run, "none" first) and a host selector
//     (#xpv-compare-host).  Choosing a baseline fetches
//     diff?run=<ctx.run>&base_run=B&tag=<ctx.tool>&host=<ctx.host>&base_host=H
//     and shows the summary (totals, change, rows added / removed) and a
//     table (.xpv-compare-table) of every row: key columns, Baseline, This
//     run, Change, Change % (red when slower / larger, green when faster /
//     smaller), status; sorted by absolute change (the server's order), any
//     column sortable.  opts.steps(parent, base[], new[]) draws the
//     overlaid step-time graph when the answer has per-step times (the
//     overview page).
//   The chosen baseline is remembered while the user moves between tools
//   (module state), so one choice compares every stats page.
import { createTable } from './table.js';
import { lineChart } from './chart.js';
import { el } from './dom.js';
import { formatNumber, formatBytes } from './format.js';

const ALL_HOSTS = 'ALL_HOSTS';
let remembered = { run: '', host: '' };

const LABELS = {
  host_or_device: 'Host/device', type: 'Type', op_name: 'Op name', section: 'Section',
  allocator: 'Allocator', region_type: 'Region', data_type: 'Data type',
};

function signed(v, fmt) {
  if (v === null || v === undefined || !Number.isFinite(v)) return '';
  return (v > 0 ? '+' : v < 0 ? '\u2212' : '') + fmt(Math.abs(v));
}

function pctText(v, row) {
  if (row.status === 'added') return 'added';
  if (row.status === 'removed') return 'removed';
  if (v === null || v === undefined) return '';
  return signed(v, (x) => `${x.toLocaleString('en-US', { maximumFractionDigits: 1 })}%`);
}

function deltaClass(v) {
  if (!Number.isFinite(v) || v === 0) return null;
  return v > 0 ? 'xpv-delta-up' : 'xpv-delta-down';
}

// The overlaid step-time graph: one line per run, step index on x.
export function stepOverlay(parent, base, cur) {
  const n = Math.max(base.length, cur.length);
  if (!n) {
    parent.append(el('p', { class: 'xpv-muted xpv-compare-nosteps' },
      'Neither run has steps, so there is no step-time graph to overlay.'));
    return null;
  }
  const x = Array.from({ length: n }, (_, i) => i + 1);
  const pad = (a) => x.map((_, i) => (i < a.length ? a[i] : null));
  const box = el('div', { class: 'xpv-compare-steps' });
  parent.append(box);
  return lineChart(box, {
    title: 'Step time: baseline and this run', x, xLabel: 'Step (index)',
    yLabel: 'Step time (ms)', yFormat: (v) => formatNumber(v),
    series: [
      { name: 'Baseline', values: pad(base), color: '#9e9e9e' },
      { name: 'This run', values: pad(cur), color: '#1a73e8' },
    ],
  });
}

export function compareSection(root, ctx, opts = {}) {
  const box = el('div', { class: 'xpv-card xpv-compare' });
  const runSel = el('select', { id: 'xpv-compare-run', 'aria-label': 'Baseline run' });
  const hostSel = el('select', { id: 'xpv-compare-host', 'aria-label': 'Baseline host' });
  const out = el('div', { class: 'xpv-compare-out' });
  const bar = el('div', { class: 'xpv-compare-bar' },
    el('strong', {}, 'Compare with '), el('label', {}, 'run ', runSel), ' ',
    el('label', {}, 'host ', hostSel));
  box.append(bar, out);
  root.append(box);

  runSel.append(el('option', { value: '' }, '\u2014 none \u2014'));
  for (const r of ctx.runs || []) runSel.append(el('option', { value: r }, r));
  hostSel.disabled = true;
  let gen = 0;

  async function loadHosts(run, want) {
    hostSel.textContent = '';
    hostSel.disabled = true;
    if (!run) return '';
    const hosts = (await ctx.api.json('hosts', { run, tag: ctx.tool }))
      .map((x) => String(x && x.hostname !== undefined ? x.hostname : x));
    for (const h of hosts) hostSel.append(el('option', { value: h }, h));
    hostSel.disabled = hosts.length < 2;
    // Same host name, else ALL_HOSTS for ALL_HOSTS, else the first.
    const pick = hosts.includes(want) ? want
      : hosts.includes(ctx.host) ? ctx.host
        : ctx.host === ALL_HOSTS && hosts.includes(ALL_HOSTS) ? ALL_HOSTS
          : hosts.find((h) => h !== ALL_HOSTS) || hosts[0] || '';
    hostSel.value = pick;
    return pick;
  }

  function draw(d) {
    out.textContent = '';
    const s = d.summary || {};
    const bytes = s.unit === 'bytes';
    const val = (v) => (v === null || v === undefined ? '' : bytes ? formatBytes(v)
      : `${formatNumber(v)} \u00b5s`);
    const totals = el('div', { class: 'xpv-compare-summary' });
    const change = el('span', { class: 'xpv-compare-total-delta' },
      s.delta_pct === null ? 'n/a' : pctText(s.delta_pct, {}));
    const dc = deltaClass(s.delta_pct);
    if (dc) change.classList.add(dc);
    totals.append(el('span', {}, `${s.total || 'total'}: baseline ${val(s.base_total_us)}, ` +
      `this run ${val(s.new_total_us)}, change `), change,
    el('span', { class: 'xpv-muted' }, ` \u00b7 rows: ${s.rows_common || 0} common, ` +
      `${s.rows_added || 0} added, ${s.rows_removed || 0} removed`));
    out.append(totals);
    if (d.steps && opts.steps !== false) stepOverlay(out, d.steps.base || [], d.steps.new || []);
    const labels = (d.columns && d.columns.labels) || [];
    const columns = [{ id: 'name', label: 'Name', type: 'string', maxWidth: '32em' }];
    for (const l of labels) columns.push({ id: l, label: LABELS[l] || l, type: 'string' });
    const num = (v, row) => (row.unit === '%' ? `${formatNumber(v)}%`
      : row.unit === 'bytes' || bytes ? formatBytes(v) : formatNumber(v));
    columns.push(
      { id: 'base_us', label: bytes ? 'Baseline' : 'Baseline (\u00b5s)', type: 'number', format: num },
      { id: 'new_us', label: bytes ? 'This run' : 'This run (\u00b5s)', type: 'number', format: num },
      { id: 'delta_us', label: 'Change', type: 'number', cellClass: deltaClass,
        format: (v, row) => signed(v, (x) => num(x, row)) },
      { id: 'delta_pct', label: 'Change %', type: 'number', cellClass: (v, row) => deltaClass(row.delta_us),
        format: pctText },
      { id: 'status', label: 'Status', type: 'string' });
    const rows = (d.rows || []).map((r) => Object.assign({}, r));
    const tbox = el('div', { class: 'xpv-compare-table' });
    out.append(tbox);
    createTable(tbox, {
      columns, rows, filterColumns: ['name', ...labels], filterPlaceholder: 'Filter by name',
      csv: false, pageSize: 25, emptyText: 'Nothing to compare.',
    });
    const csv = el('a', { class: 'xpv-btn xpv-compare-csv', href: ctx.api.url('diff_csv', params()),
      download: '' }, 'Comparison as CSV');
    out.append(csv);
  }

  function params() {
    return { run: ctx.run, base_run: runSel.value, tag: ctx.tool, host: ctx.host,
      base_host: hostSel.value || undefined };
  }

  async function refresh() {
    const g = ++gen;
    remembered = { run: runSel.value, host: hostSel.value };
    box.classList.toggle('xpv-compare-on', !!runSel.value);
    if (!runSel.value) {
      out.textContent = '';
      return;
    }
    out.textContent = '';
    out.append(el('p', { class: 'xpv-muted' }, 'Comparing\u2026'));
    try {
      const d = await ctx.api.json('diff', params());
      if (g === gen) draw(d);
    } catch (e) {
      if (e && e.name === 'AbortError') return;
      if (g !== gen) return;
      out.textContent = '';
      out.append(el('p', { class: 'xpv-compare-error' }, `Cannot compare: ${e.message || e}`));
    }
  }

  async function setBase(run, host) {
    runSel.value = (ctx.runs || []).includes(run) ? run : '';
    try {
      await loadHosts(runSel.value, host);
    } catch (e) {
      out.textContent = '';
      out.append(el('p', { class: 'xpv-compare-error' }, `Cannot list hosts: ${e.message || e}`));
      return;
    }
    await refresh();
  }

  runSel.addEventListener('change', () => setBase(runSel.value, remembered.host));
  hostSel.addEventListener('change', refresh);
  if (remembered.run) setBase(remembered.run, remembered.host);
  return { element: box, setBase };
}
