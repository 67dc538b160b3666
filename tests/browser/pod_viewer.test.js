// pod_viewer.test.js - the pod viewer page.
//
// Demo server, 2-host run (ALL_HOSTS): diagnostics, step slider, stacked
// column chart with one column per worker and the categories stacked, the
// hover card with that worker's breakdown, the per-worker table.  Real
// profiles (XPV_SHARED): the GPU multi-worker run.  Asserts no external
// request and no page error.
const { test, toolData } = require('./harness');

const RUN = 'multi/2024_01_02_00_00_00';

test('pod viewer: slider, stacked columns per worker, hover card (demo, 2 hosts)', async (t) => {
  const page = await t.openDemo(RUN, 'pod_viewer', { host: 'ALL_HOSTS', ready: '.pv-chart svg' });
  const data = await toolData(page, RUN, 'pod_viewer', { host: 'ALL_HOSTS' });
  const steps = data.podStatsSequence.podStatsMap;
  t.ok(steps.length >= 2, `steps (${steps.length})`);
  t.eq(await page.getAttribute('#pv-step', 'max'), String(steps.length - 1), 'slider covers every step');
  t.ok(await page.$('.pv-diagnostics') !== null, 'diagnostics shown');

  // One column per worker: tick labels.
  const ticks = await page.$$eval('.pv-chart .xpv-tick', (ts) => ts.map((x) => x.textContent));
  t.ok(ticks.some((x) => /worker0/.test(x)) && ticks.some((x) => /worker1/.test(x)), 'a column per worker');
  const series = await page.$$eval('.pv-chart path.xpv-bars', (ps) => ps.map((p) => p.dataset.series));
  t.ok(series.includes('Device compute') && series.length >= 2, `stacked categories (${series.join(', ')})`);

  // Hover the first column: the card lists that worker's breakdown.
  const ov = await page.$('.pv-chart .xpv-overlay');
  const b = await ov.boundingBox();
  await page.mouse.move(b.x + b.width * 0.25, b.y + b.height * 0.5);
  await t.waitText(page, '.pv-chart .xpv-tooltip', /worker0/);
  const tip = await page.textContent('.pv-chart .xpv-tooltip');
  t.match(tip, /bottleneck/, 'card names the bottleneck');
  t.match(tip, /Device compute/, 'card lists the categories');
  const rec0 = Object.values(steps[0].podStatsPerCore).find((r) => r.hostName === 'worker0');
  t.match(tip, new RegExp(rec0.bottleneck), 'bottleneck of worker0 at step 0');

  // Table rows = workers; slider moves to the last step.
  t.eq(await page.$$eval('.pv-table tbody tr', (rs) => rs.length), Object.keys(steps[0].podStatsPerCore).length,
    'one table row per worker');
  await page.$eval('#pv-step', (s, v) => { s.value = v; s.dispatchEvent(new Event('input')); }, String(steps.length - 1));
  await t.waitText(page, '.pv-step-label', new RegExp(`step ${steps[steps.length - 1].stepNum} \\(${steps.length} of`));
  t.ok(true, 'slider selects the last step');
  await t.assertClean(page);
});

test('pod viewer: real GPU multi-worker run', async (t) => {
  const run = await t.realRun(/GPU-multi-worker$/);
  const page = await t.openReal(run, 'pod_viewer', { host: 'ALL_HOSTS', ready: '.pv-chart svg' });
  // TF 2.4 wrote no device_vendor: XProf's device type is plain "GPU".
  t.match(await page.textContent('.pv-device'), /Device type: GPU$/, 'device type');
  t.eq(await page.$$eval('.pv-table tbody tr', (rs) => rs.length), 2, 'two workers');
  await t.assertClean(page);
});
