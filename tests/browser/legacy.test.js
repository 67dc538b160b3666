// legacy.test.js - older profile formats on the normal pages.
//
// Needs the real profiles (XPV_REAL_URL: --logdir $XPV_SHARED/testdata/real);
// skipped with a message otherwise.  A TF 2.2 run made only of per-tool
// files (*.overview_page.pb, *.tensorflow_stats.pb, ...) and a PyTorch
// Kineto trace (*.pt.trace.json.gz) must render their numbers on the same
// pages as XPlane profiles (values: shared/spec/legacy-and-pytorch.md).
// Also: the trace viewer on a PyTorch host draws its events (GPU and CPU
// planes), a CPU-only PyTorch trace offers the op stats (host ops) but not
// kernel stats, stored *.pod_viewer.json files (2020 and 2021 shapes)
// render the pod viewer, and a stored *.memory_profile.json.gz renders the
// memory profile page (testdata has none today: that test skips).
const fs = require('fs');
const path = require('path');
const { test, toolData } = require('./harness');

async function runsOf(t) {
  return (await fetch(`${t.realBase}data/plugin/profile/runs`)).json();
}

async function toolsOf(t, run) {
  return (await fetch(`${t.realBase}data/plugin/profile/run_tools?run=${encodeURIComponent(run)}`)).json();
}

async function traceHook(page, fn) {
  return page.evaluate((f) => {
    const r = document.querySelector('.xpv-tool-root');
    return r && r.xpvTrace ? r.xpvTrace[f]() : null;
  }, fn);
}

async function openTool(t, run, tool, title) {
  const page = await t.open(t.realBase + '#run=' + encodeURIComponent(run) + '&tool=' + tool);
  await t.waitText(page, '#xpv-page h2', title);
  await t.waitIdle(page);
  return page;
}

const text = async (page) => page.locator('#xpv-page').innerText();

test('legacy: TF 2.2 overview_page.pb', async (t) => {
  if (!t.realBase) return t.skip('XPV_REAL_URL not set (../shared/testdata/real absent)');
  const page = await openTool(t, 'tensorflow-profiler/GPU-compute-bound', 'overview_page',
                              /Overview Page/);
  const body = await text(page);
  t.match(body, /1805\.1/, 'average step time of the stored analysis');
  t.match(body, /replica_1\/model\/tf_op_layer_Pad\/Pad\/_2775/, 'top device op');
  await t.assertClean(page);
});

test('legacy: TF 2.2 tensorflow_stats.pb', async (t) => {
  if (!t.realBase) return t.skip('XPV_REAL_URL not set (../shared/testdata/real absent)');
  const page = await openTool(t, 'tensorflow-profiler/profile_demo', 'framework_op_stats',
                              /Framework Op Stats|TensorFlow Stats/);
  await t.waitText(page, '#xpv-page', /average_loss\/Mean\/_23/);
  const body = await text(page);
  t.match(body, /average_loss\/Mean\/_23/, 'rank-1 op of the stored table');
  t.match(body, /_Recv/, 'op type');
  await t.assertClean(page);
});

test('legacy: TF 2.2 input_pipeline.pb', async (t) => {
  if (!t.realBase) return t.skip('XPV_REAL_URL not set (../shared/testdata/real absent)');
  const page = await openTool(t, 'awslabs-sagemaker-debugger/2020_08_05_13_37_44',
                              'input_pipeline_analyzer', /Input Pipeline Analyzer/);
  const body = await text(page);
  t.match(body, /input-bound/, 'stored verdict');
  t.match(body, /Iterator::Model::ParallelMap/, 'stored input ops');
  await t.assertClean(page);
});

test('legacy: Cloud TPU stored overview_page.json and input_pipeline.json', async (t) => {
  if (!t.realBase) return t.skip('XPV_REAL_URL not set (../shared/testdata/real absent)');
  // 6 DataTables with TPU step columns and no diagnostics table: once
  // "unexpected overview_page data" and a blank input pipeline page.
  let page = await openTool(t, 'tensorflow-profiler/Cloud-TPU', 'overview_page', /Overview Page/);
  let body = await text(page);
  t.match(body, /313\.8 ms/, 'average step time 313.8 ms (3 steps)');
  t.match(body, /3 steps/, 'three steps');
  t.match(body, /MXU utilization\s*48\.8%/, 'MXU utilization card');
  t.match(body, /NOT input-bound/, 'stored recommendation');
  t.match(body, /Conv2DBackpropInput/, 'top TPU op');
  t.ok(await page.locator('.xpv-step-chart').count() === 1, 'step-time graph drawn');
  await t.assertClean(page);
  page = await openTool(t, 'tensorflow-profiler/Cloud-TPU', 'input_pipeline_analyzer',
                        /Input Pipeline Analyzer/);
  body = await text(page);
  t.match(body, /NOT input-bound/, 'stored verdict');
  t.match(body, /313\.8 ms/, 'average step time card');
  t.match(body, /Iterator::Prefetch::Generator/, 'stored input ops');
  t.ok(await page.locator('.xpv-step-chart').count() === 1, 'step-time graph drawn');
  await t.assertClean(page);
});

