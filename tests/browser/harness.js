// harness.js - shared helpers for the browser tests (tests/browser/*.test.js).
//
// Each test file is a plain node script run by tests/browser.sh:
//
//   const { test } = require('./harness');
//   test('my page', async (t) => {
//     const page = await t.open(t.url('#run=R&tool=kernel_stats'));
//     await t.waitText(page, '#xpv-page h2', /Kernel/);
//     t.ok(await page.locator('table').count() > 0, 'has a table');
//     await t.assertClean(page);           // no external request, no page error
//   });
//
// test(name, fn) launches Debian's chromium through playwright-core
// (executablePath /usr/bin/chromium, never a downloaded browser), runs fn,
// closes the browser and sets the exit status (1 on any failure).  Tests in
// one file run in order.  `t` provides:
//   t.base / t.url(suffix)   the demo server (env XPV_URL), e.g. t.url('#run=x')
//   t.prefixBase, t.realBase env XPV_PREFIX_URL / XPV_REAL_URL ('' when absent)
//   t.skip(msg)              ends the test as skipped
//   t.realRun(re)            the run of the real server whose name matches
//                            re; skips the test without one (or no server)
//   t.openReal(run, tool, {host, viewport, ready})
//                            t.open of `tool` on the real server's `run`;
//                            skips the test without XPV_REAL_URL; with
//                            `ready` (a selector), waits for it, then idle
//   t.openDemo(run, tool, {host, viewport, ready})
//                            the same on the demo server
//   t.open(url, {viewport})  new page that records, in page.xpv:
//       requests: every request URL, in order
//       external: requests whose URL does not start with the origin of the
//                 server it was opened on (http://127.0.0.1:PORT/) - except
//                 data: and blob: URLs created by the page itself
//       pageErrors: uncaught exceptions; consoleErrors: console.error lines
//       httpErrors: responses with status >= 400 ("STATUS URL")
//   t.assertClean(page, {allowConsole: [RegExp], allowHttp: [RegExp]})
//       fails if anything external was requested, any page error happened,
//       or a console error / HTTP error not matched by the allow lists
//       (Chromium logs "Failed to load resource" for every 4xx/5xx).
//   t.ok(cond, msg), t.eq(a, b, msg), t.match(str, re, msg)
//   t.waitFor(page, selector, opts)  page.waitForSelector with a 15 s timeout
//   t.waitText(page, selector, re)   waits until the element's text matches
//   t.waitIdle(page)                 waits until the shell's loading indicator
//                                    is hidden (no request in flight)
//   t.selectOptions(page, selector)  -> [{value, text}] of a <select>
//   t.log(...)

const path = require('path');
let chromium;
try {
  ({ chromium } = require('playwright-core'));
} catch (e) {
  console.error('FAIL: playwright-core is not installed; run tests/browser.sh (it installs it)');
  process.exit(1);
}

