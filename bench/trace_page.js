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
//                request alone (sent -> answer parsed and ingested)
//   zoom steps   each W key press (zoom in about 1.6x, like the page's
//                keyboard zoom) -> the refetched window drawn: the time to
//                the next painted frame after its answer, and the paint
//                alone (ms per frame)
//   events       per viewport answer (returnedEventsSize), max
//   JS heap      used after the zooms (CDP Performance.getMetrics)
// Run it twice on a fresh server to tell the cold load (first run: decode
// + trace index) from the page (second run: the server answers from its
// cache); the page's own work is the second run's figure.
const path = require('path');
const { chromium } = require(path.join(__dirname, '../tests/browser/node_modules/playwright-core'));

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
  const answers = [];           // {t0, t1, events, bytes}
  const sent = new Map();
  page.on('request', (r) => { if (/tag=trace_viewer%40|tag=trace_viewer@/.test(r.url())) sent.set(r, Date.now()); });
  page.on('requestfinished', async (r) => {
    if (!sent.has(r)) return;
    const resp = await r.response();
    let events = -1, bytes = 0;
    try {
      const body = await resp.body();
      bytes = body.length;
      const m = /"returnedEventsSize":(\d+)/.exec(body.toString('utf8', 0, Math.min(body.length, 4096)));
      if (m) events = Number(m[1]);
    } catch (e) { /* aborted */ }
    answers.push({ t0: sent.get(r), t1: Date.now(), events, bytes, url: r.url() });
  });
  const frag = `#run=${encodeURIComponent(run)}&tool=trace_viewer` + (host ? `&host=${encodeURIComponent(host)}` : '');
  const tNav = Date.now();
  await page.goto(url + frag);
  await page.waitForSelector('.xpv-tool-root[data-ready="1"] canvas.xpv-trace-canvas', { timeout: 600000 });
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
  const tFirst = Date.now() - tNav;
  const ps0 = await page.evaluate(() => document.querySelector('.xpv-tool-root').xpvTrace.paintStats());
  const a0 = answers[0];
  console.log(`first view      ${tFirst} ms navigation -> drawn (first viewport request ${a0 ? a0.t1 - a0.t0 : '?'} ms,` +
    ` ${a0 ? a0.events : '?'} events, ${a0 ? (a0.bytes / 1e6).toFixed(2) : '?'} MB as received); paint ${ps0.ms.toFixed(1)} ms,` +
    ` ${ps0.boxes} boxes of ${ps0.loaded} loaded`);
  const cv = await page.$('canvas.xpv-trace-canvas');
  const cb = await cv.boundingBox();
  await page.mouse.click(cb.x + cb.width / 2, cb.y + 10);
  const zoom = [];
  for (let i = 0; i < steps; i++) {
    const before = answers.length;
    const t0 = Date.now();
    await page.keyboard.press('w');
    // the page repaints at once (old data), then refetches after a 120 ms
    // debounce when the view needs a finer window; wait for that answer
    // when one is sent, then for the frame that draws it
    await page.waitForTimeout(150);
    const deadline = Date.now() + 60000;
    while (Date.now() < deadline) {
      const busy = await page.evaluate(() => {
        const r = document.querySelector('.xpv-tool-root');
        return !!document.querySelector('.xpv-trace-status') &&
          /Loading/.test(document.querySelector('.xpv-trace-status').textContent);
      });
      if (!busy) break;
      await page.waitForTimeout(10);
    }
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    const dt = Date.now() - t0;
    const ps = await page.evaluate(() => document.querySelector('.xpv-tool-root').xpvTrace.paintStats());
    const a = answers.length > before ? answers[answers.length - 1] : null;
    zoom.push({ dt, fetched: !!a, req: a ? a.t1 - a.t0 : 0, events: a ? a.events : 0, paint: ps.ms });
  }
  for (const [i, z] of zoom.entries())
    console.log(`zoom step ${i + 1}     ${z.dt} ms key -> drawn (incl. the page's 120 ms debounce)` +
      (z.fetched ? `; refetch ${z.req} ms, ${z.events} events` : '; no refetch') + `; paint ${z.paint.toFixed(1)} ms`);
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Performance.enable');
  const met = (await cdp.send('Performance.getMetrics')).metrics;
  const heap = met.find((m) => m.name === 'JSHeapUsedSize');
  const maxEv = Math.max(...answers.map((a) => a.events));
  console.log(`events          max ${maxEv} per viewport answer over ${answers.length} answers`);
  console.log(`JS heap         ${(heap.value / 1e6).toFixed(1)} MB used`);
  await browser.close();
}

main().catch((e) => { console.error(e); process.exit(1); });