test('legacy: a link to a tool the run lacks says so and offers the others', async (t) => {
  if (!t.realBase) return t.skip('XPV_REAL_URL not set (../shared/testdata/real absent)');
  const run = 'pytorch-kineto/pytorch/resnet50_num_workers_0';
  const page = await t.open(t.realBase + '#run=' + encodeURIComponent(run) + '&tool=memory_viewer');
  await t.waitFor(page, '.xpv-missing-tool');
  const note = await page.locator('.xpv-missing-tool').innerText();
  t.match(note, /has no .*memory_viewer/, 'says the run has no memory_viewer');
  const offered = await page.locator('.xpv-missing-tool a').evaluateAll((as) => as.map((a) => a.dataset.tool));
  t.eq(offered, await toolsOf(t, run), 'offers exactly the run\'s tools');
  await page.locator('.xpv-missing-tool a[data-tool="kernel_stats"]').click();
  await t.waitText(page, '#xpv-page h2', /Kernel Stats/);
  t.eq(await page.locator('.xpv-missing-tool').count(), 0, 'notice gone once a real tool is chosen');
  await t.assertClean(page);
});

test('legacy: PyTorch trace kernel stats', async (t) => {
  if (!t.realBase) return t.skip('XPV_REAL_URL not set (../shared/testdata/real absent)');
  const run = 'pytorch-kineto/pytorch/resnet50_num_workers_0';
  const page = await openTool(t, run, 'kernel_stats', /Kernel Stats/);
  await t.waitText(page, '#xpv-page', /implicit_convolve_sgemm/);
  const body = await text(page);
  t.match(body, /implicit_convolve_sgemm/, 'kernel names from the trace');
  t.match(body, /aten::cudnn_convolution/, 'launching PyTorch op');
  t.ok((body.match(/implicit_convolve_sgemm/g) || []).length >= 3, 'several kernel rows');
  // Kineto's occupancy is an estimated achieved one, labeled as such.
  t.match(body, /Est\. Achieved Occupancy %/, 'occupancy column says what it holds');
  t.ok(!/Theoretical Occupancy/.test(body), 'not called theoretical');
  await t.assertClean(page);
});

test('legacy: PyTorch trace op stats', async (t) => {
  if (!t.realBase) return t.skip('XPV_REAL_URL not set (../shared/testdata/real absent)');
  const run = 'pytorch-kineto/pytorch/resnet50_num_workers_0';
  const page = await openTool(t, run, 'framework_op_stats', /Framework Op Stats/);
  await t.waitText(page, '#xpv-page', /aten::cudnn_convolution_backward_weight/);
  t.match(await text(page), /Task type: Training/, 'a training run (backward ops) says Training');
  t.match(await text(page), /Device/, 'device-side rows');
  await t.assertClean(page);
});

