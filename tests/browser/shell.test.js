// shell.test.js - the dashboard shell and the shared web/lib modules.
//
// Against the demo server (tests/browser.sh): selectors filled from the API,
// URL hash <-> selection, back button, About panel (planes of the synthetic
// profile), error display for a bogus run and a corrupt file, the shared
// table (sort, filter, pagination, CSV) and chart (pie, stacked bar, line
// with two axes, tooltips) modules, the --path_prefix server, and real
// profiles from XPV_SHARED when present.  Every test asserts that no
// request left 127.0.0.1 and that no page error happened.
const { test } = require('./harness');

const runSel = '#xpv-run', toolSel = '#xpv-tool', hostSel = '#xpv-host';

async function ready(t, page) {
  await page.waitForFunction(() => {
    const r = document.getElementById('xpv-run');
    const h = document.getElementById('xpv-host');
    return r && r.options.length > 0 && r.value && h && h.options.length > 0;
  }, null, { timeout: 15000 });
  await t.waitIdle(page);
}

function hashParams(page) {
  return Object.fromEntries(new URLSearchParams(new URL(page.url()).hash.slice(1)));
}

async function pageState(page) {
  return page.evaluate(() => ({
    run: document.getElementById('xpv-run').value,
    tool: document.getElementById('xpv-tool').value,
    host: document.getElementById('xpv-host').value,
    rendered: (document.querySelector('#xpv-page .xpv-tool-root') || {}).dataset?.tool || null,
  }));
}

// A tool page that does not exist yet is a 404 for tools/<name>.js; the
// shell shows a clear message for it, which is allowed here.
const missingPage = /\/tools\/\w+\.js$/;

test('shell: selectors, URL hash, back button', async (t) => {
  const page = await t.open(t.url());
  await ready(t, page);
  const runs = await t.selectOptions(page, runSel);
  const names = runs.map((o) => o.value);
  t.ok(names.includes('2024_01_01_00_00_01'), 'run list has the 1-host synthetic run');
  t.ok(names.includes('multi/2024_01_02_00_00_00'), 'run list has the nested 2-host run');
  t.ok(names.includes('broken/2023_12_31_00_00_00'), 'run list has the corrupt run');
  const tools = await t.selectOptions(page, toolSel);
  t.ok(tools.length >= 2, `tools listed (${tools.map((o) => o.value).join(',')})`);
  t.ok(tools.every((o) => o.text && !/_/.test(o.text.replace(/\(.*\)/, ''))), 'tools have display names');
  const overview = tools.find((o) => o.value === 'overview_page');
  if (overview) t.eq(overview.text, 'Overview Page', 'overview_page display name');
  const hosts = await t.selectOptions(page, hostSel);
  t.ok(hosts.length >= 1 && hosts[0].value, 'hosts listed');
  const s0 = await pageState(page);
  const h0 = hashParams(page);
  t.eq([h0.run, h0.tool, h0.host], [s0.run, s0.tool, s0.host], 'URL hash reflects the selection');
  t.eq(s0.rendered, s0.tool, 'the selected tool page is mounted');

  // switch tool with the selector
  const other = tools.find((o) => o.value !== s0.tool);
  await page.selectOption(toolSel, other.value);
  await page.waitForFunction((v) => new URLSearchParams(location.hash.slice(1)).get('tool') === v, other.value);
  await page.waitForFunction((v) => document.querySelector(`#xpv-page .xpv-tool-root[data-tool="${v}"]`), other.value);
  await t.waitIdle(page);
  t.eq((await pageState(page)).tool, other.value, 'tool selector switched the page');
  const content = await page.textContent('#xpv-page');
  t.ok(content.trim().length > 0, 'the tool page shows something');

  // back button returns to the first tool
  await page.goBack();
  await page.waitForFunction((v) => document.querySelector(`#xpv-page .xpv-tool-root[data-tool="${v}"]`), s0.tool);
  await t.waitIdle(page);
  const s1 = await pageState(page);
  t.eq(s1.tool, s0.tool, 'back button restored the tool selector');
  t.eq(hashParams(page).tool, s0.tool, 'back button restored the hash');
  await page.goForward();
  await page.waitForFunction((v) => document.getElementById('xpv-tool').value === v, other.value);
  t.ok(true, 'forward button works too');

  // switch run: the 2-host run lists both hosts (+ ALL_HOSTS for some tools)
  await page.selectOption(runSel, 'multi/2024_01_02_00_00_00');
  await page.waitForFunction(() => new URLSearchParams(location.hash.slice(1)).get('run') === 'multi/2024_01_02_00_00_00');
  await t.waitIdle(page);
  const tools2 = (await t.selectOptions(page, toolSel)).map((o) => o.value);
  const concrete = tools2.find((x) => x === 'trace_viewer' || x === 'memory_profile') || null;
  if (concrete) {
    await page.selectOption(toolSel, concrete);
    await page.waitForFunction((v) => new URLSearchParams(location.hash.slice(1)).get('tool') === v, concrete);
    await t.waitIdle(page);
    const hs = (await t.selectOptions(page, hostSel)).map((o) => o.value);
    t.ok(hs.length === 2 && !hs.includes('ALL_HOSTS'), `${concrete} lists the two concrete hosts (${hs})`);
    await page.selectOption(hostSel, hs[1]);
    await page.waitForFunction((v) => new URLSearchParams(location.hash.slice(1)).get('host') === v, hs[1]);
    t.ok(true, 'host selector updates the hash');
  }
  // keyboard: the selectors are reachable with Tab
  await page.focus(runSel);
  await page.keyboard.press('Tab');
  t.eq(await page.evaluate(() => document.activeElement.id), 'xpv-tool', 'Tab moves from run to tool selector');
  await t.assertClean(page, { allowHttp: [missingPage] });
});

