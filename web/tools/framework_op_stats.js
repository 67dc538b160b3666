// framework_op_stats.js - the TensorFlow stats page.
//
// Data: `data?tag=framework_op_stats` -> [tableWithIdle, tableWithoutIdle]
// (DataTables, see docs/design.md).  Shows up to four pie charts (host /
// device x op type / op name, by total self time), an include/exclude IDLE
// toggle, a sortable + filterable table and "Export as CSV".
//
// The small SVG pie and table helpers below are exported for the kernel
// stats page; they are self-contained so the page works on its own.

const SVGNS = 'http://www.w3.org/2000/svg';
const COLORS = ['#4285f4', '#db4437', '#f4b400', '#0f9d58', '#ab47bc', '#00acc1',
  '#ff7043', '#9e9d24', '#5c6bc0', '#f06292', '#9e9e9e'];

function el(tag, attrs = {}, text) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

// Pie of [{label, value}] (top 10 + "Other"), with hover tooltips.
export function renderPie(parent, title, data) {
  const box = el('div', { class: 'xpv-pie' });
  box.style.cssText = 'display:inline-block;vertical-align:top;margin:8px;width:320px';
  box.appendChild(el('h4', {}, title));
  parent.appendChild(box);
  const items = data.filter((d) => d.value > 0).sort((a, b) => b.value - a.value);
  const top = items.slice(0, 10);
  const rest = items.slice(10).reduce((s, d) => s + d.value, 0);
  if (rest > 0) top.push({ label: 'Other', value: rest });
  const total = top.reduce((s, d) => s + d.value, 0);
  if (!total) {
    box.appendChild(el('p', {}, 'No data.'));
    return box;
  }
  const svg = document.createElementNS(SVGNS, 'svg');
  svg.setAttribute('viewBox', '-1 -1 2 2');
  svg.setAttribute('width', '160');
  svg.setAttribute('height', '160');
  svg.style.transform = 'rotate(-90deg)';
  let acc = 0;
  const legend = el('ul');
  legend.style.cssText = 'list-style:none;padding:0;font-size:12px';
  top.forEach((d, i) => {
    const frac = d.value / total;
    const color = COLORS[i % COLORS.length];
    let shape;
    if (frac >= 0.999999) {
      shape = document.createElementNS(SVGNS, 'circle');
      shape.setAttribute('r', '1');
    } else {
      const a0 = acc * 2 * Math.PI, a1 = (acc + frac) * 2 * Math.PI;
      const large = frac > 0.5 ? 1 : 0;
      shape = document.createElementNS(SVGNS, 'path');
      shape.setAttribute('d', `M ${Math.cos(a0)} ${Math.sin(a0)} A 1 1 0 ${large} 1 ` +
        `${Math.cos(a1)} ${Math.sin(a1)} L 0 0`);
    }
    acc += frac;
    shape.setAttribute('fill', color);
    const tip = document.createElementNS(SVGNS, 'title');
    tip.textContent = `${d.label}: ${(frac * 100).toFixed(1)}%`;
    shape.appendChild(tip);
    svg.appendChild(shape);
    const li = el('li');
    const sw = el('span');
    sw.style.cssText = `display:inline-block;width:10px;height:10px;margin-right:4px;background:${color}`;
    li.appendChild(sw);
    li.appendChild(document.createTextNode(`${d.label} (${(frac * 100).toFixed(1)}%)`));
    li.title = d.label;
    li.style.cssText = 'white-space:nowrap;overflow:hidden;text-overflow:ellipsis';
    legend.appendChild(li);
  });
  box.appendChild(svg);
  box.appendChild(legend);
  return box;
}

function cellText(col, v) {
  if (v === null || v === undefined || v === '') return '';
  if (col.type === 'number' && typeof v === 'number') {
    if (/percent/i.test(col.id) || col.id === 'gpu_tensorcore_utilization') {
      return `${(v * 100).toFixed(1)}%`;
    }
    return Number.isInteger(v) ? String(v) : v.toFixed(3);
  }
  return String(v);
}

