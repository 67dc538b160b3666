// framework_op_stats.test.js - the TensorFlow Stats page in the browser.
//
// Demo logdir (tests/browser.sh): the 1-host synthetic run has host and
// device ops, so the page must show four pies, the summary cards and the
// op table; the test toggles IDLE, switches Host/Device, sorts, filters,
// clicks a pie slice (filters the table), hovers a slice (tooltip) and
// exports the CSV, comparing every count with the server's own JSON.  The
// 2-host run is shown as ALL_HOSTS.  Real profiles (XPV_REAL_URL): the TF
// GPU run lists the device op seen in the file, a JAX run on AMD GPUs shows
// device ops too.  Every test asserts no external request and no page error.
const fs = require('fs');
const { test, serverTables, checkEmptyTool, tableCount, columnTexts: tableColumn, num, pointOn } = require('./harness');

const RUN1 = '2024_01_01_00_00_01';

async function openTool(t, base, run, host) {
  let url = base + '#run=' + encodeURIComponent(run) + '&tool=framework_op_stats';
  if (host) url += '&host=' + encodeURIComponent(host);
  const page = await t.open(url);
  await t.waitText(page, '#xpv-page h2', /TensorFlow Stats|Framework Op Stats/);
  await t.waitIdle(page);
  await t.waitFor(page, '.xpv-tfstats-table tbody tr');
  return page;
}

// The server's JSON for what the page shows: [withIdle, withoutIdle] as
// arrays of row objects.
const serverData = (page, run) => serverTables(page, run, 'framework_op_stats');

const TABLE = '.xpv-tfstats-table';
const countText = (page) => tableCount(page, TABLE);
// Text of column `id` for every row on the current table page.
const columnTexts = (page, id) => tableColumn(page, TABLE, id);

