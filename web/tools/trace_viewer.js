// trace_viewer.js - the trace viewer page: the Canvas 2D timeline of
// lib/timeline.js fed by the streaming route (level of detail on the server,
// tools/trace_viewer.c), with its toolbar, search, details and selection.
//
// Data: `data?tag=trace_viewer@&start_time_ms&end_time_ms&resolution` ->
// {fullTimespan:[ms,ms], window, resolutionPs, steps:[[ts,dur,name]],
//  traceEvents:[M..., X {pid,tid,ts,dur,name,args:{uid}}, C...]} (µs);
// the page asks for it with `format=columns`: the same events, the
// complete ones as columns with a name table (3x fewer bytes, far less to
// parse and ingest; lib/timeline.js reads both);
// `unique_id=N` -> one event with all its args; `search=TEXT` (substring of
// names and args, case-insensitive; `search_prefix=P` also works) ->
// matching events in time order + totalMatches.  The full trace for
// Perfetto / chrome://tracing is `tag=trace_viewer` (download button).
//
// Layout: one collapsible section per process, one track per thread (one
// lane per nesting depth), counter tracks as step charts, a time axis
// relative to the trace start with step markers.  Controls (as XProf v2
// and Perfetto): the wheel scrolls the tracks, Ctrl/Cmd+wheel or W/S zoom
// around the mouse, Shift+wheel or A/D pan; modes 1-4 (select: a box
// summarises its events with occurrences, wall, self and average time;
// pan; zoom to a dragged range; timing), Shift+drag always measures a
// range; click selects an event (details pane with all args), Ctrl/Cmd+
// click builds a multi-selection; F zooms to the selection, M marks its
// time range, ? lists the keys; search box with previous/next; flow
// arrows with an on/off toggle and a category filter.  The page fetches the
// viewport plus a 1/8 margin each side at about one event per 2 px (at
// once after a key press, 50 ms after wheel gestures and key repeats), keeps
// drawing what it has while a fetch is in flight, and refetches only when
// the view leaves that window or zooms in past its resolution; while the
// user zooms in at one point, the window that zooming on will need next is
// asked for ahead.

