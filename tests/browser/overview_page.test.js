// overview_page.test.js - the Overview Page in the browser.
//
// Demo logdir (tests/browser.sh): the 1-host synthetic run has 8 steps with
// input waits, so the page must show the summary cards, the stacked step
// graph with red (Input) and green (Device compute) bars and a tooltip, the
// recommendation, the run environment and the top-ops table; the tool links
// navigate.  The 2-host run is shown as ALL_HOSTS.  Real profiles (when
// XPV_REAL_URL is set): a pre-grouped TF GPU run has one step; a JAX run
// without step markers shows the diagnostics instead of a graph.
const { test } = require('./harness');

async function openTool(t, base, run, tool) {
  const page = await t.open(base + '#run=' + encodeURIComponent(run) + '&tool=' + tool);
  await t.waitText(page, '#xpv-page h2', /Overview Page/);
  await t.waitIdle(page);
  return page;
}

test('overview: 1-host synthetic run', async (t) => {
  const page = await openTool(t, t.base, '2024_01_01_00_00_01', 'overview_page');
  const cards = await page.locator('.xpv-summary .xpv-card').count();
  t.ok(cards >= 6, `summary cards (${cards})`);
  await t.waitText(page, '.xpv-card-steptime', /ms/);
  t.match(await page.locator('.xpv-card-steptime').innerText(), /8 steps/, 'step count on the card');
  const input = page.locator('path.xpv-bars[data-series="Input"]');
  const compute = page.locator('path.xpv-bars[data-series="Device compute"]');
  t.eq(await input.count(), 1, 'Input series drawn');
  t.eq(await compute.count(), 1, 'Device compute series drawn');
  t.eq((await input.getAttribute('fill')).toLowerCase(), '#db4437', 'Input is red');
  t.eq((await compute.getAttribute('fill')).toLowerCase(), '#0f9d58', 'Device compute is green');
  // tooltip on hover
  const box = await page.locator('.xpv-step-chart .xpv-overlay').boundingBox();
  await page.mouse.move(box.x + 5, box.y + box.height / 2);
  await t.waitText(page, '.xpv-tooltip', /Step .*ms/);
  t.match(await page.locator('.xpv-rec-statement').innerText(), /input-bound/, 'input verdict');
  t.ok(await page.locator('.xpv-top-ops tbody tr').count() >= 1, 'top ops rows');
  t.match(await page.locator('.xpv-run-env dd[data-key="device_type"]').innerText(), /GPU/, 'device type');
  t.eq(await page.locator('.xpv-diagnostics').count(), 0, 'no diagnostics for a clean run');
  // a tool link navigates to that page
  await page.locator('a.xpv-tool-link[data-tool="input_pipeline_analyzer"]').click();
  await t.waitText(page, '#xpv-page h2', /Input Pipeline Analyzer/);
  t.match(page.url(), /tool=input_pipeline_analyzer/, 'hash follows');
  await t.assertClean(page);
});

test('overview: 2-host run is ALL_HOSTS', async (t) => {
  const page = await openTool(t, t.base, 'multi/2024_01_02_00_00_00', 'overview_page');
  t.eq(await page.locator('#xpv-host').inputValue(), 'ALL_HOSTS', 'ALL_HOSTS selected');
  t.eq(await page.locator('.xpv-run-env dd[data-key="host_count"]').innerText(), '2', 'two hosts');
  t.match(await page.locator('.xpv-card-steptime').innerText(), /6 steps/, 'common steps');
  await t.assertClean(page);
});

test('overview: real profiles', async (t) => {
  if (!t.realBase) t.skip('XPV_REAL_URL not set (no ../shared/testdata/real)');
  const page0 = await t.open(t.realBase);
  const runs = await page0.evaluate(async () => (await fetch('data/plugin/profile/runs')).json());
  const gpu = runs.find((r) => /GPU-multi-worker/.test(r));
  const jax = runs.find((r) => /jax08_gemm/.test(r));
  t.ok(gpu && jax, 'real runs listed');
  const page = await openTool(t, t.realBase, gpu, 'overview_page');
  t.match(await page.locator('.xpv-card-steptime').innerText(), /1 step\b/, 'one step');
  // TF 2.4 wrote no device_vendor: XProf's device type is plain "GPU".
  t.eq((await page.locator('.xpv-run-env dd[data-key="device_type"]').innerText()).trim(), 'GPU',
    'device type of a vendorless V100 plane');
  await t.assertClean(page);
  const p2 = await openTool(t, t.realBase, jax, 'overview_page');
  await t.waitFor(p2, '.xpv-no-steps');
  t.match(await p2.locator('.xpv-diagnostics').innerText(), /No step marker observed/, 'diagnostic');
  t.match(await p2.locator('.xpv-card-precision').innerText(), /n\/a/, 'no step compute: precision n/a, not 0% and 0%');
  t.match(await page.locator('.xpv-card-precision').innerText(), /16-bit \d/, 'TF run: the precision split');
  await t.assertClean(p2);
});

// The step-time categories XProf shows as cards, and the top-ops table
// whole at 1600 px.
test('overview: output, compilation and device-to-device cards; top ops in view', async (t) => {
  const run = 'tensorflow-profiler/GPU-multi-worker';
  const page = await t.openReal(run, 'overview_page',
    { viewport: { width: 1600, height: 1000 }, ready: '.xpv-top-ops .xpv-table-el tbody tr' });
  for (const c of ['xpv-card-output', 'xpv-card-compile', 'xpv-card-d2d']) {
    t.ok(await page.locator(`.${c}`).count() === 1, `${c} shown`);
  }
  const over = await page.evaluate(() => {
    const sc = document.querySelector('.xpv-top-ops .xpv-table-scroll');
    return sc.scrollWidth - sc.clientWidth;
  });
  t.ok(over <= 1, `top ops table fits (${over} px over)`);
  await t.assertClean(page);
});
