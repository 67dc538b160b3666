// app.js - the dashboard shell.
//
// Owns the run / tool / host selectors, the URL hash (#run=R&tool=T&host=H,
// one history entry per user choice, so the back button works), the loading
// indicator, the error box and the "About this profile" panel.  A tool page
// is the module web/tools/<tool>.js; its default export is called as
// render(root, ctx) with ctx = {run, tool, host, api, signal, hosts, runs,
// navigate}; see web/tools/README.md.  Every URL here is relative.

import * as api from './lib/api.js';
import { createTable } from './lib/table.js';
import { el as h } from './lib/dom.js';
import { formatBytes } from './lib/format.js';
import * as theme from './lib/theme.js';
import * as pagestate from './lib/pagestate.js';
import { openCaptureDialog } from './lib/capture.js';

// Tool names as XProf's frontend shows them.
const TOOL_LABELS = {
  overview_page: 'Overview Page',
  input_pipeline_analyzer: 'Input Pipeline Analysis',
  input_pipeline: 'Input Pipeline Analysis',
  framework_op_stats: 'Framework Op Stats (TensorFlow Stats)',
  tensorflow_stats: 'TensorFlow Stats',
  kernel_stats: 'Kernel Stats',
  trace_viewer: 'Trace Viewer',
  'trace_viewer@': 'Trace Viewer',
  memory_profile: 'Memory Profile',
  pod_viewer: 'Pod Viewer',
  tf_data_bottleneck_analysis: 'tf.data Bottleneck Analysis',
  op_profile: 'HLO Op Profile',
  hlo_op_profile: 'HLO Op Profile',
  memory_viewer: 'Memory Viewer',
  graph_viewer: 'Graph Viewer',
  hlo_stats: 'HLO Op Stats',
  hlo_op_stats: 'HLO Op Stats',
  roofline_model: 'Roofline Model',
  inference_profile: 'Inference Profile',
  megascale_stats: 'Megascale Viewer',
  perf_counters: 'Perf Counters',
  utilization_viewer: 'Utilization Viewer',
};

// Old or suffixed tool names served by the same page module.
const MODULE_ALIASES = {
  tensorflow_stats: 'framework_op_stats',
  input_pipeline: 'input_pipeline_analyzer',
  hlo_op_profile: 'op_profile',
  hlo_op_stats: 'hlo_stats',
};

const ALL_HOSTS = 'ALL_HOSTS';

export function toolLabel(tool) {
  const base = String(tool).replace(/\^$/, '');
  if (TOOL_LABELS[base]) return TOOL_LABELS[base];
  const t = base.replace(/[@^]$/, '').replace(/_/g, ' ');
  return t.charAt(0).toUpperCase() + t.slice(1);
}

export function toolModule(tool) {
  const base = String(tool).replace(/[@^]+$/, '');
  const m = MODULE_ALIASES[base] || base;
  return /^[A-Za-z0-9_]+$/.test(m) ? m : null;
}

const $ = (id) => document.getElementById(id);
const ui = {};

// ---- URL hash ----------------------------------------------------------------

