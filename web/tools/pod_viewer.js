// pod_viewer.js - the pod viewer page.
//
// Data: `data?tag=pod_viewer` -> XProf's PodViewerDatabase protobuf JSON
// (tools/pod_viewer.c): per step, per worker (core) the step time split
// into the categories listed in stepBreakdownEvents, plus diagnostics.
// The page shows the run's diagnostics, a step slider, a stacked column
// chart (one column per worker, categories stacked; hovering a column shows
// that worker's breakdown) and the same numbers as a table.
import { barChart } from '../lib/chart.js';
import { createTable } from '../lib/table.js';
import { el } from '../lib/dom.js';
import { fmtUs } from '../lib/format.js';

// Columns of one step: [{core, rec}] sorted by core id (numerically).
export function stepColumns(map) {
  const per = (map && map.podStatsPerCore) || {};
  return Object.keys(per).sort((a, b) => Number(a) - Number(b)).map((core) => ({ core, rec: per[core] }));
}

function renderDiagnostics(root, diag) {
  const msgs = [];
  for (const [k, sev] of [['errors', 'ERROR'], ['warnings', 'WARNING'], ['info', 'INFO']]) {
    for (const m of (diag && diag[k]) || []) msgs.push([sev, m]);
  }
  const box = el('div', 'xpv-card pv-diagnostics');
  box.append(el('h3', null, 'Diagnostics'));
  if (!msgs.length) {
    box.append(el('p', 'xpv-muted', 'No diagnostics: the step analysis found no problem.'));
  } else {
    const ul = el('ul');
    for (const [sev, m] of msgs) {
      const li = el('li', `pv-diag-${sev.toLowerCase()}`);
      li.append(el('b', null, `${sev}: `), document.createTextNode(m));
      ul.append(li);
    }
    box.append(ul);
  }
  root.append(box);
}

export default async function render(root, ctx) {
  const data = await ctx.api.json('data', { run: ctx.run, tag: ctx.tool, host: ctx.host });
  if (!data || typeof data !== 'object') throw new Error('unexpected pod_viewer data');
  root.textContent = '';
  root.append(el('h2', null, 'Pod Viewer'));
  if (data.deviceType) root.append(el('p', 'xpv-muted pv-device', `Device type: ${data.deviceType}`));
  renderDiagnostics(root, data.diagnostics);

  const steps = ((data.podStatsSequence || {}).podStatsMap) || [];
  const cats = (data.stepBreakdownEvents || []).map((e) => ({ id: String(e.id), name: e.name }));
  if (!steps.length) {
    root.append(el('p', 'xpv-empty-state', 'No step was found in this profile, so there is no ' +
      'per-step breakdown to show (see the diagnostics above).'));
    return;
  }

  const box = el('div', 'xpv-card pv-steps');
  const bar = el('div', 'pv-slider-bar');
  bar.style.display = 'flex';
  bar.style.alignItems = 'center';
  bar.style.gap = '12px';
  const lab = el('label', null, 'Step');
  lab.htmlFor = 'pv-step';
  const slider = el('input');
  slider.type = 'range';
  slider.id = 'pv-step';
  slider.min = '0';
  slider.max = String(steps.length - 1);
  slider.step = '1';
  slider.value = '0';
  slider.style.flex = '1';
  slider.setAttribute('aria-label', 'Step');
  const stepLabel = el('span', 'pv-step-label');
  stepLabel.style.minWidth = '120px';
  bar.append(lab, slider, stepLabel);
  box.append(bar);
  const chartBox = el('div', 'pv-chart');
  box.append(chartBox);
  root.append(box);
  const tableBox = el('div', 'pv-table');
  root.append(tableBox);

  let chart = null;
  const columns = [
    { id: 'host', label: 'Host', type: 'string' },
    { id: 'core', label: 'Core id', type: 'string' },
    { id: 'total', label: 'Step time (us)', type: 'number', format: (v) => (+Number(v).toFixed(3)).toString() },
    ...cats.map((c) => ({ id: `c${c.id}`, label: `${c.name} (us)`, type: 'number',
      format: (v) => (+Number(v).toFixed(3)).toString() })),
    { id: 'bottleneck', label: 'Bottleneck', type: 'string' },
  ];
  const table = createTable(tableBox, { columns, rows: [], csv: 'pod_viewer_step.csv',
    filterPlaceholder: 'Filter by host or bottleneck' });

  const draw = () => {
    const i = Number(slider.value) || 0;
    const m = steps[i];
    stepLabel.textContent = `step ${m.stepNum} (${i + 1} of ${steps.length})`;
    const cols = stepColumns(m);
    const names = cols.map((c) => c.rec.hostName || '');
    const dupHosts = new Set(names).size !== names.length;
    const opts = {
      categories: cols.map((c) => (dupHosts ? `${c.rec.hostName || 'host'}#${c.core}` : c.rec.hostName || c.core)),
      series: cats.map((c) => ({ name: c.name,
        values: cols.map((x) => Number((x.rec.stepBreakdownUs || {})[c.id]) || 0) })),
      stacked: true, height: 320, yLabel: 'Time (us)', yUnit: 'us', xLabel: 'Worker',
      title: `Step ${m.stepNum}: step-time breakdown per worker`,
      tooltipTitle: (k) => {
        const r = cols[k].rec;
        return `${r.hostName} core ${cols[k].core}: step ${r.stepNum}, ${fmtUs(r.totalDurationUs)}, ` +
          `bottleneck ${r.bottleneck}`;
      },
    };
    if (chart) chart.update(opts);
    else chart = barChart(chartBox, opts);
    table.setRows(cols.map((x) => {
      const row = { host: x.rec.hostName || '', core: x.core, total: Number(x.rec.totalDurationUs) || 0,
        bottleneck: x.rec.bottleneck || '' };
      for (const c of cats) row[`c${c.id}`] = Number((x.rec.stepBreakdownUs || {})[c.id]) || 0;
      return row;
    }));
  };
  slider.addEventListener('input', draw);
  if (ctx.signal) ctx.signal.addEventListener('abort', () => chart && chart.destroy(), { once: true });
  draw();
}