// Sortable, filterable table of a DataTable.  Returns {element, update}.
export function renderTable(parent, table, opts = {}) {
  const wrap = el('div', { class: 'xpv-table' });
  const filter = el('input', { type: 'search', placeholder: opts.filterPlaceholder || 'Filter',
    'aria-label': 'Filter rows' });
  filter.style.cssText = 'margin:6px 0;width:320px';
  const count = el('span');
  count.style.marginLeft = '8px';
  wrap.appendChild(filter);
  wrap.appendChild(count);
  const t = el('table');
  t.style.cssText = 'border-collapse:collapse;font-size:12px;width:100%';
  wrap.appendChild(t);
  parent.appendChild(wrap);
  let current = table;
  let sortCol = 0, sortDir = 1;
  const filterCols = opts.filterColumns || null;

  function draw() {
    const cols = current.cols || [];
    const q = filter.value.trim().toLowerCase();
    let rows = (current.rows || []).map((r) => r.c.map((c) => (c ? c.v : '')));
    if (q) {
      rows = rows.filter((r) => r.some((v, i) =>
        (!filterCols || filterCols.includes(cols[i].id)) &&
        String(v).toLowerCase().includes(q)));
    }
    rows.sort((a, b) => {
      const x = a[sortCol], y = b[sortCol];
      if (typeof x === 'number' && typeof y === 'number') return (x - y) * sortDir;
      return String(x).localeCompare(String(y)) * sortDir;
    });
    t.textContent = '';
    const head = el('tr');
    cols.forEach((c, i) => {
      const th = el('th', { 'data-col': c.id, title: 'Sort' },
        c.label + (i === sortCol ? (sortDir > 0 ? ' \u25b2' : ' \u25bc') : ''));
      th.style.cssText = 'cursor:pointer;text-align:left;border-bottom:1px solid #999;padding:2px 4px';
      th.addEventListener('click', () => {
        if (sortCol === i) sortDir = -sortDir; else { sortCol = i; sortDir = c.type === 'number' ? -1 : 1; }
        draw();
      });
      head.appendChild(th);
    });
    t.appendChild(head);
    const limit = opts.maxRows || 2000;
    for (const r of rows.slice(0, limit)) {
      const tr = el('tr');
      r.forEach((v, i) => {
        const td = el('td', {}, cellText(cols[i], v));
        td.style.cssText = 'border-bottom:1px solid #eee;padding:2px 4px;max-width:480px;' +
          'overflow:hidden;text-overflow:ellipsis;white-space:nowrap';
        if (typeof v === 'string' && v.length > 40) td.title = v;
        tr.appendChild(td);
      });
      t.appendChild(tr);
    }
    count.textContent = `${rows.length} of ${(current.rows || []).length} rows` +
      (rows.length > limit ? ` (first ${limit} shown)` : '');
  }
  filter.addEventListener('input', draw);
  draw();
  return {
    element: wrap,
    update(tbl) { current = tbl; draw(); },
  };
}

// Sum `valueCol` per `keyCol` over rows matching `pred`.
function groupSum(table, keyCol, valueCol, pred) {
  const ids = table.cols.map((c) => c.id);
  const k = ids.indexOf(keyCol), v = ids.indexOf(valueCol);
  const m = new Map();
  for (const r of table.rows || []) {
    const c = r.c.map((x) => (x ? x.v : ''));
    if (!pred(c, ids)) continue;
    m.set(c[k], (m.get(c[k]) || 0) + (Number(c[v]) || 0));
  }
  return [...m].map(([label, value]) => ({ label: String(label), value }));
}

export default async function render(root, ctx) {
  const data = await ctx.api.json('data', { run: ctx.run, tag: ctx.tool, host: ctx.host });
  if (!Array.isArray(data) || data.length < 2) throw new Error('unexpected framework_op_stats data');
  const [withIdle, withoutIdle] = data;
  root.textContent = '';
  const title = el('h2', {}, 'TensorFlow Stats');
  root.appendChild(title);
  const p = withIdle.p || {};
  root.appendChild(el('p', {}, `Task type: ${p.task_type || 'Unknown'} \u00b7 ` +
    `Architecture: ${p.architecture_type || 'Unknown'}`));

  const controls = el('div');
  const label = el('label');
  const idleBox = el('input', { type: 'checkbox', id: 'xpv-include-idle' });
  idleBox.checked = false;
  label.appendChild(idleBox);
  label.appendChild(document.createTextNode(' Include IDLE time'));
  controls.appendChild(label);
  const csv = el('a', { class: 'xpv-csv', download: 'framework_op_stats.csv',
    href: ctx.api.url('data_csv', { run: ctx.run, tag: ctx.tool, host: ctx.host }) },
  'Export as CSV');
  csv.style.marginLeft = '16px';
  controls.appendChild(csv);
  root.appendChild(controls);

  const pies = el('div', { class: 'xpv-pies' });
  root.appendChild(pies);
  const tableBox = el('div');
  root.appendChild(tableBox);

  const current = () => (idleBox.checked ? withIdle : withoutIdle);
  function drawPies() {
    pies.textContent = '';
    const t = current();
    const side = (name) => (c, ids) => c[ids.indexOf('host_or_device')] === name;
    for (const where of ['Device', 'Host']) {
      const has = (t.rows || []).some((r) => r.c[1] && r.c[1].v === where);
      if (!has) continue;
      renderPie(pies, `${where}-side TensorFlow ops by type (self-time)`,
        groupSum(t, 'type', 'total_self_time', side(where)));
      renderPie(pies, `${where}-side TensorFlow ops (self-time)`,
        groupSum(t, 'operation', 'total_self_time', side(where)));
    }
    if (!pies.childNodes.length) pies.appendChild(el('p', {}, 'No TensorFlow ops were captured in this profile.'));
  }
  drawPies();
  const tbl = renderTable(tableBox, current(), {
    filterPlaceholder: 'Filter by operation or type',
    filterColumns: ['type', 'operation', 'host_or_device'],
  });
  idleBox.addEventListener('change', () => {
    drawPies();
    tbl.update(current());
  });
}
