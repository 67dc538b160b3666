// timeline.js - the trace canvas as a component: events of a trace window
// laid out as process sections, thread tracks (one lane per nesting depth)
// and counter tracks, painted on a Canvas 2D with a time axis, step bands,
// flow arrows, selection and search highlights; hit testing for clicks.
//
// The page (web/tools/trace_viewer.js) owns the state object `S` (view,
// data, selection, marks...) and the DOM around the canvas; this module
// reads and fills the parts of `S` that describe what is drawn:
//   ingest(d)  trace window JSON (Chrome trace events, µs; or the compact
//              answer's columns of complete events) -> S.procs, S.steps,
//              S.nEvents, S.filtered (then call layout())
//   layout()   S.layout rows and the scroll height
//   paint()    one frame; S.boxes / S.boxXYW for hit testing
//   hit(x, y), rowAt(y), plotW(), xOf(t), tOf(x)

import { fmtDur } from './format.js';

export const LABEL_W = 220;
export const AXIS_H = 28;
export const LANE_H = 18;
const SECTION_H = 22;
const COUNTER_H = 36;
const TRACK_PAD = 4;
const FONT = '11px system-ui, sans-serif';
const CHAR_W = 6.2;
const MAX_FLOWS = 2000;

// Stable color per name (FNV-1a hash -> hue).
const colorCache = new Map();
export function colorFor(name) {
  let c = colorCache.get(name);
  if (c) return c;
  let h = 2166136261;
  for (let i = 0; i < name.length; i++) {
    h ^= name.charCodeAt(i);
    h = Math.imul(h, 16777619) >>> 0;
  }
  c = `hsl(${h % 360}, ${45 + (h >>> 9) % 25}%, ${58 + (h >>> 17) % 14}%)`;
  if (colorCache.size > 20000) colorCache.clear();
  colorCache.set(name, c);
  return c;
}

function niceStep(raw) {
  const p = Math.pow(10, Math.floor(Math.log10(raw)));
  const m = raw / p;
  return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}


