// graph_viewer.test.js - the Graph Viewer on real JAX profiles: the default
// graph (the busiest module's most expensive op, highlighted, with its
// operands drawn), the click-through HLO Op Profile -> Graph Viewer, the
// instruction search, a "+N" cut-off marker that draws more neighbours,
// the module selector and the DOT download; the API's DOT and
// /module_list.  Needs XPV_REAL_URL; no request may leave 127.0.0.1.
const { test } = require('./harness');

const RUN = 'openxla-xprof/tpu_inference_2';
const GPU_RUN = 'AMD-AGI-TraceLens/jax08_attention';

async function api(t, run, params) {
  const q = new URLSearchParams(Object.assign({ run, tag: 'graph_viewer' }, params));
  const r = await fetch(`${t.realBase}data/plugin/profile/data?${q}`);
  return { status: r.status, type: r.headers.get('content-type'), body: await r.text() };
}

async function centreDrawn(t, page, name) {
  await t.waitFor(page, `.xpv-tool-root[data-tool="graph_viewer"] .xpv-gv-node.xpv-gv-center[data-name="${name}"], ` +
    `.xpv-tool-root[data-tool="graph_viewer"] .xpv-gv-cluster[data-name="${name}"]`);
}

// Every operand of the centre is on the page (a node, or the box of an
// expanded fusion), as the API lists them.
async function operandsDrawn(t, page, run, module, name) {
  const g = JSON.parse((await api(t, run, { module_name: module, node_name: name })).body);
  const c = g.nodes.find((n) => n.center);
  t.eq(c.name, name, `API centre ${name}`);
  for (const id of c.operands) {
    const o = g.nodes.find((n) => n.id === id);
    t.ok(o, `operand ${id} of ${name} in the answer`);
    const sel = o.expanded ? `.xpv-gv-cluster[data-name="${o.name}"]` : `.xpv-gv-node[data-name="${o.name}"]`;
    t.ok(await page.locator(sel).count() === 1, `operand ${o.name} drawn`);
  }
  return g;
}

test('graph_viewer: default graph, search, expand, module list, DOT', async (t) => {
  if (!t.realBase) return t.skip('XPV_REAL_URL not set (../shared/testdata/real absent)');
  const tools = await (await fetch(`${t.realBase}data/plugin/profile/run_tools?run=${encodeURIComponent(GPU_RUN)}`)).json();
  t.ok(tools.includes('graph_viewer'), `run_tools offers graph_viewer (${tools})`);
  const ml = await fetch(`${t.realBase}data/plugin/profile/module_list?run=${encodeURIComponent(GPU_RUN)}`);
  const mods = (await ml.text()).split(',');
  t.ok(/text\/plain/.test(ml.headers.get('content-type')) && mods.length > 1 && mods.every((m) => /\(\d+\)$/.test(m)),
    `module_list: ${mods.length} modules "name(program id)"`);
  const def = JSON.parse((await api(t, GPU_RUN, {})).body);
  t.eq(def.chosenBy, 'most_expensive', 'default centre: the most expensive op');
  const dot = await api(t, GPU_RUN, { format: 'dot' });
  t.ok(/text\/plain/.test(dot.type) && dot.body.startsWith('digraph G {') && dot.body.includes(def.center), 'format=dot: DOT text');
  t.eq((await api(t, GPU_RUN, { format: 'url' })).status, 400, 'format=url (Graphviz) refused');

  const page = await t.open(`${t.realBase}#run=${encodeURIComponent(GPU_RUN)}&tool=graph_viewer`, { viewport: { width: 1600, height: 1000 } });
  await centreDrawn(t, page, def.center);
  await t.waitIdle(page);
  await operandsDrawn(t, page, GPU_RUN, def.module, def.center);
  t.eq(await page.inputValue('#xpv-gv-module'), def.module, 'module selector shows the busiest module');
  t.ok(await page.locator('#xpv-gv-module option').count() === mods.length, 'module selector lists every module');
  t.match(await page.getAttribute('#xpv-gv-dot', 'href'), /^data\/plugin\/profile\/data\?.*format=dot/, 'DOT link is relative');
  t.match(await page.textContent('.xpv-gv-details'), new RegExp(def.center), 'centre details shown');

  // search another instruction of the module (one the graph does not draw)
  const wide = JSON.parse((await api(t, GPU_RUN, { module_name: def.module, node_name: def.center, graph_width: '10' })).body);
  const other = wide.nodes.find((n) => !n.expanded && n.cluster === null && n.distance >= 2 && n.opcode !== 'constant') ||
    wide.nodes.find((n) => !n.center && !n.expanded && n.cluster === null);
  await page.fill('#xpv-gv-search', other.name);
  await page.press('#xpv-gv-search', 'Enter');
  await centreDrawn(t, page, other.name);
  await t.waitIdle(page);
  await operandsDrawn(t, page, GPU_RUN, def.module, other.name);
  t.match(await page.evaluate(() => location.hash), new RegExp(`gv.node=${encodeURIComponent(other.name).replace(/\./g, '\\.')}`), 'hash keeps the centre');
  // an unknown name: a message, the graph stays
  await page.fill('#xpv-gv-search', 'no-such-op.123');
  await page.press('#xpv-gv-search', 'Enter');
  await t.waitText(page, '.xpv-gv-msg', /no-such-op/);
  t.ok(await page.locator(`.xpv-gv-center[data-name="${other.name}"]`).count() === 1, 'graph kept after a failed search');

  // width 1, then a cut-off marker: more neighbours drawn
  await page.fill('#xpv-gv-width', '1');
  await page.dispatchEvent('#xpv-gv-width', 'change');
  await t.waitIdle(page);
  await page.waitForFunction(() => !document.querySelector('.xpv-gv-summary') ||
    /graph width 1/.test(document.querySelector('.xpv-gv-summary').textContent));
  const before = await page.locator('.xpv-gv-node').count();
  const more = page.locator('.xpv-gv-more').first();
  t.ok(await more.count() === 1, 'a cut-off marker is drawn at width 1');
  const cutName = await more.getAttribute('data-name');
  await more.click();
  await page.waitForFunction((n) => document.querySelectorAll('.xpv-gv-node').length > n, before);
  await t.waitIdle(page);
  t.ok(await page.locator('.xpv-gv-node').count() > before, `clicking +N on ${cutName} draws more nodes`);
  t.match(await page.evaluate(() => location.hash), /gv\.expand=/, 'hash keeps the expansion');

  // double-click re-centres; another module from the selector
  const second = mods.find((m) => m !== def.module);
  await page.selectOption('#xpv-gv-module', second);
  await t.waitIdle(page);
  await page.waitForFunction((m) => /Module /.test(document.querySelector('.xpv-gv-summary').textContent) &&
    document.querySelector('.xpv-gv-summary').textContent.includes(m), second);
  t.ok(await page.locator('.xpv-gv-center, .xpv-gv-cluster').count() >= 1, `module ${second} drawn`);
  // the one failed search above is the only 404
  await t.assertClean(page, { allowConsole: [/status of 404/], allowHttp: [/node_name=no-such-op\.123/] });
});