test('shell: About this profile lists the planes', async (t) => {
  const page = await t.open(t.url('#run=2024_01_01_00_00_01'));
  await ready(t, page);
  await page.click('#xpv-about-btn');
  t.eq(await page.getAttribute('#xpv-about-btn', 'aria-expanded'), 'true', 'About button is expanded');
  await t.waitFor(page, '#xpv-about .xpv-about-planes tbody tr[data-index]');
  const planes = await page.$$eval('#xpv-about .xpv-about-planes tbody tr', (trs) => trs.map((tr) => tr.children[1].textContent));
  t.ok(planes.includes('/host:CPU'), `planes include /host:CPU (${planes.join(', ')})`);
  t.ok(planes.some((p) => /^\/device:GPU:\d+$/.test(p)), 'planes include a /device:GPU:N plane');
  const about = await page.textContent('#xpv-about');
  t.match(about, /File size/, 'file size shown');
  t.match(about, /Events\s*[\d,]+/, 'event count shown');
  t.match(about, /Errors \(\d+\)/, 'XSpace errors section shown');
  t.match(about, /Warnings \(\d+\)/, 'XSpace warnings section shown');

  // the shared table inside: sort by events (descending first), filter, CSV
  const ev = () => page.$$eval('#xpv-about .xpv-about-planes tbody tr', (trs) =>
    trs.map((tr) => Number(tr.children[3].textContent.replace(/,/g, ''))));
  await page.click('#xpv-about th[data-col="events"] button');
  const sorted = await ev();
  t.ok(sorted.every((v, i) => i === 0 || sorted[i - 1] >= v), `sorted by events desc (${sorted})`);
  t.eq(await page.getAttribute('#xpv-about th[data-col="events"]', 'aria-sort'), 'descending', 'aria-sort set');
  await page.click('#xpv-about th[data-col="events"] button');
  const asc = await ev();
  t.ok(asc.every((v, i) => i === 0 || asc[i - 1] <= v), 'second click sorts ascending');
  await page.fill('#xpv-about .xpv-table-filter', 'GPU');
  await page.waitForFunction(() => [...document.querySelectorAll('#xpv-about .xpv-about-planes tbody tr')]
    .every((tr) => /GPU/.test(tr.textContent)));
  t.match(await page.textContent('#xpv-about .xpv-table-count'), /of \d+ rows/, 'filter count shown');
  const [dl] = await Promise.all([page.waitForEvent('download'), page.click('#xpv-about .xpv-table-csv')]);
  const fs = require('fs');
  const csv = fs.readFileSync(await dl.path(), 'utf8');
  const lines = csv.split('\r\n').filter(Boolean);
  t.eq(lines[0], 'ID,Plane,Lines,Events,Event metadata,Stat metadata', 'CSV header');
  t.ok(lines.length >= 2 && lines.slice(1).every((l) => /GPU/.test(l)), 'CSV holds the filtered rows');
  t.match(dl.suggestedFilename(), /\.csv$/, 'CSV file name');

  await page.keyboard.press('Escape');
  t.ok(await page.isHidden('#xpv-about'), 'Escape closes the About panel');
  await t.assertClean(page, { allowHttp: [missingPage] });
});

