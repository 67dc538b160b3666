// kernel_stats.test.js - the GPU Kernel Stats page in the browser.
//
// Demo logdir (tests/browser.sh): the 1-host synthetic run has GPU kernels
// with kernel_details, so the page must show the summary cards, the pies of
// top kernels and ops, and the full table; the test sorts, filters, pages,
// clicks a pie slice (filters the table), hovers it (tooltip) and exports
// the CSV, comparing every count with the server's own JSON.  Real profiles
// (XPV_REAL_URL): the TF GPU run has 1000 kernel rows (the top-1000 cut), a
// JAX run on AMD GPUs has its kernels listed.  Every test asserts no
// external request and no page error.
const fs = require('fs');
const { test, serverTables, checkEmptyTool, tableCount, columnTexts: tableColumn, num, pointOn } = require('./harness');

const RUN1 = '2024_01_01_00_00_01';
const TABLE = '.xpv-kstats-table';

async function openTool(t, base, run) {
  const page = await t.open(base + '#run=' + encodeURIComponent(run) + '&tool=kernel_stats');
  await t.waitText(page, '#xpv-page h2', /GPU Kernel Stats/);
  await t.waitIdle(page);
  await t.waitFor(page, `${TABLE} tbody tr`);
  return page;
}

// The server's rows as objects.
const serverRows = (page, run) => serverTables(page, run, 'kernel_stats');

const countText = (page) => tableCount(page, TABLE);

async function waitCount(page, re) {
  await page.waitForFunction(([sel, src]) => new RegExp(src).test(document.querySelector(sel).textContent),
    [`${TABLE} .xpv-table-count`, re.source]);
}

const columnTexts = (page, id) => tableColumn(page, TABLE, id);
// Full text of a cell (long names are cut with an ellipsis; the title holds
// the whole text).
const columnFull = (page, id) => tableColumn(page, TABLE, id, true);

test('kernel stats: pies, sort, filter, pages, CSV', async (t) => {
  const page = await openTool(t, t.base, RUN1);
  const rows = await serverRows(page, RUN1);
  t.ok(rows.length > 25, `demo run has ${rows.length} kernel rows`);
  t.eq(await countText(page), `${rows.length} rows`, 'every kernel row is in the table');
  const launches = rows.reduce((s, r) => s + r.occurrences, 0);
  t.match(await page.locator('[data-key="total"]').innerText(),
    new RegExp(`${launches.toLocaleString('en-US')} launches of ${rows.length} kernels`), 'summary card');
  const tc = rows.filter((r) => r.is_kernel_using_tensor_core).reduce((s, r) => s + r.total_duration_us, 0);
  const total = rows.reduce((s, r) => s + r.total_duration_us, 0);
  t.eq(await page.locator('[data-key="tensorcore"] .xpv-card-value').innerText(),
    `${(100 * tc / total).toFixed(1)}%`, 'TensorCore share card');

  // pies
  const kpie = '.xpv-kstats-pie[data-by="kernel_name"]';
  t.ok(await page.locator(`${kpie} path.xpv-slice`).count() >= 2, 'kernel pie has slices');
  t.ok(await page.locator('.xpv-kstats-pie[data-by="op_name"] path.xpv-slice').count() >= 2, 'op pie has slices');
  // the largest slice is the kernel with the largest summed duration
  const byName = new Map();
  for (const r of rows) byName.set(r.kernel_name, (byName.get(r.kernel_name) || 0) + r.total_duration_us);
  const top = [...byName].sort((a, b) => b[1] - a[1])[0][0];
  t.eq(await page.locator(`${kpie} path.xpv-slice`).first().getAttribute('data-label'), top, 'largest slice');

  // server order: rank 1..n, total duration descending
  t.eq((await columnTexts(page, 'rank')).slice(0, 3), ['1', '2', '3'], 'rank order');
  // sort by total duration ascending (second click)
  const durBtn = page.locator(`${TABLE} th[data-col="total_duration_us"] button`);
  await durBtn.click();
  await durBtn.click();
  let v = (await columnTexts(page, 'total_duration_us')).map(num);
  t.ok(v.length === 25 && v.every((x, i) => i === 0 || v[i - 1] <= x), 'duration sorted ascending');
  t.eq(v[0], Math.min(...rows.map((r) => r.total_duration_us)), 'smallest duration first');
  // sort by registers descending (first click on a number column)
  await page.click(`${TABLE} th[data-col="registers_per_thread"] button`);
  v = (await columnTexts(page, 'registers_per_thread')).map(num);
  t.eq(v[0], Math.max(...rows.map((r) => r.registers_per_thread)), 'most registers first');
  t.ok(v.every((x, i) => i === 0 || v[i - 1] >= x), 'registers sorted descending');
  // booleans shown as Yes/No
  t.ok((await columnTexts(page, 'is_kernel_using_tensor_core')).every((s) => s === 'Yes' || s === 'No'),
    'TensorCore column shows Yes/No');

  // page size All shows every row
  await page.selectOption(`${TABLE} .xpv-table-pager select`, '0');
  await page.waitForFunction(([sel, n]) => document.querySelectorAll(sel).length === n,
    [`${TABLE} tbody tr`, rows.length]);
  t.ok(true, 'all rows on one page');
  await page.selectOption(`${TABLE} .xpv-table-pager select`, '25');

  // filter by kernel / op name
  await page.fill(`${TABLE} .xpv-table-filter`, 'volta');
  const want = rows.filter((r) => /volta/i.test(r.kernel_name) || /volta/i.test(r.op_name)).length;
  t.ok(want > 0, `${want} volta rows in the data`);
  await waitCount(page, new RegExp(`^${want} of`));
  t.ok((await columnFull(page, 'kernel_name')).every((s) => /volta/i.test(s)), 'shown rows match');
  await page.fill(`${TABLE} .xpv-table-filter`, '');
  await waitCount(page, new RegExp(`^${rows.length} rows`));

  // hover + click the largest kernel slice: tooltip, then the table filters to it
  const pt = await pointOn(page, `${kpie} path.xpv-slice`);
  t.ok(pt, 'a point over the largest slice');
  await page.mouse.move(pt.x, pt.y);
  await t.waitText(page, `${kpie} .xpv-tooltip`, /\d (ns|µs|ms|s)\d.*%/); // a duration in its readable unit, then the share
  await page.mouse.click(pt.x, pt.y);
  t.eq(await page.inputValue(`${TABLE} .xpv-table-filter`), top, 'slice click fills the filter');
  const topRows = rows.filter((r) => r.kernel_name.toLowerCase().includes(top.toLowerCase()) ||
    (r.op_name || '').toLowerCase().includes(top.toLowerCase())).length;
  await waitCount(page, new RegExp(`^${topRows} of`));
  t.ok((await columnFull(page, 'kernel_name')).every((s) => s.includes(top)), 'rows of that kernel');

  // CSV of the rows shown
  const [dl] = await Promise.all([page.waitForEvent('download'), page.click(`${TABLE} .xpv-table-csv`)]);
  const csv = fs.readFileSync(await dl.path(), 'utf8');
  const lines = csv.split('\r\n').filter(Boolean);
  t.eq(dl.suggestedFilename(), 'kernel_stats.csv', 'CSV file name');
  t.match(lines[0], /^Rank,Kernel Name,Registers per thread,Shared Mem bytes,Block dim,Grid dim/, 'CSV header');
  t.eq(lines.length - 1, topRows, 'CSV holds the filtered rows');
  await t.assertClean(page);
});

