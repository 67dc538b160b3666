// memory_viewer.test.js - the memory viewer page on real JAX profiles
// (XPV_REAL_URL): the module selector lists module_list (the busiest module
// first and shown by default), the heap chart over program order with the
// peak marked, the peak card equal to the API's peakHeapMib, the peak
// buffers chart and table, hover details on the chart, a bar and a row,
// switching module and memory space (TPU).  No request may leave 127.0.0.1.
const { test } = require('./harness');

const TPU = 'openxla-xprof/tpu_inference_2';
const AMD = 'AMD-AGI-TraceLens/jax08_attention';

async function open(t, run) {
  const page = await t.open(`${t.realBase}#run=${encodeURIComponent(run)}&tool=memory_viewer`,
    { viewport: { width: 1600, height: 1100 } });
  await t.waitFor(page, '.xpv-tool-root[data-tool="memory_viewer"] .mv-summary');
  await t.waitIdle(page);
  return page;
}

async function api(page, q) {
  return page.evaluate(async (qs) => (await fetch(`data/plugin/profile/data?${qs}`)).json(), q);
}

async function modules(page, run) {
  return page.evaluate(async (r) => (await (await fetch(
    `data/plugin/profile/module_list?run=${encodeURIComponent(r)}`)).text()).split(','), run);
}

async function hoverOverlay(page, box, fx) {
  const loc = page.locator(`${box} .xpv-overlay`).first();
  await loc.scrollIntoViewIfNeeded();
  const ov = await loc.boundingBox();
  await page.mouse.move(ov.x + ov.width * fx, ov.y + ov.height * 0.5);
}

test('memory_viewer: TPU program, chart, peak buffers, hover, memory space, module switch', async (t) => {
  if (!t.realBase) return t.skip('XPV_REAL_URL not set (../shared/testdata/real absent)');
  const tools = await (await fetch(`${t.realBase}data/plugin/profile/run_tools?run=${encodeURIComponent(TPU)}`)).json();
  t.ok(tools.includes('memory_viewer'), 'run_tools offers memory_viewer');
  const page = await open(t, TPU);
  const mods = await modules(page, TPU);
  const opts = await t.selectOptions(page, '#mv-module');
  t.eq(opts.map((o) => o.value), mods, 'module selector = module_list');
  t.eq(await page.inputValue('#mv-module'), mods[0], 'the busiest module is shown first');
  t.match(mods[0], /^jit_f\(\d+\)$/, 'jit_f has the most device time');
  const d = await api(page, `run=${encodeURIComponent(TPU)}&tag=memory_viewer&module_name=${encodeURIComponent(mods[0])}`);
  t.ok(d.peakHeapMib > 20000, `peak ${d.peakHeapMib} MiB`);
  const card = await page.textContent('.mv-summary .mv-card');
  t.ok(card.includes(`${+d.peakHeapMib.toFixed(3)} MiB`), `peak card shows the API's peak (${card})`);
  t.eq(Number(await page.getAttribute('.mv-summary .mv-card-value', 'data-mib')), d.peakHeapMib, 'peak card value = API');
  t.ok(await page.locator('.mv-timeline path.xpv-line').count() === 2, 'heap and unpadded heap lines');
  t.match(await page.textContent('.mv-timeline .xpv-marker-label'), /^peak /, 'peak marked on the chart');
  // the text names the program point the marker sits at (issue 29)
  const pp = d.peakHeapSizePosition;
  const at = pp + 1 < d.heapSizes.length && d.heapSizes[pp + 1] === d.peakHeapMib ? pp + 1 : pp;
  t.match(await page.textContent('.mv-peak p.xpv-muted'), new RegExp(`reached at program point ${at}\\b`),
    `peak text: program point ${at}, where the curve reaches the peak`);
  const rows = await page.locator('.mv-peak .xpv-table-el tbody tr').count();
  t.eq(rows, d.maxHeapBySize.length, 'one table row per buffer alive at the peak');
  t.ok(await page.locator('.mv-peak path.xpv-bars').count() === 1, 'peak buffers bar chart');
  // hover: program point on the heap chart
  await hoverOverlay(page, '.mv-timeline', (d.peakHeapSizePosition + 1) / (d.heapSizes.length - 1));
  await t.waitText(page, '.mv-timeline .mv-hover', /Instruction/);
  t.match(await page.textContent('.mv-timeline .mv-hover'), /Heap size/, 'hover card: heap size at the point');
  // hover: the largest buffer's bar, then a table row
  await hoverOverlay(page, '.mv-peak .mv-bars', 0.5 / Math.min(60, d.maxHeapBySize.length));
  await t.waitText(page, '.mv-peak .mv-hover', /Shape/);
  const bcard = await page.textContent('.mv-peak .mv-hover');
  t.ok(bcard.includes(d.maxHeapBySize[0].shapeString), 'bar hover shows the largest buffer\'s shape');
  t.match(bcard, /Allocation type/, 'bar hover shows the allocation type');
  await page.locator('.mv-peak .xpv-table-el tbody tr').nth(1).hover();
  await page.waitForFunction(() => document.querySelector('.mv-peak .mv-hover').dataset.index === '1');
  t.ok((await page.textContent('.mv-peak .mv-hover')).includes(d.maxHeapBySize[1].instructionName),
    'row hover shows that buffer');
  // memory spaces of the program
  const spaces = await t.selectOptions(page, '#mv-memory-space');
  t.eq(spaces.map((o) => Number(o.value)), d.memorySpaces, 'memory space selector = memorySpaces');
  await page.selectOption('#mv-memory-space', '5');
  await t.waitText(page, '.mv-module-info', /memory space 5 \(Host\)/);
  const d5 = await api(page, `run=${encodeURIComponent(TPU)}&tag=memory_viewer&module_name=${encodeURIComponent(mods[0])}&memory_space=5`);
  t.ok((await page.textContent('.mv-summary .mv-card')).includes(`${+d5.peakHeapMib.toFixed(3)} MiB`),
    `host memory peak ${d5.peakHeapMib} MiB shown`);
  if ((d5.heapSizes || []).length <= 1)
    t.ok(await page.locator('.mv-timeline path.xpv-line').count() === 2,
      'no heap trace: the constant heap drawn as lines, not an empty axis');
  // another module
  await page.selectOption('#mv-module', mods[1]);
  await t.waitText(page, '.mv-module-info', new RegExp(`Module ${mods[1].replace(/\(.*$/, '')} `));
  t.ok(await page.locator('.mv-timeline path.xpv-line').count() === 2, 'chart redrawn for the other module');
  await t.assertClean(page);
});

