// chart.js - small SVG charts of our own (no library, no external request).
//
// Every chart fills the width of its container, redraws on resize, shows a
// tooltip (a positioned <div class="xpv-tooltip">) on hover, and returns a
// handle {element, update(newOpts), destroy()}.  Colors come from a fixed
// palette; a series / slice name always gets the same color on a page
// (colorFor), unless opts.colors {name: '#rrggbb'} or item.color says otherwise.
//
// pieChart(parent, {
//   data: [{label, value, color?}], title?, donut: true, height: 220,
//   maxSlices: 10 (the rest is merged into otherLabel 'Other'),
//   format(v) -> tooltip value text, legend: true, onClick(item)? })
//
// barChart(parent, {                          // stacked columns by default
//   categories: [label...], series: [{name, values: [..], color?}],
//   stacked: true, title?, yLabel? (axis label, e.g. 'Step time (ms)'),
//   yUnit? (appended to tooltip values, e.g. 'ms'), yFormat(v)?,
//   xLabel?, height: 280, tooltipTitle(i)?, onClick(i)? })
//
// lineChart(parent, {
//   x: [numbers ascending], series: [{name, values: [..], axis: 'left'|'right',
//   area: false, color?}], stacked: false (stack the left-axis series as areas),
//   title?, xLabel?, xFormat(v)?, yLabel?, yFormat(v)?, y2Label?, y2Format(v)?,
//   markers?: [{x, label}] (dashed vertical lines, e.g. a peak),
//   height: 280 })  // more points than pixels -> max per pixel column
//
// rooflineChart(parent, {                     // log-log roofline scatter
//   rooflines: [{name, peak (y units), ridge (x where the slope meets the
//     peak), color?}],           // y = min(peak, x * peak / ridge)
//   points: [{x, y, series, title, details: [{label, value}], color?,
//     star?: true (a larger star marker), key?}],
//   title?, xLabel?, yLabel?, xFormat(v)?, yFormat(v)?, height: 360,
//   onClick(point)? })  // points with x or y <= 0 cannot be drawn: skipped
//   handle.highlight(key | null) rings the point(s) with that key.
//
// Legends of bar, line and roofline charts are buttons: click toggles a
// series.
// Helpers: PALETTE, colorFor(name), niceTicks(min, max, count),
//   formatNumber(v), downsampleMax(x, seriesValues, buckets).

import { formatNumber } from './format.js';
const SVGNS = 'http://www.w3.org/2000/svg';

export const PALETTE = [
  '#4285f4', '#db4437', '#f4b400', '#0f9d58', '#ab47bc', '#00acc1',
  '#ff7043', '#9e9d24', '#5c6bc0', '#f06292', '#00796b', '#c2185b',
  '#7e57c2', '#8d6e63', '#26a69a', '#d4e157',
];
const OTHER_COLOR = '#9e9e9e';

const assigned = new Map();   // name -> color, for the page's lifetime
const usedColors = new Map(); // color -> count

function hashString(s) {
  let x = 2166136261;
  for (let i = 0; i < s.length; i++) { x ^= s.charCodeAt(i); x = Math.imul(x, 16777619); }
  return x >>> 0;
}

// Returns the stable color of a series name: first a hash of the name, then
// the next palette color nobody else uses yet.
export function colorFor(name) {
  const key = String(name);
  if (assigned.has(key)) return assigned.get(key);
  if (key === 'Other' || key === 'Others') return OTHER_COLOR;
  const start = hashString(key) % PALETTE.length;
  let c = PALETTE[start];
  let least = Infinity;
  for (let k = 0; k < PALETTE.length; k++) {
    const cand = PALETTE[(start + k) % PALETTE.length];
    const n = usedColors.get(cand) || 0;
    if (n < least) { least = n; c = cand; }
    if (n === 0) break;
  }
  assigned.set(key, c);
  usedColors.set(c, (usedColors.get(c) || 0) + 1);
  return c;
}