test('op_profile -> graph_viewer click-through (TPU JAX run)', async (t) => {
  if (!t.realBase) return t.skip('XPV_REAL_URL not set (../shared/testdata/real absent)');
  const page = await t.open(`${t.realBase}#run=${encodeURIComponent(RUN)}&tool=op_profile`, { viewport: { width: 1600, height: 1000 } });
  await t.waitFor(page, '.xpv-op-node');
  await t.waitIdle(page);
  for (let depth = 0; depth < 4; depth++) {
    const closed = page.locator('.xpv-op-node[aria-expanded="false"]').first();
    if (!(await closed.count())) break;
    await closed.click();
  }
  await page.locator('.xpv-op-node:not([aria-expanded])').first().click();
  await t.waitFor(page, '.xpv-op-to-graph');
  const op = await page.getAttribute('.xpv-op-to-graph', 'data-op');
  await page.click('.xpv-op-to-graph');
  await centreDrawn(t, page, op);
  await t.waitIdle(page);
  const module = await page.inputValue('#xpv-gv-module');
  const g = await operandsDrawn(t, page, RUN, module, op);
  t.ok(g.nodes.length >= 1 && (await page.locator('.xpv-gv-edge').count()) === g.edges.length, 'every edge drawn');
  // details -> HLO Op Stats, then a row back to the Graph Viewer
  await page.click(`.xpv-gv-node[data-name="${op}"], .xpv-gv-cluster[data-name="${op}"] text`);
  await page.click('.xpv-gv-to-hlo-stats');
  await t.waitFor(page, '.xpv-tool-root[data-tool="hlo_stats"] .xpv-table-el tbody tr');
  await page.locator('.xpv-table-el tbody tr').first().click();
  await t.waitFor(page, '.xpv-hlo-to-graph');
  const back = await page.getAttribute('.xpv-hlo-to-graph', 'data-op');
  await page.click('.xpv-hlo-to-graph');
  await centreDrawn(t, page, back);
  t.ok(true, `hlo_stats row -> graph viewer centred on ${back}`);
  await t.assertClean(page);
});
