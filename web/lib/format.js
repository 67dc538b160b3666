// format.js - number, duration and size formatting shared by every page.

// Fixed decimals ("12.35"); non-numbers as they are.
export function fmt(v, digits = 2) {
  const n = Number(v);
  return Number.isFinite(n) ? n.toFixed(digits) : String(v);
}

// Compact numbers for axes and cards: 1.2k, 3.4M, 0.00123.
export function formatNumber(v) {
  if (v === null || v === undefined || Number.isNaN(v)) return '';
  const a = Math.abs(v);
  if (a >= 1e12) return (v / 1e12).toFixed(a >= 1e13 ? 0 : 1).replace(/\.0$/, '') + 'T';
  if (a >= 1e9) return (v / 1e9).toFixed(a >= 1e10 ? 0 : 1).replace(/\.0$/, '') + 'G';
  if (a >= 1e6) return (v / 1e6).toFixed(a >= 1e7 ? 0 : 1).replace(/\.0$/, '') + 'M';
  if (a >= 1e4) return (v / 1e3).toFixed(a >= 1e5 ? 0 : 1).replace(/\.0$/, '') + 'k';
  if (a >= 100 || Number.isInteger(v)) return String(Math.round(v));
  if (a >= 1) return String(+v.toFixed(2));
  return String(+v.toPrecision(3));
}

// A fraction (0..1) as a percentage with one decimal: "12.3%".
export function pct(f, digits = 1) {
  return `${(Number(f) * 100).toFixed(digits)}%`;
}

// Bytes in binary units, XProf's humanReadableText: "5.78 GiB" (`digits`
// decimals past bytes).
export function formatBytes(bytes, digits = 2) {
  const b = Number(bytes) || 0;
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = Math.abs(b), u = 0;
  while (v >= 1024 && u < units.length - 1) { v /= 1024; u++; }
  return `${(b < 0 ? -v : v).toFixed(u ? digits : 0)} ${units[u]}`;
}

// A duration in microseconds in the unit that reads best: "1.5 ms".
export function fmtDur(us) {
  const a = Math.abs(us);
  if (a === 0) return '0';
  if (a < 1) return `${+(us * 1000).toFixed(3)} ns`;
  if (a < 1000) return `${+us.toFixed(3)} \u00b5s`;
  if (a < 1e6) return `${+(us / 1000).toFixed(3)} ms`;
  return `${+(us / 1e6).toFixed(3)} s`;
}

// Microseconds with thousands separators and up to 3 decimals: "1,234.5 us".
export function fmtUs(v) {
  const n = Number(v) || 0;
  return `${n.toLocaleString('en-US', { maximumFractionDigits: 3 })} us`;
}

export default { fmt, formatNumber, pct, formatBytes, fmtDur, fmtUs };