// Round tick values covering [min, max]: step = {1, 2, 5} x 10^k.
export function niceTicks(min, max, count = 5) {
  if (!Number.isFinite(min) || !Number.isFinite(max)) { min = 0; max = 1; }
  if (max < min) [min, max] = [max, min];
  if (max === min) { if (max === 0) max = 1; else if (max > 0) min = 0; else max = 0; }
  const raw = (max - min) / Math.max(1, count);
  const mag = Math.pow(10, Math.floor(Math.log10(raw)));
  const f = raw / mag;
  const step = (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
  const lo = Math.floor(min / step + 1e-9) * step;
  const hi = Math.ceil(max / step - 1e-9) * step;
  const ticks = [];
  for (let v = lo; v <= hi + step / 2; v += step) ticks.push(+v.toPrecision(12));
  return { min: lo, max: hi, step, ticks };
}

// Keeps at most `buckets` points: per bucket the first x and each series' max.
export function downsampleMax(x, values, buckets) {
  const n = x.length;
  if (n <= buckets || buckets < 1) return { x, values };
  const ox = new Array(buckets);
  const ov = values.map(() => new Array(buckets));
  for (let b = 0; b < buckets; b++) {
    const i0 = Math.floor(b * n / buckets), i1 = Math.max(i0 + 1, Math.floor((b + 1) * n / buckets));
    ox[b] = x[i0];
    values.forEach((vals, s) => {
      let m = -Infinity;
      for (let i = i0; i < i1; i++) { const v = vals[i]; if (v !== null && v !== undefined && v > m) m = v; }
      ov[s][b] = m === -Infinity ? null : m;
    });
  }
  return { x: ox, values: ov };
}

// ---- DOM helpers ----------------------------------------------------------

function svg(tag, attrs) {
  const e = document.createElementNS(SVGNS, tag);
  if (attrs) for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null) e.setAttribute(k, v);
  return e;
}

