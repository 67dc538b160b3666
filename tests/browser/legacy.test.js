// legacy.test.js - older profile formats on the normal pages.
//
// Needs the real profiles (XPV_REAL_URL: --logdir $XPV_SHARED/testdata/real);
// skipped with a message otherwise.  A TF 2.2 run made only of per-tool
// files (*.overview_page.pb, *.tensorflow_stats.pb, ...) and a PyTorch
// Kineto trace (*.pt.trace.json.gz) must render their numbers on the same
// pages as XPlane profiles (values: shared/spec/legacy-and-pytorch.md).
const { test } = require('./harness');

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

test('legacy: PyTorch trace kernel stats', async (t) => {
  if (!t.realBase) return t.skip('XPV_REAL_URL not set (../shared/testdata/real absent)');
  const run = 'pytorch-kineto/pytorch/resnet50_num_workers_0';
  const page = await openTool(t, run, 'kernel_stats', /Kernel Stats/);
  await t.waitText(page, '#xpv-page', /implicit_convolve_sgemm/);
  const body = await text(page);
  t.match(body, /implicit_convolve_sgemm/, 'kernel names from the trace');
  t.match(body, /aten::cudnn_convolution/, 'launching PyTorch op');
  t.ok((body.match(/implicit_convolve_sgemm/g) || []).length >= 3, 'several kernel rows');
  await t.assertClean(page);
});

test('legacy: PyTorch trace op stats', async (t) => {
  if (!t.realBase) return t.skip('XPV_REAL_URL not set (../shared/testdata/real absent)');
  const run = 'pytorch-kineto/pytorch/resnet50_num_workers_0';
  const page = await openTool(t, run, 'framework_op_stats', /Framework Op Stats|TensorFlow Stats/);
  await t.waitText(page, '#xpv-page', /aten::cudnn_convolution_backward_weight/);
  t.match(await text(page), /Device/, 'device-side rows');
  await t.assertClean(page);
});
