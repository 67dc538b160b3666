// trace_counters.test.js - counters in the streaming trace answer, in
// XProf's grouped form (trace_events_to_json.h: one "C" event per run of
// samples of a counter, {"event_stats", "entries": [[ts, value...]]}).
//
// No profile the tests serve has counter lines (TPU `_counters_`), so the
// first streaming answer of the demo run gets one grouped counter event
// added on its way to the page; the page must draw it as a counter track
// with both samples, and the server's own answers must stay in the form
// (the C unit tests check what the server writes for a constructed
// counter line).
const { test } = require('./harness');

const RUN = '2024_01_01_00_00_01';

test('trace viewer: grouped counter events become a counter track', async (t) => {
  const page = await t.open(t.url(`#run=${RUN}&tool=overview_page`), { viewport: { width: 1200, height: 800 } });
  await t.waitText(page, '#xpv-page h2', /Overview Page/);
  let added = 0;
  await page.route(/data\/plugin\/profile\/data\?.*tag=trace_viewer(%40|@)/, async (route) => {
    const resp = await route.fetch();
    const json = await resp.json();
    // (the page asks for format=columns: its complete events are columns)
    const pid = json.columns ? json.columns.rows[0][1] : json.traceEvents.find((e) => e.ph === 'X').pid;
    const [s, e] = json.fullTimespan.map((ms) => ms * 1000);
    json.traceEvents.push({ pid, name: 'HBM', ph: 'C', event_stats: 'value',
      entries: [[s, 1024], [(s + e) / 2, 2048]] });
    added++;
    await route.fulfill({ response: resp, json });
  });
  await page.evaluate(() => { location.hash = location.hash.replace('overview_page', 'trace_viewer'); });
  await t.waitFor(page, '.xpv-tool-root[data-ready="1"] canvas.xpv-trace-canvas');
  await t.waitIdle(page);
  t.ok(added > 0, `streaming answers rewritten (${added})`);
  const counters = await page.evaluate(() => document.querySelector('.xpv-tool-root').xpvTrace.counters());
  const hbm = counters.filter((c) => c.name === 'HBM');
  t.eq(hbm.length, 1, 'one HBM counter track');
  t.eq(hbm[0].samples.map((x) => x[1]), [1024, 2048], 'both entries are its samples, in order');
  t.ok(hbm[0].samples[0][0] < hbm[0].samples[1][0], 'entries keep their timestamps');
  await t.assertClean(page);
});