const EXECUTABLE = process.env.XPV_CHROMIUM || '/usr/bin/chromium';
const ARGS = ['--no-sandbox', '--disable-gpu', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--no-first-run'];
const TIMEOUT = 15000;

class Skip extends Error {}

const queue = [];
let failures = 0;

function originOf(u) {
  const m = /^(https?:\/\/[^/]+)\//.exec(u);
  return m ? m[1] + '/' : u;
}

function makeT(browser, name) {
  const pages = [];
  const base = process.env.XPV_URL || '';
  const t = {
    name,
    base,
    prefixBase: process.env.XPV_PREFIX_URL || '',
    realBase: process.env.XPV_REAL_URL || '',
    shared: process.env.XPV_SHARED || '',
    url(suffix = '') { return base + suffix; },
    log(...a) { console.log('   ', ...a); },
    skip(msg) { throw new Skip(msg); },
    async realRun(re) {
      if (!t.realBase) t.skip('XPV_REAL_URL not set (../shared/testdata/real absent)');
      const runs = await (await fetch(`${t.realBase}data/plugin/profile/runs`)).json();
      const run = runs.find((r) => re.test(r));
      if (!run) t.skip(`no real run matches ${re}`);
      return run;
    },
    async openReal(run, tool, opts = {}) {
      if (!t.realBase) t.skip('XPV_REAL_URL not set (../shared/testdata/real absent)');
      return openTool(t, t.realBase, run, tool, opts);
    },
    openDemo(run, tool, opts = {}) { return openTool(t, base, run, tool, opts); },
    ok(cond, msg) {
      if (!cond) throw new Error(`assertion failed: ${msg}`);
      console.log(`    ok ${msg}`);
    },
    eq(a, b, msg) {
      const sa = JSON.stringify(a), sb = JSON.stringify(b);
      if (sa !== sb) throw new Error(`assertion failed: ${msg}: got ${sa}, want ${sb}`);
      console.log(`    ok ${msg}`);
    },
    match(s, re, msg) {
      if (!re.test(String(s))) throw new Error(`assertion failed: ${msg}: ${JSON.stringify(String(s).slice(0, 300))} !~ ${re}`);
      console.log(`    ok ${msg}`);
    },
    async open(url, opts = {}) {
      if (!/^http:\/\/127\.0\.0\.1:\d+\//.test(url)) throw new Error(`t.open wants a http://127.0.0.1:PORT/ URL, got ${url}`);
      const origin = originOf(url);
      const context = await browser.newContext({ viewport: opts.viewport || { width: 1280, height: 900 },
        acceptDownloads: true });
      const page = await context.newPage();
      page.setDefaultTimeout(TIMEOUT);
      const rec = { origin, requests: [], external: [], pageErrors: [], consoleErrors: [], httpErrors: [] };
      page.xpv = rec;
      page.on('request', (r) => {
        const u = r.url();
        rec.requests.push(u);
        if (u.startsWith(origin) || u.startsWith('data:') || u.startsWith('blob:' + origin)) return;
        rec.external.push(u);
      });
      page.on('pageerror', (e) => rec.pageErrors.push(String(e && e.stack ? e.stack : e)));
      page.on('console', (m) => { if (m.type() === 'error') rec.consoleErrors.push(m.text()); });
      page.on('response', (r) => { if (r.status() >= 400) rec.httpErrors.push(`${r.status()} ${r.url()}`); });
      pages.push(context);
      await page.goto(url);
      return page;
    },
    async assertClean(page, opts = {}) {
      const rec = page.xpv;
      const allowC = opts.allowConsole || [];
      const allowH = opts.allowHttp || [];
      const http = rec.httpErrors.filter((e) => !allowH.some((re) => re.test(e)));
      // A 4xx/5xx the test allowed also shows up as "Failed to load resource".
      const httpAllowedCount = rec.httpErrors.length - http.length;
      let loadErrs = 0;
      const cons = rec.consoleErrors.filter((c) => {
        if (allowC.some((re) => re.test(c))) return false;
        if (/Failed to load resource: the server responded with a status of/.test(c) && loadErrs < httpAllowedCount) {
          loadErrs++;
          return false;
        }
        return true;
      });
      const problems = [];
      if (rec.external.length) problems.push(`external requests: ${rec.external.join(', ')}`);
      if (rec.pageErrors.length) problems.push(`page errors: ${rec.pageErrors.join(' | ')}`);
      if (cons.length) problems.push(`console errors: ${cons.join(' | ')}`);
      if (http.length) problems.push(`HTTP errors: ${http.join(', ')}`);
      if (problems.length) throw new Error(`page not clean:\n      ${problems.join('\n      ')}`);
      console.log(`    ok no external request, no page error (${page.url()})`);
    },
    async waitFor(page, selector, opts = {}) {
      return page.waitForSelector(selector, Object.assign({ timeout: TIMEOUT }, opts));
    },
    async waitText(page, selector, re) {
      try {
        await page.waitForFunction(([sel, src, flags]) => {
          const e = document.querySelector(sel);
          return !!e && new RegExp(src, flags).test(e.textContent);
        }, [selector, re.source, re.flags], { timeout: TIMEOUT });
      } catch (e) {
        const txt = await page.evaluate((sel) => {
          const el = document.querySelector(sel);
          return el ? el.textContent : '(no element)';
        }, selector).catch(() => '?');
        throw new Error(`timeout waiting for ${selector} ~ ${re}: text is ${JSON.stringify(txt.slice(0, 300))}`);
      }
      return page.textContent(selector);
    },
    async waitIdle(page) {
      await page.waitForFunction(() => {
        const l = document.getElementById('xpv-loading');
        return l && l.hidden && document.readyState === 'complete';
      }, null, { timeout: TIMEOUT });
    },
    async selectOptions(page, selector) {
      return page.$$eval(`${selector} option`, (os) => os.map((o) => ({ value: o.value, text: o.textContent })));
    },
    async closeAll() {
      for (const c of pages) await c.close().catch(() => {});
    },
  };
  return t;
}

function test(name, fn) {
  queue.push({ name, fn });
  if (queue.length === 1) setImmediate(runAll);
}

async function runAll() {
  const file = path.basename(process.argv[1] || '');
  let browser;
  try {
    browser = await chromium.launch({ executablePath: EXECUTABLE, headless: true, args: ARGS });
  } catch (e) {
    console.error(`FAIL ${file}: cannot launch ${EXECUTABLE}: ${e.message}`);
    process.exit(1);
  }
  if (!process.env.XPV_URL) {
    console.error('FAIL: XPV_URL is not set (run through tests/browser.sh)');
    await browser.close();
    process.exit(1);
  }
  for (const { name, fn } of queue) {
    const t = makeT(browser, name);
    const t0 = Date.now();
    console.log(`--- ${name}`);
    try {
      await fn(t);
      console.log(`PASS ${name} (${Date.now() - t0} ms)`);
    } catch (e) {
      if (e instanceof Skip) {
        console.log(`SKIP ${name}: ${e.message}`);
      } else {
        failures++;
        console.log(`FAIL ${name}: ${e && e.stack ? e.stack : e}`);
      }
    } finally {
      await t.closeAll();
    }
  }
  await browser.close();
  process.exit(failures ? 1 : 0);
}

// t.open of `tool` on `run` of the server at `base` (see t.openReal).
async function openTool(t, base, run, tool, opts) {
  let url = `${base}#run=${encodeURIComponent(run)}&tool=${tool}`;
  if (opts.host) url += `&host=${encodeURIComponent(opts.host)}`;
  const page = await t.open(url, opts.viewport ? { viewport: opts.viewport } : {});
  if (opts.ready) {
    await t.waitFor(page, opts.ready);
    await t.waitIdle(page);
  }
  return page;
}

// The JSON answer of tool `tag` for `run` (and the `extra` query
// parameters, e.g. {host: 'ALL_HOSTS'}), fetched by the page from its
// server.
async function toolData(page, run, tag, extra = {}) {
  const q = new URLSearchParams({ run, tag, ...extra }).toString();
  return page.evaluate(async (qs) => (await fetch(`data/plugin/profile/data?${qs}`)).json(), q);
}

// ---- helpers for the trace viewer ----

// A drawn trace viewer: its canvas, once the first answer is in.
const TRACE_READY = '.xpv-tool-root[data-ready="1"] canvas.xpv-trace-canvas';

// Waits until the trace viewer has fetched and drawn its view: idle, the
// view -> fetch debounce, idle again, two animation frames.
async function traceSettle(t, page) {
  await t.waitIdle(page);
  await page.waitForTimeout(250);
  await t.waitIdle(page);
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
}

// t.open(url) at `viewport`, then waits until the trace viewer is drawn
// and settled.
async function openTrace(t, url, viewport) {
  const page = await t.open(url, { viewport });
  await t.waitFor(page, TRACE_READY);
  await traceSettle(t, page);
  return page;
}

// The trace viewer's test hook `fn` (xpvTrace[fn]() of the tool root), or
// null before the viewer is there.
async function traceHook(page, fn) {
  return page.evaluate((f) => {
    const r = document.querySelector('.xpv-tool-root');
    return r && r.xpvTrace ? r.xpvTrace[f]() : null;
  }, fn);
}

// ---- helpers for the table pages (kernel stats, framework op stats) ----

// The server's answer of tool `tag` for `run` and the host the page shows,
// each DataTable as an array of row objects ({column id: value}); an array
// of those when the tool answers several tables.
async function serverTables(page, run, tag) {
  const host = await page.locator('#xpv-host').inputValue();
  return page.evaluate(async ([r, tg, h]) => {
    const q = new URLSearchParams({ run: r, tag: tg, host: h });
    const d = await (await fetch('data/plugin/profile/data?' + q)).json();
    const rows = (dt) => dt.rows.map((row) => {
      const o = {};
      dt.cols.forEach((c, i) => { o[c.id] = row.c[i] ? row.c[i].v : null; });
      return o;
    });
    return Array.isArray(d) ? d.map(rows) : rows(d);
  }, [run, tag, host]);
}

// Table tool `tag` on the demo's `run` with its DataTables emptied on the
// way from the server (the shape of a profile without rows): checks that
// the page, titled `title`, says `empty` and draws no chart.
async function checkEmptyTool(t, run, tag, title, empty) {
  const page = await t.open(t.url('#run=' + run + '&tool=overview_page'));
  await t.waitText(page, '#xpv-page h2', /Overview Page/);
  await page.route(new RegExp(`data/plugin/profile/data\\?.*tag=${tag}`), async (route) => {
    const resp = await route.fetch();
    const json = await resp.json();
    for (const dt of Array.isArray(json) ? json : [json]) dt.rows = [];
    await route.fulfill({ response: resp, json });
  });
  await page.evaluate((tg) => { location.hash = location.hash.replace('overview_page', tg); }, tag);
  await t.waitText(page, '#xpv-page h2', title);
  await t.waitText(page, '#xpv-page .xpv-empty-state', empty);
  t.eq(await page.locator('#xpv-page .xpv-chart').count(), 0, 'no empty chart');
  await t.assertClean(page);
}

// The "N rows" counter of the table `tsel`.
async function tableCount(page, tsel) {
  return (await page.locator(`${tsel} .xpv-table-count`).innerText()).trim();
}

// The text of column `id` in every row of the table `tsel`'s current page;
// with `full`, a cell's title when it has one (long names are cut with an
// ellipsis; the title holds the whole text).
async function columnTexts(page, tsel, id, full = false) {
  return page.evaluate(([ts, cid, whole]) => {
    const ths = [...document.querySelectorAll(`${ts} thead tr:first-child th`)];
    const j = ths.findIndex((th) => th.getAttribute('data-col') === cid);
    return [...document.querySelectorAll(`${ts} tbody tr`)].map((tr) => {
      const c = tr.children[j];
      return c ? (whole && c.title) || c.textContent : '';
    });
  }, [tsel, id, full]);
}

// A number as a table shows it ("1,234", "12.5%").
const num = (s) => Number(String(s).replace(/[,%]/g, ''));

// A viewport point over the element `sel` (first match): a donut slice's
// bounding-box centre may lie in the hole or over another slice.  Charts
// redrawn after a selector change replace the element: retry while it is.
async function pointOn(page, sel) {
  for (let attempt = 0; ; attempt++) {
    try {
      await page.locator(sel).first().scrollIntoViewIfNeeded({ timeout: 2000 });
      break;
    } catch (e) {
      if (attempt >= 4) throw e;
      await page.waitForTimeout(200);
    }
  }
  return page.evaluate((s) => {
    const e = document.querySelector(s);
    const r = e.getBoundingClientRect();
    for (let i = 1; i < 20; i++) {
      for (let j = 1; j < 20; j++) {
        const x = r.left + (r.width * i) / 20, y = r.top + (r.height * j) / 20;
        if (document.elementFromPoint(x, y) === e) return { x, y };
      }
    }
    return null;
  }, sel);
}

module.exports = { test, chromium, EXECUTABLE, ARGS, toolData, serverTables, checkEmptyTool, tableCount,
  columnTexts, num, pointOn, TRACE_READY, traceSettle, openTrace, traceHook };