test('shell: errors are shown clearly', async (t) => {
  const page = await t.open(t.url('#run=no_such_run&tool=overview_page'));
  await t.waitFor(page, '#xpv-error:not([hidden])');
  const msg = await page.textContent('#xpv-error');
  t.match(msg, /no_such_run/, 'error names the bogus run');
  t.match(msg, /HTTP 404/, 'error shows the HTTP status');
  t.ok((await t.selectOptions(page, runSel)).length > 1, 'run selector still usable');
  // picking a real run clears the error
  await page.selectOption(runSel, '2024_01_01_00_00_01');
  await page.waitForSelector('#xpv-error', { state: 'hidden' });
  t.ok(true, 'choosing a valid run clears the error');
  await t.waitIdle(page);

  // a corrupt file: decode errors name the file and the byte offset
  await page.evaluate(() => { location.hash = '#run=broken/2023_12_31_00_00_00'; });
  await page.waitForFunction(() => {
    const e = document.getElementById('xpv-error');
    const p = document.querySelector('#xpv-page');
    return (e && !e.hidden) || /bad\.xplane\.pb/.test(p.textContent);
  });
  await t.waitIdle(page);
  const err = (await page.textContent('#xpv-error')) + (await page.textContent('#xpv-page'));
  t.match(err, /bad\.xplane\.pb/, 'corrupt file is named');
  t.match(err, /offset/, 'byte offset is given');
  await t.assertClean(page, { allowHttp: [/no_such_run/, /broken/, missingPage] });
});

