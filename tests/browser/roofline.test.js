// roofline.test.js - the Roofline Model page on a real JAX-on-TPU profile:
// device peaks from the TPU plane stats, the log-log charts with the HBM and
// VMEM rooflines and the ops as points (one per op with a FLOP rate in the
// API answer), hover details, the filters, the op table whose rows equal the
// API's op records.  Needs XPV_REAL_URL; no request may leave 127.0.0.1.
const { test, toolData } = require('./harness');

const RUN = 'openxla-xprof/tpu_inference_2';

test('roofline_model: TPU peaks, rooflines, points, hover, table', async (t) => {
  if (!t.realBase) return t.skip('XPV_REAL_URL not set (../shared/testdata/real absent)');
  const tools = await (await fetch(`${t.realBase}data/plugin/profile/run_tools?run=${encodeURIComponent(RUN)}`)).json();
  t.ok(tools.includes('roofline_model'), `run_tools offers roofline_model (${tools})`);
  t.ok(tools.indexOf('roofline_model') > tools.indexOf('memory_profile'), 'after memory_profile, as XProf orders it');

  const page = await t.open(`${t.realBase}#run=${encodeURIComponent(RUN)}&tool=roofline_model`,
    { viewport: { width: 1600, height: 1100 } });
  await t.waitFor(page, '.xpv-tool-root[data-tool="roofline_model"]');
  await t.waitIdle(page);
  await t.waitFor(page, '.xpv-roofline-ops .xpv-table-el tbody tr');

  const data = await toolData(page, RUN, 'roofline_model');
  t.ok(Array.isArray(data) && data.length === 2, 'two DataTables: roofline and diagnostics');
  const dt = data[0];
  const ids = dt.cols.map((c) => c.id);
  for (const c of ['step', 'rank', 'category', 'operation', 'occurrences', 'total_self_time',
    'measured_flop_rate', 'bottleneck_operational_intensity', 'bound_by', 'roofline_efficiency',
    'include_infeed_outfeed', 'hlo_module_id']) t.ok(ids.includes(c), `column ${c}`);
  t.eq(dt.p.peak_flop_rate, '918000', 'peak FLOP rate of the TPU v6e core (plane stat, GFLOP/s)');
  const col = (r, id) => r.c[ids.indexOf(id)].v;
  const withInfeed = dt.rows.filter((r) => col(r, 'include_infeed_outfeed') === true);
  const ops = withInfeed.filter((r) => col(r, 'category') !== 'Program');
  const drawable = ops.filter((r) => col(r, 'bound_by') !== 'Unknown' &&
    col(r, 'measured_flop_rate') > 0 && col(r, 'bottleneck_operational_intensity') > 0);
  t.ok(drawable.length > 0, `ops with a FLOP rate (${drawable.length})`);

  // Device information.
  t.match(await page.textContent('.xpv-roofline-device'), /918 TFLOP\/s/, 'peak FLOP rate shown');
  // Rooflines: HBM + VMEM read/write on this chip, on both charts.
  const lines = await page.$$eval('.xpv-roofline-chart[data-level="op"] polyline.xpv-roofline-line',
    (ls) => ls.map((l) => l.dataset.name));
  t.ok(lines.includes('HBM Roofline') && lines.includes('VMEM Read Roofline'), `rooflines ${lines}`);
  t.ok(await page.locator('.xpv-roofline-chart[data-level="program"] polyline.xpv-roofline-line').count() >= 1,
    'program chart has rooflines');
  // One point per drawable op plus the program star.
  const pts = page.locator('.xpv-roofline-chart[data-level="op"] .xpv-roofline-point');
  t.eq(await pts.count(), drawable.length + 1, 'op chart points = drawable ops + program');

  // Hover the first op point: the tooltip names an op of the table.
  await pts.first().scrollIntoViewIfNeeded();
  const box = await pts.first().boundingBox();
  await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
  const tip = page.locator('.xpv-roofline-chart[data-level="op"] .xpv-tooltip');
  await tip.waitFor({ state: 'visible' });
  const tipText = await tip.textContent();
  t.match(tipText, /Bound by/, 'tooltip shows bound by');
  const names = drawable.map((r) => String(col(r, 'operation')));
  t.ok(names.some((n) => tipText.includes(n)), 'tooltip names a drawable op');

  // The op table shows every op record with infeed (one page of 25 at most).
  const shown = await page.$$eval('.xpv-roofline-ops .xpv-table-el tbody td[data-col="operation"]',
    (tds) => tds.map((td) => td.textContent));
  t.eq(shown.length, Math.min(25, ops.length), 'table rows');
  t.ok(shown.includes(String(col(ops[0], 'operation'))), 'first op by self time is listed');

  // Hovering a table row of a drawn op rings its point.
  await page.mouse.move(0, 0);
  const drawnName = String(col(drawable[0], 'operation'));
  const rowCell = page.locator('.xpv-roofline-ops .xpv-table-el tbody td[data-col="operation"]',
    { hasText: drawnName }).first();
  await rowCell.scrollIntoViewIfNeeded();
  await rowCell.hover();
  const ring = page.locator('.xpv-roofline-chart[data-level="op"] .xpv-roofline-mark');
  t.ok(await ring.evaluate((e) => e.style.display !== 'none'), 'row hover marks the op on the chart');

  // Filter by a category: the points and rows shrink to it.
  const cat = String(col(drawable[0], 'category'));
  await page.selectOption('.xpv-roofline-ops select[aria-label="Category"]', cat);
  const inCat = drawable.filter((r) => col(r, 'category') === cat).length;
  t.eq(await pts.count(), inCat + 1, `points after filtering to ${cat}`);
  const cats = await page.$$eval('.xpv-roofline-ops .xpv-table-el tbody td[data-col="category"]',
    (tds) => [...new Set(tds.map((td) => td.textContent))]);
  t.eq(cats.join(','), cat, 'table filtered to the category');
  await t.assertClean(page);
});

