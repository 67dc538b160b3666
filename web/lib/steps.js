// steps.js - the step-time graph and the diagnostics box, shown by the
// overview and the input pipeline pages.
import { barChart } from './chart.js';
import * as DT from './datatable.js';
import { el } from './dom.js';
import { fmt } from './format.js';

// Stacked series of the step-time graph, in XProf's column order.
export const STEP_SERIES = [
  { id: 'deviceComputeTimeMs', name: 'Device compute', color: '#0f9d58' },
  { id: 'deviceToDeviceTimeMs', name: 'Device to device', color: '#00acc1' },
  { id: 'deviceCollectivesTimeMs', name: 'Device collective communication', color: '#ab47bc' },
  { id: 'hostComputeTimeMs', name: 'Host compute', color: '#4285f4' },
  { id: 'kernelLaunchTimeMs', name: 'Kernel launch', color: '#f4b400' },
  { id: 'infeedTimeMs', name: 'Input', color: '#db4437' },
  { id: 'outfeedTimeMs', name: 'Output', color: '#ff7043' },
  { id: 'compileTimeMs', name: 'Compilation', color: '#8d6e63' },
  { id: 'otherTimeMs', name: 'All others', color: '#9e9e9e' },
];

// The older TPU layout (TF 2.2-era Cloud TPU tool files): compute, input
// and idle per step.
export const TPU_STEP_SERIES = [
  { id: 'computeTimeMs', name: 'Compute', color: '#0f9d58' },
  { id: 'inputTimeMs', name: 'Input', color: '#db4437' },
  { id: 'idleTimeMs', name: 'Idle', color: '#9e9e9e' },
];

// Whether a step table has the older TPU columns.
export function isTpuStepTable(t) {
  return !!(t && (t.cols || []).some((c) => c.id === 'computeTimeMs'));
}

export function stepRows(stepTable) {
  return DT.toObjects(stepTable);
}

// A step's total: its stepTimeMs, else the sum of its stacked parts.
function stepTime(r) {
  if (r.stepTimeMs !== undefined) return r.stepTimeMs;
  return [...STEP_SERIES, ...TPU_STEP_SERIES].reduce((a, s) => a + (Number(r[s.id]) || 0), 0);
}

// The stacked step-time graph, or a sentence when there are no steps.
export function stepChart(parent, stepTable, title) {
  const rows = stepRows(stepTable);
  if (!rows.length) {
    parent.append(el('p', { class: 'xpv-empty-state xpv-no-steps' },
      'No step was found in this profile, so there is no step-time graph. ' +
      'See the diagnostics for why.'));
    return null;
  }
  const series = (isTpuStepTable(stepTable) ? TPU_STEP_SERIES : STEP_SERIES)
    .map((s) => ({ name: s.name, color: s.color, values: rows.map((r) => Number(r[s.id]) || 0) }))
    .filter((s) => s.values.some((v) => v > 0));
  const box = el('div', { class: 'xpv-step-chart' });
  parent.append(box);
  return barChart(box, {
    title, categories: rows.map((r) => String(r.stepnum)), series, stacked: true,
    yLabel: 'Step time (ms)', yUnit: 'ms', xLabel: 'Step',
    tooltipTitle: (i) => `Step ${rows[i].stepnum}: ${fmt(stepTime(rows[i]))} ms`,
  });
}

export function diagnosticsBox(parent, diag) {
  const rows = diag && diag.rows ? DT.toObjects(diag) : [];
  if (!rows.length) return null;
  const box = el('div', { class: 'xpv-card xpv-diagnostics', role: 'status' });
  box.append(el('h3', {}, 'Diagnostics'));
  const ul = el('ul');
  for (const r of rows) {
    const li = el('li', { class: 'xpv-diag-' + String(r.severity).toLowerCase() });
    li.append(el('strong', {}, r.severity + ': '), String(r.message));
    if (r.severity === 'ERROR') li.style.color = 'var(--error)';
    else if (r.severity === 'WARNING') li.style.color = 'var(--warn)';
    ul.append(li);
  }
  box.append(ul);
  parent.append(box);
  return box;
}