test('shared libs: table and charts', async (t) => {
  const page = await t.open(t.url());
  await ready(t, page);
  const r = await page.evaluate(async () => {
    const C = await import('./lib/chart.js');
    const T = await import('./lib/table.js');
    const D = await import('./lib/datatable.js');
    const box = document.createElement('div');
    box.id = 'libtest';
    box.style.width = '800px';
    document.body.prepend(box);
    const pie = C.pieChart(box, { title: 'pie', data: [{ label: 'a', value: 3 }, { label: 'b', value: 1 }] });
    const bar = C.barChart(box, { title: 'bar', categories: ['s1', 's2', 's3'], yLabel: 'ms', yUnit: 'ms',
      series: [{ name: 'Input', values: [1, 2, 3] }, { name: 'Compute', values: [4, 5, 6] }] });
    const n = 20000;
    const xs = Array.from({ length: n }, (_, i) => i);
    const line = C.lineChart(box, { title: 'line', x: xs, yLabel: 'GiB', y2Label: '%',
      series: [{ name: 'heap', values: xs.map((i) => (i === 12345 ? 1000 : i % 100)), area: true },
        { name: 'frag', values: xs.map((i) => i % 7), axis: 'right' }] });
    const dt = { cols: [{ id: 'name', label: 'Name', type: 'string' }, { id: 't', label: 'Time', type: 'number' }],
      rows: [{ c: [{ v: 'x,"y"' }, { v: 2.5, f: '2.50 ms' }] }, { c: [{ v: 'z' }, { v: 10 }] },
        { c: [{ v: 'w' }, { v: 1 }] }], p: { k: 'v' } };
    const tbl = T.createTable(box, { data: dt, sort: { id: 't', dir: 'desc' }, pageSize: 10 });
    const rowsText = [...tbl.element.querySelectorAll('tbody tr')].map((tr) => tr.textContent);
    const linePath = line.element.querySelector('.xpv-line').getAttribute('d');
    return {
      pieSlices: pie.element.querySelectorAll('.xpv-slice').length,
      pieLabels: [...pie.element.querySelectorAll('.xpv-pie-label')].map((e) => e.textContent),
      barPaths: bar.element.querySelectorAll('.xpv-bars').length,
      barTicks: [...bar.element.querySelectorAll('.xpv-tick')].map((e) => e.textContent),
      lineSegments: (linePath.match(/[ML]/g) || []).length,
      lineHasPeak: line.element.querySelectorAll('.xpv-tick').length > 0,
      rightAxis: [...line.element.querySelectorAll('.xpv-axis-label')].map((e) => e.textContent),
      rowsText,
      csv: tbl.toCSV(),
      dtCsv: D.toCSV(dt),
      prop: D.prop(dt, 'k'),
      ticks: C.niceTicks(0, 9.3, 5).ticks,
      same: C.colorFor('Input') === C.colorFor('Input') && C.colorFor('Input') !== C.colorFor('Compute'),
      api: (await import('./lib/api.js')).url('data', { run: 'a b', tag: 'x', host: null }),
    };
  });
  t.eq(r.pieSlices, 2, 'pie draws one slice per item');
  t.eq(r.pieLabels, ['75%', '25%'], 'pie percentage labels');
  t.eq(r.barPaths, 2, 'stacked bar: one path per series');
  t.ok(r.barTicks.includes('10') && r.barTicks.includes('s2'), `bar y ticks and categories (${r.barTicks})`);
  t.ok(r.lineSegments <= 1000 && r.lineSegments > 100, `20k points downsampled to the pixel width (${r.lineSegments})`);
  t.eq(r.rightAxis, ['GiB', '%'], 'line chart has left and right axis labels');
  t.eq(r.rowsText, ['z10', 'x,"y"2.50 ms', 'w1'], 'table: DataTable rows, f values, numeric sort desc');
  t.eq(r.csv, 'Name,Time\r\nz,10\r\n"x,""y""",2.5\r\nw,1\r\n', 'table CSV is RFC 4180 (quoted, CRLF)');
  t.eq(r.dtCsv, 'Name,Time\r\n"x,""y""",2.5\r\nz,10\r\nw,1\r\n', 'datatable CSV');
  t.eq(r.prop, 'v', 'datatable prop');
  t.eq(r.ticks, [0, 2, 4, 6, 8, 10], 'nice ticks');
  t.ok(r.same, 'stable, distinct series colors');
  t.eq(r.api, 'data/plugin/profile/data?run=a+b&tag=x', 'api.url is relative and skips null params');

  // pagination, per-column numeric filter, row click, stacked areas
  const r2 = await page.evaluate(async () => {
    const T = await import('./lib/table.js');
    const C = await import('./lib/chart.js');
    const box = document.getElementById('libtest');
    const clicked = window.xpvClicked = [];
    const rows = Array.from({ length: 30 }, (_, i) => ({ name: `op${i}`, n: i }));
    const tb = T.createTable(box, { columns: [{ id: 'name', label: 'Name' }, { id: 'n', label: 'N', type: 'number' }],
      rows, pageSize: 10, columnFilters: true, onRowClick: (row) => clicked.push(row.name) });
    tb.element.id = 'pagetest';
    const st = C.lineChart(box, { x: [0, 1, 2], stacked: true,
      series: [{ name: 'a', values: [1, 2, 3] }, { name: 'b', values: [1, 1, 1] }] });
    return { areas: st.element.querySelectorAll('.xpv-area').length, clicked };
  });
  t.eq(r2.areas, 2, 'stacked line chart draws one area per series');
  const names = () => page.$$eval('#pagetest tbody tr', (trs) => trs.map((tr) => tr.children[0].textContent));
  t.eq((await names()).length, 10, 'page size 10');
  await page.click('#pagetest button[aria-label="Next page"]');
  t.eq((await names())[0], 'op10', 'next page shows rows 11..20');
  await page.selectOption('#pagetest .xpv-table-pager select', '25');
  t.eq((await names()).length, 25, 'page size selector');
  await page.fill('#pagetest input[data-col="n"]', '>=27');
  t.eq(await names(), ['op27', 'op28', 'op29'], 'numeric column filter >=27');
  await page.focus('#pagetest tbody tr');
  await page.keyboard.press('Enter');
  await page.click('#pagetest tbody tr:nth-child(2)');
  t.eq(await page.evaluate(() => window.xpvClicked), ['op27', 'op28'], 'row click callback (Enter and mouse)');
  // tooltips on hover: pie slice, stacked column (all series + total), line crosshair
  const pieSvg = await page.$('#libtest .xpv-pie-svg');
  await pieSvg.scrollIntoViewIfNeeded();
  const pb = await pieSvg.boundingBox();
  await page.mouse.move(pb.x + pb.width * 0.9, pb.y + pb.height / 2);  // 3 o'clock: inside slice 'a'
  t.match(await page.textContent('#libtest .xpv-chart-pie .xpv-tooltip'), /75\.0%/, 'pie tooltip shows the share');
  const ov = await page.$('#libtest .xpv-chart-bar .xpv-overlay');
  await ov.scrollIntoViewIfNeeded();
  const bb = await ov.boundingBox();
  await page.mouse.move(bb.x + bb.width * 0.5, bb.y + bb.height * 0.5);
  const tip = await page.textContent('#libtest .xpv-chart-bar .xpv-tooltip');
  t.match(tip, /s2.*Compute.*5 ms.*Input.*2 ms.*Total.*7/, 'bar tooltip lists every series and the total');
  const lo = await page.$('#libtest .xpv-chart-line .xpv-overlay');
  await lo.scrollIntoViewIfNeeded();
  const lb = await lo.boundingBox();
  await page.mouse.move(lb.x + lb.width * 0.3, lb.y + 10);
  t.match(await page.textContent('#libtest .xpv-chart-line .xpv-tooltip'), /heap.*frag/, 'line tooltip lists both series');
  t.eq(await page.getAttribute('#libtest .xpv-crosshair', 'visibility'), 'visible', 'crosshair shown');
  // legend toggles a series
  await page.click('#libtest .xpv-chart-bar .xpv-legend-item');
  t.eq(await page.$$eval('#libtest .xpv-chart-bar .xpv-bars', (e) => e.length), 1, 'legend click hides a series');
  // redraw on resize
  await page.evaluate(() => { document.getElementById('libtest').style.width = '500px'; });
  await page.waitForFunction(() => Number(document.querySelector('#libtest .xpv-chart-line svg').getAttribute('width')) <= 500);
  t.ok(true, 'charts follow the container width');
  await t.assertClean(page, { allowHttp: [missingPage] });
});

