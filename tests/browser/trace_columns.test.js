// trace_columns.test.js - the page reads its trace windows in the compact
// answer (`format=columns`: complete events as columns with a name table)
// and draws what the JSON answer draws.
//
// The page is opened twice on the same views (the whole trace, then three
// W zooms at one point, each settled): once as it is, every trace window
// request checked to ask for format=columns; once with that parameter
// removed from its requests by interception (the server then answers the
// XProf JSON, which lib/timeline.js also reads).  The boxes drawn (name,
// position, size, uid), the events loaded and the status line are the
// same.  On the real JAX TPU profile (many rows, async events, counters)
// when XPV_REAL_URL is set, else on the demo run.  Not timed.
const { test, traceSettle: settle, TRACE_READY, traceHook: hook } = require('./harness');

const REAL_RUN = 'openxla-xprof/tpu_inference_2';
const DEMO_RUN = '2024_01_01_00_00_01';
const WINDOW = /\/data\?.*tag=trace_viewer(%40|@)/;

// The page at `url`; with `json`, its trace requests lose format=columns.
// Returns what it drew at each view and the trace window URLs it sent.
async function drive(t, base, url, json) {
  const page = await t.open(base, { viewport: { width: 1400, height: 900 } });
  const sent = [], compact = [];
  await page.route(WINDOW, async (route) => {
    const u = route.request().url();
    if (!/resolution|start_time_ms/.test(u)) return route.continue();
    sent.push(u);
    const resp = await route.fetch({ url: json ? u.replace(/&format=columns/, '') : u });
    const body = await resp.text();
    compact.push(/"columns":\{/.test(body));
    return route.fulfill({ response: resp, body });
  });
  await page.goto(url);
  await t.waitFor(page, TRACE_READY);
  await settle(t, page);
  const cv = await page.$('canvas.xpv-trace-canvas');
  const cb = await cv.boundingBox();
  await page.mouse.move(cb.x + 600, cb.y + 40);
  const shots = [];
  for (let i = 0; i < 4; i++) {
    if (i) {
      await page.keyboard.press('w');
      await settle(t, page);
    }
    shots.push({
      boxes: await hook(page, 'boxes'),
      loaded: (await hook(page, 'paintStats')).loaded,
      status: await page.textContent('.xpv-trace-status'),
      tracks: await hook(page, 'tracks'),
    });
  }
  await t.assertClean(page);
  await page.close();
  return { shots, sent, compact };
}

test('trace viewer: the compact answer draws what the JSON answer draws', async (t) => {
  const base = t.realBase || t.url('');
  const run = t.realBase ? REAL_RUN : DEMO_RUN;
  const url = `${base}#run=${encodeURIComponent(run)}&tool=trace_viewer`;
  const cols = await drive(t, base, url, false);
  const json = await drive(t, base, url, true);
  t.ok(cols.sent.length >= 2, `the page asked for ${cols.sent.length} trace windows`);
  t.ok(cols.sent.every((u) => /[?&]format=columns(&|$)/.test(u)), 'each of them with format=columns');
  t.ok(cols.compact.every((c) => c) && json.compact.every((c) => !c),
    'the answers were compact as asked, and JSON without format=columns');
  t.ok(json.sent.length === cols.sent.length, 'the same windows asked without it');
  for (let i = 0; i < cols.shots.length; i++) {
    const a = cols.shots[i], b = json.shots[i];
    t.ok(a.boxes.length > 10, `view ${i}: ${a.boxes.length} boxes drawn, ${a.loaded} events loaded`);
    t.eq(a.boxes, b.boxes, `view ${i}: the same boxes (name, x, y, width, uid) from either answer`);
    t.eq(a.loaded, b.loaded, `view ${i}: the same events loaded`);
    t.eq(a.tracks, b.tracks, `view ${i}: the same rows`);
    t.eq(a.status, b.status, `view ${i}: the same status line`);
  }
});