function div(cls, text) {
  const e = document.createElement('div');
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

function seriesColor(opts, name, explicit) {
  return explicit || (opts.colors && opts.colors[name]) || colorFor(name);
}

// Shared frame: wrapper, title, drawing area, legend, tooltip, resize.
function frame(parent, kind, opts, draw) {
  const root = div(`xpv-chart xpv-chart-${kind}`);
  const title = div('xpv-chart-title');
  const area = div('xpv-chart-area');
  const legend = div('xpv-legend');
  const tip = div('xpv-tooltip');
  tip.setAttribute('role', 'tooltip');
  tip.hidden = true;
  root.append(title, area, legend, tip);
  parent.append(root);
  const st = { opts, hidden: new Set(), width: 0 };

  const tooltip = {
    show(heading, lines, px, py) {
      tip.textContent = '';
      if (heading) tip.append(div('xpv-tooltip-title', heading));
      for (const l of lines) {
        const row = div('xpv-tooltip-row');
        if (l.color) {
          const sw = document.createElement('span');
          sw.className = 'xpv-swatch';
          sw.style.background = l.color;
          row.append(sw);
        }
        const lab = document.createElement('span');
        lab.className = 'xpv-tooltip-label';
        lab.textContent = l.label;
        const val = document.createElement('span');
        val.className = 'xpv-tooltip-value';
        val.textContent = l.value === undefined ? '' : l.value;
        row.append(lab, val);
        if (l.bold) row.classList.add('xpv-bold');
        tip.append(row);
      }
      tip.hidden = false;
      const rw = root.clientWidth, tw = tip.offsetWidth, th = tip.offsetHeight;
      let x = px + 14, y = py + 10;
      if (x + tw > rw) x = Math.max(0, px - tw - 14);
      if (y + th > root.clientHeight + 40) y = Math.max(0, py - th - 10);
      tip.style.left = `${x}px`;
      tip.style.top = `${y}px`;
    },
    hide() { tip.hidden = true; },
  };

  function redraw() {
    const w = Math.max(120, Math.floor(area.clientWidth || root.clientWidth || 600));
    st.width = w;
    title.textContent = st.opts.title || '';
    title.hidden = !st.opts.title;
    area.textContent = '';
    legend.textContent = '';
    tooltip.hide();
    draw({ root, area, legend, tooltip, width: w, opts: st.opts, hidden: st.hidden, redraw });
  }

  let ro = null;
  if (typeof ResizeObserver !== 'undefined') {
    let pending = 0;
    ro = new ResizeObserver(() => {
      const w = Math.floor(area.clientWidth);
      if (w && Math.abs(w - st.width) >= 2) {
        cancelAnimationFrame(pending);
        pending = requestAnimationFrame(redraw);
      }
    });
    ro.observe(area);
  }
  redraw();
  return {
    element: root,
    update(newOpts) { st.opts = Object.assign({}, st.opts, newOpts); redraw(); },
    destroy() { if (ro) ro.disconnect(); root.remove(); },
  };
}

function toggleLegend(legend, items, hidden, redraw) {
  for (const it of items) {
    const b = document.createElement('button');
    b.type = 'button';
    b.className = 'xpv-legend-item';
    b.setAttribute('aria-pressed', hidden.has(it.name) ? 'false' : 'true');
    if (hidden.has(it.name)) b.classList.add('xpv-off');
    const sw = document.createElement('span');
    sw.className = 'xpv-swatch';
    sw.style.background = it.color;
    b.append(sw, document.createTextNode(it.name));
    b.title = `Show/hide ${it.name}`;
    b.addEventListener('click', () => {
      if (hidden.has(it.name)) hidden.delete(it.name);
      else hidden.add(it.name);
      redraw();
    });
    legend.append(b);
  }
}

function localPoint(ev, el) {
  const r = el.getBoundingClientRect();
  return { x: ev.clientX - r.left, y: ev.clientY - r.top };
}

// ---- pie / donut ----------------------------------------------------------

export function pieChart(parent, opts = {}) {
  return frame(parent, 'pie', opts, ({ area, legend, tooltip, width, opts: o }) => {
    const fmt = o.format || formatNumber;
    let items = (o.data || []).filter((d) => Number(d.value) > 0)
      .map((d) => ({ label: String(d.label), value: Number(d.value), color: d.color }))
      .sort((a, b) => b.value - a.value);
    const max = o.maxSlices || 10;
    if (items.length > max) {
      const rest = items.slice(max - 1).reduce((s, d) => s + d.value, 0);
      items = items.slice(0, max - 1);
      items.push({ label: o.otherLabel || 'Other', value: rest, color: OTHER_COLOR, other: true });
    }
    const total = items.reduce((s, d) => s + d.value, 0);
    if (!total) {
      area.append(div('xpv-chart-empty', o.emptyText || 'No data to chart.'));
      return;
    }
    const size = Math.min(o.height || 220, width);
    const r = size / 2 - 4, ri = o.donut === false ? 0 : r * 0.55;
    const cx = size / 2, cy = size / 2;
    const s = svg('svg', { width: size, height: size, viewBox: `0 0 ${size} ${size}`, role: 'img',
      'aria-label': o.title || 'Pie chart', class: 'xpv-pie-svg' });
    let acc = 0;
    items.forEach((d) => {
      d.color = d.color || seriesColor(o, d.label);
      d.frac = d.value / total;
      const a0 = acc * 2 * Math.PI - Math.PI / 2, a1 = (acc + d.frac) * 2 * Math.PI - Math.PI / 2;
      acc += d.frac;
      let shape;
      if (d.frac > 0.99999) {
        shape = svg('path', { d: `M ${cx - r} ${cy} a ${r} ${r} 0 1 0 ${2 * r} 0 a ${r} ${r} 0 1 0 ${-2 * r} 0` +
          (ri ? ` M ${cx - ri} ${cy} a ${ri} ${ri} 0 1 1 ${2 * ri} 0 a ${ri} ${ri} 0 1 1 ${-2 * ri} 0` : ''),
        'fill-rule': 'evenodd' });
      } else {
        const large = d.frac > 0.5 ? 1 : 0;
        const p = (rad, a) => `${cx + rad * Math.cos(a)} ${cy + rad * Math.sin(a)}`;
        const path = ri
          ? `M ${p(r, a0)} A ${r} ${r} 0 ${large} 1 ${p(r, a1)} L ${p(ri, a1)} A ${ri} ${ri} 0 ${large} 0 ${p(ri, a0)} Z`
          : `M ${cx} ${cy} L ${p(r, a0)} A ${r} ${r} 0 ${large} 1 ${p(r, a1)} Z`;
        shape = svg('path', { d: path });
      }
      shape.setAttribute('fill', d.color);
      shape.setAttribute('class', 'xpv-slice');
      shape.setAttribute('data-label', d.label);
      const pct = `${(d.frac * 100).toFixed(1)}%`;
      shape.addEventListener('mousemove', (ev) => {
        const pt = localPoint(ev, area);
        tooltip.show(d.label, [{ color: d.color, label: fmt(d.value), value: pct }], pt.x, pt.y);
      });
      shape.addEventListener('mouseleave', () => tooltip.hide());
      if (o.onClick) shape.addEventListener('click', () => o.onClick(d));
      s.append(shape);
      if (d.frac >= 0.05) {
        const am = (a0 + a1) / 2, rm = ri ? (r + ri) / 2 : r * 0.62;
        const t = svg('text', { x: cx + rm * Math.cos(am), y: cy + rm * Math.sin(am),
          'text-anchor': 'middle', 'dominant-baseline': 'central', class: 'xpv-pie-label' });
        t.textContent = d.frac >= 0.995 ? '100%' : `${Math.round(d.frac * 100)}%`;
        s.append(t);
      }
    });
    const wrap = div('xpv-pie-wrap');
    wrap.append(s);
    if (o.legend !== false) {
      const ul = document.createElement('ul');
      ul.className = 'xpv-pie-legend';
      for (const d of items) {
        const li = document.createElement('li');
        const sw = document.createElement('span');
        sw.className = 'xpv-swatch';
        sw.style.background = d.color;
        const lab = document.createElement('span');
        lab.className = 'xpv-pie-legend-label';
        lab.textContent = d.label;
        lab.title = d.label;
        const pc = document.createElement('span');
        pc.className = 'xpv-pie-legend-pct';
        pc.textContent = `${(d.frac * 100).toFixed(1)}%`;
        li.append(sw, lab, pc);
        ul.append(li);
      }
      wrap.append(ul);
    }
    area.append(wrap);
    legend.hidden = true;
  });
}

// ---- axes -------------------------------------------------------------------

function yAxis(g, ticks, scale, x, side, fmt, label, plotW, height, top) {
  for (const t of ticks) {
    const y = scale(t);
    if (side === 'left') g.append(svg('line', { x1: x, x2: x + plotW, y1: y, y2: y, class: 'xpv-grid' }));
    const tx = svg('text', { x: side === 'left' ? x - 6 : x + 6, y, 'text-anchor': side === 'left' ? 'end' : 'start',
      'dominant-baseline': 'middle', class: 'xpv-tick' });
    tx.textContent = fmt(t);
    g.append(tx);
  }
  if (label) {
    const lx = side === 'left' ? 12 : x + 48;
    const ly = top + height / 2;
    const t = svg('text', { x: lx, y: ly, transform: `rotate(-90 ${lx} ${ly})`, 'text-anchor': 'middle',
      class: 'xpv-axis-label' });
    t.textContent = label;
    g.append(t);
  }
}

// ---- stacked / grouped columns -------------------------------------------

// Axis labels of at most `max` characters that stay distinguishable: a
// prefix every label shares ("10.240.1.") is what gets cut, then the
// middle of what is still too long, never the part that differs.
export function shortLabels(labels, max) {
  if (labels.every((l) => l.length <= max)) return labels.slice();
  const first = labels[0] || '';
  let p = first.length, q = first.length;
  for (const l of labels) {
    let i = 0;
    while (i < p && i < l.length && l[i] === first[i]) i++;
    p = i;
    let j = 0;
    while (j < q && j < l.length && l[l.length - 1 - j] === first[first.length - 1 - j]) j++;
    q = j;
  }
  if (labels.length < 2) p = q = 0;
  return labels.map((l) => {
    if (l.length <= max) return l;
    const sq = Math.min(q, l.length - p);       // suffix not overlapping the prefix
    if (l.length - p <= max - 1) return '\u2026' + l.slice(-(max - 1));   // differs near the end
    if (l.length - sq <= max - 1) return l.slice(0, max - 1) + '\u2026';  // differs near the start
    if (p === 0) {                              // nothing shared: keep both ends
      const tail = Math.ceil((max - 1) / 2);
      return l.slice(0, max - 1 - tail) + '\u2026' + l.slice(-tail);
    }
    return '\u2026' + l.slice(p, p + max - 2) + '\u2026';
  });
}

export function barChart(parent, opts = {}) {
  return frame(parent, 'bar', opts, ({ area, legend, tooltip, width, opts: o, hidden, redraw }) => {
    const cats = o.categories || [];
    const all = (o.series || []).map((s) => ({ name: String(s.name), values: s.values || [],
      color: seriesColor(o, String(s.name), s.color) }));
    toggleLegend(legend, all, hidden, redraw);
    const series = all.filter((s) => !hidden.has(s.name));
    const n = cats.length;
    if (!n || !all.length) { area.append(div('xpv-chart-empty', o.emptyText || 'No data to chart.')); return; }
    const stacked = o.stacked !== false;
    const fmt = o.yFormat || formatNumber;
    const H = o.height || 280;
    const m = { l: o.yLabel ? 62 : 48, r: 12, t: 10, b: o.xLabel ? 44 : 28 };
    const pw = Math.max(10, width - m.l - m.r), ph = Math.max(10, H - m.t - m.b);
    let lo = 0, hi = 0;
    for (let i = 0; i < n; i++) {
      let pos = 0, neg = 0;
      for (const s of series) {
        const v = Number(s.values[i]) || 0;
        if (stacked) { if (v >= 0) pos += v; else neg += v; } else { pos = Math.max(pos, v); neg = Math.min(neg, v); }
      }
      hi = Math.max(hi, pos); lo = Math.min(lo, neg);
    }
    const nt = niceTicks(lo, hi, Math.max(2, Math.round(ph / 50)));
    const ys = (v) => m.t + ph - (v - nt.min) / (nt.max - nt.min) * ph;
    const s = svg('svg', { width, height: H, role: 'img', 'aria-label': o.title || 'Bar chart', class: 'xpv-bar-svg' });
    const g = svg('g');
    s.append(g);
    yAxis(g, nt.ticks, ys, m.l, 'left', fmt, o.yLabel, pw, ph, m.t);
    const band = pw / n;
    const bw = Math.max(0.5, band * (n > 200 ? 1 : 0.8));
    const off = (band - bw) / 2;
    const paths = series.map(() => []);
    for (let i = 0; i < n; i++) {
      let pos = 0, neg = 0;
      series.forEach((se, k) => {
        const v = Number(se.values[i]) || 0;
        if (!v) return;
        let x = m.l + i * band + off, w = bw, y0, y1;
        if (stacked) {
          if (v >= 0) { y0 = pos; pos += v; y1 = pos; } else { y0 = neg; neg += v; y1 = neg; }
        } else {
          w = bw / series.length; x += k * w; y0 = 0; y1 = v;
        }
        const top = ys(Math.max(y0, y1)), bot = ys(Math.min(y0, y1));
        paths[k].push(`M${x.toFixed(2)} ${top.toFixed(2)}h${w.toFixed(2)}V${bot.toFixed(2)}h${(-w).toFixed(2)}Z`);
      });
    }
    series.forEach((se, k) => {
      if (paths[k].length) g.append(svg('path', { d: paths[k].join(''), fill: se.color, class: 'xpv-bars', 'data-series': se.name }));
    });
    g.append(svg('line', { x1: m.l, x2: m.l + pw, y1: ys(0), y2: ys(0), class: 'xpv-axis' }));
    // x labels, thinned so they do not overlap
    const every = Math.max(1, Math.ceil(n / Math.max(1, Math.floor(pw / 56))));
    const short = shortLabels(cats.map(String), 10);
    for (let i = 0; i < n; i += every) {
      const t = svg('text', { x: m.l + (i + 0.5) * band, y: m.t + ph + 16, 'text-anchor': 'middle', class: 'xpv-tick' });
      t.textContent = short[i];
      const full = svg('title', {});
      full.textContent = String(cats[i]);   // the whole label on hover
      const tg = svg('g', { class: 'xpv-tick-group' });
      tg.append(full, t);
      g.append(tg);
    }
    if (o.xLabel) {
      const t = svg('text', { x: m.l + pw / 2, y: H - 6, 'text-anchor': 'middle', class: 'xpv-axis-label' });
      t.textContent = o.xLabel;
      g.append(t);
    }
    const hl = svg('rect', { class: 'xpv-hover-band', x: 0, y: m.t, width: band, height: ph, visibility: 'hidden' });
    g.insertBefore(hl, g.firstChild);
    const overlay = svg('rect', { x: m.l, y: m.t, width: pw, height: ph, fill: 'transparent', class: 'xpv-overlay' });
    g.append(overlay);
    overlay.addEventListener('mousemove', (ev) => {
      const pt = localPoint(ev, area);
      const i = Math.min(n - 1, Math.max(0, Math.floor((pt.x - m.l) / band)));
      hl.setAttribute('x', m.l + i * band);
      hl.setAttribute('visibility', 'visible');
      let total = 0;
      const lines = series.slice().reverse().map((se) => {
        const v = Number(se.values[i]) || 0;
        total += v;
        return { color: se.color, label: se.name, value: fmt(v) + (o.yUnit ? ` ${o.yUnit}` : '') };
      });
      if (stacked && series.length > 1) lines.push({ label: 'Total', value: fmt(total), bold: true });
      tooltip.show(o.tooltipTitle ? o.tooltipTitle(i) : String(cats[i]), lines, pt.x, pt.y);
    });
    overlay.addEventListener('mouseleave', () => { hl.setAttribute('visibility', 'hidden'); tooltip.hide(); });
    if (o.onClick) {
      overlay.style.cursor = 'pointer';
      overlay.addEventListener('click', (ev) => {
        const pt = localPoint(ev, area);
        o.onClick(Math.min(n - 1, Math.max(0, Math.floor((pt.x - m.l) / band))));
      });
    }
    area.append(s);
  });
}

// ---- lines / areas ---------------------------------------------------------

export function lineChart(parent, opts = {}) {
  return frame(parent, 'line', opts, ({ area, legend, tooltip, width, opts: o, hidden, redraw }) => {
    const xs0 = (o.x || []).map(Number);
    const all = (o.series || []).map((s) => ({ name: String(s.name), values: s.values || [],
      axis: s.axis === 'right' ? 'right' : 'left', area: !!s.area || (!!o.stacked && s.axis !== 'right'),
      color: seriesColor(o, String(s.name), s.color) }));
    toggleLegend(legend, all, hidden, redraw);
    const series = all.filter((s) => !hidden.has(s.name));
    if (!xs0.length || !all.length) { area.append(div('xpv-chart-empty', o.emptyText || 'No data to chart.')); return; }
    const hasRight = series.some((s) => s.axis === 'right');
    const H = o.height || 280;
    const m = { l: o.yLabel ? 62 : 48, r: hasRight ? (o.y2Label ? 62 : 48) : 14, t: 10, b: o.xLabel ? 44 : 28 };
    const pw = Math.max(10, width - m.l - m.r), ph = Math.max(10, H - m.t - m.b);
    const ds = downsampleMax(xs0, series.map((s) => s.values.map((v) => (v === null || v === undefined ? null : Number(v)))),
      Math.max(2, Math.floor(pw)));
    const xs = ds.x;
    const vals = ds.values;
    const n = xs.length;
    // stacking of left-axis series when opts.stacked
    const base = series.map(() => null);
    if (o.stacked) {
      const acc = new Array(n).fill(0);
      series.forEach((s, k) => {
        if (s.axis === 'right') return;
        base[k] = acc.slice();
        for (let i = 0; i < n; i++) acc[i] += vals[k][i] || 0;
        vals[k] = acc.slice();
      });
    }
    const range = (axis) => {
      let lo = Infinity, hi = -Infinity;
      series.forEach((s, k) => {
        if (s.axis !== axis) return;
        for (const v of vals[k]) if (v !== null && Number.isFinite(v)) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
      });
      if (lo === Infinity) { lo = 0; hi = 1; }
      if (lo > 0) lo = 0;
      return niceTicks(lo, hi, Math.max(2, Math.round(ph / 50)));
    };
    const yl = range('left'), yr = hasRight ? range('right') : null;
    const xmin = xs[0], xmax = xs[n - 1] === xmin ? xmin + 1 : xs[n - 1];
    const xsc = (v) => m.l + (v - xmin) / (xmax - xmin) * pw;
    const ysc = (t) => (v) => m.t + ph - (v - t.min) / (t.max - t.min) * ph;
    const yL = ysc(yl), yR = yr ? ysc(yr) : null;
    const s = svg('svg', { width, height: H, role: 'img', 'aria-label': o.title || 'Line chart', class: 'xpv-line-svg' });
    const g = svg('g');
    s.append(g);
    yAxis(g, yl.ticks, yL, m.l, 'left', o.yFormat || formatNumber, o.yLabel, pw, ph, m.t);
    if (yr) yAxis(g, yr.ticks, yR, m.l + pw, 'right', o.y2Format || formatNumber, o.y2Label, pw, ph, m.t);
    const xfmt = o.xFormat || formatNumber;
    const xt = niceTicks(xmin, xmax, Math.max(2, Math.floor(pw / 90)));
    for (const t of xt.ticks) {
      if (t < xmin || t > xmax) continue;
      const tx = svg('text', { x: xsc(t), y: m.t + ph + 16, 'text-anchor': 'middle', class: 'xpv-tick' });
      tx.textContent = xfmt(t);
      g.append(tx);
    }
    if (o.xLabel) {
      const t = svg('text', { x: m.l + pw / 2, y: H - 6, 'text-anchor': 'middle', class: 'xpv-axis-label' });
      t.textContent = o.xLabel;
      g.append(t);
    }
    g.append(svg('line', { x1: m.l, x2: m.l + pw, y1: m.t + ph, y2: m.t + ph, class: 'xpv-axis' }));
    // areas first (so lines stay on top), in reverse for stacking
    series.forEach((se, k) => {
      const ysf = se.axis === 'right' ? yR : yL;
      let d = '', started = false, firstX = 0, lastX = 0;
      const pts = [];
      for (let i = 0; i < n; i++) {
        const v = vals[k][i];
        if (v === null || !Number.isFinite(v)) { started = false; continue; }
        const px = xsc(xs[i]).toFixed(2), py = ysf(v).toFixed(2);
        d += (started ? 'L' : 'M') + px + ' ' + py;
        if (!pts.length) firstX = px;
        lastX = px;
        pts.push(i);
        started = true;
      }
      if (se.area && pts.length) {
        let ad = d.replace(/M/g, 'L').replace(/^L/, 'M');
        if (base[k]) {
          for (let q = pts.length - 1; q >= 0; q--) {
            const i = pts[q];
            ad += `L${xsc(xs[i]).toFixed(2)} ${ysf(base[k][i]).toFixed(2)}`;
          }
        } else {
          const y0 = ysf(Math.max(0, (se.axis === 'right' ? yr : yl).min)).toFixed(2);
          ad += `L${lastX} ${y0}L${firstX} ${y0}`;
        }
        g.append(svg('path', { d: ad + 'Z', fill: se.color, 'fill-opacity': o.stacked ? 0.75 : 0.25, stroke: 'none', class: 'xpv-area' }));
      }
      g.append(svg('path', { d, fill: 'none', stroke: se.color, 'stroke-width': 1.5, class: 'xpv-line', 'data-series': se.name }));
    });
    for (const mk of o.markers || []) {
      const mx = Number(mk.x);
      if (!(mx >= xmin && mx <= xmax)) continue;
      const px = xsc(mx).toFixed(2);
      g.append(svg('line', { x1: px, x2: px, y1: m.t, y2: m.t + ph, class: 'xpv-marker',
        stroke: 'currentColor', 'stroke-dasharray': '4 3', 'stroke-width': 1 }));
      if (mk.label) {
        const t = svg('text', { x: Number(px) + 4, y: m.t + 12, class: 'xpv-tick xpv-marker-label' });
        t.textContent = mk.label;
        g.append(t);
      }
    }
    const cross = svg('line', { y1: m.t, y2: m.t + ph, class: 'xpv-crosshair', visibility: 'hidden' });
    g.append(cross);
    const dots = series.map((se) => {
      const c = svg('circle', { r: 3.5, fill: se.color, visibility: 'hidden', class: 'xpv-dot' });
      g.append(c);
      return c;
    });
    const overlay = svg('rect', { x: m.l, y: m.t, width: pw, height: ph, fill: 'transparent', class: 'xpv-overlay' });
    g.append(overlay);
    overlay.addEventListener('mousemove', (ev) => {
      const pt = localPoint(ev, area);
      const xv = xmin + (pt.x - m.l) / pw * (xmax - xmin);
      let lo = 0, hi = n - 1;
      while (lo < hi) { const mid = (lo + hi) >> 1; if (xs[mid] < xv) lo = mid + 1; else hi = mid; }
      if (lo > 0 && Math.abs(xs[lo - 1] - xv) < Math.abs(xs[lo] - xv)) lo--;
      const cx = xsc(xs[lo]);
      cross.setAttribute('x1', cx); cross.setAttribute('x2', cx); cross.setAttribute('visibility', 'visible');
      const lines = [];
      series.forEach((se, k) => {
        let v = vals[k][lo];
        const raw = base[k] && v !== null ? v - base[k][lo] : v;
        if (v === null || !Number.isFinite(v)) { dots[k].setAttribute('visibility', 'hidden'); v = null; } else {
          dots[k].setAttribute('cx', cx);
          dots[k].setAttribute('cy', (se.axis === 'right' ? yR : yL)(v));
          dots[k].setAttribute('visibility', 'visible');
        }
        const f = se.axis === 'right' ? (o.y2Format || formatNumber) : (o.yFormat || formatNumber);
        lines.push({ color: se.color, label: se.name, value: raw === null ? '\u2013' : f(raw) });
      });
      tooltip.show(xfmt(xs[lo]) + (o.xLabel ? ` (${o.xLabel})` : ''), lines, pt.x, pt.y);
    });
    overlay.addEventListener('mouseleave', () => {
      cross.setAttribute('visibility', 'hidden');
      for (const d of dots) d.setAttribute('visibility', 'hidden');
      tooltip.hide();
    });
    area.append(s);
  });
}

// ---- roofline (log-log scatter) --------------------------------------------

// Decade bounds [lo, hi] (powers of ten) around the positive values.
function decades(vals, padLo = 0, padHi = 0) {
  const v = vals.filter((x) => x > 0 && Number.isFinite(x));
  if (!v.length) return [0, 1];
  let lo = Math.floor(Math.log10(Math.min(...v))) - padLo;
  let hi = Math.ceil(Math.log10(Math.max(...v))) + padHi;
  if (hi <= lo) hi = lo + 1;
  return [lo, hi];
}

function starPath(cx, cy, r) {
  let d = '';
  for (let i = 0; i < 10; i++) {
    const a = -Math.PI / 2 + i * Math.PI / 5, rr = i % 2 ? r * 0.45 : r;
    d += `${i ? 'L' : 'M'}${(cx + rr * Math.cos(a)).toFixed(1)},${(cy + rr * Math.sin(a)).toFixed(1)}`;
  }
  return d + 'Z';
}

export function rooflineChart(parent, opts = {}) {
  let marked = null;
  const handle = frame(parent, 'roofline', opts, ({ area, legend, tooltip, width, opts: o, hidden, redraw }) => {
    const lines = o.rooflines || [];
    const pts = (o.points || []).filter((p) => p.x > 0 && p.y > 0 && Number.isFinite(p.x) && Number.isFinite(p.y));
    const xs = pts.map((p) => p.x), ys = pts.map((p) => p.y);
    // Each roofline shows three decades of its slope and two of its flat part.
    for (const l of lines) {
      if (l.peak > 0 && l.ridge > 0) { xs.push(l.ridge / 1000, l.ridge * 100); ys.push(l.peak / 1000, l.peak); }
    }
    const [x0, x1] = decades(xs, 1, 1);
    let [y0, y1] = decades(ys, 1, 1);
    if (y1 - y0 > 12) y0 = y1 - 12;
    const height = o.height || 360, left = 64, right = 16, top = 10, bottom = 42;
    const pw = Math.max(60, width - left - right), ph = height - top - bottom;
    const sx = (x) => left + (Math.log10(x) - x0) / (x1 - x0) * pw;
    const sy = (y) => top + ph - (Math.log10(y) - y0) / (y1 - y0) * ph;
    const s = svg('svg', { width, height, role: 'img', class: 'xpv-roofline-svg',
      'aria-label': o.title || 'Roofline chart' });
    const xf = o.xFormat || formatNumber, yf = o.yFormat || formatNumber;
    const g = svg('g', { class: 'xpv-axis' });
    for (let e = x0; e <= x1; e++) {
      const x = sx(10 ** e);
      g.append(svg('line', { x1: x, x2: x, y1: top, y2: top + ph, class: 'xpv-grid' }));
      const t = svg('text', { x, y: top + ph + 14, 'text-anchor': 'middle', class: 'xpv-tick' });
      t.textContent = xf(10 ** e);
      g.append(t);
    }
    for (let e = y0; e <= y1; e++) {
      const y = sy(10 ** e);
      g.append(svg('line', { x1: left, x2: left + pw, y1: y, y2: y, class: 'xpv-grid' }));
      const t = svg('text', { x: left - 6, y: y + 4, 'text-anchor': 'end', class: 'xpv-tick' });
      t.textContent = yf(10 ** e);
      g.append(t);
    }
    const xl = svg('text', { x: left + pw / 2, y: height - 4, 'text-anchor': 'middle', class: 'xpv-axis-label' });
    xl.textContent = o.xLabel || '';
    const yl = svg('text', { x: 12, y: top + ph / 2, 'text-anchor': 'middle', class: 'xpv-axis-label',
      transform: `rotate(-90 12 ${top + ph / 2})` });
    yl.textContent = o.yLabel || '';
    g.append(xl, yl);
    s.append(g);
    const clip = `xpv-roof-clip-${Math.random().toString(36).slice(2)}`;
    const cp = svg('clipPath', { id: clip });
    cp.append(svg('rect', { x: left, y: top, width: pw, height: ph }));
    s.append(cp);
    const plot = svg('g', { 'clip-path': `url(#${clip})` });
    s.append(plot);
    const items = [];
    for (const l of lines) {
      if (!(l.peak > 0 && l.ridge > 0)) continue;
      const color = seriesColor(o, l.name, l.color);
      items.push({ name: l.name, color });
      if (hidden.has(l.name)) continue;
      const xa = 10 ** x0, xb = 10 ** x1;
      const pa = `${sx(xa)},${sy(xa * l.peak / l.ridge)}`;
      const path = svg('polyline', { points: `${pa} ${sx(l.ridge)},${sy(l.peak)} ${sx(xb)},${sy(l.peak)}`,
        fill: 'none', stroke: color, 'stroke-width': 1.5, class: 'xpv-roofline-line', 'data-name': l.name });
      plot.append(path);
    }
    const seen = new Set();
    for (const p of pts) {
      if (!seen.has(p.series)) {
        seen.add(p.series);
        items.push({ name: p.series, color: seriesColor(o, p.series, p.color) });
      }
    }
    const drawn = [];
    for (const p of pts) {
      if (hidden.has(p.series)) continue;
      const cx = sx(p.x), cy = sy(p.y), color = seriesColor(o, p.series, p.color);
      const m = p.star
        ? svg('path', { d: starPath(cx, cy, 9), fill: color, stroke: '#fff', 'stroke-width': 0.8 })
        : svg('circle', { cx, cy, r: 4, fill: color, 'fill-opacity': 0.8, stroke: color });
      m.setAttribute('class', 'xpv-roofline-point');
      if (p.key !== undefined) m.setAttribute('data-key', p.key);
      plot.append(m);
      drawn.push({ p, cx, cy, m });
    }
    area.append(s);
    toggleLegend(legend, items, hidden, redraw);
    const ring = svg('circle', { r: 8, fill: 'none', 'stroke-width': 2, class: 'xpv-roofline-mark' });
    ring.style.stroke = 'var(--text)';
    ring.style.display = 'none';
    plot.append(ring);
    const mark = (key) => {
      const d = key === null || key === undefined ? null : drawn.find((q) => q.p.key === key);
      ring.style.display = d ? '' : 'none';
      if (d) { ring.setAttribute('cx', d.cx); ring.setAttribute('cy', d.cy); }
    };
    marked = mark;
    const nearest = (ev) => {
      const q = localPoint(ev, s);
      let best = null, bd = 100;
      for (const d of drawn) {
        const dd = (d.cx - q.x) ** 2 + (d.cy - q.y) ** 2;
        if (dd < bd) { bd = dd; best = d; }
      }
      return { best, q };
    };
    s.addEventListener('mousemove', (ev) => {
      const { best } = nearest(ev);
      if (!best) { tooltip.hide(); mark(null); return; }
      mark(best.p.key);
      const rp = localPoint(ev, area);
      tooltip.show(best.p.title || best.p.series,
        [{ label: o.xLabel || 'x', value: xf(best.p.x) }, { label: o.yLabel || 'y', value: yf(best.p.y) },
          ...(best.p.details || [])], rp.x, rp.y);
    });
    s.addEventListener('mouseleave', () => { tooltip.hide(); mark(null); });
    if (o.onClick) s.addEventListener('click', (ev) => { const { best } = nearest(ev); if (best) o.onClick(best.p); });
  });
  handle.highlight = (key) => { if (marked) marked(key); };
  return handle;
}

export { formatNumber };
export default { pieChart, barChart, lineChart, rooflineChart, colorFor, niceTicks, formatNumber, downsampleMax, PALETTE };
