// op_profile.js - the HLO Op Profile page.
//
// Data: `data?tag=op_profile&group_by=program|category|provenance` ->
// XProf's Profile JSON ({byProgram, byProgramExcludeIdle, deviceType} or
// the category / provenance pair); a node is {name, metrics {rawTime ps,
// flops (utilisation x time fraction), bandwidthUtils, occurrences ...},
// children, xla {op, expression, provenance, category, programId},
// numChildren}.
// Draws: a group-by selector, an exclude-idle toggle, and the tree of
// programs / categories / ops with time share, FLOPS and HBM utilisation
// bars; a click on a row expands it and shows the op's details, with
// links to the op in HLO Op Stats and in the Graph Viewer.
import { formatNumber } from '../lib/chart.js';
import { fmtDur } from '../lib/format.js';
import { el } from '../lib/dom.js';

const KEYS = { program: 'byProgram', category: 'byCategory', provenance: 'byProvenance' };

function bar(frac, color, title) {
  const outer = el('span', { class: 'xpv-op-bar', title });
  outer.style.display = 'inline-block';
  outer.style.width = '80px';
  outer.style.height = '10px';
  outer.style.background = '#eee';
  outer.style.verticalAlign = 'middle';
  const inner = el('span');
  inner.style.display = 'block';
  inner.style.height = '100%';
  inner.style.width = `${Math.max(0, Math.min(1, frac)) * 100}%`;
  inner.style.background = color;
  outer.append(inner);
  return outer;
}

export default async function render(root, ctx) {
  root.textContent = '';
  root.append(el('h2', {}, 'HLO Op Profile'));
  const controls = el('div', { class: 'xpv-op-controls' });
  controls.style.display = 'flex';
  controls.style.gap = '16px';
  controls.style.margin = '4px 0 8px';
  const sel = el('select', { id: 'xpv-op-group', 'aria-label': 'Group by' });
  for (const g of ['program', 'category', 'provenance']) sel.append(el('option', { value: g }, `Group by ${g}`));
  const idle = el('input', { type: 'checkbox', id: 'xpv-op-exclude-idle', checked: 'checked' });
  controls.append(sel, el('label', { for: 'xpv-op-exclude-idle' }, idle, ' Exclude idle'));
  root.append(controls);
  const summary = el('p', { class: 'xpv-muted xpv-op-summary' });
  const tree = el('div', { class: 'xpv-op-tree', role: 'tree' });
  const details = el('pre', { class: 'xpv-card xpv-op-details' });
  details.style.whiteSpace = 'pre-wrap';
  details.style.display = 'none';
  root.append(summary, tree, details);
  let data = null;

  function row(node, depth, total) {
    const m = node.metrics || {};
    const t = Number(m.rawTime) || 0;
    const frac = total > 0 ? t / total : 0;
    const kids = node.children || [];
    const line = el('div', { class: 'xpv-op-node', role: 'treeitem', 'data-name': node.name,
      'aria-expanded': kids.length ? 'false' : undefined });
    line.style.paddingLeft = `${depth * 16}px`;
    line.style.cursor = 'pointer';
    line.style.display = 'flex';
    line.style.gap = '8px';
    line.style.alignItems = 'center';
    const flopsUtil = frac > 0 ? (Number(m.flops) || 0) / frac : 0;
    const hbm = (m.bandwidthUtils || [])[0] || 0;
    line.append(el('span', { class: 'xpv-op-toggle' }, kids.length ? '\u25b8' : '\u00a0'),
      el('span', { class: 'xpv-op-pct' }, `${(frac * 100).toFixed(2)}%`),
      bar(frac, '#4285f4', 'time share'),
      el('span', { class: 'xpv-op-name' }, node.name),
      el('span', { class: 'xpv-muted' }, `${fmtDur(t / 1e6)}` +
        (node.numChildren > kids.length ? ` \u00b7 top ${kids.length} of ${node.numChildren}` : '')),
      bar(flopsUtil, '#0f9d58', `FLOPS utilisation ${(flopsUtil * 100).toFixed(1)}%`),
      bar(hbm, '#f4b400', `HBM bandwidth utilisation ${(hbm * 100).toFixed(1)}%`));
    const box = el('div', {});
    box.append(line);
    const sub = el('div', { role: 'group' });
    sub.style.display = 'none';
    box.append(sub);
    let built = false;
    line.addEventListener('click', () => {
      if (kids.length) {
        if (!built) { for (const k of kids) sub.append(row(k, depth + 1, total)); built = true; }
        const open = sub.style.display === 'none';
        sub.style.display = open ? '' : 'none';
        line.setAttribute('aria-expanded', open ? 'true' : 'false');
      }
      const x = node.xla;
      details.style.display = '';
      details.textContent = [`${node.name}`,
        `time: ${fmtDur(t / 1e6)}, occurrences: ${m.occurrences || 0}`,
        x ? `category: ${x.category}\nprogram: ${x.programId}\nframework op: ${x.provenance}\n${x.expression}` : '']
        .filter(Boolean).join('\n');
      // Click-through: the op's row in HLO Op Stats (filtered to it).
      if (x && (!ctx.tools || ctx.tools.includes('hlo_stats'))) {
        const a = el('a', { href: '#', class: 'xpv-op-to-hlo-stats', 'data-op': node.name },
          'Show in HLO Op Stats');
        a.addEventListener('click', (ev) => {
          ev.preventDefault();
          ctx.navigate({ tool: 'hlo_stats' }, { 'hlo.q': node.name });
        });
        details.append('\n', a);
      }
      // Click-through: the op's neighbourhood in the Graph Viewer.
      if (x && (!ctx.tools || ctx.tools.includes('graph_viewer'))) {
        const m = /^%?([^ ]+) = /.exec(x.expression || '');
        const hlo = m ? m[1] : node.name;
        const a = el('a', { href: '#', class: 'xpv-op-to-graph', 'data-op': hlo }, 'Show in Graph Viewer');
        a.addEventListener('click', (ev) => {
          ev.preventDefault();
          ctx.navigate({ tool: 'graph_viewer' }, { 'gv.program': x.programId, 'gv.node': hlo });
        });
        details.append('\n', a);
      }
    });
    return box;
  }

  function draw() {
    const key = KEYS[sel.value] + (idle.checked ? 'ExcludeIdle' : '');
    const r = data && data[key];
    tree.textContent = '';
    if (!r || !(r.children || []).length) {
      tree.append(el('p', { class: 'xpv-empty-state' }, 'No device ops in this profile.'));
      return;
    }
    const total = Number((r.metrics || {}).rawTime) || 0;
    summary.textContent = `Device: ${data.deviceType || 'unknown'} \u00b7 total ${fmtDur(total / 1e6)}`;
    for (const k of r.children) tree.append(row(k, 0, total));
  }

  async function load() {
    data = await ctx.api.json('data', { run: ctx.run, tag: ctx.tool, host: ctx.host, group_by: sel.value });
    draw();
  }
  sel.addEventListener('change', () => { load().catch((e) => { tree.textContent = e.message; }); });
  idle.addEventListener('change', draw);
  await load();
}