function parseHash() {
  const raw = location.hash.replace(/^#/, '');
  if (!raw.includes('=')) return {};
  const q = new URLSearchParams(raw);
  const out = {};
  for (const k of ['run', 'tool', 'host']) if (q.get(k)) out[k] = q.get(k);
  // The rest belongs to the page (lib/pagestate.js).
  for (const k of ['run', 'tool', 'host']) q.delete(k);
  out.extra = q.toString();
  return out;
}

function hashFor(sel) {
  const q = new URLSearchParams();
  for (const k of ['run', 'tool', 'host']) if (sel[k]) q.set(k, sel[k]);
  return '#' + q.toString();
}

// ---- error box, loading --------------------------------------------------------

function showError(err, context) {
  const box = ui.error;
  box.textContent = '';
  const msg = err && err.message ? err.message : String(err);
  const body = h('div', { class: 'xpv-error-body' },
    h('strong', { text: context ? `${context}: ` : 'Error: ' }),
    h('span', { class: 'xpv-error-msg', text: msg }));
  box.append(body);
  const details = [];
  if (err && err.file) details.push(`file: ${err.file}`);
  if (err && err.offset !== undefined && err.offset !== null) details.push(`byte offset: ${err.offset}`);
  if (err && err.status) details.push(`HTTP ${err.status}`);
  if (details.length) box.append(h('div', { class: 'xpv-error-details', text: details.join(' \u00b7 ') }));
  box.append(h('button', { type: 'button', class: 'xpv-btn xpv-error-close', 'aria-label': 'Dismiss error',
    text: '\u00d7', onclick: clearError }));
  box.hidden = false;
}

function clearError() {
  ui.error.hidden = true;
  ui.error.textContent = '';
}

let busy = 0;   // page module imports and renders in flight
let net = 0;    // API requests in flight (api.onActivity)
function updateBusy() {
  const on = busy > 0 || net > 0;
  ui.loading.hidden = !on;
  ui.progress.hidden = !on;
  ui.page.setAttribute('aria-busy', on ? 'true' : 'false');
}

function setBusy(delta) {
  busy = Math.max(0, busy + delta);
  updateBusy();
}

// ---- selectors -------------------------------------------------------------------

function fillSelect(sel, values, current, label = (v) => v, placeholder) {
  sel.textContent = '';
  if (placeholder) sel.append(h('option', { value: '', text: placeholder }));
  for (const v of values) sel.append(h('option', { value: v, text: label(v), title: v }));
  sel.value = values.includes(current) ? current : '';
  sel.disabled = values.length === 0;
}

const state = {
  runs: null, tools: [], hosts: [],
  sel: {},            // resolved {run, tool, host}
  rendered: '',       // hash of the page currently rendered
  gen: 0,             // bumps on each sync; stale async work checks it
  pageAbort: null,
};

async function sync(force = false) {
  const gen = ++state.gen;
  const want = parseHash();
  const stale = () => gen !== state.gen;
  try {
    if (!state.runs || force || (want.run && !state.runs.includes(want.run))) {
      state.runs = await api.json('runs');
      if (stale()) return;
    }
    const runs = Array.isArray(state.runs) ? state.runs.map(String) : [];
    ui.runCount.textContent = `${runs.length} runs`;
    if (!runs.length) {
      fillSelect(ui.run, [], '');
      fillSelect(ui.tool, [], '');
      fillSelect(ui.host, [], '');
      ui.aboutBtn.disabled = true;
      showPage(h('div', { class: 'xpv-empty-state' },
        h('h2', { text: 'No profile runs found' }),
        h('p', { text: 'The log directory has no plugins/profile/<run>/<host>.xplane.pb files yet. ' +
          'Capture a profile (e.g. tf.profiler or jax.profiler) into the log directory, then press reload.' })));
      state.rendered = '';
      return;
    }
    const run = want.run || runs[0];
    fillSelect(ui.run, runs, run, undefined, runs.includes(run) ? null : '\u2014 choose a run \u2014');
    if (run !== state.sel.run) {
      // The old run's tools and hosts no longer apply.
      fillSelect(ui.tool, [], '');
      fillSelect(ui.host, [], '');
      ui.aboutBtn.disabled = true;
      state.sel = {};
    }
    // An unknown run still asks the server, so the user sees its message.
    const tools = (await api.json('run_tools', { run })).map(String);
    if (stale()) return;
    state.tools = tools;
    if (!tools.length) throw new Error(`Run "${run}" has no tools (no readable .xplane.pb file?)`);
    const tool = tools.includes(want.tool) ? want.tool
      : tools.includes('overview_page') ? 'overview_page' : tools[0];
    // A link to a tool this run lacks: say so on the page instead of
    // silently showing another one.
    state.missingTool = want.tool && toolModule(want.tool) !== toolModule(tool) ? want.tool : '';
    fillSelect(ui.tool, tools, tool, toolLabel);
    const hosts = (await api.json('hosts', { run, tag: tool })).map((x) => String(x && x.hostname !== undefined ? x.hostname : x));
    if (stale()) return;
    state.hosts = hosts;
    if (!hosts.length) throw new Error(`Run "${run}" has no hosts for ${toolLabel(tool)}`);
    const host = hosts.includes(want.host) ? want.host : hosts[0];
    fillSelect(ui.host, hosts, host, (v) => (v === ALL_HOSTS ? 'ALL_HOSTS (all hosts)' : v));
    const sel = { run, tool, host };
    state.sel = sel;
    const hash = hashFor(sel);
    // The page's own keys survive only while the selection is the linked one.
    const same = want.run === run && want.tool === tool && (!want.host || want.host === host);
    const extra = same && want.extra ? want.extra : '';
    const full = extra ? `${hash}&${extra}` : hash;
    if (full !== location.hash) history.replaceState(null, '', full);
    state.extra = extra;
    ui.aboutBtn.disabled = false;
    clearError();
    document.title = `${toolLabel(tool)} \u00b7 ${run} \u00b7 xpview`;
    if (!ui.about.hidden) loadAbout();
    if (force || state.rendered !== hash) {
      state.rendered = hash;
      await renderPage(sel, gen);
    }
  } catch (e) {
    if (stale() || (e && e.name === 'AbortError')) return;
    state.rendered = '';
    if (state.pageAbort) state.pageAbort.abort();
    showPage(h('div', { class: 'xpv-empty-state' },
      h('p', { text: 'Nothing to show for this selection. Pick another run, tool or host above.' })));
    showError(e, want.run && state.runs && !state.runs.includes(want.run)
      ? `Run "${want.run}" could not be opened` : 'Could not load the selection');
  }
}

// "This run has no X": why, and the tools it does have, as links.
function missingToolNotice(tool, sel) {
  const box = h('div', { class: 'xpv-card xpv-missing-tool', role: 'status' },
    h('strong', { text: `Run "${sel.run}" has no ${toolLabel(tool)} (${tool}). ` }),
    `Showing ${toolLabel(sel.tool)} instead. This run offers: `);
  state.tools.forEach((t, i) => {
    if (i) box.append(', ');
    box.append(h('a', { href: hashFor({ run: sel.run, tool: t }), 'data-tool': t, text: toolLabel(t) }));
  });
  box.append('.');
  return box;
}

function showPage(node) {
  ui.page.textContent = '';
  ui.page.append(node);
}

async function renderPage(sel, gen) {
  if (state.pageAbort) state.pageAbort.abort();
  const ctl = new AbortController();
  state.pageAbort = ctl;
  const stale = () => gen !== state.gen || ctl.signal.aborted;
  pagestate.bind(state.extra || '', (q) => {
    if (gen !== state.gen) return;
    const qs = q.toString();
    state.extra = qs;
    history.replaceState(null, '', qs ? `${hashFor(sel)}&${qs}` : hashFor(sel));
  });
  const root = h('div', { class: 'xpv-tool-root', 'data-tool': sel.tool });
  root.append(h('p', { class: 'xpv-placeholder', text: `Loading ${toolLabel(sel.tool)}\u2026` }));
  showPage(root);
  if (state.missingTool) ui.page.prepend(missingToolNotice(state.missingTool, sel));
  const mod = toolModule(sel.tool);
  let m = null;
  setBusy(1);
  try {
    if (mod) m = await import(`./tools/${mod}.js`);
  } catch (e) {
    if (stale()) return;
    const missing = /fetch|failed to load|importing a module/i.test(String(e && e.message));
    root.textContent = '';
    root.append(h('div', { class: 'xpv-empty-state' },
      h('h2', { text: toolLabel(sel.tool) }),
      h('p', { class: 'xpv-no-page', text: missing
        ? `This build has no page for the tool "${sel.tool}" yet. Its data is still available as JSON: `
        : `The page for "${sel.tool}" failed to load (${e.message}). The data is available as JSON: ` },
      h('a', { href: api.url('data', { run: sel.run, tag: sel.tool, host: sel.host }), text: 'raw data' }))));
    return;
  } finally {
    setBusy(-1);
  }
  if (stale()) return;
  if (!m || typeof m.default !== 'function') {
    root.textContent = '';
    root.append(h('p', { class: 'xpv-no-page', text: `No page for the tool "${sel.tool}".` }));
    return;
  }
  const ctx = {
    run: sel.run, tool: sel.tool, host: sel.host,
    hosts: state.hosts.slice(), runs: state.runs.slice(), tools: state.tools.slice(),
    signal: ctl.signal,
    api: {
      url: api.url,
      json: (route, params, o) => api.json(route, params, Object.assign({ signal: ctl.signal }, o)),
      text: (route, params, o) => api.text(route, params, Object.assign({ signal: ctl.signal }, o)),
    },
    // `page`: the target page's own state (lib/pagestate.js keys), e.g. a
    // table filter: {'hlo.q': 'fusion.3'}.
    navigate: (to, page) => {
      const extra = page ? new URLSearchParams(page).toString() : '';
      location.hash = hashFor(Object.assign({}, state.sel, to)) + (extra ? `&${extra}` : '');
    },
  };
  setBusy(1);
  try {
    await m.default(root, ctx);
    if (!stale() && root.querySelector('.xpv-placeholder')) {
      const p = root.querySelector('.xpv-placeholder');
      if (root.childNodes.length > 1) p.remove();
    }
  } catch (e) {
    if (stale() || (e && e.name === 'AbortError')) return;
    const p = root.querySelector('.xpv-placeholder');
    if (p) p.remove();
    showError(e, `${toolLabel(sel.tool)} could not be shown`);
  } finally {
    setBusy(-1);
  }
}

// ---- about panel -----------------------------------------------------------------

let aboutGen = 0;
let aboutHost = null;

async function loadAbout() {
  const gen = ++aboutGen;
  const { run } = state.sel;
  const panel = ui.about;
  panel.setAttribute('aria-busy', 'true');
  const head = h('div', { class: 'xpv-about-head' },
    h('h2', { text: 'About this profile' }),
    h('button', { type: 'button', class: 'xpv-btn xpv-btn-icon', 'aria-label': 'Close', text: '\u00d7',
      onclick: () => toggleAbout(false) }));
  try {
    const hosts = (await api.json('hosts', { run })).map((x) => String(x.hostname)).filter((x) => x !== ALL_HOSTS);
    if (gen !== aboutGen) return;
    let host = state.sel.host !== ALL_HOSTS && hosts.includes(state.sel.host) ? state.sel.host
      : hosts.includes(aboutHost) ? aboutHost : hosts[0];
    aboutHost = host;
    const info = await api.json('profile_info', { run, host });
    if (gen !== aboutGen) return;
    panel.textContent = '';
    panel.append(head);
    if (hosts.length > 1) {
      const hs = h('select', { 'aria-label': 'Host file', id: 'xpv-about-host' });
      fillSelect(hs, hosts, host);
      hs.addEventListener('change', () => { aboutHost = hs.value; loadAboutFor(hs.value); });
      panel.append(h('label', { class: 'xpv-field xpv-about-hostsel' }, h('span', { text: 'Host file' }), hs));
    }
    panel.append(aboutBody(run, info));
  } catch (e) {
    if (gen !== aboutGen) return;
    panel.textContent = '';
    panel.append(head, h('p', { class: 'xpv-about-error', text: `Profile information unavailable: ${e.message}` +
      (e.file ? ` (file ${e.file}${e.offset !== undefined ? `, byte offset ${e.offset}` : ''})` : '') }));
  } finally {
    if (gen === aboutGen) panel.setAttribute('aria-busy', 'false');
  }

  async function loadAboutFor(hostName) {
    const g = ++aboutGen;
    try {
      const info = await api.json('profile_info', { run, host: hostName });
      if (g !== aboutGen) return;
      const old = panel.querySelector('.xpv-about-body');
      if (old) old.replaceWith(aboutBody(run, info));
    } catch (e) {
      if (g === aboutGen) showError(e, 'Profile information unavailable');
    }
  }
}

function aboutBody(run, info) {
  const body = h('div', { class: 'xpv-about-body' });
  const dl = h('dl', { class: 'xpv-kv' });
  const kv = (k, v) => { if (v !== undefined && v !== null && v !== '') dl.append(h('dt', { text: k }), h('dd', { text: String(v) })); };
  kv('Run', run);
  kv('Host', info.host);
  kv('File', info.file);
  kv('File size', info.size !== undefined ? `${formatBytes(info.size)} (${Number(info.size).toLocaleString('en-US')} bytes)` : '');
  if (info.memory) kv('Memory used', formatBytes(info.memory));
  kv('Planes', (info.planes || []).length);
  kv('Events', info.events !== undefined ? Number(info.events).toLocaleString('en-US') : '');
  kv('Hostnames', (info.hostnames || []).join(', ') || 'none recorded');
  body.append(dl);
  const msgs = (title, list, cls) => {
    const sec = h('div', { class: `xpv-about-msgs ${cls}` }, h('h3', { text: `${title} (${(list || []).length})` }));
    if (list && list.length) {
      const ul = h('ul');
      for (const m of list) ul.append(h('li', { text: String(m) }));
      sec.append(ul);
    } else sec.append(h('p', { class: 'xpv-muted', text: 'None.' }));
    return sec;
  };
  body.append(msgs('Errors', info.errors, 'xpv-msgs-error'), msgs('Warnings', info.warnings, 'xpv-msgs-warn'));
  body.append(h('h3', { text: 'Planes' }));
  const tbox = h('div', { class: 'xpv-about-planes' });
  body.append(tbox);
  createTable(tbox, {
    columns: [
      { id: 'id', label: 'ID', type: 'number' },
      { id: 'name', label: 'Plane', type: 'string' },
      { id: 'lines', label: 'Lines', type: 'number' },
      { id: 'events', label: 'Events', type: 'number' },
      { id: 'event_metadata', label: 'Event metadata', type: 'number' },
      { id: 'stats', label: 'Stat metadata', type: 'number' },
    ],
    rows: info.planes || [],
    pageSize: 25,
    csv: `planes_${run.replace(/[^\w.-]+/g, '_')}_${String(info.host).replace(/[^\w.-]+/g, '_')}.csv`,
    filterPlaceholder: 'Filter planes',
  });
  return body;
}

function toggleAbout(open) {
  const show = open === undefined ? ui.about.hidden : open;
  ui.about.hidden = !show;
  ui.aboutBtn.setAttribute('aria-expanded', show ? 'true' : 'false');
  if (show) {
    ui.about.textContent = '';
    ui.about.append(h('p', { class: 'xpv-placeholder', text: 'Loading profile information\u2026' }));
    loadAbout();
  } else {
    aboutGen++;
    ui.aboutBtn.focus();
  }
}

// ---- theme -------------------------------------------------------------------------

const THEME_LABEL = { auto: '\u25d0 Auto', dark: '\u263e Dark', light: '\u2600 Light' };

// The header toggle: auto (the system's preference) -> dark -> light.
function wireTheme(btn) {
  const show = () => {
    const m = theme.themeMode();
    btn.textContent = THEME_LABEL[m];
    btn.title = `Theme: ${m} (click for ${theme.nextMode(m)})`;
    btn.dataset.mode = m;
  };
  btn.addEventListener('click', () => { theme.setThemeMode(theme.nextMode(theme.themeMode())); show(); });
  show();
}

// ---- wiring --------------------------------------------------------------------------

function init() {
  ui.run = $('xpv-run');
  ui.tool = $('xpv-tool');
  ui.host = $('xpv-host');
  ui.aboutBtn = $('xpv-about-btn');
  ui.about = $('xpv-about');
  ui.error = $('xpv-error');
  ui.loading = $('xpv-loading');
  ui.progress = $('xpv-progress');
  ui.page = $('xpv-page');
  ui.runCount = $('xpv-run-count');
  api.onActivity((n) => { net = n; updateBusy(); });

  // Each user choice is one history entry; a new run keeps the tool if it can.
  ui.run.addEventListener('change', () => {
    if (ui.run.value) location.hash = hashFor({ run: ui.run.value, tool: state.sel.tool });
  });
  ui.tool.addEventListener('change', () => {
    location.hash = hashFor({ run: state.sel.run, tool: ui.tool.value, host: state.sel.host });
  });
  ui.host.addEventListener('change', () => {
    location.hash = hashFor({ run: state.sel.run, tool: state.sel.tool, host: ui.host.value });
  });
  ui.aboutBtn.addEventListener('click', () => toggleAbout());
  $('xpv-reload').addEventListener('click', () => { state.runs = null; sync(true); });
  wireTheme($('xpv-theme'));
  $('xpv-capture-btn').addEventListener('click', () => openCaptureDialog({
    // A captured run: list it and open it.
    onDone: (run) => { state.runs = null; location.hash = hashFor({ run, tool: state.sel.tool }); },
  }));
  document.querySelector('.xpv-skip').addEventListener('click', (ev) => {
    ev.preventDefault();
    ui.page.focus();
  });
  document.addEventListener('keydown', (ev) => {
    if (ev.key === 'Escape' && !ui.about.hidden) toggleAbout(false);
  });
  window.addEventListener('hashchange', () => sync());
  sync();
}

theme.applyTheme();   // before the first paint of a page
if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', init);
else init();