test('roofline_model: AMD GPU run, peaks from the device capabilities', async (t) => {
  const run = 'AMD-AGI-TraceLens/jax08_gemm';
  const page = await t.openReal(run, 'roofline_model', { viewport: { width: 1400, height: 1000 } });
  await t.waitFor(page, '.xpv-roofline-ops .xpv-table-el tbody tr');
  const dev = await page.textContent('.xpv-roofline-device');
  t.match(dev, /AMD GPU/, 'device type');
  // MI300X: 304 CUs x 2048 FLOP/cycle x 2.1 GHz.
  t.match(dev, /1,307\.\d+ TFLOP\/s/, 'peak FLOP rate from the capabilities');
  t.match(dev, /per GPU/, 'GPU wording');
  t.ok(await page.locator('.xpv-roofline-chart[data-level="op"] polyline[data-name="HBM Roofline"]').count() === 1,
    'HBM roofline drawn');
  // Its ops' FLOPs come from XLA's GPU cost analysis of the HLO (the
  // cuBLAS gemms: 2 m k n): each op with a FLOP rate is a point.
  const data = await page.evaluate(async (r) => (await fetch(
    `data/plugin/profile/data?run=${encodeURIComponent(r)}&tag=roofline_model`)).json(), run);
  const dt = data[0];
  const ids = dt.cols.map((c) => c.id);
  const col = (r, id) => r.c[ids.indexOf(id)].v;
  const ops = dt.rows.filter((r) => col(r, 'include_infeed_outfeed') === true && col(r, 'category') !== 'Program');
  const drawable = ops.filter((r) => col(r, 'bound_by') !== 'Unknown' &&
    col(r, 'measured_flop_rate') > 0 && col(r, 'bottleneck_operational_intensity') > 0);
  t.ok(drawable.some((r) => col(r, 'category') === 'custom-call'), `the gemms have a FLOP rate (${drawable.length} ops)`);
  t.eq(await page.locator('.xpv-roofline-chart[data-level="op"] .xpv-roofline-point').count(), drawable.length + 1,
    'op chart points = ops with a FLOP rate + program');
  t.ok(await page.locator('.xpv-roofline-noflops').count() === 0, 'no "no FLOP count" note');
  await t.assertClean(page);
});
