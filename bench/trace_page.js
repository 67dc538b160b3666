// trace_page.js - the trace viewer page's timings in Debian chromium
// (playwright-core from tests/browser/node_modules; not a test: it prints
// figures, it asserts nothing).
//
//   node bench/trace_page.js URL RUN [HOST] [zoom_steps]
//
// URL is a running xpview (e.g. http://127.0.0.1:6006/), RUN a run of it.
// Figures, at a 1920x1080 window:
//   first view   navigation -> the timeline drawn with the first viewport
//                (data-ready and a painted frame), and the first viewport
//                request alone (sent -> answer received)
//   zoom steps   each W key press (zoom in 1.4x, like the page's keyboard
//                zoom) -> the new window drawn (the page's wait included),
//                with where it came from (the server; an answer the page
//                asked for ahead while zooming in at one point; one it
//                kept), or, when the view needs no new window, the next
//                painted frame; and the paint alone (ms per frame)
//   split        of each fetch, from the page: server (request sent ->
//                first byte, Resource Timing), transfer, request+parse and
//                ingest (the page's xpvTrace.fetchStats, when it has it)
//   events       loaded per answer (the page's paintStats), max
//   JS heap      used after the zooms (CDP Performance.getMetrics)
// Answer bodies are not read through the DevTools protocol (that copy of
// several MB per answer slowed the page it measured).
// Run it twice on a fresh server to tell the cold load (first run: decode
// + trace index) from the page (second run: the server answers from its
// cache); the page's own work is the second run's figure.  Zooms on the
// same views hit the server's answer cache on later runs: SHIFT_PX (env,
// default 0) moves the mouse that far right of the canvas centre so a
// run zooms around another point; MOVE_PX (env) moves the mouse that far
// left and right of it in turn before each key press, so that each step
// zooms at another point (a window the page asked for ahead at the last
// point then seldom serves).
const path = require('path');
const { chromium } = require(path.join(__dirname, '../tests/browser/node_modules/playwright-core'));

const trace = (page, fn) => page.evaluate((f) => {
  const h = document.querySelector('.xpv-tool-root').xpvTrace;
  return h[f] ? h[f]() : null;
}, fn);

// The page's last window fetch split up.
async function fetchBreakdown(page) {
  return page.evaluate(() => {
    const r = performance.getEntriesByType('resource').filter((e) => /trace_viewer(%40|@)/.test(e.name)).pop();
    const f = document.querySelector('.xpv-tool-root').xpvTrace.fetchStats;
    const st = f ? f() : null;
    if (!r) return '';
    const srv = r.responseStart - r.requestStart, xfer = r.responseEnd - r.responseStart;
    return `server ${srv.toFixed(0)} ms, transfer ${xfer.toFixed(0)} ms, ` +
      (st ? `request+parse ${st.requestMs.toFixed(0)} ms, ingest ${st.ingestMs.toFixed(0)} ms, ` : '') +
      `${(r.encodedBodySize / 1e6).toFixed(2)} MB on the wire`;
  });
}

const frame = (page) => page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));

