// hlo.test.js - the HLO tools on a real JAX-on-TPU profile: HLO Op Stats
// (table with XProf's column ids, pies, totals equal to the API) and Op
// Profile (program -> category -> op tree, group-by, exclude idle, op
// details with the HLO text, click-through to HLO Op Stats filtered to
// the op).  Needs XPV_REAL_URL; no request may leave 127.0.0.1.
const { test, toolData } = require('./harness');

const RUN = 'openxla-xprof/tpu_inference_2';

async function open(t, tool) {
  const page = await t.open(`${t.realBase}#run=${encodeURIComponent(RUN)}&tool=${tool}`,
    { viewport: { width: 1600, height: 1000 } });
  await t.waitFor(page, `.xpv-tool-root[data-tool="${tool}"]`);
  await t.waitIdle(page);
  return page;
}

test('hlo_stats: TPU ops, columns, pies, totals', async (t) => {
  if (!t.realBase) return t.skip('XPV_REAL_URL not set (../shared/testdata/real absent)');
  const tools = await (await fetch(`${t.realBase}data/plugin/profile/run_tools?run=${encodeURIComponent(RUN)}`)).json();
  t.ok(tools.includes('hlo_stats') && tools.includes('op_profile'), `run_tools offers the HLO tools (${tools})`);
  const page = await open(t, 'hlo_stats');
  await t.waitFor(page, '.xpv-table-el tbody tr');
  const data = await toolData(page, RUN, 'hlo_stats');
  const dt = Array.isArray(data) ? data[0] : data;
  const ids = dt.cols.map((c) => c.id);
  for (const c of ['rank', 'program_id', 'category', 'hlo_op_name', 'hlo_op_expression', 'tf_op_name',
    'occurrences', 'total_self_time', 'bound_by']) t.ok(ids.includes(c), `column ${c}`);
  const occ = ids.indexOf('occurrences'), cat = ids.indexOf('category');
  const ops = dt.rows.filter((r) => r.c[cat].v !== 'IDLE');
  const total = ops.reduce((a, r) => a + Number(r.c[occ].v), 0);
  t.eq(total, 6013, 'occurrences of the TPU ops (independently counted in test_analysis_hlo)');
  const shown = await page.$$eval('.xpv-table-el th[data-col]', (ths) => ths.map((th) => th.dataset.col));
  t.ok(shown.includes('hlo_op_name') && shown.includes('total_self_time'), 'table shows op and self time');
  t.ok(await page.locator('path.xpv-slice').count() > 0, 'pie charts drawn');
  await t.assertClean(page);
});

test('op_profile: tree, group by, details, click-through to hlo_stats', async (t) => {
  if (!t.realBase) return t.skip('XPV_REAL_URL not set (../shared/testdata/real absent)');
  const page = await open(t, 'op_profile');
  await t.waitFor(page, '.xpv-op-node');
  t.match(await page.textContent('.xpv-op-summary'), /TPU/, 'device type');
  // Expand the first program node, then its first child, down to an op.
  for (let depth = 0; depth < 4; depth++) {
    const closed = page.locator('.xpv-op-node[aria-expanded="false"]').first();
    if (!(await closed.count())) break;
    await closed.click();
  }
  const leaf = page.locator('.xpv-op-node:not([aria-expanded])').first();
  await leaf.click();
  await t.waitFor(page, '.xpv-op-details');
  const det = await page.textContent('.xpv-op-details');
  t.match(det, /category: /, 'op details show its category');
  const op = await leaf.getAttribute('data-name');
  await page.selectOption('#xpv-op-group', 'category');
  await t.waitIdle(page);
  await t.waitFor(page, '.xpv-op-node');
  t.ok(await page.locator('.xpv-op-node').count() >= 1, 'grouped by category');
  await page.selectOption('#xpv-op-group', 'program');
  await t.waitIdle(page);
  for (let depth = 0; depth < 4; depth++) {
    const closed = page.locator('.xpv-op-node[aria-expanded="false"]').first();
    if (!(await closed.count())) break;
    await closed.click();
  }
  await page.locator(`.xpv-op-node[data-name="${op}"]`).first().click();
  await page.click('.xpv-op-to-hlo-stats');
  await t.waitFor(page, '.xpv-tool-root[data-tool="hlo_stats"] .xpv-table-el tbody tr');
  t.eq(await page.locator('.xpv-table-filter').inputValue(), op, 'HLO Op Stats opens filtered to the op');
  const names = await page.$$eval('.xpv-table-el tbody td[data-col="hlo_op_name"]', (tds) => tds.map((td) => td.textContent));
  t.ok(names.includes(op), `the op's row is shown (${op})`);
  await t.assertClean(page);
});
