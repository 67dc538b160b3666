// diff.test.js - "Compare with" on the stats pages (issue 15).
//
// Real profiles (XPV_REAL_URL): on Framework Op Stats of one JAX run, the
// user picks another JAX run as the baseline; the comparison table must
// list the server's diff rows, in its order (largest absolute change
// first), with "added" and "removed" rows, coloured change cells (red when
// slower, green when faster) and a CSV link; moving to Kernel Stats keeps
// the baseline.  Demo (XPV_URL): the overview page against itself shows
// every change at 0 and the overlaid step-time graph of both runs.  Every
// test asserts no request leaves the server's origin (loopback) and no page
// error.
const { test } = require('./harness');

const NEW = 'AMD-AGI-TraceLens/jax08_attention';
const BASE = 'AMD-AGI-TraceLens/jax08_gemm';
const TABLE = '.xpv-compare-table';

async function column(page, id) {
  return page.evaluate(([tsel, cid]) => {
    const ths = [...document.querySelectorAll(`${tsel} thead tr:first-child th`)];
    const j = ths.findIndex((th) => th.getAttribute('data-col') === cid);
    return [...document.querySelectorAll(`${tsel} tbody tr`)].map((tr) => {
      const td = tr.children[j];
      return td ? { text: td.textContent, cls: td.className } : { text: '', cls: '' };
    });
  }, [TABLE, id]);
}

async function serverDiff(page, q) {
  return page.evaluate(async (params) => {
    const r = await fetch('data/plugin/profile/diff?' + new URLSearchParams(params));
    return r.json();
  }, q);
}

test('compare: two real JAX runs on framework op stats and kernel stats', async (t) => {
  if (!t.realBase) t.skip('XPV_REAL_URL not set (no ../shared/testdata/real)');
  const page = await t.open(t.realBase + '#run=' + encodeURIComponent(NEW) + '&tool=framework_op_stats');
  await t.waitText(page, '#xpv-page h2', /TensorFlow Stats|Framework Op Stats/);
  await t.waitIdle(page);
  const runs = (await t.selectOptions(page, '#xpv-compare-run')).map((o) => o.value);
  t.ok(runs.includes(BASE), 'the baseline run is offered');
  t.eq(runs[0], '', 'the first choice is none');
  t.eq(await page.locator(TABLE).count(), 0, 'no comparison before a choice');

  await page.selectOption('#xpv-compare-run', BASE);
  await t.waitFor(page, `${TABLE} tbody tr`);
  await t.waitIdle(page);
  const host = await page.locator('#xpv-host').inputValue();
  const d = await serverDiff(page, { run: NEW, base_run: BASE, tag: 'framework_op_stats', host,
    base_host: await page.locator('#xpv-compare-host').inputValue() });
  t.ok(d.summary.rows_added > 0 && d.summary.rows_removed > 0, 'server: rows added and removed');
  await t.waitText(page, '.xpv-compare-summary', /added/);
  const summary = await page.locator('.xpv-compare-summary').innerText();
  t.match(summary, new RegExp(`${d.summary.rows_added} added, ${d.summary.rows_removed} removed`),
    'summary counts');
  const count = (await page.locator(`${TABLE} .xpv-table-count`).innerText()).trim();
  t.match(count, new RegExp(`^${d.rows.length} rows`), 'one table row per diff row');

  // Server order = largest absolute change first.
  const names = (await column(page, 'name')).map((c) => c.text);
  const want = d.rows.slice(0, names.length).map((r) => r.name);
  t.eq(JSON.stringify(names), JSON.stringify(want), 'rows in the server order');
  const abs = d.rows.map((r) => Math.abs(r.delta_us));
  t.ok(abs.every((v, i) => i === 0 || abs[i - 1] >= v), 'server rows sorted by |change|');

  // Delta columns: added / removed marks and colours.
  const pcts = await column(page, 'delta_pct');
  const deltas = await column(page, 'delta_us');
  const statuses = (await column(page, 'status')).map((c) => c.text);
  t.ok(pcts.some((c) => c.text === 'added') && pcts.some((c) => c.text === 'removed'),
    'Change % says added and removed');
  statuses.forEach((s, i) => {
    const r = d.rows[i];
    t.eq(s, r.status, `row ${i} status`);
    if (r.delta_us > 0) t.ok(/xpv-delta-up/.test(deltas[i].cls), `row ${i}: slower is red`);
    if (r.delta_us < 0) t.ok(/xpv-delta-down/.test(deltas[i].cls), `row ${i}: faster is green`);
  });
  const upColor = await page.evaluate(() => {
    const td = document.querySelector('.xpv-compare-table td.xpv-delta-up, .xpv-compare-table td.xpv-delta-down');
    return td ? getComputedStyle(td).color : '';
  });
  t.ok(/rgb\((179, 38, 30|19, 115, 51)\)/.test(upColor), `delta cells coloured (${upColor})`);
  // Sorting by change: the header sorts descending by Change first.
  await page.locator(`${TABLE} th[data-col="delta_us"] button`).click();
  const sorted = (await column(page, 'delta_us')).map((c) => Number(c.text.replace(/[,+\s]/g, '').replace('\u2212', '-')));
  t.ok(sorted.every((v, i) => i === 0 || sorted[i - 1] >= v), 'sorted by change');
  const href = await page.locator('.xpv-compare-csv').getAttribute('href');
  t.ok(href && href.startsWith('data/plugin/profile/diff_csv?'), `CSV link is relative (${href})`);
  const csv = await page.evaluate(async (u) => (await fetch(u)).text(), href);
  t.eq(csv.trim().split(/\r\n/).length, d.rows.length + 1, 'CSV has a line per row');

  // The baseline stays chosen on another stats page.
  await page.selectOption('#xpv-tool', 'kernel_stats');
  await t.waitText(page, '#xpv-page h2', /Kernel Stats/);
  await t.waitFor(page, `${TABLE} tbody tr`);
  t.eq(await page.locator('#xpv-compare-run').inputValue(), BASE, 'baseline kept on kernel stats');
  const kpcts = (await column(page, 'delta_pct')).map((c) => c.text);
  t.ok(kpcts.includes('added') && kpcts.includes('removed'), 'kernel rows added and removed');
  await t.assertClean(page);
});

test('compare: the overview against itself, steps overlaid', async (t) => {
  const run = '2024_01_01_00_00_01';
  const page = await t.open(t.url('#run=' + run + '&tool=overview_page'));
  await t.waitText(page, '#xpv-page h2', /Overview/);
  await t.waitIdle(page);
  await page.selectOption('#xpv-compare-run', run);
  await t.waitFor(page, `${TABLE} tbody tr`);
  await t.waitFor(page, '.xpv-compare-steps svg');
  await t.waitIdle(page);
  const pcts = (await column(page, 'delta_pct')).map((c) => c.text);
  t.ok(pcts.length > 0 && pcts.every((s) => s === '0%'), `every change 0 (${pcts.slice(0, 3)})`);
  t.match(await page.locator('.xpv-compare-summary').innerText(), /change 0%/, 'total change 0');
  const legend = await page.locator('.xpv-compare-steps').innerText();
  t.match(legend, /Baseline/, 'baseline series');
  t.match(legend, /This run/, 'this run series');
  // Back to none: the comparison goes away.
  await page.selectOption('#xpv-compare-run', '');
  await page.waitForFunction(() => !document.querySelector('.xpv-compare-table'));
  await t.assertClean(page);
});
