// input_pipeline.test.js - the Input Pipeline Analyzer page in the browser.
//
// Demo logdir: the synthetic run waits for input and runs tf.data iterators,
// so the page shows the verdict, step statistics, the stacked step graph,
// the per-category table, the host-side breakdown and a sortable input-op
// table.  A real JAX profile without steps shows a sentence, not a blank.
const { test } = require('./harness');

async function openTool(t, base, run) {
  const page = await t.open(base + '#run=' + encodeURIComponent(run) + '&tool=input_pipeline_analyzer');
  await t.waitText(page, '#xpv-page h2', /Input Pipeline Analyzer/);
  await t.waitIdle(page);
  return page;
}

test('input pipeline: synthetic run', async (t) => {
  const page = await openTool(t, t.base, '2024_01_01_00_00_01');
  t.match(await page.locator('.xpv-verdict').innerText(), /input-bound/, 'verdict');
  t.match(await page.locator('.xpv-nextstep').innerText(), /\S/, 'next step');
  t.match(await page.locator('[data-key="steptime_ms_average"]').innerText(), /ms$/, 'average step time');
  t.eq(await page.locator('.xpv-ipa-device path.xpv-bars[data-series="Input"]').count(), 1, 'step graph');
  t.ok(await page.locator('.xpv-ipa-device tbody tr').count() >= 9, 'category table');
  const host = page.locator('.xpv-ipa-host');
  const ops = await host.locator('table tbody tr').count();
  t.ok(ops >= 2, `input ops listed (${ops})`);
  // sortable: clicking "Count" orders the rows, clicking again reverses
  const counts = async () => (await host.locator('table tbody tr td:nth-child(2)').allInnerTexts())
    .map((x) => Number(x.replace(/,/g, '')));
  const sorted = (a, dir) => a.every((v, i) => i === 0 || (dir > 0 ? a[i - 1] <= v : a[i - 1] >= v));
  const hdr = host.locator('th', { hasText: 'Count' }).first().locator('button').first();
  await hdr.click();
  const c1 = await counts();
  const dir = sorted(c1, 1) ? 1 : -1;
  t.ok(sorted(c1, dir), `sorted by count (${c1.join(',')})`);
  await hdr.click();
  const c2 = await counts();
  t.ok(sorted(c2, -dir), `order reversed (${c2.join(',')})`);
  t.ok(await host.locator('.xpv-input-breakdown svg').count() >= 1, 'input-time breakdown chart');
  t.match(await host.locator('table tbody tr').first().innerText(), /Iterator::|Memcpy|Enqueue/, 'input op names');
  t.eq(await page.locator('.xpv-ipa-recs li').count(), 5, 'five tf.data tips');
  // tips carry real anchors opened in a new tab, not HTML text
  t.ok(await page.locator('.xpv-ipa-recs li a[target="_blank"]').count() >= 4, 'doc links');
  t.eq(await page.locator('.xpv-ipa-recs li', { hasText: '<a' }).count(), 0, 'no raw HTML');
  await t.assertClean(page);
});

test('input pipeline: ALL_HOSTS of the 2-host run', async (t) => {
  const page = await openTool(t, t.base, 'multi/2024_01_02_00_00_00');
  const hosts = (await t.selectOptions(page, '#xpv-host')).map((o) => o.value);
  t.ok(hosts.includes('ALL_HOSTS'), 'ALL_HOSTS offered');
  t.eq(await page.locator('.xpv-ipa-device path.xpv-bars[data-series="Device compute"]').count(), 1, 'graph');
  await t.assertClean(page);
});

test('input pipeline: real profile without steps', async (t) => {
  if (!t.realBase) t.skip('XPV_REAL_URL not set (no ../shared/testdata/real)');
  const page0 = await t.open(t.realBase);
  const runs = await page0.evaluate(async () => (await fetch('data/plugin/profile/runs')).json());
  const jax = runs.find((r) => /jax08_gemm/.test(r));
  t.ok(jax, 'jax run listed');
  const page = await openTool(t, t.realBase, jax);
  await t.waitFor(page, '.xpv-no-steps');
  t.match(await page.locator('.xpv-verdict').innerText(), /No step time measured/, 'verdict');
  t.match(await page.locator('.xpv-diagnostics').innerText(), /No step marker observed/, 'diagnostic');
  await t.assertClean(page);
});