test('module_list and memory_viewer errors over HTTP', async (t) => {
  if (!t.realBase) return t.skip('XPV_REAL_URL not set (../shared/testdata/real absent)');
  const P = `${t.realBase}data/plugin/profile`;
  const ml = await fetch(`${P}/module_list?run=${encodeURIComponent(TPU)}`);
  t.eq(ml.status, 200, 'module_list 200');
  t.match(ml.headers.get('content-type'), /^text\/plain/, 'module_list is text');
  t.eq((await ml.text()).split(',').length, 4, 'four HLO modules in the TPU run');
  const none = await fetch(`${P}/module_list?run=${encodeURIComponent('pytorch-kineto/pytorch/resnet50_num_workers_0')}`);
  t.eq(none.status, 404, 'a PyTorch run has no HLO modules: 404');
  const bad = await fetch(`${P}/data?run=${encodeURIComponent(TPU)}&tag=memory_viewer&module_name=jit_nope(1)`);
  t.eq(bad.status, 404, 'unknown module: 404');
  t.match((await bad.json()).error, /jit_nope\(1\)/, 'the error names the module');
});

test('memory_viewer: AMD GPU run, every module opens', async (t) => {
  if (!t.realBase) return t.skip('XPV_REAL_URL not set (../shared/testdata/real absent)');
  const page = await open(t, AMD);
  const mods = await modules(page, AMD);
  t.ok(mods.length > 3, `${mods.length} modules`);
  for (const m of mods.slice(0, 4)) {
    await page.selectOption('#mv-module', m);
    const d = await api(page, `run=${encodeURIComponent(AMD)}&tag=memory_viewer&module_name=${encodeURIComponent(m)}`);
    await page.waitForFunction((name) => document.querySelector('.mv-body').dataset.module === name, m);
    t.match(await page.textContent('.mv-module-info'), new RegExp(`Module ${d.moduleName} `), `${m} drawn`);
    t.eq(Number(await page.getAttribute('.mv-summary .mv-card-value', 'data-mib')), d.peakHeapMib,
      `${m}: peak card = API`);
  }
  t.ok(await page.locator('.mv-peak .xpv-table-el tbody tr').count() > 0, 'peak buffers listed');
  t.log(`4 modules switched, each peak card = the API's peakHeapMib`);
  await t.assertClean(page);
});