async function main() {
  const [url, run, host, stepsArg] = process.argv.slice(2);
  if (!url || !run) {
    console.error('usage: node bench/trace_page.js URL RUN [HOST] [zoom_steps]');
    process.exit(2);
  }
  const steps = Number(stepsArg) || 8;
  const browser = await chromium.launch({ executablePath: process.env.XPV_CHROMIUM || '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--no-first-run'] });
  const page = await browser.newPage({ viewport: { width: 1920, height: 1080 } });
  const answers = [];           // {t0, t1}
  const sent = new Map();
  let nSent = 0;
  page.on('request', (r) => {
    if (/tag=trace_viewer%40|tag=trace_viewer@/.test(r.url())) { sent.set(r, Date.now()); nSent++; }
  });
  page.on('requestfinished', (r) => {
    if (sent.has(r)) answers.push({ t0: sent.get(r), t1: Date.now() });
  });
  let nFailed = 0;              // aborted by the page (a newer view)
  page.on('requestfailed', (r) => { if (sent.has(r)) nFailed++; });
  const frag = `#run=${encodeURIComponent(run)}&tool=trace_viewer` + (host ? `&host=${encodeURIComponent(host)}` : '');
  const tNav = Date.now();
  await page.goto(url + frag);
  await page.waitForSelector('.xpv-tool-root[data-ready="1"] canvas.xpv-trace-canvas', { timeout: 600000 });
  await frame(page);
  const tFirst = Date.now() - tNav;
  const ps0 = await trace(page, 'paintStats');
  const fs0 = await fetchBreakdown(page);
  const a0 = answers[0];
  console.log(`first view      ${tFirst} ms navigation -> drawn (first viewport request ${a0 ? a0.t1 - a0.t0 : '?'} ms,` +
    ` ${ps0.loaded} events); paint ${ps0.ms.toFixed(1)} ms, ${ps0.boxes} boxes; ${fs0}`);
  const cv = await page.$('canvas.xpv-trace-canvas');
  const cb = await cv.boundingBox();
  await page.mouse.click(cb.x + cb.width / 2 + Number(process.env.SHIFT_PX || 0), cb.y + 10);
  const zoom = [];
  const movePx = Number(process.env.MOVE_PX || 0);
  const loaded = [ps0.loaded];
  for (let i = 0; i < steps; i++) {
    // A step drew new data when the page's fetched window changed: from
    // the server, from an answer it asked for ahead (zooming in at one
    // point), or from one it kept; else it redrew the old data.
    const state = () => page.evaluate(() => {
      const s = document.querySelector('.xpv-trace-status');
      const h = document.querySelector('.xpv-tool-root').xpvTrace;
      return { loading: !!s && /Loading/.test(s.textContent), f: JSON.stringify(h.fetched()),
        st: h.fetchStats ? h.fetchStats() : null };
    });
    const f0 = (await state()).f;
    if (movePx) {
      // zoom somewhere else each step (MOVE_PX): what was asked ahead at
      // the last point seldom covers the new one
      const x = cb.x + cb.width / 2 + Number(process.env.SHIFT_PX || 0) + (i % 2 ? -movePx : movePx);
      await page.mouse.move(x, cb.y + 10);
    }
    const t0 = Date.now();
    await page.keyboard.press('w');
    let st;
    for (;;) {
      st = await state();
      if (!st.loading && (st.f !== f0 || Date.now() - t0 > 200)) break;
      if (Date.now() - t0 > 60000) break;
      await page.waitForTimeout(5);
    }
    await frame(page);
    const fetched = st.f !== f0;
    const dt = Date.now() - t0;
    const from = !fetched ? '' : st.st && st.st.kept ? 'kept' : st.st && st.st.ahead ? 'asked ahead' : 'server';
    const ps = await trace(page, 'paintStats');
    if (fetched) loaded.push(ps.loaded);
    zoom.push({ dt, fetched, from, req: st.st ? st.st.requestMs : 0, events: ps.loaded, paint: ps.ms,
      split: from === 'server' ? await fetchBreakdown(page) : '' });
  }
  for (const [i, z] of zoom.entries())
    console.log(`zoom step ${i + 1}     ${z.fetched ? `${z.dt} ms key -> drawn` : 'no refetch (old data redrawn)'}` +
      (z.fetched ? `; new window from ${z.from}: waited ${z.req.toFixed(0)} ms, ${z.events} events` +
        (z.split ? ` (${z.split})` : '') : '') +
      `; paint ${z.paint.toFixed(1)} ms`);
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Performance.enable');
  const met = (await cdp.send('Performance.getMetrics')).metrics;
  const heap = met.find((m) => m.name === 'JSHeapUsedSize');
  console.log(`events          max ${Math.max(...loaded)} loaded per answer over ${answers.length} answers`);
  console.log(`JS heap         ${(heap.value / 1e6).toFixed(1)} MB used`);
  await browser.close();
}

main().catch((e) => { console.error(e); process.exit(1); });