test('shell under --path_prefix /team/profile', async (t) => {
  if (!t.prefixBase) t.skip('XPV_PREFIX_URL not set');
  const page = await t.open(t.prefixBase);
  const seen = page.xpv.requests;
  await ready(t, page);
  await page.click('#xpv-about-btn');
  await t.waitFor(page, '#xpv-about .xpv-about-planes tbody tr[data-index]');
  t.ok(seen.length > 0 && seen.every((u) => u.startsWith(t.prefixBase)), `every request stays under the prefix (${seen.length})`);
  t.ok(seen.some((u) => u.includes('/team/profile/data/plugin/profile/runs')), 'runs fetched under the prefix');
  // without the trailing slash the server redirects to the prefix root
  const p2 = await t.open(t.prefixBase.replace(/\/$/, ''));
  await ready(t, p2);
  t.eq(p2.url().split('#')[0], t.prefixBase, 'prefix without trailing slash redirects');
  await t.assertClean(page, { allowHttp: [missingPage] });
  await t.assertClean(p2, { allowHttp: [missingPage] });
});

test('real profiles from XPV_SHARED', async (t) => {
  if (!t.realBase) t.skip('XPV_SHARED/testdata/real absent');
  const runs = await (await fetch(`${t.realBase}data/plugin/profile/runs`)).json();
  const first = runs.find((r) => /GPU-multi-worker$/.test(r)) || runs[0];
  const page = await t.open(t.realBase + '#run=' + encodeURIComponent(first));
  await ready(t, page);
  t.ok((await t.selectOptions(page, runSel)).length === runs.length, 'run selector lists every real run');
  t.log(`real runs: ${runs.join(', ')}`);
  const cases = [
    { re: /GPU-multi-worker$/, plane: /^\/device:GPU:1$/ },
    { re: /(^|\/)tpu_inference_2$/, plane: /^\/device:TPU:0$/ },
  ];
  let checked = 0;
  for (const c of cases) {
    const run = runs.find((r) => c.re.test(r));
    if (!run) { t.log(`no run matching ${c.re}`); continue; }
    await page.selectOption(runSel, run);
    await page.waitForFunction((v) => new URLSearchParams(location.hash.slice(1)).get('run') === v, run);
    await t.waitIdle(page);
    if (await page.isHidden('#xpv-about')) await page.click('#xpv-about-btn');
    await page.waitForFunction((v) => {
      const dd = [...document.querySelectorAll('#xpv-about dd')];
      return dd.some((d) => d.textContent === v) && document.querySelector('#xpv-about .xpv-about-planes tbody tr[data-index]');
    }, run);
    const planes = await page.$$eval('#xpv-about .xpv-about-planes tbody tr', (trs) => trs.map((tr) => tr.children[1].textContent));
    t.ok(planes.includes('/host:CPU') && planes.some((p) => c.plane.test(p)),
      `${run}: About lists its planes (${planes.length}: ${planes.slice(0, 6).join(', ')}...)`);
    checked++;
  }
  t.ok(checked > 0, 'at least one real run checked');
  await t.assertClean(page, { allowHttp: [missingPage] });
});

