// tf_data.test.js - the tf.data bottleneck analysis page.
//
// Demo server, 2-host run (ALL_HOSTS): summary message and input-bound
// verdict, bottleneck table with sanitized HTML (links open a new tab, no
// request made), table of all input pipelines, and the input pipeline graph
// (one node per iterator, critical path bold, bottleneck red) with host,
// pipeline and call selectors.  Asserts no external request, no page error.
const { test, toolData } = require('./harness');

const RUN = 'multi/2024_01_02_00_00_00';

test('tf.data bottleneck analysis: summary, tables, graph (demo, 2 hosts)', async (t) => {
  const page = await t.openDemo(RUN, 'tf_data_bottleneck_analysis',
    { host: 'ALL_HOSTS', ready: '.td-graph-svg' });
  const data = await toolData(page, RUN, 'tf_data_bottleneck_analysis', { host: 'ALL_HOSTS' });
  t.eq(data.length, 3, 'three DataTables');
  const msg = await page.textContent('.td-summary-message');
  t.eq(msg, data[2].p.summary_message, 'summary message shown');
  t.match(await page.textContent('.td-verdict'), data[2].p.is_input_bound === 'true' ? /input bound/ : /No slow/,
    'verdict matches is_input_bound');

  // Bottleneck table: one row per host pipeline, HTML rebuilt safely.
  const brows = await page.$$eval('.td-bottleneck-table tbody tr', (rs) => rs.length);
  t.eq(brows, data[2].rows.length, 'bottleneck rows');
  if (brows) {
    t.ok(await page.$$eval('.td-bottleneck-table b', (bs) => bs.length) > 0, 'iterator type in bold');
    const links = await page.$$eval('.td-bottleneck-table a', (as) => as.map((a) => [a.href, a.target, a.rel]));
    t.ok(links.length > 0 && links.every(([h, tg, r]) => /^https:\/\//.test(h) && tg === '_blank' && /noopener/.test(r)),
      'suggestion links are https, new tab, noopener');
  }
  // All input pipelines.
  const prow = await page.$$eval('.td-pipelines tbody tr', (rs) => rs.length);
  t.eq(prow, data[1].rows.length, 'one table row per input pipeline');

  // Graph: nodes of the selected call = graph rows of that (host, pipe, rank).
  const sel = await page.evaluate(() => ({ host: document.getElementById('td-host').value,
    pipe: document.getElementById('td-pipeline').value, call: document.getElementById('td-call').value }));
  const want = data[0].rows.filter((r) => r.c[0].v === sel.host && r.c[1].v === sel.pipe &&
    r.c[2].v === Number(sel.call));
  const nodes = await page.$$eval('.td-graph-svg g.td-node', (gs) => gs.map((g) => g.getAttribute('class')));
  t.eq(nodes.length, want.length, `graph nodes = iterators of ${sel.host} ${sel.pipe} call ${sel.call}`);
  t.eq(nodes.filter((c) => /td-type-2/.test(c)).length, want.filter((r) => r.c[5].v === 2).length,
    'bottleneck node count');
  if (want.some((r) => r.c[5].v === 2)) {
    const stroke = await page.$eval('.td-graph-svg g.td-type-2 rect', (r) => r.getAttribute('stroke'));
    t.eq(stroke, '#d93025', 'bottleneck drawn in red');
  }
  const txt = await page.textContent('.td-graph-svg');
  t.match(txt, /Start Time: .* us/, 'node shows start time');
  t.match(txt, /Self Duration: .* us/, 'node shows self time');
  t.match(txt, /# Calls: \d+/, 'node shows #calls');

  // Switch host and call.
  const hosts = await t.selectOptions(page, '#td-host');
  t.ok(hosts.length === 2, `two hosts (${hosts.map((h) => h.value).join(',')})`);
  const other = hosts.find((h) => h.value !== sel.host).value;
  await page.selectOption('#td-host', other);
  await page.waitForFunction(() => document.querySelectorAll('.td-graph-svg g.td-node').length > 0);
  const calls = await t.selectOptions(page, '#td-call');
  t.ok(calls.length >= 1, `calls of ${other}: ${calls.length}`);
  if (calls.length > 1) {
    await page.selectOption('#td-call', calls[calls.length - 1].value);
    await page.waitForFunction(() => document.querySelectorAll('.td-graph-svg g.td-node').length > 0);
    t.ok(true, 'fastest call drawn');
  }
  await t.assertClean(page);
});

test('tf.data bottleneck analysis: real GPU multi-worker run (device pipelines only)', async (t) => {
  const run = await t.realRun(/GPU-multi-worker$/);
  const page = await t.openReal(run, 'tf_data_bottleneck_analysis', { host: 'ALL_HOSTS', ready: '.td-graph-svg' });
  // The summary agrees with the tables: device-side pipelines with slow
  // calls are named, not "no tf.data activity".
  const msg = await page.textContent('.td-summary-message');
  t.match(msg, /Only device-side tf\.data input pipelines/, 'summary names the device-side pipelines');
  t.ok(!/No tf.data activity/.test(msg), 'never "no tf.data activity" above a pipeline table');
  const data = await toolData(page, run, 'tf_data_bottleneck_analysis', { host: 'ALL_HOSTS' });
  const si = data[1].cols.findIndex((c) => c.id === 'num_slow_calls');
  const slow = data[1].rows.reduce((a, r) => a + r.c[si].v, 0);
  const verdict = await page.textContent('.td-verdict');
  if (slow) t.match(verdict, new RegExp(`^${slow.toLocaleString('en-US')} slow tf\.data call`), `verdict counts the ${slow} slow calls`);
  else t.match(verdict, /No slow tf\.data input pipeline found/, 'no slow call: no slow pipeline');
  const pipes = await page.$$eval('#td-pipeline option', (os) => os.map((o) => o.value));
  t.ok(pipes.every((p) => /^Device:/.test(p)), `device pipelines (${pipes.join(',')})`);
  await t.assertClean(page);
});
