// richtext.test.js - web/lib/dom.js linkParts in node (no browser): XProf's
// https anchors become links with their host; javascript:, data:, http:,
// relative and user:password@ anchors stay text with their address shown;
// text around them is kept.
const path = require('path');
const { pathToFileURL } = require('url');

let failures = 0;
function ok(c, msg) {
  if (!c) { failures++; console.log(`    FAIL ${msg}`); } else console.log(`    ok ${msg}`);
}

(async () => {
  const { linkParts } = await import(pathToFileURL(path.join(__dirname, '../../web/lib/dom.js')).href);
  const p = linkParts('See <a href="https://www.tensorflow.org/guide/data" target="_blank">here</a> now.');
  ok(p.length === 3 && p[0].text === 'See ' && p[2].text === ' now.', 'text around a link kept');
  ok(p[1].href === 'https://www.tensorflow.org/guide/data' && p[1].host === 'www.tensorflow.org' &&
     p[1].text === 'here', 'https anchor: a link with its host');
  for (const bad of ['javascript:alert(1)', 'data:text/html,x', 'http://evil.example/', '/relative',
                     'https://user:pw@evil.example/', 'vbscript:x', '']) {
    const q = linkParts(`<a href="${bad}">click</a>`);
    ok(q.length === 1 && !q[0].href && q[0].text === `click [${bad}]`, `not a link: ${bad || '(empty)'}`);
  }
  ok(linkParts('plain').length === 1 && linkParts('').length === 0, 'plain and empty texts');
  if (failures) { console.log(`richtext: ${failures} failure(s)`); process.exit(1); }
  console.log('richtext: all checks passed');
})();
