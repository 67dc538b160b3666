// capture.test.js - the Capture Profile dialog.
//
// A server of its own (XPV_CAPTURE_URL, a logdir with one run) and a
// stand-in profiler server (tests/capture_server.py) started by
// tests/browser.sh.  Opens the dialog, sees a failing capture reported with
// the address, then captures from the stand-in: progress while it runs, the
// dialog closes, the new run is listed and selected and its overview page
// renders.  Asserts no request leaves the server's origin (loopback).
const { test } = require('./harness');

const base = process.env.XPV_CAPTURE_URL || '';
const target = process.env.XPV_CAPTURE_TARGET || '';
const errTarget = process.env.XPV_CAPTURE_ERROR_TARGET || '';

test('capture profile: dialog, progress, error, new run selected', async (t) => {
  if (!base || !target) t.skip('no stand-in profiler server (python3-grpcio missing)');
  const page = await t.open(base);
  await t.waitFor(page, '#xpv-run:not([disabled])');
  const before = (await t.selectOptions(page, '#xpv-run')).map((o) => o.value).filter(Boolean);
  t.eq(before.length, 1, 'one run before capturing');

  await page.click('#xpv-capture-btn');
  await t.waitFor(page, '#xpv-capture[open]');
  t.ok(await page.isVisible('#xpv-cap-addr'), 'dialog asks for the service URL');
  for (const id of ['#xpv-cap-duration', '#xpv-cap-retry', '#xpv-cap-host-level', '#xpv-cap-device-level',
    '#xpv-cap-python-level']) t.ok(await page.isVisible(id), `dialog has ${id}`);
  t.eq(await page.inputValue('#xpv-cap-duration'), '1000', 'default duration 1000 ms');
  t.eq(await page.inputValue('#xpv-cap-host-level'), '2', 'default host tracer level 2');

  // A server answering an error status: reported, naming the address.
  await page.fill('#xpv-cap-addr', errTarget);
  await page.fill('#xpv-cap-duration', '200');
  await page.click('#xpv-cap-submit');
  const err = await t.waitText(page, '#xpv-cap-status', /Capture failed/);
  t.match(err, new RegExp(errTarget.replace(/\./g, '\\.') + '.*FAILED_PRECONDITION'), 'error names the address and status');
  t.ok(await page.$('#xpv-capture[open]') !== null, 'dialog stays open on failure');

  // The stand-in answering an XSpace: progress, then the new run opens.
  await page.fill('#xpv-cap-addr', `grpc://${target}`);
  await page.fill('#xpv-cap-duration', '1500');
  await page.click('#xpv-cap-submit');
  await t.waitText(page, '#xpv-cap-status', /Capturing from/);
  t.ok(await page.isVisible('#xpv-cap-progress'), 'progress bar while it runs');
  t.ok(await page.isDisabled('#xpv-cap-submit'), 'capture button disabled while it runs');
  await page.waitForFunction(() => !document.querySelector('#xpv-capture[open]'), null, { timeout: 20000 });
  await page.waitForFunction((old) => {
    const s = document.getElementById('xpv-run');
    return s && s.value && s.value !== old;
  }, before[0], { timeout: 15000 });
  const run = await page.inputValue('#xpv-run');
  t.match(run, /^\d{4}(_\d\d){5}$/, `the new run is selected (${run})`);
  const after = (await t.selectOptions(page, '#xpv-run')).map((o) => o.value).filter(Boolean);
  t.eq(after.length, 2, 'the run list has the new run');
  t.match(decodeURIComponent(await page.evaluate(() => location.hash)), new RegExp(`run=${run}`), 'URL names the run');
  await t.waitFor(page, '#xpv-page .xpv-tool-root');
  await t.waitIdle(page);
  t.eq(await page.inputValue('#xpv-tool'), 'overview_page', 'its overview page is shown');
  const reqs = page.xpv.requests.filter((u) => /capture_profile/.test(u));
  t.ok(reqs.length >= 3 && reqs.every((u) => u.startsWith(page.xpv.origin)), `capture requests are relative (${reqs.length})`);
  await t.assertClean(page);
});
