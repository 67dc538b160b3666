// table.js - the one reusable table: sort, filter, pagination, CSV export.
//
// API (stable):
//   const t = createTable(parent, opts);   // appends a <div class="xpv-table">
//   opts:
//     columns: [{id, label, type: 'string'|'number'|'boolean',
//                format(v, row)?,   // display text (default: DataTable f, or
//                                   //   numbers with up to 3 decimals)
//                title?,            // header tooltip
//                align?: 'left'|'right', width?: CSS width,
//                maxWidth?: CSS max-width of the cells (long text is cut
//                           with an ellipsis; the full text is the cell title),
//                filter?: false,    // exclude from the text filter
//                cellClass(v, row)?, // extra CSS class of a cell (colours)
//                csv?: false}]      // exclude from CSV export
//     rows:    [{colId: v, ...}] or [[v, ...]] (arrays follow columns order)
//     data:    an XProf DataTable (instead of columns/rows; "f" cells are
//              used as display text; columns may be overridden per id with
//              opts.columnOverrides {id: {format, label, title, ...}}).
//     hideColumns: [ids] not shown (still filterable/exported unless csv:false)
//     sort:    {id, dir: 'asc'|'desc'} initial sort (default: none = input order)
//     filter:  true (one text box, default) | false
//     columnFilters: false (default) | true: one box per column under the
//              header; number columns accept '>10', '<=5', '=3' or substring.
//     filterColumns: [ids] the global box searches (default: all filterable)
//     filterPlaceholder: string
//     pageSize: 25 (0 = all), pageSizes: [10, 25, 50, 100, 0]
//     csv:     file name for "Export as CSV" (default 'table.csv'); false hides it
//     csvUrl:  optional server URL for the CSV instead of the client Blob
//     onRowClick(row, index), onRowHover(row | null)  // row = {colId: v}
//     rowClass(row) -> extra CSS class, emptyText, caption
//   returned handle:
//     t.element; t.setData(dataTable) / t.setRows(rows[, columns]);
//     t.setFilter(text); t.sortBy(id, dir); t.setPage(n); t.setPageSize(n)
//     t.visibleRows() -> filtered+sorted row objects (all pages);
//     t.toCSV() -> RFC 4180 text of visibleRows (raw values, CRLF);
//     t.destroy().
//   Pure helpers: toCSV(columns, rowObjects), compareValues(a, b, type),
//     parseNumericFilter(text) -> fn(v)|null.

import * as DT from './datatable.js';
import { el as h } from './dom.js';
import * as pagestate from './pagestate.js';

let uid = 0;

export function defaultFormat(v, type) {
  if (v === null || v === undefined) return '';
  if (type === 'number' && typeof v === 'number') {
    if (!Number.isFinite(v)) return String(v);
    if (Number.isInteger(v)) return v.toLocaleString('en-US');
    return v.toLocaleString('en-US', { maximumFractionDigits: 3 });
  }
  if (type === 'boolean') return v ? 'Yes' : 'No';
  return String(v);
}

export function compareValues(a, b, type) {
  const na = a === null || a === undefined || a === '';
  const nb = b === null || b === undefined || b === '';
  if (na || nb) return na === nb ? 0 : na ? 1 : -1;   // empty last
  if (type === 'number') {
    const x = Number(a), y = Number(b);
    if (Number.isNaN(x) || Number.isNaN(y)) return String(a).localeCompare(String(b));
    return x - y;
  }
  if (type === 'boolean') return (a ? 1 : 0) - (b ? 1 : 0);
  return String(a).localeCompare(String(b), undefined, { numeric: true, sensitivity: 'base' });
}

export function parseNumericFilter(text) {
  const m = /^\s*(>=|<=|>|<|=|==)\s*(-?[\d.]+(?:e[-+]?\d+)?)\s*$/i.exec(text || '');
  if (!m) return null;
  const n = Number(m[2]);
  if (Number.isNaN(n)) return null;
  switch (m[1]) {
    case '>': return (v) => Number(v) > n;
    case '<': return (v) => Number(v) < n;
    case '>=': return (v) => Number(v) >= n;
    case '<=': return (v) => Number(v) <= n;
    default: return (v) => Number(v) === n;
  }
}

export function toCSV(columns, rows) {
  const cols = columns.filter((c) => c.csv !== false);
  const out = [cols.map((c) => DT.csvField(c.label || c.id)).join(',')];
  for (const r of rows) out.push(cols.map((c) => DT.csvField(r[c.id])).join(','));
  return out.join('\r\n') + '\r\n';
}

