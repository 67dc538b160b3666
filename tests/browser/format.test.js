// format.test.js - web/lib/format.js in node (no browser): durations read in
// their unit (issue 29: times over 10^6 µs printed as "315M µs" in HLO Op
// Stats, Op Profile and the Graph Viewer), and no tool page writes a
// compact number followed by "µs" any more.
const fs = require('fs');
const path = require('path');
const { pathToFileURL } = require('url');

let failures = 0;
function ok(c, msg) {
  if (!c) { failures++; console.log(`    FAIL ${msg}`); } else console.log(`    ok ${msg}`);
}

(async () => {
  const { fmtDur } = await import(pathToFileURL(path.join(__dirname, '../../web/lib/format.js')).href);
  ok(fmtDur(315e6) === '315 s', `315e6 us = "${fmtDur(315e6)}"`);
  ok(fmtDur(1833.003) === '1.833 ms', `1833.003 us = "${fmtDur(1833.003)}"`);
  ok(fmtDur(611) === '611 \u00b5s', `611 us = "${fmtDur(611)}"`);
  ok(fmtDur(0.25) === '250 ns', `0.25 us = "${fmtDur(0.25)}"`);
  const dir = path.join(__dirname, '../../web/tools');
  const bad = [];
  for (const f of fs.readdirSync(dir).filter((x) => x.endsWith('.js'))) {
    const src = fs.readFileSync(path.join(dir, f), 'utf8');
    if (/formatNumber\([^)]*\)\}? ?\\u00b5s/.test(src) || /formatNumber\([^)]*\)\} µs/.test(src)) bad.push(f);
  }
  ok(bad.length === 0, `no tool page prints formatNumber(...) µs (${bad.join(', ') || 'none'})`);
  if (failures) { console.log(`format: ${failures} failure(s)`); process.exit(1); }
  console.log('format: all checks passed');
})();