test('kernel stats: real profiles', async (t) => {
  if (!t.realBase) t.skip('XPV_REAL_URL not set (no ../shared/testdata/real)');
  const page = await openTool(t, t.realBase, 'tensorflow-profiler/GPU-multi-worker');
  t.eq(await countText(page), '1,000 rows', 'top-1000 kernels');
  t.match(await page.locator('[data-key="total"]').innerText(), /top 1,000 kernels/, 'card says the table is cut');
  await t.assertClean(page);
  const p2 = await openTool(t, t.realBase, 'AMD-AGI-TraceLens/jax08_gemm');
  const rows = await serverRows(p2, 'AMD-AGI-TraceLens/jax08_gemm');
  t.ok(rows.length > 0, 'JAX kernels');
  t.eq(await countText(p2), `${rows.length} rows`, 'all JAX kernels listed');
  await t.assertClean(p2);
});

test('kernel stats: a profile without kernels says so', async (t) => {
  // The same run, with the server's answer emptied on the way (a CPU-only
  // profile's shape: the columns and no row).
  await checkEmptyTool(t, RUN1, 'kernel_stats', /GPU Kernel Stats/, /No GPU kernels were captured/);
});

// At 1600 px every column, the durations included, is in view without
// scrolling sideways; occupancy the profile did not record reads "n/a".
test('kernel stats: all columns visible at 1600 px, occupancy n/a', async (t) => {
  const run = 'tensorflow-profiler/GPU-multi-worker';
  const page = await t.openReal(run, 'kernel_stats',
    { viewport: { width: 1600, height: 1000 }, ready: '.xpv-table-el tbody tr' });
  const fit = await page.evaluate(() => {
    const sc = document.querySelector('.xpv-table-scroll');
    const ths = [...document.querySelectorAll('.xpv-table-el thead tr:first-child th')];
    return { over: sc.scrollWidth - sc.clientWidth, cols: ths.map((th) => th.dataset.col) };
  });
  t.ok(fit.cols.includes('total_duration_us') && fit.cols.includes('max_duration_us'), 'duration columns present');
  t.ok(fit.over <= 1, `no sideways scrolling (${fit.over} px over)`);
  const occ = await page.$$eval('.xpv-table-el tbody td[data-col="occupancy_pct"]', (tds) => tds.map((td) => td.textContent));
  t.ok(occ.length > 0 && occ.every((v) => v === 'n/a'), 'occupancy not recorded: n/a');
  await t.assertClean(page);
});