test('tf stats: pies, idle toggle, host/device, sort, filter, CSV', async (t) => {
  const page = await openTool(t, t.base, RUN1);
  const [withIdle, withoutIdle] = await serverData(page, RUN1);
  t.ok(withoutIdle.some((r) => r.host_or_device === 'Device') &&
       withoutIdle.some((r) => r.host_or_device === 'Host'), 'demo run has device and host ops');
  t.eq(withIdle.length - withoutIdle.length, 2, 'one IDLE row per side in the with-idle table');

  // four pies, each with slices
  t.eq(await page.locator('.xpv-tfstats-pie').count(), 4, 'four pie charts');
  for (const sel of ['[data-side="Device"][data-by="type"]', '[data-side="Device"][data-by="operation"]',
    '[data-side="Host"][data-by="type"]', '[data-side="Host"][data-by="operation"]']) {
    t.ok(await page.locator(`.xpv-tfstats-pie${sel} path.xpv-slice`).count() >= 2, `pie ${sel} has slices`);
  }
  // summary cards: device idle share equals the IDLE row's fraction
  const devIdle = withIdle.find((r) => r.host_or_device === 'Device' && r.type === 'IDLE');
  t.eq(await page.locator('[data-key="device_idle"] .xpv-card-value').innerText(),
    `${(devIdle.device_total_self_time_percent * 100).toFixed(1)}%`, 'device idle card');

  // IDLE excluded by default
  t.eq(await page.isChecked('#xpv-include-idle'), false, 'IDLE excluded by default');
  t.eq(await countText(page), `${withoutIdle.length} rows`, 'row count without IDLE');
  t.eq(await page.locator('.xpv-tfstats-pie[data-by="type"] path.xpv-slice[data-label="IDLE"]').count(), 0,
    'no IDLE slice');
  await page.check('#xpv-include-idle');
  await page.waitForFunction((n) => /^(\d+) rows$/.test(document.querySelector('.xpv-tfstats-table .xpv-table-count').textContent) &&
    document.querySelector('.xpv-tfstats-table .xpv-table-count').textContent === `${n} rows`, withIdle.length);
  t.ok(true, `row count with IDLE: ${withIdle.length}`);
  t.eq(await page.locator('.xpv-tfstats-pie[data-by="type"] path.xpv-slice[data-label="IDLE"]').count(), 2,
    'IDLE slice in both by-type pies');
  await page.uncheck('#xpv-include-idle');
  await page.waitForFunction((n) => document.querySelector('.xpv-tfstats-table .xpv-table-count').textContent === `${n} rows`,
    withoutIdle.length);

  // the first rows are the server's order (rank)
  t.eq((await columnTexts(page, 'rank')).slice(0, 3), ['1', '2', '3'], 'rank order');
  t.eq((await columnTexts(page, 'operation'))[0], withoutIdle[0].operation, 'top op as the server sorts it');
  // percentages shown as percent of the fraction
  t.eq((await columnTexts(page, 'device_total_self_time_percent'))[0],
    `${(withoutIdle[0].device_total_self_time_percent * 100).toFixed(1)}%`, 'fraction shown as percent');

  // sort by total self-time: descending on first click, ascending on second
  const selfBtn = page.locator('.xpv-tfstats-table th[data-col="total_self_time"] button');
  await selfBtn.click();
  let v = (await columnTexts(page, 'total_self_time')).map(num);
  t.ok(v.length === 25 && v.every((x, i) => i === 0 || v[i - 1] >= x), 'self-time sorted descending');
  t.eq(v[0], Math.max(...withoutIdle.map((r) => r.total_self_time)), 'largest self-time first');
  t.eq(await page.getAttribute('.xpv-tfstats-table th[data-col="total_self_time"]', 'aria-sort'), 'descending',
    'aria-sort descending');
  await selfBtn.click();
  v = (await columnTexts(page, 'total_self_time')).map(num);
  t.ok(v.every((x, i) => i === 0 || v[i - 1] <= x), 'self-time sorted ascending');
  // sort by operation name (text, ascending first)
  await page.click('.xpv-tfstats-table th[data-col="operation"] button');
  const names = await columnTexts(page, 'operation');
  const sorted = [...names].sort((a, b) => a.localeCompare(b, undefined, { numeric: true, sensitivity: 'base' }));
  t.eq(names, sorted, 'operation names sorted ascending');

  // filter by type / name: count equals the server rows that match
  await page.fill('.xpv-tfstats-table .xpv-table-filter', 'conv2d');
  const want = withoutIdle.filter((r) => /conv2d/i.test(r.type) || /conv2d/i.test(r.operation)).length;
  t.ok(want > 0, `${want} conv2d rows in the data`);
  await page.waitForFunction((n) => document.querySelector('.xpv-tfstats-table .xpv-table-count').textContent.startsWith(`${n} of`), want);
  const ops = await columnTexts(page, 'operation');
  const types = await columnTexts(page, 'type');
  t.ok(ops.every((o, i) => /conv2d/i.test(o) || /conv2d/i.test(types[i])), 'every shown row matches the filter');
  await page.fill('.xpv-tfstats-table .xpv-table-filter', '');

  // Host/device selector
  await page.selectOption('#xpv-tfstats-side', 'Host');
  const hostRows = withoutIdle.filter((r) => r.host_or_device === 'Host').length;
  await page.waitForFunction((n) => document.querySelector('.xpv-tfstats-table .xpv-table-count').textContent === `${n} rows`, hostRows);
  t.ok((await columnTexts(page, 'host_or_device')).every((s) => s === 'Host'), 'only host rows');
  t.eq(await page.locator('.xpv-tfstats-pie').count(), 2, 'two host pies');
  await page.selectOption('#xpv-tfstats-side', 'all');
  await page.waitForFunction((n) => document.querySelector('.xpv-tfstats-table .xpv-table-count').textContent === `${n} rows`,
    withoutIdle.length);
  await page.waitForFunction(() => document.querySelectorAll('.xpv-tfstats-pie').length === 4);

  // tooltip on a slice, then a click filters the table by the slice's type
  const sliceSel = '.xpv-tfstats-pie[data-side="Device"][data-by="type"] path.xpv-slice';
  const label = await page.locator(sliceSel).first().getAttribute('data-label');
  const pt = await pointOn(page, sliceSel);
  t.ok(pt, 'a point over the largest slice');
  await page.mouse.move(pt.x, pt.y);
  await t.waitText(page, '.xpv-tfstats-pie[data-side="Device"][data-by="type"] .xpv-tooltip', /\d (ns|µs|ms|s)\d.*%/); // a duration in its readable unit, then the share
  t.match(await page.textContent('.xpv-tfstats-pie[data-side="Device"][data-by="type"] .xpv-tooltip'),
    new RegExp(label.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')), 'tooltip names the slice');
  await page.mouse.click(pt.x, pt.y);
  t.eq(await page.inputValue('.xpv-tfstats-table .xpv-table-filter'), label, 'slice click fills the filter');
  const typed = withoutIdle.filter((r) => r.type.toLowerCase().includes(label.toLowerCase()) ||
    r.operation.toLowerCase().includes(label.toLowerCase())).length;
  await page.waitForFunction((n) => document.querySelector('.xpv-tfstats-table .xpv-table-count').textContent.startsWith(`${n} of`), typed);
  t.ok(true, `slice filter shows ${typed} rows`);

  // CSV export of the rows shown
  const [dl] = await Promise.all([page.waitForEvent('download'),
    page.click('.xpv-tfstats-table .xpv-table-csv')]);
  const csv = fs.readFileSync(await dl.path(), 'utf8');
  const lines = csv.split('\r\n').filter(Boolean);
  t.eq(dl.suggestedFilename(), 'framework_op_stats.csv', 'CSV file name');
  t.match(lines[0], /^Rank,Host\/device,Operation Type,Operation Name,#Occurrences,Total time \(us\)/, 'CSV header');
  t.eq(lines.length - 1, typed, 'CSV holds the filtered rows');
  await t.assertClean(page);
});

test('tf stats: 2-host run as ALL_HOSTS', async (t) => {
  const page = await openTool(t, t.base, 'multi/2024_01_02_00_00_00');
  t.eq(await page.locator('#xpv-host').inputValue(), 'ALL_HOSTS', 'ALL_HOSTS selected');
  const [, withoutIdle] = await serverData(page, 'multi/2024_01_02_00_00_00');
  t.eq(await countText(page), `${withoutIdle.length} rows`, 'row count matches the server');
  t.eq(await page.locator('.xpv-tfstats-pie').count(), 4, 'four pies');
  await t.assertClean(page);
});

test('tf stats: real profiles', async (t) => {
  if (!t.realBase) t.skip('XPV_REAL_URL not set (no ../shared/testdata/real)');
  const page = await openTool(t, t.realBase, 'tensorflow-profiler/GPU-multi-worker');
  await page.fill('.xpv-tfstats-table .xpv-table-filter', 'MakeTensorFromProto');
  await page.waitForFunction(() => /^1 of/.test(document.querySelector('.xpv-tfstats-table .xpv-table-count').textContent));
  t.eq(await columnTexts(page, 'host_or_device'), ['Device'], 'the device op of the file');
  t.eq(await columnTexts(page, 'occurrences'), ['176'], 'its occurrences');
  t.match(await page.locator('[data-key="device_idle"] .xpv-card-value').innerText(), /^\d+\.\d%$/, 'device idle share');
  await t.assertClean(page);
  t.eq(await page.textContent('#xpv-page h2'), 'TensorFlow Stats', 'a TF profile: TensorFlow Stats');
  const p2 = await openTool(t, t.realBase, 'AMD-AGI-TraceLens/jax08_gemm');
  t.eq(await p2.textContent('#xpv-page h2'), 'Framework Op Stats', 'a JAX profile: Framework Op Stats');
  t.ok(await p2.locator('.xpv-tfstats-pie[data-side="Device"] path.xpv-slice').count() >= 1, 'JAX device ops charted');
  await t.assertClean(p2);
});

test('tf stats: a profile without ops says so', async (t) => {
  // The same run, with both tables emptied on the way.
  await checkEmptyTool(t, RUN1, 'framework_op_stats', /TensorFlow Stats/,
    /No TensorFlow ops were captured/);
});

// Deep links: the table's sort and filter are in the URL and survive a reload.
test('framework op stats: sort and filter kept in the link', async (t) => {
  const page = await t.open(t.url('#tool=framework_op_stats'));
  await t.waitFor(page, '.xpv-table-el tbody tr');
  await t.waitIdle(page);
  const table = page.locator('.xpv-table').last();
  await table.locator('th[data-col="operation"] button').click();
  await table.locator('.xpv-table-filter').fill('Conv');
  await page.waitForTimeout(300);
  const hash = new URLSearchParams(new URL(page.url()).hash.slice(1));
  t.eq([hash.get('ops.sort'), hash.get('ops.q')], ['operation', 'Conv'], 'hash carries sort and filter');
  const rowsBefore = await table.locator('tbody tr').count();
  await page.reload();
  await t.waitFor(page, '.xpv-table-el tbody tr');
  await t.waitIdle(page);
  const t2 = page.locator('.xpv-table').last();
  t.eq(await t2.locator('.xpv-table-filter').inputValue(), 'Conv', 'filter restored');
  t.eq(await t2.locator('th[data-col="operation"]').getAttribute('aria-sort'), 'ascending', 'sort restored');
  t.eq(await t2.locator('tbody tr').count(), rowsBefore, 'same rows shown');
  await t.assertClean(page);
});

// The pies' percentages are the table's: ops beyond the top 500 listed get
// their own slice, so a slice is a share of the whole device time.
test('tf stats: pie and table percentages agree', async (t) => {
  if (!t.realBase) t.skip('XPV_REAL_URL not set (no ../shared/testdata/real)');
  const page = await openTool(t, t.realBase, 'tensorflow-profiler/GPU-multi-worker');
  const pie = page.locator('.xpv-tfstats-pie[data-side="Device"][data-by="operation"]');
  await pie.locator('.xpv-pie-legend-label').first().waitFor();
  const first = pie.locator('li').filter({ hasNotText: /^(ops not listed|Other)/ }).first();
  const label = await first.locator('.xpv-pie-legend-label').textContent();
  const piePct = await first.locator('.xpv-pie-legend-pct').textContent();
  const data = await page.evaluate(async () => (await fetch(
    `data/plugin/profile/data?${location.hash.slice(1).replace('tool=', 'tag=')}`)).json());
  const cols = data[1].cols.map((c) => c.id);
  const row = data[1].rows.map((r) => Object.fromEntries(cols.map((c, i) => [c, r.c[i] && r.c[i].v])))
    .find((o) => o.host_or_device === 'Device' && o.operation === label);
  t.ok(row, `the top pie slice is an op of the table (${label})`);
  t.eq(piePct, `${(row.device_total_self_time_percent * 100).toFixed(1)}%`,
    `slice ${piePct} = table ${(row.device_total_self_time_percent * 100).toFixed(1)}%`);
  await t.assertClean(page);
});
