// datatable.js - helpers for XProf DataTable JSON (Google Visualization
// format):  {"cols":[{"id","label","type","p"?}],
//            "rows":[{"c":[{"v": value, "f"?: "formatted"}|null]}],
//            "p": {key: "string"}}
//
// API (stable):
//   isDataTable(x)            -> true if x has a cols array.
//   columns(dt)               -> [{id, label, type, p}] (type defaults to 'string').
//   colIndex(dt, id)          -> index of column id, or -1.
//   value(dt, rowIndex, id)   -> cell value v (null when absent).
//   values(dt)                -> rows as arrays of v (null for missing cells).
//   formatted(dt)             -> rows as arrays of display strings (f if present).
//   toObjects(dt)             -> rows as objects {colId: v}.
//   column(dt, id)            -> array of v of one column.
//   prop(dt, key, def?)       -> table property p[key] (strings), or def.
//   sumBy(dt, keyId, valueId, pred?) -> [{label, value}] summed per key,
//                                in first-seen order; pred(rowObject) filters.
//   toCSV(dt)                 -> RFC 4180 CSV text (header = labels, values = v).
//   csvField(v)               -> one RFC 4180 field.

export function isDataTable(x) {
  return !!x && typeof x === 'object' && Array.isArray(x.cols);
}

export function columns(dt) {
  if (!isDataTable(dt)) return [];
  return dt.cols.map((c, i) => ({
    id: c && c.id !== undefined && c.id !== '' ? String(c.id) : `col${i}`,
    label: c && c.label !== undefined && c.label !== '' ? String(c.label) : String((c && c.id) || `col${i}`),
    type: (c && c.type) || 'string',
    p: (c && c.p) || {},
  }));
}

export function colIndex(dt, id) {
  return columns(dt).findIndex((c) => c.id === id);
}

function rowCells(r) {
  return r && Array.isArray(r.c) ? r.c : [];
}

function cellValue(cell) {
  if (cell === null || cell === undefined) return null;
  if (typeof cell !== 'object') return cell;
  return cell.v === undefined ? null : cell.v;
}

function cellText(cell) {
  if (cell === null || cell === undefined) return '';
  if (typeof cell !== 'object') return String(cell);
  if (cell.f !== undefined && cell.f !== null) return String(cell.f);
  return cell.v === undefined || cell.v === null ? '' : String(cell.v);
}

export function value(dt, rowIndex, id) {
  const i = colIndex(dt, id);
  const r = dt && dt.rows ? dt.rows[rowIndex] : null;
  if (i < 0 || !r) return null;
  return cellValue(rowCells(r)[i]);
}

export function values(dt) {
  const n = columns(dt).length;
  return ((dt && dt.rows) || []).map((r) => {
    const c = rowCells(r);
    const out = new Array(n);
    for (let i = 0; i < n; i++) out[i] = cellValue(c[i]);
    return out;
  });
}

export function formatted(dt) {
  const n = columns(dt).length;
  return ((dt && dt.rows) || []).map((r) => {
    const c = rowCells(r);
    const out = new Array(n);
    for (let i = 0; i < n; i++) out[i] = cellText(c[i]);
    return out;
  });
}

export function hasFormatted(dt) {
  return ((dt && dt.rows) || []).some((r) => rowCells(r).some(
    (c) => c && typeof c === 'object' && c.f !== undefined && c.f !== null));
}

export function toObjects(dt) {
  const cols = columns(dt);
  return values(dt).map((vals) => {
    const o = {};
    cols.forEach((c, i) => { o[c.id] = vals[i]; });
    return o;
  });
}

export function column(dt, id) {
  const i = colIndex(dt, id);
  if (i < 0) return [];
  return ((dt && dt.rows) || []).map((r) => cellValue(rowCells(r)[i]));
}

export function prop(dt, key, def) {
  const p = dt && dt.p;
  if (p && Object.prototype.hasOwnProperty.call(p, key)) return p[key];
  return def;
}

export function sumBy(dt, keyId, valueId, pred) {
  const m = new Map();
  for (const o of toObjects(dt)) {
    if (pred && !pred(o)) continue;
    const k = o[keyId] === null || o[keyId] === undefined ? '' : String(o[keyId]);
    m.set(k, (m.get(k) || 0) + (Number(o[valueId]) || 0));
  }
  return [...m].map(([label, v]) => ({ label, value: v }));
}

export function csvField(v) {
  if (v === null || v === undefined) return '';
  const s = String(v);
  return /[",\r\n]/.test(s) ? '"' + s.replace(/"/g, '""') + '"' : s;
}

export function toCSV(dt) {
  const cols = columns(dt);
  const lines = [cols.map((c) => csvField(c.label)).join(',')];
  for (const r of values(dt)) lines.push(r.map(csvField).join(','));
  return lines.join('\r\n') + '\r\n';
}
