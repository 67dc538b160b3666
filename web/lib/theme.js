// theme.js - light and dark themes.
//
// The colours live in style.css as CSS variables; a dark set applies when
// the system prefers it (prefers-color-scheme) unless the user chose one
// with the header toggle (kept in localStorage).  Canvas drawings read the
// same variables through palette() and redraw on onThemeChange().

const KEY = 'xpv-theme';
const MODES = ['auto', 'dark', 'light'];
const media = typeof matchMedia === 'function' ? matchMedia('(prefers-color-scheme: dark)') : null;

export function themeMode() {
  let m = null;
  try { m = localStorage.getItem(KEY); } catch (e) { /* storage blocked */ }
  return MODES.includes(m) ? m : 'auto';
}

// Apply `mode` ('auto' follows the system) and tell the drawings.
export function setThemeMode(mode) {
  if (!MODES.includes(mode)) mode = 'auto';
  try { localStorage.setItem(KEY, mode); } catch (e) { /* storage blocked */ }
  applyTheme();
  window.dispatchEvent(new Event('xpv-theme'));
}

// data-theme is always set (dark or light), so style.css needs one dark
// rule; in auto mode it follows the system.
export function applyTheme() {
  document.documentElement.dataset.theme = isDark() ? 'dark' : 'light';
}

if (media) {
  media.addEventListener('change', () => {
    if (themeMode() !== 'auto') return;
    applyTheme();
    window.dispatchEvent(new Event('xpv-theme'));
  });
}

export function isDark() {
  const m = themeMode();
  return m === 'dark' || (m === 'auto' && !!(media && media.matches));
}

// The next mode of the toggle: auto -> dark -> light -> auto.
export function nextMode(m) {
  return MODES[(MODES.indexOf(m) + 1) % MODES.length];
}

// The theme's colours for canvas drawing.
export function palette() {
  const cs = getComputedStyle(document.documentElement);
  const v = (n) => cs.getPropertyValue(n).trim();
  return {
    bg: v('--bg'), panel: v('--panel'), text: v('--text'), muted: v('--muted'),
    border: v('--border'), accent: v('--accent'), surface2: v('--surface-2'),
    axis: v('--axis'), band: v('--band'),
  };
}

// Calls fn whenever the theme changes (toggle or system); stops on `signal`.
export function onThemeChange(fn, signal) {
  window.addEventListener('xpv-theme', fn, { signal });
}

export default { themeMode, setThemeMode, applyTheme, isDark, nextMode, palette, onThemeChange };
