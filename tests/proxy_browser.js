// proxy_browser.js - run by tests/proxy.sh (not by tests/browser.sh): every
// page of every run, loaded in headless chromium through nginx under
// /team/profile/ (XPV_URL = http://127.0.0.1:PORT/team/profile/).
// Checks: no request leaves 127.0.0.1 (harness), nothing loaded from and no
// same-origin link to outside /team/profile/, no broken link, no page error.
const { test } = require('./browser/harness');

test('every page through nginx under the prefix', async (t) => {
  const base = t.base;
  const u = new URL(base);
  const prefix = u.pathname;                       // "/team/profile/"
  const api = async (route) => {
    const r = await fetch(base + 'data/plugin/profile/' + route);
    if (r.status !== 200) throw new Error(`${route}: ${r.status}`);
    return r.json();
  };
  const outside = [];
  const broken = [];
  const docLinks = new Set();
  const page = await t.open(base);
  page.on('request', (r) => {
    const ru = r.url();
    if (ru.startsWith(u.origin) && !new URL(ru).pathname.startsWith(prefix)) outside.push(ru);
  });
  await t.waitIdle(page);
  const checked = new Set();
  let pages = 0;
  for (const run of await api('runs')) {
    for (const tool of await api('run_tools?run=' + encodeURIComponent(run))) {
      await page.goto(base + '#run=' + encodeURIComponent(run) + '&tool=' + encodeURIComponent(tool));
      await t.waitIdle(page);
      pages++;
      const refs = await page.$$eval('a[href], link[href], script[src], img[src]',
        (els) => els.map((e) => ({ tag: e.tagName, url: e.href || e.src })));
      for (const { tag, url: h } of refs) {
        if (/^(blob:|data:|javascript:|mailto:)/.test(h)) continue;
        // Documentation links XProf shows (tensorflow.org guides) are
        // anchors to other sites: followed only when clicked, never
        // fetched.  Anything the page loads, and any link to this origin,
        // must stay under the prefix.
        if (tag === 'A' && !h.startsWith(u.origin + '/')) { docLinks.add(h); continue; }
        if (!h.startsWith(base)) { outside.push(`${tag} ${h} on ${run}/${tool}`); continue; }
        const target = h.split('#')[0];
        if (checked.has(target)) continue;
        checked.add(target);
        const resp = await page.request.get(target);
        if (resp.status() >= 400) broken.push(`${resp.status()} ${target} (on ${run}/${tool})`);
      }
    }
  }
  t.ok(pages >= 8, `${pages} pages visited through the proxy`);
  t.eq(outside, [], `no request or link outside ${prefix}`);
  t.eq(broken, [], `no broken link (${checked.size} checked)`);
  t.log(`${docLinks.size} documentation links to other sites (anchors, not loaded)`);
  await t.assertClean(page);
});
