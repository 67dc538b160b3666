// memory_profile.test.js - the memory profile page.
//
// Demo server (synthetic 1-host run with BFC allocator events): memory id
// dropdown, summary cards equal to the API's numbers, the timeline chart
// (stack / heap / free areas + fragmentation line), the hover card, the
// breakdown table and its op-name filter.  Real profiles (XPV_SHARED): the
// GPU multi-worker run has four allocators; switching the id redraws.
// Every test asserts no external request and no page error.
const { test } = require('./harness');

const RUN = '2024_01_01_00_00_01';

function fmtBytes(b) {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = Math.abs(Number(b)), u = 0;
  while (v >= 1024 && u < units.length - 1) { v /= 1024; u++; }
  return `${v.toFixed(u ? 2 : 0)} ${units[u]}`;
}

async function api(page, q) {
  return page.evaluate(async (qs) => (await fetch(`data/plugin/profile/data?${qs}`)).json(), q);
}

async function cardValue(page, label) {
  return page.evaluate((lab) => {
    for (const c of document.querySelectorAll('.mp-summary .mp-card')) {
      if (c.firstChild.textContent === lab) return c.querySelector('.mp-card-value').textContent;
    }
    return null;
  }, label);
}

test('memory profile: summary, timeline, hover card, breakdown (demo)', async (t) => {
  const page = await t.open(t.url(`#run=${RUN}&tool=memory_profile&host=localhost`));
  await t.waitFor(page, '.mp-summary .mp-card');
  await t.waitIdle(page);
  const ids = await t.selectOptions(page, '#mp-memory-id');
  t.ok(ids.length >= 1 && ids[0].value, `memory ids listed (${ids.map((o) => o.value).join(',')})`);
  const data = await api(page, `run=${RUN}&tag=memory_profile&host=localhost`);
  t.eq(ids.map((o) => o.value), data.memoryIds, 'dropdown = memoryIds');
  const prof = data.memoryProfilePerAllocator[ids[0].value];
  const peak = prof.profileSummary.peakStats;
  t.eq(await cardValue(page, 'Peak Memory Usage in Profile'), fmtBytes(peak.peakBytesInUse), 'peak card = API peak');
  t.eq(await cardValue(page, 'Memory Capacity'), fmtBytes(prof.profileSummary.memoryCapacity), 'capacity card');
  // The peak equals the max of stack+heap over the timeline snapshots.
  const maxUse = Math.max(...prof.sampledTimelineSnapshots.map((s) =>
    Number(s.aggregationStats.stackReservedBytes) + Number(s.aggregationStats.heapAllocatedBytes)));
  t.eq(Number(peak.peakBytesInUse), maxUse, 'API peak = max(stack+heap) of the timeline');

  // Timeline: one path per series, a right axis label for fragmentation.
  const series = await page.$$eval('.mp-timeline path.xpv-line', (ps) => ps.map((p) => p.dataset.series));
  t.ok(series.includes('Stack') && series.includes('Heap') && series.includes('Fragmentation'),
    `timeline series (${series.join(',')})`);
  t.ok((await page.$$('.mp-timeline path.xpv-area')).length >= 2, 'stacked areas drawn');
  const labels = await page.$$eval('.mp-timeline .xpv-axis-label', (ls) => ls.map((l) => l.textContent));
  t.ok(labels.includes('Memory Usage (GiBs)') && labels.includes('Fragmentation (%)'), 'two y axes');

  // Hover card.
  const ov = await page.$('.mp-timeline .xpv-overlay');
  const box = await ov.boundingBox();
  await page.mouse.move(box.x + box.width * 0.5, box.y + box.height * 0.5);
  await t.waitText(page, '.mp-hover', /Timestamp \(ms\)/);
  const card = await page.textContent('.mp-hover');
  t.match(card, /Event(allocation|deallocation)/, 'hover card names the event');
  t.match(card, /Allocation size/, 'hover card has the allocation size');
  t.match(card, /Memory in use/, 'hover card has memory in use');
  const mid = Number(await page.$eval('.mp-hover', (h) => h.dataset.index));
  await page.mouse.move(box.x + box.width * 0.99, box.y + box.height * 0.5);
  await page.waitForFunction((m) => Number(document.querySelector('.mp-hover').dataset.index) > m, mid);
  t.ok(true, 'moving right selects a later snapshot');

  // Breakdown table: all rows when small ones are shown, then filter.
  await page.uncheck('#mp-hide-small');
  const n = await page.$$eval('.mp-breakdown tbody tr', (rs) => rs.length);
  t.ok(n >= 1, `breakdown rows (${n})`);
  const firstOp = await page.$eval('.mp-breakdown tbody tr td', (td) => td.textContent);
  const needle = firstOp.slice(0, Math.max(3, Math.min(8, firstOp.length)));
  await page.fill('.mp-breakdown .xpv-table-filter', needle);
  await page.waitForFunction((s) => [...document.querySelectorAll('.mp-breakdown tbody tr')]
    .every((r) => r.firstChild.textContent.toLowerCase().includes(s.toLowerCase())), needle);
  t.ok(true, `filter by op name "${needle}" keeps matching rows only`);
  await t.assertClean(page);
});

test('memory profile: real GPU multi-worker run, switching memory id', async (t) => {
  const run = await t.realRun(/GPU-multi-worker$/);
  const page = await t.openReal(run, 'memory_profile', { host: '34.83.195.179_6003', ready: '.mp-summary .mp-card' });
  const ids = (await t.selectOptions(page, '#mp-memory-id')).map((o) => o.value);
  t.eq(ids, ['GPU_1_bfc', 'GPU_4_bfc', 'GPU_6_bfc', 'gpu_host_bfc'], 'four allocators');
  await page.selectOption('#mp-memory-id', 'GPU_4_bfc');
  await t.waitText(page, '.mp-summary', /5\.78 GiB/);
  t.ok(true, 'GPU_4_bfc peak shown (6208853760 B = 5.78 GiB)');
  await t.assertClean(page);
});
