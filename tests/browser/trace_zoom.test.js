// trace_zoom.test.js - what the trace viewer shows while zooming (demo run).
//
// The page asks the server for the view plus a small margin (not three
// views), keeps drawing the events it has while a zoom's answer is on its
// way (held back here by request interception, so the check does not
// depend on timing), draws the answer when it comes, and a zoom back out
// to a view it has already loaded draws it again without asking the
// server; zooming in at one point, the window the next steps need is
// asked for ahead and drawn from there.  Not timed.
const { test, traceSettle: settle, openTrace, traceHook: hook } = require('./harness');

const RUN = '2024_01_01_00_00_01';
const WINDOW = /\/data\?.*tag=trace_viewer(%40|@).*start_time_ms/;

test('trace viewer: zoom fetches the view, draws old data meanwhile, reuses loaded windows', async (t) => {
  const page = await openTrace(t, t.url(`#run=${RUN}&tool=trace_viewer`), { width: 1400, height: 900 });
  const cv = await page.$('canvas.xpv-trace-canvas');
  const cb = await cv.boundingBox();
  await page.mouse.click(cb.x + 700, cb.y + 10);
  const sent = [];
  page.on('request', (r) => { if (WINDOW.test(r.url())) sent.push(r.url()); });

  // Zoom in until the page asks for a finer window; hold its answer back.
  let release;
  const held = new Promise((r) => { release = r; });
  let holding = true;
  await page.route(WINDOW, async (route) => {
    if (holding) await held;
    await route.continue();
  });
  const before = (await hook(page, 'paintStats')).boxes;
  t.ok(before > 20, `the whole trace drawn (${before} boxes)`);
  const loading = async () => /Loading/.test(await page.textContent('.xpv-trace-status'));
  for (let i = 0; i < 8 && !(await loading()); i++) {
    await page.keyboard.press('w');
    await page.waitForTimeout(150);
  }
  // (the first step in asks ahead for the window that zooming on at the
  // same point will need: the step that needs it waits for that request)
  t.ok(sent.length === 1, `zooming in asked for a finer window (${sent.length} request)`);
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
  t.match(await page.textContent('.xpv-trace-status'), /Loading/, 'the status says the window is loading');
  const during = await hook(page, 'paintStats');
  const view = await hook(page, 'view');
  t.ok(during.boxes > 10, `while it loads the zoomed view still shows the loaded events (${during.boxes} boxes)`);
  const inView = (await hook(page, 'boxes')).every((b) => b.x >= 0 && b.x + b.w <= cb.width + 1);
  t.ok(inView, 'the boxes drawn meanwhile lie on the canvas');

  holding = false;
  release();
  await settle(t, page);
  t.match(await page.textContent('.xpv-trace-status'), /events loaded for/, 'the answer is drawn');
  const f = await hook(page, 'fetched');
  const v = await hook(page, 'view');
  const span = v[1] - v[0];
  t.ok(f.s <= v[0] + 1e-6 && f.e >= v[1] - 1e-6, 'the fetched window covers the view');
  t.ok(f.e - f.s <= 1.25 * span * (1 + 1e-9) + 1e-6,
    `the fetched window is the view and a small margin (${((f.e - f.s) / span).toFixed(3)}x the view, was 3x)`);
  t.ok(view[1] - view[0] >= span - 1e-6 && (await hook(page, 'paintStats')).boxes > 10, 'the zoomed view drawn');

  // Zooming on at the same point: the next window was asked for ahead once
  // this one was drawn, and is drawn without waiting for a request.
  const asked = sent.length;
  t.ok(asked === 2, `the next window asked for ahead (${asked - 1} request)`);
  const f0 = JSON.stringify(await hook(page, 'fetched'));
  for (let i = 0; i < 8 && JSON.stringify(await hook(page, 'fetched')) === f0; i++) {
    await page.keyboard.press('w');
    await settle(t, page);
  }
  t.ok(JSON.stringify(await hook(page, 'fetched')) !== f0, 'zooming on drew a finer window');
  t.ok((await hook(page, 'fetchStats')).kept, 'from the answer asked for ahead, already loaded');
  t.ok(sent.length <= asked + 1, `no other request for it (${sent.length - asked} more: the next one ahead)`);

  // Back out to the whole trace: its answer is kept, no request.
  const n = sent.length;
  for (let i = 0; i < 12; i++) await page.keyboard.press('s');
  await settle(t, page);
  const full = await hook(page, 'full'), v2 = await hook(page, 'view');
  t.eq(v2, full, 'zoomed back out to the whole trace');
  t.eq(sent.length, n, 'no request for a window already loaded');
  t.ok((await hook(page, 'paintStats')).boxes >= before * 0.9, 'the whole trace drawn again');
  t.match(await page.textContent('.xpv-trace-status'), /events loaded/, 'status line');
  await t.assertClean(page);
});
