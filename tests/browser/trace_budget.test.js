// trace_budget.test.js - the viewport budget through the page, on a real
// profile (openxla-xprof tpu_inference_2: JAX on TPU, many rows).
//
// The page's trace window requests are sent with a small max_events (1500,
// appended by request interception: the real profile is small next to the
// 1 GB ones the default 50k is for), then every answer the page receives
// holds at most that many events (counted in the JSON, not from its own
// returnedEventsSize alone), says how the budget applied, and leaves no row
// blank that has events in the same window without the budget (fetched
// from the server for comparison).  The page still draws the rows and
// zooms.  Not timed.  Needs XPV_REAL_URL.
const { test } = require('./harness');

const RUN = 'openxla-xprof/tpu_inference_2';
const BUDGET = 1500;

// (The page asks for the compact answer, format=columns: its complete
// events are columns, the rest stays in traceEvents.)
function rowsOf(d) {
  const rows = new Set();
  for (const e of d.traceEvents || []) if (e.ph === 'X') rows.add(`${e.pid}/${e.tid}`);
  const c = d.columns;
  if (c) for (const r of c.row) rows.add(`${c.rows[r][1]}/${c.rows[r][2]}`);
  return rows;
}

// Events of an answer as the server counts them: complete and counter
// events, and each async event once (XProf writes one as a "b" and, for a
// flow in and out, an "e" with the same pid, cat and id).
function eventsOf(d) {
  const evs = d.traceEvents || [];
  const async = new Set(evs.filter((e) => e.ph === 'b' || e.ph === 'e').map((e) => `${e.pid}/${e.cat}/${e.id}`));
  return evs.filter((e) => e.ph === 'X' || e.ph === 'C').length + async.size + (d.columns ? d.columns.row.length : 0);
}

test('trace viewer: events per viewport within the budget on a real TPU profile', async (t) => {
  if (!t.realBase) return t.skip('XPV_REAL_URL not set (../shared/testdata/real absent)');
  // A page of the server first (no tool), so the interception is in place
  // before the trace viewer's first request.
  const page = await t.open(`${t.realBase}healthz`, { viewport: { width: 1600, height: 900 } });
  const answers = [];
  await page.route(/\/data\?.*tag=trace_viewer(%40|@)/, async (route) => {
    const u = route.request().url();
    if (!/start_time_ms|resolution/.test(u) || /search|unique_id|max_events/.test(u)) return route.continue();
    const budgeted = `${u}&max_events=${BUDGET}`;
    const resp = await route.fetch({ url: budgeted });
    const body = await resp.text();
    answers.push({ url: budgeted, body });
    await route.fulfill({ response: resp, body });
  });
  await page.goto(`${t.realBase}#run=${encodeURIComponent(RUN)}&tool=trace_viewer`);
  await t.waitFor(page, '.xpv-tool-root[data-ready="1"] canvas.xpv-trace-canvas');
  await t.waitIdle(page);
  const cv = await page.$('canvas.xpv-trace-canvas');
  const cb = await cv.boundingBox();
  await page.mouse.click(cb.x + cb.width / 2, cb.y + 10);
  for (let i = 0; i < 3; i++) await page.keyboard.press('w');
  await page.waitForTimeout(300);
  await t.waitIdle(page);
  t.ok(answers.length >= 2, `the page fetched ${answers.length} trace windows`);
  let bound = 0;
  for (const a of answers.slice()) {
    const d = JSON.parse(a.body);
    const n = eventsOf(d);
    t.ok(n <= BUDGET && d.returnedEventsSize === n,
      `${n} events in the answer (returnedEventsSize ${d.returnedEventsSize}) <= ${BUDGET}`);
    if (!d.viewportBudget) continue;
    bound++;
    t.eq(d.viewportBudget.maxEvents, BUDGET, 'viewportBudget names the budget');
    t.ok(d.viewportBudget.visibleEvents > BUDGET,
      `the budget bound: ${d.viewportBudget.visibleEvents} events visible by the rule alone`);
    // The same window without the budget: no row it fills goes blank.
    const full = await page.evaluate(async (u) => (await fetch(u)).json(),
      a.url.replace(`max_events=${BUDGET}`, 'max_events=5000000'));
    t.eq(full.returnedEventsSize, d.viewportBudget.visibleEvents,
      'visibleEvents = the answer without the budget');
    const want = rowsOf(full), got = rowsOf(d);
    const blank = [...want].filter((r) => !got.has(r));
    t.ok(want.size > 20 && blank.length === 0,
      `all ${want.size} rows with events keep some (${blank.length} blank)`);
  }
  t.ok(bound >= 1, `the budget bound on ${bound} of the page's answers`);
  t.match(await page.textContent('.xpv-trace-status'), /coarser detail to stay within 1.?500 events/,
    'the status line says the budget applied');
  const ps = await page.evaluate(() => document.querySelector('.xpv-tool-root').xpvTrace.paintStats());
  t.ok(ps.boxes > 100 && ps.loaded <= BUDGET, `the page drew ${ps.boxes} boxes of ${ps.loaded} loaded events`);
  // The first page (healthz) has no favicon: the browser's 404 for it.
  const other = page.xpv.httpErrors.filter((e) => !/favicon\.ico$/.test(e));
  t.eq(other, [], 'no HTTP error but the favicon of the healthz page');
  await t.assertClean(page, { allowConsole: [/status of 404/], allowHttp: [/favicon\.ico$/] });
});