import { el } from '../lib/dom.js';
import { palette, onThemeChange } from '../lib/theme.js';
import * as pagestate from '../lib/pagestate.js';
import { fmtDur } from '../lib/format.js';
import { createTimeline, LABEL_W, AXIS_H, LANE_H } from '../lib/timeline.js';
export default async function render(root, ctx) {
  // Hosts shown: the selected one, or several picked in the Hosts menu
  // (`hosts=a,b`: XProf's multi-host trace, pids offset by 1000 per host).
  const allHosts = (ctx.hosts || []).filter((h) => h !== 'ALL_HOSTS');
  // Deep links (lib/pagestate.js): tv.t0/tv.t1 view (µs), tv.hosts, tv.col
  // (collapsed pids), tv.sel/tv.selts (selected event uid and start).
  const linkedHosts = (pagestate.get('tv.hosts') || '').split(',').filter((h) => allHosts.includes(h));
  let chosen = linkedHosts.length ? linkedHosts : [ctx.host];
  const baseFor = (hs) => (hs.length > 1 ? { run: ctx.run, hosts: hs.join(',') } : { run: ctx.run, host: hs[0] });
  let base = baseFor(chosen);
  const api = (extra, signal) => ctx.api.json('data', Object.assign({ tag: 'trace_viewer@' }, base, extra),
    signal ? { signal } : undefined);

  // ---- DOM --------------------------------------------------------------------
  root.textContent = '';
  const head = el('div', 'xpv-trace-toolbar');
  head.style.cssText = 'display:flex;flex-wrap:wrap;gap:8px;align-items:center;margin:4px 0 8px';
  const title = el('h2', null, 'Trace Viewer');
  title.style.margin = '0 12px 0 0';
  const search = el('input', 'xpv-trace-search');
  search.type = 'search';
  search.placeholder = 'Search names and args (Enter)';
  search.setAttribute('aria-label', 'Search events by name');
  search.style.minWidth = '240px';
  const prev = el('button', 'xpv-btn xpv-trace-prev', '\u25c0 Prev');
  const next = el('button', 'xpv-btn xpv-trace-next', 'Next \u25b6');
  prev.disabled = next.disabled = true;
  const matchInfo = el('span', 'xpv-muted xpv-trace-matches', '');
  const dl = el('a', 'xpv-btn xpv-trace-download', 'Download trace JSON');
  const setDownload = () => {
    dl.href = ctx.api.url('data', Object.assign({ tag: 'trace_viewer' }, base));
    dl.download = `trace_${chosen.length > 1 ? `${chosen.length}_hosts` : String(chosen[0] || 'host')
      .replace(/[^\w.-]+/g, '_')}.json`;
  };
  setDownload();
  dl.title = 'The full trace (every event, all args) as Chrome trace-event JSON, for Perfetto UI or chrome://tracing';
  const fit = el('button', 'xpv-btn xpv-trace-fit', 'Fit');
  // Tool modes (keys 1-4), as XProf's and Perfetto's trace viewers have.
  const MODES = [['select', '1', 'Select: drag a box to summarise the events in it'],
    ['pan', '2', 'Pan: drag to move along the time axis'],
    ['zoom', '3', 'Zoom: drag a time range to zoom to it, click to zoom in'],
    ['timing', '4', 'Timing: drag to measure a time range']];
  const modeBar = el('div', { class: 'xpv-trace-modes', role: 'toolbar', 'aria-label': 'Mouse mode' });
  const modeBtns = new Map();
  for (const [m, key, tip] of MODES) {
    const b = el('button', { class: 'xpv-btn xpv-trace-mode', 'data-mode': m, title: `${tip} (${key})`,
      'aria-pressed': 'false' }, `${key} ${m[0].toUpperCase()}${m.slice(1)}`);
    b.addEventListener('click', () => setMode(m));
    modeBtns.set(m, b);
    modeBar.append(b);
  }
  const flowsLab = el('label', { class: 'xpv-trace-flows-toggle', title: 'Show flow arrows (launch -> kernel, producer -> consumer)' });
  const flowsBox = el('input', { type: 'checkbox', checked: true });
  flowsLab.append(flowsBox, ' Flows');
  const flowCatMenu = el('details', 'xpv-trace-flowcats');
  flowCatMenu.style.cssText = 'position:relative';
  flowCatMenu.append(el('summary', 'xpv-btn', 'Flow categories'));
  const flowCatList = el('div', 'xpv-card');
  flowCatList.style.cssText = 'position:absolute;z-index:5;top:100%;left:0;padding:6px 10px;white-space:nowrap;background:var(--panel)';
  flowCatMenu.append(flowCatList);
  const helpBtn = el('button', { class: 'xpv-btn xpv-trace-help-btn', title: 'Keyboard and mouse help (?)' }, '?');
  const help = el('span', 'xpv-muted', 'Wheel scroll \u00b7 Ctrl+wheel or W/S zoom \u00b7 Shift+wheel or A/D pan \u00b7 1-4 modes \u00b7 ? help');
  help.style.fontSize = '12px';
  head.append(title, search, prev, next, matchInfo, fit, modeBar, flowsLab, flowCatMenu, dl, helpBtn, help);
  if (allHosts.length > 1) head.insertBefore(hostMenu(), search);

  // The Hosts menu: one checkbox per host of the run, and "All".
  function hostMenu() {
    const menu = el('details', 'xpv-trace-hosts');
    menu.style.cssText = 'position:relative';
    const sum = el('summary', 'xpv-btn xpv-trace-hosts-summary');
    const list = el('div', 'xpv-card');
    list.style.cssText = 'position:absolute;z-index:5;top:100%;left:0;padding:6px 10px;max-height:50vh;' +
      'overflow:auto;background:var(--panel);white-space:nowrap';
    const boxes = allHosts.map((h) => {
      const lab = el('label');
      lab.style.cssText = 'display:block;padding:2px 0';
      const cb = el('input', 'xpv-trace-host');
      cb.type = 'checkbox';
      cb.value = h;
      cb.checked = chosen.includes(h);
      lab.append(cb, document.createTextNode(` ${h}`));
      list.append(lab);
      return cb;
    });
    const all = el('button', 'xpv-btn xpv-trace-hosts-all', 'All hosts');
    all.type = 'button';
    all.style.marginTop = '4px';
    list.append(all);
    const label = () => { sum.textContent = `Hosts: ${chosen.length} of ${allHosts.length}`; };
    const apply = () => {
      let hs = boxes.filter((b) => b.checked).map((b) => b.value);
      if (!hs.length) { hs = [ctx.host]; boxes.forEach((b) => { b.checked = b.value === ctx.host; }); }
      chosen = hs;
      base = baseFor(chosen);
      saveLink();
      label();
      setDownload();
      reload();
    };
    boxes.forEach((b) => b.addEventListener('change', apply));
    all.addEventListener('click', () => { boxes.forEach((b) => { b.checked = true; }); apply(); });
    label();
    menu.append(sum, list);
    return menu;
  }

  const status = el('div', 'xpv-muted xpv-trace-status', '');
  status.style.fontSize = '12px';
  status.style.minHeight = '16px';

  const box = el('div', 'xpv-trace-box');
  box.tabIndex = 0;
  box.style.cssText = 'position:relative;height:68vh;min-height:320px;overflow-y:auto;overflow-x:hidden;' +
    'border:1px solid var(--border,#ccc);border-radius:6px;background:var(--panel);outline:none';
  const canvas = el('canvas', 'xpv-trace-canvas');
  canvas.style.cssText = 'position:sticky;top:0;left:0;display:block;cursor:grab';
  const spacer = el('div');
  spacer.style.width = '1px';
  box.append(canvas, spacer);

  const details = el('div', 'xpv-card xpv-trace-details');
  details.style.cssText = 'margin-top:8px;padding:8px 12px;min-height:60px;overflow:auto;max-height:40vh';
  details.append(el('p', 'xpv-muted', 'Click an event to see its details; shift+drag to measure a range.'));
  const helpBox = el('div', { class: 'xpv-card xpv-trace-help', role: 'dialog', 'aria-label': 'Trace viewer keys' });
  helpBox.hidden = true;
  helpBox.style.cssText = 'position:fixed;z-index:30;top:90px;right:24px;max-width:460px;padding:10px 14px;' +
    'background:var(--panel);box-shadow:0 4px 16px rgba(0,0,0,0.3)';
  helpBox.append(el('h3', null, 'Trace viewer keys'));
  const helpTbl = el('table');
  for (const [k, v] of [['Wheel', 'scroll the tracks'], ['Ctrl/\u2318 + wheel, W / S', 'zoom in / out at the pointer'],
    ['Shift + wheel, A / D', 'pan left / right'], ['1 2 3 4', 'mode: select, pan, zoom, timing'],
    ['drag', 'what the mode does; Shift+drag always measures a range'],
    ['click, Ctrl/\u2318 + click', 'select an event; add it to a multi-selection'],
    ['F', 'zoom to the selection'], ['M', 'mark the selection\'s time range'],
    ['Esc', 'clear selection and marks'], ['?', 'this help']]) {
    const tr = el('tr');
    const th = el('th', null, k);
    th.style.cssText = 'text-align:left;padding:2px 14px 2px 0;white-space:nowrap';
    tr.append(th, el('td', null, v));
    helpTbl.append(tr);
  }
  helpBox.append(helpTbl);
  root.append(head, status, box, details, helpBox);

  // ---- state ------------------------------------------------------------------
  const S = {
    full: null,            // [startUs, endUs]
    view: null,            // [startUs, endUs]
    fetched: null,         // {s, e, resUs}
    procs: new Map(),      // pid -> {pid, name, sort, collapsed, tracks: Map}
    maxDepth: new Map(),   // track key -> max depth seen (layout never shrinks)
    collapsed: new Set(),
    steps: [],
    nEvents: 0,
    filtered: false,
    selected: null,        // event object
    range: null,           // [t0, t1] µs
    boxes: [],             // drawn boxes for hit testing: events, with
    boxXYW: new Float64Array(3 * 4096),   // their x, y, w (height LANE_H - 2)
    layout: [],            // rows: {kind:'proc'|'track', y, h, proc, track}
    contentH: 0,
    matches: [], matchTotal: 0, matchIdx: -1, matchPrefix: '',
    seq: 0, inflight: null, fetchTimer: 0, mouseX: null,
    mode: 'pan',           // select | pan | zoom | timing
    band: null,            // select mode: {t0, t1, y0, y1} (content y)
    multi: [],             // Ctrl/Cmd-click selection
    marks: [],             // marked time ranges [t0, t1]
    flowsOn: true, flowCats: new Map(),   // flow arrows and their categories
  };
  let P = palette();                  // theme colours (lib/theme.js)
  // The canvas, its layout and painting: lib/timeline.js.
  const tl = createTimeline({ box, canvas, spacer, S, palette: () => P, onFlowCategory: addFlowCat });
  onThemeChange(() => { P = palette(); draw(); }, ctx.signal);
  const { plotW, tOf } = tl;
  const g = tl.context;
  const paint = () => tl.paint();

  // ---- data -------------------------------------------------------------------
  function ingest(d) {
    tl.ingest(d);
    if (S.pendingSel !== undefined) {      // a linked selection, once loaded
      for (const p of S.procs.values()) for (const t of p.tracks.values()) {
        if (t.counter) continue;
        for (const ev of t.events) if (ev.uid === S.pendingSel) { S.selected = ev; S.pendingSel = undefined; }
      }
      if (S.selected) setTimeout(() => select(S.selected), 0);
    }
    if (S.selected) {
      // keep the selection object in sync with the new data when present
      for (const p of S.procs.values()) for (const t of p.tracks.values())
        if (!t.counter) for (const ev of t.events) if (ev.uid === S.selected.uid) S.selected = ev;
    }
    tl.layout();
  }
  const layout = () => tl.layout();

  // The server's total budget per answer (tools/trace_viewer.c): when it
  // bound, the busiest rows came at a coarser level of detail.
  function budgetNote(d) {
    const b = d.viewportBudget;
    if (!b) return '';
    return `; ${b.rowsCoarsened} busy row${b.rowsCoarsened === 1 ? '' : 's'} at coarser detail to stay within ` +
      `${b.maxEvents.toLocaleString()} events (${b.visibleEvents.toLocaleString()} visible)`;
  }

  // ---- fetching ---------------------------------------------------------------
  // The window fetched is the view and a margin of MARGIN spans each side
  // (small pans stay inside it), at 2 px per event: on a profile with many
  // rows an answer's events, bytes, parse and ingest grow with the window,
  // and a zoom step waits for all of it (3x the view cost 2-3x the time).
  const MARGIN = 0.125;
  // The last few answers (a zoom back out, or a pan back, finds its window
  // here instead of asking again, and a zoom in the one asked for ahead);
  // a few MB of JS heap each.
  const KEEP = 4;
  const kept = [];
  // Whether fetched window `f` shows view `v` at the detail it needs (the
  // rule of needFetch).
  function covers(f, v) {
    const span = v[1] - v[0], eps = span * 1e-6;
    if (f.s > v[0] + eps || f.e < v[1] - eps) return false;
    return !f.filtered || 2 * span / plotW() >= f.resUs / 2;
  }
  // A kept answer covering the view, the finest first; or null.
  function keptFor() {
    let best = null;
    for (const k of kept) if (covers(k.fetched, S.view) && (!best || k.fetched.resUs < best.fetched.resUs)) best = k;
    return best;
  }
  // The window the page asks for to show view `v`.
  function windowFor(v) {
    const span = v[1] - v[0];
    const s = Math.max(S.full[0], v[0] - MARGIN * span);
    const e = Math.min(S.full[1], v[1] + MARGIN * span);
    return { s, e, resolution: Math.max(1, Math.round(plotW() * (e - s) / span / 2)) };
  }
  const fetchOf = (w, d) => ({ s: w.s, e: w.e, resUs: (w.e - w.s) / w.resolution, filtered: !!d.filteredByVisibility });
  const keep = (fetched, d) => {
    kept.unshift({ fetched, d });
    if (kept.length > KEEP) kept.pop();
  };
  // Zooming in at one point: once a window is drawn, or a zoom in needs no
  // new one, the window of the first view further in (1.4x steps at the
  // same point) that the drawn one does not cover is asked for ahead, so
  // that zooming on finds it loaded (or on its way: fetchWindow waits for
  // it).  One such request at a time.
  function askAhead(fetched) {
    const t = S.zoomAt;
    if (t === null || t === undefined || (S.ahead && !S.ahead.done)) return;
    let v = S.view;
    for (let i = 0; i < 12 && covers(fetched, v); i++) v = [t - (t - v[0]) / 1.4, t + (v[1] - t) / 1.4];
    if (covers(fetched, v) || v[1] - v[0] < 1e-3 || kept.some((k) => covers(k.fetched, v))) return;
    const w = windowFor(v), ctl = new AbortController(), gen = loadSeq;
    const ahead = { fetched: { s: w.s, e: w.e, resUs: (w.e - w.s) / w.resolution, filtered: true }, ctl, done: false };
    ahead.promise = api({ start_time_ms: w.s / 1000, end_time_ms: w.e / 1000, resolution: w.resolution,
      format: 'columns' }, ctl.signal).then((d) => {
      ahead.fetched = fetchOf(w, d);
      if (gen === loadSeq) keep(ahead.fetched, d);
      return { fetched: ahead.fetched, d };
    }).catch(() => null).finally(() => { ahead.done = true; });
    S.ahead = ahead;
  }
  function show(fetched, d) {
    S.fetched = fetched;
    ingest(d);
    status.textContent = `${S.nEvents.toLocaleString()} events loaded for ${fmtDur(fetched.e - fetched.s)}` +
      (S.filtered ? ` (level of detail: events shorter than ${fmtDur(fetched.resUs)} ` +
        'may be hidden; zoom in for more)' : '') + budgetNote(d);
    draw();
  }
  async function fetchWindow() {
    const k = keptFor();
    if (k) {
      if (S.inflight) S.inflight.abort();
      ++S.seq;
      const t1 = performance.now();
      show(k.fetched, k.d);
      S.fetchStats = { requestMs: 0, ingestMs: performance.now() - t1, kept: true };
      askAhead(k.fetched);
      return;
    }
    const seq = ++S.seq;
    if (S.inflight) S.inflight.abort();
    const ahead = S.ahead;
    if (ahead && !ahead.done && covers(ahead.fetched, S.view)) {
      // asked for ahead and on its way
      status.textContent = 'Loading\u2026';
      const t0 = performance.now(), a = await ahead.promise;
      if (seq !== S.seq || ctx.signal.aborted) return;
      if (a && covers(a.fetched, S.view)) {
        const t1 = performance.now();
        show(a.fetched, a.d);
        S.fetchStats = { requestMs: t1 - t0, ingestMs: performance.now() - t1, ahead: true };
        askAhead(a.fetched);
        return;
      }
    }
    const w = windowFor(S.view);
    const ctl = new AbortController();
    S.inflight = ctl;
    status.textContent = 'Loading\u2026';
    try {
      const t0 = performance.now();
      const d = await api({ start_time_ms: w.s / 1000, end_time_ms: w.e / 1000, resolution: w.resolution,
        format: 'columns' }, ctl.signal);
      if (seq !== S.seq || ctx.signal.aborted) return;
      const t1 = performance.now();
      const fetched = fetchOf(w, d);
      keep(fetched, d);
      show(fetched, d);
      S.fetchStats = { requestMs: t1 - t0, ingestMs: performance.now() - t1 };
      askAhead(fetched);
    } catch (err) {
      if (err && err.name === 'AbortError') return;
      status.textContent = `Could not load the trace window: ${err.message}`;
    } finally {
      if (S.inflight === ctl) S.inflight = null;
    }
  }

  function needFetch() {
    const f = S.fetched;
    if (!f) return true;
    const span = S.view[1] - S.view[0];
    const eps = span * 1e-6;
    const coversAll = f.s <= S.full[0] && f.e >= S.full[1];
    if (!coversAll && (S.view[0] < f.s - eps || S.view[1] > f.e + eps)) return true;
    if (S.view[0] < f.s - eps && f.s > S.full[0]) return true;
    if (S.view[1] > f.e + eps && f.e < S.full[1]) return true;
    const needRes = 2 * span / plotW();
    return f.filtered && needRes < f.resUs / 2;
  }

  // `key`: a key press changed the view.  Wheel events come every ~16 ms
  // and a held key repeats every ~33 ms, so those wait 50 ms (a gesture
  // makes one request); a key press alone is fetched at once.
  let lastKey = -1e9;
  function scheduleFetch(key) {
    clearTimeout(S.fetchTimer);
    const now = performance.now(), alone = key && now - lastKey > 150;
    if (key) lastKey = now;
    if (!S.view || !needFetch()) return;
    S.fetchTimer = setTimeout(fetchWindow, alone ? 0 : 50);
  }

  // ---- drawing ----------------------------------------------------------------
  let rafPending = false;
  function draw() {
    if (rafPending) return;
    rafPending = true;
    requestAnimationFrame(() => { rafPending = false; paint(); });
  }

  // ---- view changes -----------------------------------------------------------
  function setView(a, b, key) {
    const full = S.full;
    const minSpan = 1e-3;   // 1 ns
    let span = Math.max(minSpan, b - a);
    const fullSpan = full[1] - full[0];
    if (span > fullSpan) span = fullSpan;
    if (a < full[0]) a = full[0];
    if (a + span > full[1]) a = full[1] - span;
    S.view = [a, a + span];
    S.zoomAt = null;
    draw();
    scheduleFetch(key);
    saveLink();
  }
  // The view in the URL (debounced), so a reload or a shared link opens it.
  let linkTimer = 0;
  function saveLink() {
    clearTimeout(linkTimer);
    linkTimer = setTimeout(() => {
      if (!S.full || ctx.signal.aborted) return;
      const whole = S.view[0] <= S.full[0] && S.view[1] >= S.full[1];
      pagestate.set({
        'tv.t0': whole ? null : +S.view[0].toFixed(3),
        'tv.t1': whole ? null : +S.view[1].toFixed(3),
        'tv.hosts': chosen.length === 1 && chosen[0] === ctx.host ? null : chosen.join(','),
        'tv.col': S.collapsed.size ? [...S.collapsed].join(',') : null,
        'tv.sel': S.selected && S.selected.uid !== undefined ? S.selected.uid : null,
        'tv.selts': S.selected && S.selected.uid !== undefined ? S.selected.ts : null,
      });
    }, 250);
  }
  function zoom(factor, atX, key) {
    const x = atX === undefined || atX === null || atX < LABEL_W ? LABEL_W + plotW() / 2 : atX;
    const t = tOf(x);
    const a = t - (t - S.view[0]) * factor, b = t + (S.view[1] - t) * factor;
    setView(a, b, key);
    S.zoomAt = factor < 1 ? t : null;     // zooming in there (askAhead)
    if (S.zoomAt !== null && S.fetched && !needFetch()) askAhead(S.fetched);
  }
  function pan(fraction) {
    const span = S.view[1] - S.view[0];
    setView(S.view[0] + span * fraction, S.view[1] + span * fraction, true);
  }

  // ---- selection and details --------------------------------------------------
  function procName(pid) { const p = S.procs.get(pid); return p ? p.name : `pid ${pid}`; }
  function threadName(pid, tid) {
    const p = S.procs.get(pid);
    const t = p && p.tracks.get(`t${tid}`);
    return t ? t.name : `thread ${tid}`;
  }

  function kv(tbl, k, v) {
    const tr = el('tr');
    const th = el('th', null, k);
    th.style.cssText = 'text-align:left;padding:2px 12px 2px 0;vertical-align:top;white-space:nowrap';
    const td = el('td', null, v);
    td.style.cssText = 'padding:2px 0;word-break:break-all;font-family:var(--mono,monospace);font-size:12px';
    tr.append(th, td);
    tbl.append(tr);
  }

  let detailSeq = 0;
  async function select(ev) {
    S.selected = ev;
    S.range = null;
    S.band = null;
    saveLink();
    draw();
    details.textContent = '';
    if (!ev) {
      details.append(el('p', 'xpv-muted', 'Nothing selected.'));
      return;
    }
    const h = el('h3', 'xpv-trace-details-name', ev.name);
    h.style.margin = '0 0 6px';
    const tbl = el('table', 'xpv-trace-details-table');
    tbl.style.borderCollapse = 'collapse';
    kv(tbl, 'Start', `${fmtDur(ev.ts - S.full[0])} (ts ${ev.ts} \u00b5s)`);
    kv(tbl, 'Duration', fmtDur(ev.dur));
    kv(tbl, 'Process', procName(ev.pid));
    kv(tbl, 'Thread', threadName(ev.pid, ev.tid));
    details.append(h, tbl);
    if (ev.uid === undefined) return;
    const seq = ++detailSeq;
    const argsH = el('h4', null, 'Arguments');
    argsH.style.margin = '8px 0 4px';
    const loading = el('p', 'xpv-muted', 'Loading arguments\u2026');
    details.append(argsH, loading);
    try {
      const d = await api({ unique_id: ev.uid, event_name: ev.name, start_time_ms: ev.ts / 1000,
        duration_ms: ev.dur / 1000 });
      if (seq !== detailSeq) return;
      const full = (d.traceEvents || [])[0];
      loading.remove();
      const at = el('table', 'xpv-trace-args');
      at.style.borderCollapse = 'collapse';
      const args = (full && full.args) || {};
      for (const [k, v] of Object.entries(args)) {
        if (k === 'uid') continue;
        kv(at, k, typeof v === 'string' ? v : JSON.stringify(v));
      }
      if (full && full.bind_id !== undefined) kv(at, 'flow', `${full.cat || ''} ${full.flow_out ? 'out' : 'in'} #${full.bind_id}`);
      if (!at.children.length) details.append(el('p', 'xpv-muted', 'This event has no arguments.'));
      else details.append(at);
    } catch (err) {
      if (seq !== detailSeq || (err && err.name === 'AbortError')) return;
      loading.textContent = `Could not load the arguments: ${err.message}`;
    }
  }

  function showRange() {
    const a = Math.min(S.range[0], S.range[1]), b = Math.max(S.range[0], S.range[1]);
    details.textContent = '';
    const h = el('h3', 'xpv-trace-range', `Range: ${fmtDur(b - a)}`);
    h.style.margin = '0 0 6px';
    details.append(h, el('p', 'xpv-muted',
      `From ${fmtDur(a - S.full[0])} to ${fmtDur(b - S.full[0])}. Aggregates of the events shown ` +
      '(loaded at the current level of detail) that overlap the range:'));
    const agg = new Map();
    let count = 0;
    for (const p of S.procs.values()) for (const t of p.tracks.values()) {
      if (t.counter) continue;
      for (const ev of t.events) {
        const o = Math.min(b, ev.ts + ev.dur) - Math.max(a, ev.ts);
        if (o < 0 || ev.ts > b) continue;
        count++;
        let r = agg.get(ev.name);
        if (!r) { r = { n: 0, total: 0, inRange: 0 }; agg.set(ev.name, r); }
        r.n++;
        r.total += ev.dur;
        r.inRange += Math.max(0, o);
      }
    }
    const tbl = el('table', 'xpv-trace-agg');
    tbl.style.borderCollapse = 'collapse';
    const hr = el('tr');
    for (const c of ['Name', 'Occurrences', 'Wall duration', 'Time in range']) {
      const th = el('th', null, c);
      th.style.cssText = 'text-align:left;padding:2px 14px 2px 0';
      hr.append(th);
    }
    tbl.append(hr);
    const rows = [...agg.entries()].sort((x, y) => y[1].inRange - x[1].inRange).slice(0, 50);
    for (const [name, r] of rows) {
      const tr = el('tr');
      for (const v of [name, r.n.toLocaleString(), fmtDur(r.total), fmtDur(r.inRange)]) {
        const td = el('td', null, v);
        td.style.padding = '1px 14px 1px 0';
        tr.append(td);
      }
      tbl.append(tr);
    }
    details.append(el('p', null, `${count.toLocaleString()} events, ${agg.size.toLocaleString()} names` +
      (agg.size > 50 ? ' (top 50 by time in range)' : '')), tbl);
  }

  const hit = (x, y) => tl.hit(x, y);
  const rowAt = (y) => tl.rowAt(y);

  // ---- search -----------------------------------------------------------------
  async function runSearch() {
    const q = search.value.trim();
    S.matches = [];
    S.matchIdx = -1;
    S.matchPrefix = q;
    prev.disabled = next.disabled = true;
    if (!q) { matchInfo.textContent = ''; draw(); return; }
    matchInfo.textContent = 'Searching\u2026';
    try {
      const d = await api({ search: q, search_limit: 1000 });
      if (S.matchPrefix !== q) return;
      S.matches = (d.traceEvents || []).map((e) => ({ ts: e.ts, dur: e.dur, name: e.name, uid: e.args.uid,
        pid: e.pid, tid: e.tid }));
      S.matchTotal = d.totalMatches || 0;
      if (!S.matches.length) { matchInfo.textContent = 'No match'; draw(); return; }
      gotoMatch(0);
    } catch (err) {
      if (err && err.name === 'AbortError') return;
      matchInfo.textContent = `Search failed: ${err.message}`;
    }
  }
  async function gotoMatch(i) {
    if (i >= S.matches.length && S.matches.length < S.matchTotal) {
      const last = S.matches[S.matches.length - 1];
      const d = await api({ search: S.matchPrefix, search_limit: 1000, search_start_ms: last.ts / 1000 });
      const seen = new Set(S.matches.map((m) => m.uid));
      for (const e of d.traceEvents || [])
        if (!seen.has(e.args.uid)) S.matches.push({ ts: e.ts, dur: e.dur, name: e.name, uid: e.args.uid, pid: e.pid, tid: e.tid });
    }
    if (!S.matches.length) return;
    i = ((i % S.matches.length) + S.matches.length) % S.matches.length;
    S.matchIdx = i;
    const m = S.matches[i];
    matchInfo.textContent = `${(i + 1).toLocaleString()} of ${S.matchTotal.toLocaleString()}`;
    prev.disabled = next.disabled = false;
    const span = S.view[1] - S.view[0];
    const want = Math.max(span > m.dur * 50 ? Math.max(m.dur * 20, 0.01) : span, m.dur * 1.5);
    const c = m.ts + m.dur / 2;
    setView(c - want / 2, c + want / 2);
    S.collapsed.delete(m.pid);
    layout();
    select(m);
  }

  // ---- modes, multi-selection, summaries -------------------------------------------
  function setMode(m) {
    S.mode = m;
    root.dataset.mode = m;
    for (const [k, b] of modeBtns) b.setAttribute('aria-pressed', String(k === m));
    canvas.style.cursor = { select: 'crosshair', pan: 'grab', zoom: 'zoom-in', timing: 'col-resize' }[m];
  }
  function addFlowCat(cat) {
    S.flowCats.set(cat, true);
    const lab = el('label', { class: 'xpv-trace-flowcat' });
    lab.style.display = 'block';
    const cb = el('input', { type: 'checkbox', checked: true, 'data-cat': cat });
    cb.addEventListener('change', () => { S.flowCats.set(cat, cb.checked); draw(); });
    lab.append(cb, ' ', cat || '(no category)');
    flowCatList.append(lab);
  }
  flowsBox.addEventListener('change', () => { S.flowsOn = flowsBox.checked; draw(); });
  helpBtn.addEventListener('click', () => { helpBox.hidden = !helpBox.hidden; });

  // Self time of each event of `t`: its duration minus its direct children's
  // (events one level deeper inside it), over the events loaded.
  function selfTimes(t, out) {
    const evs = t.events.slice().sort((x, y) => x.ts - y.ts || x.depth - y.depth);
    const stack = [];
    for (const ev of evs) {
      while (stack.length && stack[stack.length - 1].ts + stack[stack.length - 1].dur <= ev.ts) stack.pop();
      out.set(ev, ev.dur);
      const top = stack[stack.length - 1];
      if (top && top.depth === ev.depth - 1) out.set(top, out.get(top) - ev.dur);
      stack.push(ev);
    }
  }
  // The selection summary XProf shows: per name, occurrences, wall and self
  // time, average.
  function summarize(events, heading, note) {
    details.textContent = '';
    const h = el('h3', 'xpv-trace-summary', heading);
    h.style.margin = '0 0 6px';
    details.append(h);
    if (note) details.append(el('p', 'xpv-muted', note));
    const tracks = new Set(events.map((ev) => {
      const p = S.procs.get(ev.pid);
      return p && p.tracks.get(`t${ev.tid}`);
    }).filter(Boolean));
    const self = new Map();
    for (const t of tracks) selfTimes(t, self);
    const agg = new Map();
    for (const ev of events) {
      let r = agg.get(ev.name);
      if (!r) { r = { n: 0, wall: 0, self: 0 }; agg.set(ev.name, r); }
      r.n++;
      r.wall += ev.dur;
      r.self += self.has(ev) ? self.get(ev) : ev.dur;
    }
    const tbl = el('table', 'xpv-trace-sel-agg');
    tbl.style.borderCollapse = 'collapse';
    const hr = el('tr');
    for (const c of ['Name', 'Occurrences', 'Wall duration', 'Self time', 'Average wall duration']) {
      const th = el('th', null, c);
      th.style.cssText = 'text-align:left;padding:2px 14px 2px 0';
      hr.append(th);
    }
    tbl.append(hr);
    const rows = [...agg.entries()].sort((x, y) => y[1].wall - x[1].wall).slice(0, 100);
    for (const [name, r] of rows) {
      const tr = el('tr', { 'data-name': name });
      for (const v of [name, r.n.toLocaleString(), fmtDur(r.wall), fmtDur(r.self), fmtDur(r.wall / r.n)]) {
        const td = el('td', null, v);
        td.style.padding = '1px 14px 1px 0';
        tr.append(td);
      }
      tbl.append(tr);
    }
    details.append(el('p', 'xpv-trace-sel-count', `${events.length.toLocaleString()} events, ` +
      `${agg.size.toLocaleString()} names` + (agg.size > 100 ? ' (top 100 by wall duration)' : '')), tbl);
  }
  // Select mode's box: the events of the tracks it spans that overlap it.
  function showBand() {
    const b = S.band;
    const t0 = Math.min(b.t0, b.t1), t1 = Math.max(b.t0, b.t1);
    const y0 = Math.min(b.y0, b.y1), y1 = Math.max(b.y0, b.y1);
    const evs = [];
    for (const r of S.layout) {
      if (r.kind !== 'track' || r.track.counter || r.y >= y1 || r.y + r.h <= y0) continue;
      for (const ev of r.track.events) {
        if (ev.ts > t1) break;
        if (ev.ts + ev.dur >= t0) evs.push(ev);
      }
    }
    summarize(evs, `Selection: ${fmtDur(t1 - t0)}`,
      `${fmtDur(t0 - S.full[0])} to ${fmtDur(t1 - S.full[0])} on the tracks inside the box ` +
      '(events loaded at the current level of detail).');
  }
  // The span of what is selected: event, multi-selection, box or range.
  function selectionSpan() {
    if (S.multi.length) {
      return [Math.min(...S.multi.map((e) => e.ts)), Math.max(...S.multi.map((e) => e.ts + e.dur))];
    }
    if (S.selected) return [S.selected.ts, S.selected.ts + S.selected.dur];
    if (S.band) return [Math.min(S.band.t0, S.band.t1), Math.max(S.band.t0, S.band.t1)];
    if (S.range) return [Math.min(S.range[0], S.range[1]), Math.max(S.range[0], S.range[1])];
    return null;
  }
  function zoomToSelection() {
    const sp = selectionSpan();
    if (!sp) return;
    const pad = Math.max((sp[1] - sp[0]) * 0.1, 1e-3);
    setView(sp[0] - pad, sp[1] + pad);
  }
  function markSelection() {
    const sp = selectionSpan();
    if (!sp) return;
    S.marks.push(sp);
    root.dataset.marks = String(S.marks.length);
    draw();
  }

  // ---- events -----------------------------------------------------------------
  let drag = null;
  const contentY = (y) => y - AXIS_H + box.scrollTop;
  canvas.addEventListener('mousedown', (e) => {
    const r = canvas.getBoundingClientRect();
    const x = e.clientX - r.left, y = e.clientY - r.top;
    // Shift+drag measures whatever the mode (as before modes existed).
    const mode = e.shiftKey ? 'timing' : S.mode;
    drag = { x, y, x0: x, view: S.view.slice(), mode, moved: false, multi: e.ctrlKey || e.metaKey };
    if (x >= LABEL_W && y >= AXIS_H) {
      if (mode === 'timing' || mode === 'zoom') S.range = [tOf(x), tOf(x)];
      if (mode === 'select') S.band = { t0: tOf(x), t1: tOf(x), y0: contentY(y), y1: contentY(y) };
    } else if (mode !== 'pan') {
      drag.mode = 'pan';
    }
    if (drag.mode === 'pan') canvas.style.cursor = 'grabbing';
    e.preventDefault();
    box.focus({ preventScroll: true });
  });
  const onMove = (e) => {
    const r = canvas.getBoundingClientRect();
    S.mouseX = e.clientX - r.left;
    if (!drag) return;
    const x = e.clientX - r.left, y = e.clientY - r.top;
    if (Math.abs(x - drag.x0) > 3 || Math.abs(y - drag.y) > 3) drag.moved = true;
    if (drag.mode === 'timing' || drag.mode === 'zoom') {
      S.range[1] = tOf(x);
      draw();
    } else if (drag.mode === 'select') {
      S.band.t1 = tOf(x);
      S.band.y1 = contentY(y);
      draw();
    } else if (drag.moved) {
      const dt = (x - drag.x0) * (drag.view[1] - drag.view[0]) / plotW();
      setView(drag.view[0] - dt, drag.view[1] - dt);
    }
  };
  const onUp = (e) => {
    if (!drag) return;
    const d = drag;
    drag = null;
    setMode(S.mode);      // the mode's cursor
    const r = canvas.getBoundingClientRect();
    const x = e.clientX - r.left, y = e.clientY - r.top;
    if (d.mode === 'timing') {
      if (d.moved) showRange();
      else S.range = null;
      draw();
      if (d.moved) return;
    } else if (d.mode === 'zoom') {
      const rg = S.range;
      S.range = null;
      if (d.moved && rg[0] !== rg[1]) setView(Math.min(rg[0], rg[1]), Math.max(rg[0], rg[1]));
      else zoom(1 / 1.4, x);
      return;
    } else if (d.mode === 'select' && d.moved) {
      S.selected = null;
      S.multi = [];
      showBand();
      draw();
      return;
    } else if (d.moved) {
      return;
    }
    // A click.
    S.band = null;
    if (y < AXIS_H) return;
    const row = rowAt(y);
    if (row && row.kind === 'proc') {
      if (S.collapsed.has(row.proc.pid)) S.collapsed.delete(row.proc.pid);
      else S.collapsed.add(row.proc.pid);
      saveLink();
      layout();
      draw();
      return;
    }
    const ev = x >= LABEL_W ? hit(x, y) : null;
    if (d.multi && ev) {
      const i = S.multi.indexOf(ev);
      if (i >= 0) S.multi.splice(i, 1);
      else S.multi.push(ev);
      if (S.selected && !S.multi.includes(S.selected)) S.multi.unshift(S.selected);
      S.selected = null;
      S.range = null;
      draw();
      summarize(S.multi, `${S.multi.length} events selected`, 'Ctrl/\u2318+click adds or removes an event.');
      return;
    }
    S.multi = [];
    select(ev);
  };
  window.addEventListener('mousemove', onMove);
  window.addEventListener('mouseup', onUp);
  // Wheel: scroll the tracks; Ctrl/Cmd+wheel (and pinch) zoom at the
  // pointer; Shift+wheel or a horizontal swipe pans.
  box.addEventListener('wheel', (e) => {
    const r = canvas.getBoundingClientRect();
    if (e.ctrlKey || e.metaKey) {
      e.preventDefault();
      zoom(Math.exp(Math.max(-3, Math.min(3, e.deltaY * 0.002))), e.clientX - r.left);
      return;
    }
    const dx = e.shiftKey ? (e.deltaX || e.deltaY) : e.deltaX;
    if (e.shiftKey || Math.abs(e.deltaX) > Math.abs(e.deltaY)) {
      e.preventDefault();
      const dt = dx * (S.view[1] - S.view[0]) / plotW();
      setView(S.view[0] + dt, S.view[1] + dt);
    }
    // else: the default vertical scroll of the track list
  }, { passive: false });
  box.addEventListener('scroll', draw);
  setMode('pan');
  const onKey = (e) => {
    const tgt = e.target;
    if (tgt && (tgt.tagName === 'INPUT' || tgt.tagName === 'SELECT' || tgt.tagName === 'TEXTAREA')) return;
    if (e.ctrlKey || e.metaKey || e.altKey || !S.view) return;
    const key = e.key.toLowerCase();
    if (key === 'w') zoom(1 / 1.4, S.mouseX, true);
    else if (key === 's') zoom(1.4, S.mouseX, true);
    else if (key === 'a') pan(-0.2);
    else if (key === 'd') pan(0.2);
    else if (key >= '1' && key <= '4') setMode(MODES[Number(key) - 1][0]);
    else if (key === 'f') zoomToSelection();
    else if (key === 'm') markSelection();
    else if (key === '?') helpBox.hidden = !helpBox.hidden;
    else if (key === 'escape') {
      S.range = null;
      S.band = null;
      S.multi = [];
      S.marks = [];
      root.dataset.marks = '0';
      helpBox.hidden = true;
      select(null);
    } else return;
    e.preventDefault();
  };
  document.addEventListener('keydown', onKey);
  search.addEventListener('keydown', (e) => {
    if (e.key === 'Enter') {
      if (S.matches.length && search.value.trim() === S.matchPrefix) gotoMatch(S.matchIdx + (e.shiftKey ? -1 : 1));
      else runSearch();
    }
  });
  next.addEventListener('click', () => gotoMatch(S.matchIdx + 1));
  prev.addEventListener('click', () => gotoMatch(S.matchIdx - 1));
  fit.addEventListener('click', () => setView(S.full[0], S.full[1]));
  const ro = new ResizeObserver(() => { layout(); draw(); scheduleFetch(); });
  ro.observe(box);
  ctx.signal.addEventListener('abort', () => {
    window.removeEventListener('mousemove', onMove);
    window.removeEventListener('mouseup', onUp);
    document.removeEventListener('keydown', onKey);
    ro.disconnect();
    clearTimeout(S.fetchTimer);
    if (S.inflight) S.inflight.abort();
    if (S.ahead) S.ahead.ctl.abort();
  });

  // A small hook for tests and debugging: the current view and drawn boxes.
  root.xpvTrace = {
    view: () => S.view && S.view.slice(),
    mode: () => S.mode,
    marks: () => S.marks.map((m) => m.slice()),
    multi: () => S.multi.map((ev) => ev.name),
    scrollTop: () => box.scrollTop,
    selected: () => (S.selected ? { name: S.selected.name, ts: S.selected.ts, dur: S.selected.dur } : null),
    full: () => S.full && S.full.slice(),
    fetched: () => S.fetched && Object.assign({}, S.fetched),
    boxes: () => S.boxes.map((ev, i) => ({ x: S.boxXYW[3 * i], y: S.boxXYW[3 * i + 1], w: S.boxXYW[3 * i + 2],
      h: LANE_H - 2, name: ev.name, uid: ev.uid })),
    hosts: () => chosen.slice(),
    procs: () => [...S.procs.values()].map((p) => ({ pid: p.pid, name: p.name })),
    // Rows of each process as drawn (name, tid, events loaded).
    tracks: () => [...S.procs.values()].map((p) => ({ pid: p.pid, name: p.name,
      tracks: [...p.tracks.values()].filter((t) => !t.counter)
        .map((t) => ({ tid: t.tid, name: t.name, events: t.events.length })) })),
    // Counter tracks of each process: name and the samples loaded.
    counters: () => [...S.procs.values()].flatMap((p) => [...p.tracks.values()]
      .filter((t) => t.counter).map((t) => ({ pid: p.pid, name: t.name, samples: t.samples.map((x) => x.slice()) }))),
    // The last frame: paint time (ms), boxes and flow arrows drawn, events loaded.
    paintStats: () => ({ ms: S.paintMs, boxes: S.boxes.length, loaded: S.nEvents, arrows: S.arrows }),
    // The last window fetched: request (sent -> answer parsed) and ingest ms.
    fetchStats: () => S.fetchStats && Object.assign({}, S.fetchStats),
    // Paint `n` frames synchronously: per frame [paint ms (JS, recording
    // the canvas commands), raster ms (forced by reading a pixel back)].
    repaint: (n) => {
      const out = [];
      for (let i = 0; i < n; i++) {
        paint();
        const t0 = performance.now();
        g.getImageData(0, 0, 1, 1);
        out.push([S.paintMs, performance.now() - t0]);
      }
      return out;
    },
  };

  // ---- loading ----------------------------------------------------------------
  // Another host set: forget the data (not the collapsed sections) and load
  // the whole trace again.
  let loadSeq = 0;
  async function reload() {
    clearTimeout(S.fetchTimer);
    if (S.inflight) S.inflight.abort();
    if (S.ahead) S.ahead.ctl.abort();
    S.ahead = null;
    S.seq++;
    kept.length = 0;
    Object.assign(S, { full: null, view: null, fetched: null, procs: new Map(), steps: [], nEvents: 0,
      selected: null, range: null, boxes: [], matches: [], matchTotal: 0, matchIdx: -1, matchPrefix: '' });
    S.maxDepth = new Map();
    matchInfo.textContent = '';
    prev.disabled = next.disabled = true;
    details.textContent = '';
    details.append(el('p', 'xpv-muted', 'Click an event to see its details; shift+drag to measure a range.'));
    delete root.dataset.ready;
    status.textContent = 'Loading\u2026';
    try {
      await load();
    } catch (err) {
      if (err && err.name === 'AbortError') return;
      status.textContent = `Could not load the trace: ${err.message}`;
    }
  }

  async function load() {
    const seq = ++loadSeq;
    const resolution = Math.max(1, Math.round(plotW() / 2));
    const tReq = performance.now();
    const d = await api({ resolution, format: 'columns' });
    if (seq !== loadSeq || ctx.signal.aborted) return;
    const tGot = performance.now();
    const fs = d.fullTimespan || [0, 0];
    S.full = [fs[0] * 1000, Math.max(fs[1] * 1000, fs[0] * 1000 + 1e-3)];
    S.view = S.full.slice();
    S.fetched = { s: S.full[0], e: S.full[1], resUs: (S.full[1] - S.full[0]) / resolution, filtered: !!d.filteredByVisibility };
    kept.unshift({ fetched: S.fetched, d });
    if (!linkApplied) {                     // the first load follows the link
      linkApplied = true;
      for (const pid of (pagestate.get('tv.col') || '').split(',')) if (pid !== '') S.collapsed.add(Number(pid));
      const sel = pagestate.get('tv.sel');
      if (sel !== null && sel !== '') S.pendingSel = Number(sel);
    }
    ingest(d);
    S.fetchStats = { requestMs: tGot - tReq, ingestMs: performance.now() - tGot };
    if (!S.nEvents) {
      details.textContent = '';
      details.append(el('p', null, 'This profile has no trace events to show (no host thread, GPU, TPU or custom device timeline).'));
    }
    status.textContent = `${S.nEvents.toLocaleString()} events loaded (whole trace: ${fmtDur(S.full[1] - S.full[0])})` +
      (chosen.length > 1 ? ` from ${chosen.length} hosts` : '') + budgetNote(d);
    root.dataset.ready = '1';
    paint();
    const t0 = Number(pagestate.get('tv.t0')), t1 = Number(pagestate.get('tv.t1'));
    if (!viewApplied && pagestate.get('tv.t0') && t1 > t0) setView(t0, t1);
    else if (!viewApplied && S.pendingSel !== undefined) {
      const ts = Number(pagestate.get('tv.selts'));
      if (Number.isFinite(ts)) setView(ts - 50, ts + 50);
    }
    viewApplied = true;
  }
  let linkApplied = false, viewApplied = false;
  await load();
}