test('shell: dark theme follows the system, the toggle overrides it', async (t) => {
  const page = await t.open(t.url('#tool=trace_viewer'));
  await ready(t, page);
  const bg = () => page.evaluate(() => getComputedStyle(document.body).backgroundColor);
  const light = await bg();
  await page.emulateMedia({ colorScheme: 'dark' });
  await page.waitForFunction(() => document.documentElement.dataset.theme === 'dark', null, { timeout: 5000 });
  const dark = await bg();
  t.ok(light !== dark, `prefers-color-scheme: dark changes the page (${light} -> ${dark})`);
  const lum = (c) => c.match(/\d+/g).slice(0, 3).reduce((a, v) => a + Number(v), 0);
  t.ok(lum(dark) < 150, `dark background is dark (${dark})`);
  // The trace canvas is drawn in the theme's colours: its label column
  // pixel matches the panel colour.
  await page.waitForFunction(() => {
    const r = document.querySelector('.xpv-tool-root');
    return r && r.xpvTrace && r.xpvTrace.paintStats().boxes > 0;
  }, null, { timeout: 20000 });
  const px = () => page.evaluate(() => {
    const c = document.querySelector('.xpv-trace-canvas');
    const d = c.getContext('2d').getImageData(4, 4, 1, 1).data;   // axis corner
    return d[0] + d[1] + d[2];
  });
  await page.waitForTimeout(100);
  t.ok(await px() < 150, 'trace canvas redrawn dark');
  const btn = page.locator('#xpv-theme');
  t.eq(await btn.getAttribute('data-mode'), 'auto', 'toggle starts on auto');
  await btn.click();                       // auto -> dark (stays dark)
  t.eq(await btn.getAttribute('data-mode'), 'dark', 'toggle: dark');
  await btn.click();                       // dark -> light, against the system
  t.eq(await btn.getAttribute('data-mode'), 'light', 'toggle: light');
  t.eq(await bg(), light, 'light theme forced while the system prefers dark');
  await page.waitForTimeout(100);
  t.ok(await px() > 600, 'trace canvas redrawn light');
  await page.reload();
  await ready(t, page);
  t.eq(await page.locator('#xpv-theme').getAttribute('data-mode'), 'light', 'choice kept across reloads');
  t.eq(await bg(), light, 'still light after reload');
  await t.assertClean(page);
});