test('legacy: PyTorch trace in the trace viewer', async (t) => {
  if (!t.realBase) return t.skip('XPV_REAL_URL not set (../shared/testdata/real absent)');
  const run = 'pytorch-kineto/pytorch/resnet50_num_workers_0';
  if (!(await runsOf(t)).includes(run)) return t.skip(`${run} absent`);
  t.ok((await toolsOf(t, run)).includes('trace_viewer'), 'run_tools offers trace_viewer');
  const page = await t.open(t.realBase + '#run=' + encodeURIComponent(run) + '&tool=trace_viewer',
                            { viewport: { width: 1400, height: 900 } });
  await t.waitFor(page, '.xpv-tool-root[data-ready="1"] canvas.xpv-trace-canvas');
  await t.waitIdle(page);
  await page.waitForTimeout(300);
  await t.waitIdle(page);
  t.match(await page.textContent('.xpv-trace-status'), /events loaded/, 'status line');
  const procs = (await traceHook(page, 'procs')).map((p) => p.name);
  t.ok(procs.some((n) => /\/device:GPU:0/.test(n)), `GPU plane shown (${procs.join(', ')})`);
  t.ok(procs.some((n) => /\/host:CPU/.test(n)), 'host plane shown');
  const boxes = await traceHook(page, 'boxes');
  t.ok(boxes.length > 20, `timeline drew ${boxes.length} event boxes`);
  const names = boxes.map((b) => b.name);
  t.ok(names.some((n) => /^(aten::|ProfilerStep#|enumerate\(DataLoader\)|Optimizer)/.test(n)),
       'PyTorch op / step events drawn');
  const full = await traceHook(page, 'full');
  // resnet50_num_workers_0 profiles 6 steps of ~149 ms: about 0.9 s.
  t.ok(full && full[1] - full[0] > 5e5 && full[1] - full[0] < 5e6,
       `timespan ${full && (full[1] - full[0])} us`);
  await t.assertClean(page);
});

test('legacy: CPU-only PyTorch trace offers op stats, not kernel stats', async (t) => {
  if (!t.realBase) return t.skip('XPV_REAL_URL not set (../shared/testdata/real absent)');
  const run = 'facebookresearch-HolisticTraceAnalysis/pytorch/cpu_only';
  if (!(await runsOf(t)).includes(run)) return t.skip(`${run} absent`);
  const tools = await toolsOf(t, run);
  t.ok(tools.includes('framework_op_stats'), `framework_op_stats offered (${tools.join(', ')})`);
  t.ok(!tools.includes('kernel_stats'), 'no kernel_stats without kernel events');
  const page = await openTool(t, run, 'framework_op_stats', /Framework Op Stats|TensorFlow Stats/);
  await t.waitText(page, '#xpv-page', /aten::empty/);
  t.match(await text(page), /Host/, 'host-side rows');
  await t.assertClean(page);
});

async function podViewer(t, run, cores) {
  if (!t.realBase) return t.skip('XPV_REAL_URL not set (../shared/testdata/real absent)');
  if (!(await runsOf(t)).includes(run)) return t.skip(`${run} absent`);
  t.ok((await toolsOf(t, run)).includes('pod_viewer'), 'run_tools offers pod_viewer');
  const page = await t.open(t.realBase + '#run=' + encodeURIComponent(run) + '&tool=pod_viewer');
  await t.waitFor(page, '.pv-chart svg');
  await t.waitIdle(page);
  const data = await toolData(page, run, 'pod_viewer');
  const steps = data.podStatsSequence.podStatsMap;
  t.eq(Object.keys(steps[0].podStatsPerCore).length, cores, 'cores per step in the file');
  t.eq(await page.getAttribute('#pv-step', 'max'), String(steps.length - 1), 'slider covers every step');
  const series = await page.$$eval('.pv-chart path.xpv-bars', (ps) => ps.map((p) => p.dataset.series));
  t.ok(series.length >= 2, `stacked categories from the stored fields (${series.join(', ')})`);
  t.match(await text(page), /TPU/, 'device type');
  // Worker labels share "10.240.1.50": the axis must still tell them apart.
  const ticks = await page.$$eval('.pv-chart g.xpv-tick-group', (gs) => gs
    .map((x) => [x.querySelector('text').textContent, x.querySelector('title').textContent]));
  t.ok(ticks.length >= 2, `worker labels drawn (${ticks.map((x) => x[0]).join(' ')})`);
  t.eq(new Set(ticks.map((x) => x[0])).size, new Set(ticks.map((x) => x[1])).size,
    'distinct workers have distinct axis labels');
  t.ok(ticks.every((x) => x[0].length <= 10), 'labels fit in 10 characters');
  await t.assertClean(page);
}

test('legacy: stored pod_viewer.json (2020 fields)', async (t) => {
  await podViewer(t, 'tensorflow-profiler/Cloud-TPU_2020-pod_viewer', 8);
});

test('legacy: stored pod_viewer.json (2021 fields, logicalIdGroups)', async (t) => {
  await podViewer(t, 'tensorflow-profiler/Cloud-TPU', 8);
});

test('legacy: stored memory_profile.json.gz', async (t) => {
  if (!t.realBase) return t.skip('XPV_REAL_URL not set (../shared/testdata/real absent)');
  const real = path.join(process.env.XPV_SHARED || '', 'testdata', 'real');
  const found = [];
  const walk = (d) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.memory_profile.json.gz') && !p.includes('reference_outputs')) found.push(p);
    }
  };
  if (fs.existsSync(real)) walk(real);
  if (!found.length) return t.skip('no stored *.memory_profile.json.gz under testdata/real (spec §5.3: none exists)');
  const rel = path.relative(real, path.dirname(found[0])).split(path.sep).join('/');
  const run = rel.replace('/plugins/profile/', '/').replace(/^plugins\/profile\//, '');
  const page = await openTool(t, run, 'memory_profile', /Memory Profile/);
  await t.waitFor(page, '#xpv-page svg');
  t.match(await text(page), /Peak|peak/, 'summary cards');
  await t.assertClean(page);
});