// Normalises rows (objects or arrays) to objects keyed by column id.
function normRows(columns, rows) {
  return (rows || []).map((r) => {
    if (!Array.isArray(r)) return r || {};
    const o = {};
    columns.forEach((c, i) => { o[c.id] = r[i]; });
    return o;
  });
}

export function createTable(parent, opts = {}) {
  const id = `xpv-t${++uid}`;
  const state = {
    columns: [], rows: [], text: [],   // text[i][j]: display text of row i col j
    sort: opts.sort ? { id: opts.sort.id, dir: opts.sort.dir === 'asc' ? 1 : -1 } : null,
    filter: '', colFilters: {}, page: 0,
    pageSize: opts.pageSize === undefined ? 25 : opts.pageSize,
    view: [],                          // indices into rows after filter+sort
  };
  // opts.persist: a key under which sort and filters live in the URL hash
  // (lib/pagestate.js), so a link reopens the table as it was.
  const pkey = opts.persist || null;
  if (pkey) {
    const so = pagestate.get(`${pkey}.sort`);
    if (so) state.sort = { id: so.replace(/^-/, ''), dir: so.startsWith('-') ? -1 : 1 };
    state.filter = pagestate.get(`${pkey}.q`) || '';
    try { state.colFilters = JSON.parse(pagestate.get(`${pkey}.cf`) || '{}') || {}; } catch (e) { /* bad link */ }
  }
  const saveState = () => {
    if (!pkey) return;
    const cf = Object.fromEntries(Object.entries(state.colFilters).filter(([, v]) => v));
    pagestate.set({
      [`${pkey}.sort`]: state.sort ? `${state.sort.dir < 0 ? '-' : ''}${state.sort.id}` : null,
      [`${pkey}.q`]: state.filter || null,
      [`${pkey}.cf`]: Object.keys(cf).length ? JSON.stringify(cf) : null,
    });
  };
  const pageSizes = opts.pageSizes || [10, 25, 50, 100, 0];
  if (!pageSizes.includes(state.pageSize)) pageSizes.push(state.pageSize);
  const hidden = new Set(opts.hideColumns || []);

  const root = h('div', { class: 'xpv-table', id });
  const bar = h('div', { class: 'xpv-table-bar' });
  const filterBox = h('input', {
    type: 'search', class: 'xpv-table-filter',
    placeholder: opts.filterPlaceholder || 'Filter rows',
    'aria-label': opts.filterPlaceholder || 'Filter rows',
  });
  if (opts.filter !== false) bar.append(filterBox);
  filterBox.value = state.filter;
  const count = h('span', { class: 'xpv-table-count', 'aria-live': 'polite' });
  bar.append(count);
  const spacer = h('span', { class: 'xpv-spacer' });
  bar.append(spacer);
  const csvBtn = h('button', { type: 'button', class: 'xpv-btn xpv-table-csv', text: 'Export as CSV' });
  if (opts.csv !== false) bar.append(csvBtn);
  root.append(bar);

  const scroller = h('div', { class: 'xpv-table-scroll' });
  const table = h('table', { class: 'xpv-table-el' });
  if (opts.caption) table.append(h('caption', { text: opts.caption }));
  const thead = h('thead');
  const tbody = h('tbody');
  table.append(thead, tbody);
  scroller.append(table);
  root.append(scroller);

  const pager = h('div', { class: 'xpv-table-pager' });
  const sizeSel = h('select', { 'aria-label': 'Rows per page' });
  for (const n of pageSizes) sizeSel.append(h('option', { value: String(n), text: n ? String(n) : 'All' }));
  sizeSel.value = String(state.pageSize);
  const prev = h('button', { type: 'button', class: 'xpv-btn', 'aria-label': 'Previous page', text: '\u2039 Prev' });
  const next = h('button', { type: 'button', class: 'xpv-btn', 'aria-label': 'Next page', text: 'Next \u203a' });
  const pageInfo = h('span', { class: 'xpv-table-page' });
  pager.append(h('label', { text: 'Rows per page ' }, sizeSel), prev, pageInfo, next);
  root.append(pager);
  parent.append(root);

  function shownColumns() {
    return state.columns.filter((c) => !hidden.has(c.id));
  }

  function cellDisplay(c, j, row, i) {
    if (c.format) {
      try { return String(c.format(row[c.id], row) ?? ''); } catch (e) { return String(row[c.id] ?? ''); }
    }
    const t = state.text[i];
    if (t && t[j] !== undefined) return t[j];
    return defaultFormat(row[c.id], c.type);
  }

  function load(columns, rows, text) {
    state.columns = columns.map((c) => Object.assign({ type: 'string' }, c,
      (opts.columnOverrides || {})[c.id] || {}));
    state.rows = rows;
    state.text = text || [];
    state.page = 0;
    buildHead();
    apply();
  }

  function buildHead() {
    thead.textContent = '';
    const tr = h('tr');
    for (const c of shownColumns()) {
      const btn = h('button', { type: 'button', class: 'xpv-th-btn', title: c.title || `Sort by ${c.label}` },
        h('span', { text: c.label || c.id }), h('span', { class: 'xpv-sort-ind', 'aria-hidden': 'true' }));
      btn.addEventListener('click', () => {
        if (state.sort && state.sort.id === c.id) state.sort.dir = -state.sort.dir;
        else state.sort = { id: c.id, dir: c.type === 'number' ? -1 : 1 };
        state.page = 0;
        saveState();
        apply();
      });
      const th = h('th', { scope: 'col', 'data-col': c.id, class: c.type === 'number' ? 'num' : null }, btn);
      if (c.width) th.style.width = c.width;
      tr.append(th);
    }
    thead.append(tr);
    if (opts.columnFilters) {
      const fr = h('tr', { class: 'xpv-col-filters' });
      for (const c of shownColumns()) {
        const inp = h('input', {
          type: 'search', 'data-col': c.id, 'aria-label': `Filter ${c.label}`,
          placeholder: c.type === 'number' ? '>, <, =' : 'filter',
        });
        inp.value = state.colFilters[c.id] || '';
        inp.addEventListener('input', () => { state.colFilters[c.id] = inp.value; state.page = 0; saveState(); apply(); });
        fr.append(h('th', null, c.filter === false ? null : inp));
      }
      thead.append(fr);
    }
  }

  function matches(i) {
    const row = state.rows[i];
    const q = state.filter.trim().toLowerCase();
    if (q) {
      const ids = opts.filterColumns;
      let hit = false;
      for (let j = 0; j < state.columns.length && !hit; j++) {
        const c = state.columns[j];
        if (c.filter === false || (ids && !ids.includes(c.id))) continue;
        const raw = row[c.id];
        if (raw !== null && raw !== undefined && String(raw).toLowerCase().includes(q)) hit = true;
        else if (cellDisplay(c, j, row, i).toLowerCase().includes(q)) hit = true;
      }
      if (!hit) return false;
    }
    for (const [cid, txt] of Object.entries(state.colFilters)) {
      if (!txt || !txt.trim()) continue;
      const j = state.columns.findIndex((c) => c.id === cid);
      if (j < 0) continue;
      const c = state.columns[j];
      const fn = c.type === 'number' ? parseNumericFilter(txt) : null;
      if (fn) { if (!fn(row[cid])) return false; continue; }
      const t = txt.trim().toLowerCase();
      if (!String(row[cid] ?? '').toLowerCase().includes(t) &&
          !cellDisplay(c, j, row, i).toLowerCase().includes(t)) return false;
    }
    return true;
  }

  function apply() {
    const idx = [];
    for (let i = 0; i < state.rows.length; i++) if (matches(i)) idx.push(i);
    if (state.sort) {
      const c = state.columns.find((x) => x.id === state.sort.id);
      if (c) {
        const dir = state.sort.dir;
        idx.sort((a, b) => compareValues(state.rows[a][c.id], state.rows[b][c.id], c.type) * dir || a - b);
      }
    }
    state.view = idx;
    const pages = state.pageSize ? Math.max(1, Math.ceil(idx.length / state.pageSize)) : 1;
    if (state.page >= pages) state.page = pages - 1;
    drawBody(pages);
  }

  function drawBody(pages) {
    for (const th of thead.querySelectorAll('tr:first-child th')) {
      const cid = th.getAttribute('data-col');
      const ind = th.querySelector('.xpv-sort-ind');
      const on = state.sort && state.sort.id === cid;
      th.setAttribute('aria-sort', on ? (state.sort.dir > 0 ? 'ascending' : 'descending') : 'none');
      ind.textContent = on ? (state.sort.dir > 0 ? ' \u25b2' : ' \u25bc') : '';
    }
    tbody.textContent = '';
    const cols = shownColumns();
    const start = state.pageSize ? state.page * state.pageSize : 0;
    const end = state.pageSize ? Math.min(state.view.length, start + state.pageSize) : state.view.length;
    const frag = document.createDocumentFragment();
    if (!state.view.length) {
      frag.append(h('tr', { class: 'xpv-empty' }, h('td', {
        colspan: String(Math.max(1, cols.length)),
        text: state.rows.length ? 'No rows match the filter.' : (opts.emptyText || 'No data.'),
      })));
    }
    for (let k = start; k < end; k++) {
      const i = state.view[k];
      const row = state.rows[i];
      const tr = h('tr', { 'data-index': String(i) });
      if (opts.rowClass) { const rc = opts.rowClass(row); if (rc) tr.className = rc; }
      if (opts.onRowClick) { tr.tabIndex = 0; tr.classList.add('xpv-clickable'); }
      for (const c of cols) {
        const j = state.columns.indexOf(c);
        const txt = cellDisplay(c, j, row, i);
        const td = h('td', { class: c.type === 'number' ? 'num' : null, 'data-col': c.id, text: txt });
        if (c.cellClass) {
          const cc = c.cellClass(row[c.id], row);
          if (cc) td.classList.add(cc);
        }
        if (txt.length > 40) td.title = txt;
        if (c.maxWidth) td.style.maxWidth = c.maxWidth;
        tr.append(td);
      }
      frag.append(tr);
    }
    tbody.append(frag);
    const total = state.rows.length;
    const n = state.view.length;
    count.textContent = n === total ? `${total.toLocaleString('en-US')} rows`
      : `${n.toLocaleString('en-US')} of ${total.toLocaleString('en-US')} rows`;
    pageInfo.textContent = n ? `${start + 1}\u2013${end} of ${n.toLocaleString('en-US')} \u00b7 page ${state.page + 1}/${pages}` : '';
    prev.disabled = state.page <= 0;
    next.disabled = state.page >= pages - 1;
    pager.hidden = n <= Math.min(...pageSizes.filter((x) => x > 0));
  }

  function rowFromEvent(ev) {
    const tr = ev.target.closest && ev.target.closest('tr[data-index]');
    if (!tr || !tbody.contains(tr)) return null;
    const i = Number(tr.getAttribute('data-index'));
    return { row: state.rows[i], index: i };
  }

  let filterTimer = 0;
  filterBox.addEventListener('input', () => {
    clearTimeout(filterTimer);
    filterTimer = setTimeout(() => { state.filter = filterBox.value; state.page = 0; saveState(); apply(); },
      state.rows.length > 5000 ? 150 : 0);
  });
  sizeSel.addEventListener('change', () => { state.pageSize = Number(sizeSel.value); state.page = 0; apply(); });
  prev.addEventListener('click', () => { state.page--; apply(); });
  next.addEventListener('click', () => { state.page++; apply(); });
  csvBtn.addEventListener('click', () => {
    if (opts.csvUrl) {
      const a = h('a', { href: opts.csvUrl, download: opts.csv || '' });
      document.body.append(a); a.click(); a.remove();
      return;
    }
    const blob = new Blob([handle.toCSV()], { type: 'text/csv;charset=utf-8' });
    const href = URL.createObjectURL(blob);
    const a = h('a', { href, download: typeof opts.csv === 'string' ? opts.csv : 'table.csv' });
    document.body.append(a); a.click(); a.remove();
    setTimeout(() => URL.revokeObjectURL(href), 10000);
  });
  if (opts.onRowClick) {
    tbody.addEventListener('click', (ev) => { const r = rowFromEvent(ev); if (r) opts.onRowClick(r.row, r.index); });
    tbody.addEventListener('keydown', (ev) => {
      if (ev.key !== 'Enter' && ev.key !== ' ') return;
      const r = rowFromEvent(ev);
      if (r) { ev.preventDefault(); opts.onRowClick(r.row, r.index); }
    });
  }
  if (opts.onRowHover) {
    let last = null;
    tbody.addEventListener('mouseover', (ev) => {
      const r = rowFromEvent(ev);
      if (r && r.row !== last) { last = r.row; opts.onRowHover(r.row, r.index); }
    });
    tbody.addEventListener('mouseleave', () => { last = null; opts.onRowHover(null); });
  }

  const handle = {
    element: root,
    setData(dt) {
      const cols = DT.columns(dt);
      load(cols, DT.toObjects(dt), DT.hasFormatted(dt) ? DT.formatted(dt) : null);
    },
    setRows(rows, columns) {
      const cols = columns || state.columns;
      load(cols, normRows(cols, rows), null);
    },
    setFilter(text) { filterBox.value = text; state.filter = text; state.page = 0; apply(); },
    sortBy(cid, dir) { state.sort = cid ? { id: cid, dir: dir === 'asc' ? 1 : -1 } : null; apply(); },
    setPage(n) { state.page = Math.max(0, n | 0); apply(); },
    setPageSize(n) { state.pageSize = n; sizeSel.value = String(n); state.page = 0; apply(); },
    visibleRows() { return state.view.map((i) => state.rows[i]); },
    toCSV() { return toCSV(state.columns, handle.visibleRows()); },
    destroy() { root.remove(); },
  };

  if (opts.data) handle.setData(opts.data);
  else load(opts.columns || [], normRows(opts.columns || [], opts.rows), null);
  return handle;
}

export default createTable;
