// tpu.test.js - a JAX-on-TPU profile (openxla-xprof tpu_inference_2) through
// the pages a user opens first, switching tools with the tool menu: the
// overview shows the TPU duty cycle and the top device ops (not "No device
// operation was captured"), TensorFlow Stats lists device ops when "Device
// only" is chosen, and the trace viewer draws the TPU rows: the file's XLA
// Modules / XLA Ops and the rows XProf derives from the ops' tf_op and
// source stats (Framework Name Scope, Framework Ops, Source code), in the
// streamed view and in the full download; the `Async XLA Ops` line's
// copy-start/done events, which XProf writes as async "b"/"e" pairs, drawn
// on their async-copy track and clicked for their details.  Needs
// XPV_REAL_URL; no request may leave 127.0.0.1.
const { test } = require('./harness');

const RUN = 'openxla-xprof/tpu_inference_2';

async function settle(t, page) {
  await t.waitIdle(page);
  await page.waitForTimeout(250);
  await t.waitIdle(page);
}

test('TPU run: overview, TF stats, trace viewer rows', async (t) => {
  if (!t.realBase) return t.skip('XPV_REAL_URL not set (../shared/testdata/real absent)');
  const page = await t.open(`${t.realBase}#run=${encodeURIComponent(RUN)}&tool=overview_page`,
    { viewport: { width: 1500, height: 950 } });

  // ---- Overview ----
  await t.waitFor(page, '.xpv-tool-root[data-tool="overview_page"]');
  await settle(t, page);
  await t.waitFor(page, '.xpv-card-device_duty_cycle_percent');
  const duty = await page.textContent('.xpv-card-device_duty_cycle_percent .xpv-card-value');
  const dutyPct = Number.parseFloat(duty);
  t.ok(dutyPct > 0 && dutyPct <= 100, `TPU duty cycle shown (${duty})`);
  t.match(await page.textContent('.xpv-run-env'), /TPU/, 'run environment: TPU device');
  const topOps = await page.locator('.xpv-top-ops tbody tr').count();
  t.ok(topOps > 0, `top device ops listed (${topOps} rows)`);
  t.ok(!/No device operation was captured/.test(await page.textContent('.xpv-top-ops')),
    'no "No device operation was captured"');

  // ---- TensorFlow Stats, through the tool menu ----
  const tools = (await t.selectOptions(page, '#xpv-tool')).map((o) => o.value);
  t.ok(tools.includes('framework_op_stats') && tools.includes('trace_viewer'), `tool menu (${tools})`);
  await page.selectOption('#xpv-tool', 'framework_op_stats');
  await t.waitFor(page, '.xpv-tool-root[data-tool="framework_op_stats"] .xpv-tfstats-table tbody tr');
  await settle(t, page);
  const sides = (await t.selectOptions(page, '#xpv-tfstats-side')).map((o) => o.value);
  t.ok(sides.includes('Device'), `Host/device menu offers Device (${sides})`);
  await page.selectOption('#xpv-tfstats-side', 'Device');
  await settle(t, page);
  const hod = await page.evaluate(() => {
    const ths = [...document.querySelectorAll('.xpv-tfstats-table thead tr:first-child th')];
    const j = ths.findIndex((th) => th.getAttribute('data-col') === 'host_or_device');
    return [...document.querySelectorAll('.xpv-tfstats-table tbody tr')]
      .map((tr) => (tr.children[j] ? tr.children[j].textContent : ''));
  });
  t.ok(hod.length > 0 && hod.every((v) => v === 'Device'), `device ops listed (${hod.length} rows)`);

  // ---- Trace viewer ----
  await page.selectOption('#xpv-tool', 'trace_viewer');
  await t.waitFor(page, '.xpv-tool-root[data-ready="1"] canvas.xpv-trace-canvas');
  await settle(t, page);
  const procs = await page.evaluate(() => document.querySelector('.xpv-tool-root').xpvTrace.tracks());
  const tpu0 = procs.find((p) => /\/device:TPU:0$/.test(p.name || ''));
  t.ok(!!tpu0, `a /device:TPU:0 process (${procs.map((p) => p.name)})`);
  const rows = tpu0.tracks.map((r) => r.name);
  for (const want of ['XLA Modules', 'XLA Ops', 'Framework Name Scope', 'Framework Ops', 'Source code']) {
    t.ok(rows.includes(want), `TPU:0 row ${want}`);
  }
  // XProf's host offload rows (host-memory copy-start / copy-done pairs).
  const off = tpu0.tracks.find((r) => r.name === 'Host Offload Ops row 0');
  t.ok(off && off.events > 0, `Host Offload Ops row 0 drew events (${off ? off.events : 0} loaded)`);
  const ops = tpu0.tracks.find((r) => r.name === 'Framework Ops');
  t.ok(ops.events > 0, `Framework Ops drew events (${ops.events} loaded)`);
  t.ok(tpu0.tracks.find((r) => r.name === 'XLA Ops').events > 0, 'XLA Ops events loaded');
  // XProf's order: derived rows (negative tids) above the file's rows.
  const order = tpu0.tracks.filter((r) => typeof r.tid === 'number')
    .sort((a, b) => a.tid - b.tid).map((r) => r.name);
  t.ok(order.indexOf('Framework Ops') < order.indexOf('XLA Modules'), `row order ${order}`);

  // Async events: one track per async channel (the event name), after the
  // threads; click one of its slices as a user would.
  const asyncRow = tpu0.tracks.find((r) => r.name === 'async-copy');
  t.ok(!!asyncRow && asyncRow.events > 0, `TPU:0 async-copy track (${asyncRow && asyncRow.events} slices)`);
  const cb = await page.locator('canvas.xpv-trace-canvas').boundingBox();
  let slice = null;
  for (let i = 0; i < 12 && !slice; i++) {
    slice = (await page.evaluate(() => document.querySelector('.xpv-tool-root').xpvTrace.boxes()))
      .filter((b) => b.name === 'async-copy' && b.uid !== undefined && b.w >= 3 && b.y > 40 &&
        b.y < cb.height - 30).sort((a, b) => b.w - a.w)[0] || null;
    if (!slice) {
      await page.mouse.move(cb.x + cb.width / 2, cb.y + cb.height / 2);
      await page.mouse.wheel(0, 300);
      await settle(t, page);
    }
  }
  t.ok(!!slice, 'an async-copy slice is on screen');
  await page.mouse.click(cb.x + slice.x + Math.min(slice.w / 2, 20), cb.y + slice.y + slice.h / 2);
  await t.waitText(page, '.xpv-trace-details-name', /async-copy/);
  await page.waitForFunction(() => {
    const d = document.querySelector('.xpv-trace-details');
    return d && !/Loading arguments/.test(d.textContent) && /Arguments/.test(d.textContent);
  });
  t.match(await page.textContent('.xpv-trace-details'), /copy-start|copy-done/,
    'its details show the async op (long name)');

  // The full download holds the same rows.
  const href = await page.getAttribute('.xpv-trace-download', 'href');
  const full = await page.evaluate(async (h) => (await fetch(h)).json(), href);
  const names = new Set(full.traceEvents.filter((e) => e.ph === 'M' && e.name === 'thread_name')
    .map((e) => e.args.name));
  for (const want of ['Framework Name Scope', 'Framework Ops', 'Source code', 'XLA Ops']) {
    t.ok(names.has(want), `download has row ${want}`);
  }
  const nb = full.traceEvents.filter((e) => e.ph === 'b').length;
  const ne = full.traceEvents.filter((e) => e.ph === 'e').length;
  t.ok(nb === 600 && ne === 600, `download has the 600 async copies as b/e pairs (${nb} / ${ne})`);
  await t.assertClean(page);
});