// `box` scrolls, `canvas` is sticky inside it, `spacer` sets the scroll
// height; `palette()` gives the theme colours; `onFlowCategory(cat)` is
// called for each new flow category met by ingest().
export function createTimeline({ box, canvas, spacer, S, palette, onFlowCategory }) {
  let dpr = window.devicePixelRatio || 1;
  const g = canvas.getContext('2d');
  const plotW = () => Math.max(50, box.clientWidth - LABEL_W);
  const xOf = (t) => LABEL_W + (t - S.view[0]) * plotW() / (S.view[1] - S.view[0]);
  const tOf = (x) => S.view[0] + (x - LABEL_W) * (S.view[1] - S.view[0]) / plotW();

  function ingest(d) {
    const procs = new Map();
    const proc = (pid) => {
      let p = procs.get(pid);
      if (!p) {
        const old = S.procs.get(pid);
        p = { pid, name: old ? old.name : `pid ${pid}`, sort: pid, tracks: new Map() };
        procs.set(pid, p);
      }
      return p;
    };
    const track = (p, key, make) => {
      let t = p.tracks.get(key);
      if (!t) { t = make(); p.tracks.set(key, t); }
      return t;
    };
    const threadTrack = (p, tid) => track(p, `t${tid}`,
      () => ({ key: `${p.pid}/t${tid}`, pid: p.pid, tid, name: `thread ${tid}`, sort: tid, events: [], counter: false }));
    const open = new Map();   // async "b" events waiting for their "e"
    for (const e of d.traceEvents || []) {
      const ph = e.ph;
      if (ph === 'b' || ph === 'e') {
        // XProf's async events (lines such as a TPU's "Async XLA Ops"): a
        // "b" and the "e" of the same pid, cat and id make one slice, on a
        // track per event name (XProf's async channel), after the threads.
        const k = `${e.pid}/${e.cat}/${e.id}`;
        const b = open.get(k);
        if (ph === 'b') { open.set(k, e); continue; }
        if (!b) continue;
        open.delete(k);
        const tid = `async:${b.name}`;
        const t = threadTrack(proc(b.pid), tid);
        t.name = b.name;
        t.sort = 1e18;
        t.events.push({ ts: b.ts, dur: Math.max(0, e.ts - b.ts), name: b.name,
          uid: b.args ? b.args.uid : undefined, pid: b.pid, tid, depth: 0,
          group: b.args ? b.args.group_id : undefined });
      } else if (ph === 'X') {
        const p = proc(e.pid);
        threadTrack(p, e.tid).events.push({
          ts: e.ts, dur: e.dur, name: e.name, uid: e.args ? e.args.uid : undefined,
          pid: e.pid, tid: e.tid, bind: e.bind_id, fin: !!e.flow_in, fout: !!e.flow_out, depth: 0,
          fcat: e.bind_id !== undefined ? (e.cat || '') : undefined,
          group: e.args ? e.args.group_id : undefined,
        });
        if (e.bind_id !== undefined && !S.flowCats.has(e.cat || '')) onFlowCategory(e.cat || '');
      } else if (ph === 'C') {
        const p = proc(e.pid);
        const t = track(p, `c${e.name}`, () => ({ key: `${p.pid}/c${e.name}`, pid: p.pid, name: e.name,
          sort: -1e18, samples: [], counter: true }));
        if (Array.isArray(e.entries)) {
          // XProf's grouped form (the streaming answer): one event per run
          // of samples, entries [ts, value...]; the first value is drawn.
          for (const en of e.entries) t.samples.push([en[0], Number(en[1]) || 0]);
        } else {
          // A Chrome counter event (a full trace): args {stat: value}.
          const vals = Object.values(e.args || {});
          t.samples.push([e.ts, Number(vals[0]) || 0]);
        }
      } else if (ph === 'M') {
        const p = proc(e.pid);
        const a = e.args || {};
        if (e.name === 'process_name') p.name = a.name;
        else if (e.name === 'process_sort_index') p.sort = a.sort_index;
        else if (e.name === 'thread_name') threadTrack(p, e.tid).name = a.name;
        else if (e.name === 'thread_sort_index') threadTrack(p, e.tid).sort = a.sort_index;
      }
    }
    if (d.columns) ingestColumns(d.columns, proc, threadTrack);
    let n = 0;
    for (const p of procs.values()) {
      for (const t of p.tracks.values()) {
        if (t.counter) {
          t.samples.sort((a, b) => a[0] - b[0]);
          t.max = t.samples.reduce((m, s) => Math.max(m, s[1]), 0);
          n += t.samples.length;
          continue;
        }
        t.events.sort((a, b) => a.ts - b.ts || b.dur - a.dur);
        const ends = [];
        let md = 0;
        for (const ev of t.events) {
          const end = ev.ts + ev.dur;
          while (ends.length && ends[ends.length - 1] <= ev.ts) ends.pop();
          ev.depth = ends.length;
          if (ev.depth > md) md = ev.depth;
          ends.push(end);
        }
        S.maxDepth.set(t.key, Math.max(md, S.maxDepth.get(t.key) || 0));
        n += t.events.length;
      }
    }
    S.procs = procs;
    S.steps = d.steps || [];
    S.nEvents = n;
    S.filtered = !!d.filteredByVisibility;
  }

  // The compact answer (`format=columns`, tools/trace_viewer.c): the
  // complete events as columns, turned into the same event objects as the
  // JSON answer's "ph":"X" events (starts as whole µs, deltas after the
  // first, and ps past them; dur in ps; uid = row * 2^32 + ev).  A start
  // below 2^53 ps (2.5 hours) is the JSON answer's to the bit; past it
  // within a unit of the last place, as the JSON's µs are.
  function ingestColumns(c, proc, threadTrack) {
    const rows = c.rows.map(([row, pid, tid]) => ({ hi: row * 4294967296, pid, tid,
      events: threadTrack(proc(pid), tid).events }));
    const flows = new Map();
    for (const f of c.flows) {
      flows.set(f[0], f);
      if (!S.flowCats.has(f[2])) onFlowCategory(f[2]);
    }
    const { row, ev, dur, name, group, names } = c, dus = c.ts_us, sps = c.ts_ps, n = dus.length;
    let us = 0;
    for (let i = 0; i < n; i++) {
      us += dus[i];
      const p = us * 1e6 + sps[i];
      const ts = Math.abs(p) < 9007199254740992 ? p / 1e6 : us + sps[i] / 1e6;
      const r = rows[row[i]], g = group[i], f = flows.size ? flows.get(i) : undefined;
      r.events.push({
        ts, dur: dur[i] / 1e6, name: names[name[i]], uid: r.hi + ev[i],
        pid: r.pid, tid: r.tid, bind: f ? f[1] : undefined, fin: !!f && (f[3] & 1) !== 0,
        fout: !!f && (f[3] & 2) !== 0, depth: 0, fcat: f ? f[2] : undefined,
        group: g === null ? undefined : g,
      });
    }
  }

  function layout() {
    const rows = [];
    let y = 0;
    const procs = [...S.procs.values()].sort((a, b) => a.sort - b.sort || a.pid - b.pid);
    for (const p of procs) {
      rows.push({ kind: 'proc', y, h: SECTION_H, proc: p });
      y += SECTION_H;
      if (S.collapsed.has(p.pid)) continue;
      const tracks = [...p.tracks.values()].sort((a, b) => a.sort - b.sort ||
        String(a.name).localeCompare(String(b.name)));
      for (const t of tracks) {
        const h = t.counter ? COUNTER_H : (S.maxDepth.get(t.key) + 1) * LANE_H + TRACK_PAD;
        rows.push({ kind: 'track', y, h, proc: p, track: t });
        y += h;
      }
    }
    S.layout = rows;
    S.contentH = y;
    spacer.style.height = `${Math.max(0, y + AXIS_H - box.clientHeight)}px`;
  }


  function paint() {
    if (!S.view) return;
    const P = palette();
    const tPaint = performance.now();
    dpr = window.devicePixelRatio || 1;
    const W = box.clientWidth, H = box.clientHeight;
    if (canvas.width !== Math.round(W * dpr) || canvas.height !== Math.round(H * dpr)) {
      canvas.width = Math.round(W * dpr);
      canvas.height = Math.round(H * dpr);
      canvas.style.width = `${W}px`;
      canvas.style.height = `${H}px`;
    }
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, W, H);
    g.font = FONT;
    g.textBaseline = 'middle';
    const scroll = box.scrollTop;
    const v0 = S.view[0], v1 = S.view[1], pw = plotW();
    const k = pw / (v1 - v0);
    S.boxes = [];
    let nBox = 0, xyw = S.boxXYW;
    const flowOut = new Map(), flowIn = [], fpt = [];   // bind -> index in fpt [x, y, ...]
    const queue = new Map();            // color -> [x, y, w, ...]
    const names = [], marks = [];       // [ev, x, y, w, ...]
    const selUid = S.selected ? S.selected.uid : undefined;
    const m = S.matchIdx >= 0 ? S.matches[S.matchIdx] : null;
    const matchUid = m ? m.uid : undefined;

    // step markers (behind everything)
    g.fillStyle = P.band;
    S.steps.forEach((st, i) => {
      const x0 = LABEL_W + (st[0] - v0) * k, x1 = LABEL_W + (st[0] + st[1] - v0) * k;
      if (x1 < LABEL_W || x0 > W) return;
      if (i % 2 === 0) g.fillRect(Math.max(LABEL_W, x0), AXIS_H, Math.min(W, x1) - Math.max(LABEL_W, x0), H);
    });

    for (const row of S.layout) {
      const y = AXIS_H + row.y - scroll;
      if (y + row.h < AXIS_H || y > H) continue;
      if (row.kind === 'proc') {
        g.fillStyle = P.surface2;
        g.fillRect(0, y, W, row.h);
        g.fillStyle = P.text;
        g.font = 'bold ' + FONT;
        const col = S.collapsed.has(row.proc.pid);
        g.fillText(`${col ? '\u25b6' : '\u25bc'} ${row.proc.name}`, 6, y + row.h / 2);
        g.font = FONT;
        continue;
      }
      const t = row.track;
      g.fillStyle = P.border;
      g.fillRect(0, y + row.h - 1, W, 1);
      if (t.counter) {
        paintCounter(t, y, row.h, k, v0, W);
      } else {
        // Boxes are queued per color and filled once per color after all
        // rows (a fillStyle change costs more than the rect); names and
        // highlights are drawn on top of them.
        const lastPx = [];
        const evs = t.events;
        for (let i = 0; i < evs.length; i++) {
          const ev = evs[i];
          let x0 = LABEL_W + (ev.ts - v0) * k;
          if (x0 > W) break;                      // sorted by start
          let x1 = x0 + ev.dur * k;
          if (x1 < LABEL_W) continue;
          const ey = y + 2 + ev.depth * LANE_H;
          if (ev.bind !== undefined && S.flowsOn && S.flowCats.get(ev.fcat) !== false) {
            const pt = fpt.length;
            fpt.push(Math.max(LABEL_W, x0), ey + (LANE_H - 2) / 2);
            if (ev.fout) flowOut.set(ev.bind, pt);
            if (ev.fin) flowIn.push(ev.bind, pt);
          }
          if (x0 < LABEL_W) x0 = LABEL_W;
          if (x1 > W) x1 = W;
          let w = x1 - x0;
          if (w < 1) {
            const px = Math.floor(x0);
            if (lastPx[ev.depth] === px) continue;
            lastPx[ev.depth] = px;
            w = 1;
          }
          const c = ev.color || (ev.color = colorFor(ev.name));
          let q = queue.get(c);
          if (!q) { q = []; queue.set(c, q); }
          q.push(x0, ey, w);
          if (3 * nBox + 3 > xyw.length) {
            const a = new Float64Array(xyw.length * 2);
            a.set(xyw);
            xyw = S.boxXYW = a;
          }
          xyw[3 * nBox] = x0;
          xyw[3 * nBox + 1] = ey;
          xyw[3 * nBox + 2] = w;
          S.boxes[nBox++] = ev;
          if (w > 24) names.push(ev, x0, ey, w);
          if ((ev.uid !== undefined && (selUid === ev.uid || matchUid === ev.uid)) || (S.multi.length && S.multi.includes(ev))) {
            marks.push(ev, x0, ey, w);
          }
        }
      }
    }

    // the queued boxes, their names, the selection / search highlight
    const bh = LANE_H - 2;
    for (const [c, q] of queue) {
      g.fillStyle = c;
      g.beginPath();
      for (let i = 0; i < q.length; i += 3) g.rect(q[i], q[i + 1], q[i + 2], bh);
      g.fill();
    }
    g.fillStyle = '#111';
    for (let i = 0; i < names.length; i += 4) {
      const ev = names[i], w = names[i + 3];
      const n = Math.floor((w - 6) / CHAR_W);
      if (n <= 1) continue;
      g.fillText(ev.name.length > n ? ev.name.slice(0, n - 1) + '\u2026' : ev.name, names[i + 1] + 3, names[i + 2] + bh / 2);
    }
    g.lineWidth = 2;
    for (let i = 0; i < marks.length; i += 4) {
      const ev = marks[i], x0 = marks[i + 1], ey = marks[i + 2], w = marks[i + 3];
      g.strokeStyle = ev.uid === matchUid && ev.uid !== selUid ? '#f4b400' : P.text;
      g.strokeRect(x0 + 1, ey + 1, Math.max(1, w - 2), LANE_H - 4);
    }
    g.lineWidth = 1;
    // the label column over everything drawn so far
    for (const row of S.layout) {
      if (row.kind !== 'track') continue;
      const y = AXIS_H + row.y - scroll;
      if (y + row.h < AXIS_H || y > H) continue;
      g.fillStyle = P.panel;
      g.fillRect(0, y, LABEL_W, row.h - 1);
      g.fillStyle = P.text;
      const label = String(row.track.name);
      const max = Math.floor((LABEL_W - 24) / CHAR_W);
      g.fillText(label.length > max ? label.slice(0, max - 1) + '\u2026' : label, 16, y + Math.min(row.h, LANE_H + 4) / 2);
    }

    // flow arrows
    g.strokeStyle = 'rgba(60,60,60,0.75)';
    g.fillStyle = 'rgba(60,60,60,0.75)';
    let nf = 0;
    for (let i = 0; i < flowIn.length; i += 2) {
      const from = flowOut.get(flowIn[i]), to = flowIn[i + 1];
      if (from === undefined || nf >= MAX_FLOWS) continue;
      nf++;
      const ax = fpt[from], ay = fpt[from + 1], bx = fpt[to], by = fpt[to + 1];
      g.beginPath();
      g.moveTo(ax, ay);
      g.bezierCurveTo(ax + 20, ay, bx - 20, by, bx, by);
      g.stroke();
      g.beginPath();
      g.moveTo(bx, by);
      g.lineTo(bx - 6, by - 3);
      g.lineTo(bx - 6, by + 3);
      g.fill();
    }

    // marked ranges (M)
    for (const [ma, mb] of S.marks) {
      const a = LABEL_W + (ma - v0) * k, b = LABEL_W + (mb - v0) * k;
      if (b < LABEL_W || a > W) continue;
      g.fillStyle = 'rgba(244,180,0,0.14)';
      g.fillRect(Math.max(LABEL_W, a), AXIS_H, Math.min(W, b) - Math.max(LABEL_W, a), H);
      g.fillStyle = '#f4b400';
      g.fillRect(Math.max(LABEL_W, a), AXIS_H, 1, H);
      g.fillRect(Math.min(W, b), AXIS_H, 1, H);
    }
    // select mode's box
    if (S.band) {
      const a = LABEL_W + (Math.min(S.band.t0, S.band.t1) - v0) * k;
      const b = LABEL_W + (Math.max(S.band.t0, S.band.t1) - v0) * k;
      const ya = AXIS_H + Math.min(S.band.y0, S.band.y1) - scroll, yb = AXIS_H + Math.max(S.band.y0, S.band.y1) - scroll;
      g.fillStyle = 'rgba(26,115,232,0.12)';
      g.fillRect(Math.max(LABEL_W, a), ya, Math.min(W, b) - Math.max(LABEL_W, a), yb - ya);
      g.strokeStyle = P.accent;
      g.strokeRect(Math.max(LABEL_W, a), ya, Math.min(W, b) - Math.max(LABEL_W, a), yb - ya);
    }
    // range selection
    if (S.range) {
      const a = LABEL_W + (Math.min(S.range[0], S.range[1]) - v0) * k;
      const b = LABEL_W + (Math.max(S.range[0], S.range[1]) - v0) * k;
      g.fillStyle = 'rgba(26,115,232,0.12)';
      g.fillRect(Math.max(LABEL_W, a), AXIS_H, Math.min(W, b) - Math.max(LABEL_W, a), H);
      g.strokeStyle = P.accent;
      g.beginPath();
      g.moveTo(a, AXIS_H); g.lineTo(a, H);
      g.moveTo(b, AXIS_H); g.lineTo(b, H);
      g.stroke();
    }

    S.arrows = nf;
    paintAxis(W, k, v0, v1);
    S.paintMs = performance.now() - tPaint;
    window.__xpvLastPaintMs = S.paintMs;
  }

  function paintCounter(t, y, h, k, v0, W) {
    const P = palette();
    const s = t.samples;
    if (!s.length) return;
    const max = t.max || 1;
    g.fillStyle = colorFor(t.name);
    g.beginPath();
    const base = y + h - 3;
    let started = false;
    for (let i = 0; i < s.length; i++) {
      const x = Math.max(LABEL_W, Math.min(W, LABEL_W + (s[i][0] - v0) * k));
      const xn = i + 1 < s.length ? Math.max(LABEL_W, Math.min(W, LABEL_W + (s[i + 1][0] - v0) * k)) : W;
      const vy = base - (h - 8) * s[i][1] / max;
      if (!started) { g.moveTo(x, base); started = true; }
      g.lineTo(x, vy);
      g.lineTo(xn, vy);
    }
    g.lineTo(W, base);
    g.closePath();
    g.fill();
    g.fillStyle = P.muted;
    g.fillText(`max ${max.toLocaleString()}`, W - 120, y + 8);
  }

  function paintAxis(W, k, v0, v1) {
    const P = palette();
    g.fillStyle = P.panel;
    g.fillRect(0, 0, W, AXIS_H);
    g.fillStyle = P.border;
    g.fillRect(0, AXIS_H - 1, W, 1);
    const step = niceStep((v1 - v0) / Math.max(2, plotW() / 110));
    const t0 = S.full[0];
    const first = Math.ceil((v0 - t0) / step) * step + t0;
    g.fillStyle = P.muted;
    g.strokeStyle = P.border;
    for (let t = first; t <= v1; t += step) {
      const x = LABEL_W + (t - v0) * k;
      g.fillRect(x, AXIS_H - 8, 1, 7);
      g.fillText(fmtDur(t - t0), x + 3, 10);
    }
    // step markers on the axis
    for (const st of S.steps) {
      const x = LABEL_W + (st[0] - v0) * k;
      if (x < LABEL_W || x > W) continue;
      g.fillStyle = P.accent;
      g.fillRect(x, AXIS_H - 12, 1, 11);
      const x1 = LABEL_W + (st[0] + st[1] - v0) * k;
      if (x1 - x > 40) {
        const n = Math.floor((x1 - x - 6) / CHAR_W);
        g.fillText(String(st[2]).slice(0, n), x + 3, AXIS_H - 8);
      }
    }
    g.fillStyle = P.panel;
    g.fillRect(0, 0, LABEL_W, AXIS_H - 1);
    g.fillStyle = P.text;
    g.fillText(`${fmtDur(v1 - v0)} shown`, 6, 10);
    if (S.range) {
      g.fillStyle = P.accent;
      g.fillText(`range ${fmtDur(Math.abs(S.range[1] - S.range[0]))}`, 6, 22);
    }
  }

  function hit(x, y) {
    const b = S.boxXYW, h = LANE_H - 2;
    for (let i = S.boxes.length - 1; i >= 0; i--) {
      const bx = b[3 * i], by = b[3 * i + 1];
      if (x >= bx - 1 && x <= bx + b[3 * i + 2] + 1 && y >= by && y <= by + h) return S.boxes[i];
    }
    return null;
  }
  function rowAt(y) {
    const cy = y - AXIS_H + box.scrollTop;
    for (const r of S.layout) if (cy >= r.y && cy < r.y + r.h) return r;
    return null;
  }

  return { ingest, layout, paint, hit, rowAt, plotW, xOf, tOf, context: g };
}
