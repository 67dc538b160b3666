// dom.js - the one DOM helper every page uses (and the summary card).
//
// el(tag, attrs, ...kids): `attrs` is an object ({class, text, onX: fn,
// other attributes; null/undefined/false skipped, true = empty value}) or a
// string (the class name); kids are nodes or text (null/undefined skipped).
// So both el('div', { class: 'c', 'data-k': 1 }, child) and
// el('span', 'c', 'text') work.

export function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  if (typeof attrs === 'string') {
    if (attrs) e.className = attrs;
  } else if (attrs) {
    for (const [k, v] of Object.entries(attrs)) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'class') e.className = v;
      else if (k === 'text') e.textContent = v;
      else if (k.startsWith('on') && typeof v === 'function') e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? '' : v);
    }
  }
  for (const k of kids) if (k !== null && k !== undefined) e.append(k);
  return e;
}

// XProf texts carry <a href="..." target="_blank">..</a> anchors and nothing
// else.  linkParts splits a text into {text} and {text, href, host} parts:
// only https:// links become links (a text from a profile could carry any
// scheme or a lookalike host: issue 26), each shown with its host unless
// the label names it already; any other anchor is plain text with its
// address in brackets.
export function linkParts(text) {
  const re = /<a href="([^"]*)"[^>]*>(.*?)<\/a>/g;
  const s = String(text || ''), parts = [];
  let last = 0, m;
  while ((m = re.exec(s)) !== null) {
    if (m.index > last) parts.push({ text: s.slice(last, m.index) });
    let url = null;
    try { url = new URL(m[1]); } catch (e) { url = null; }
    if (url && url.protocol === 'https:' && !url.username && !url.password) {
      parts.push({ text: m[2], href: url.href, host: url.hostname });
    } else {
      parts.push({ text: `${m[2]} [${m[1]}]` });
    }
    last = re.lastIndex;
  }
  if (last < s.length) parts.push({ text: s.slice(last) });
  return parts;
}

// The parts as DOM nodes (never innerHTML): links open a new tab, say
// where they go (title, and the host after the label).
export function richText(parent, text) {
  for (const p of linkParts(text)) {
    if (!p.href) { parent.append(p.text); continue; }
    parent.append(el('a', { href: p.href, target: '_blank', rel: 'noopener noreferrer', title: p.href },
      p.text));
    if (!p.text.toLowerCase().includes(p.host.toLowerCase())) parent.append(` (${p.host})`);
  }
  return parent;
}

// A summary card: a muted title, the value in large type and an optional
// muted line under it, appended to `parent` and returned.  `attrs` are the
// card's own attributes for el(); their class is added to xpv-card.
export function card(parent, title, value, sub, attrs) {
  const a = Object.assign({}, attrs);
  a.class = 'xpv-card' + (a.class ? ' ' + a.class : '');
  const c = el('div', a);
  c.append(el('div', { class: 'xpv-muted' }, title));
  const v = el('div', { class: 'xpv-card-value' }, value);
  v.style.fontSize = '18px';
  v.style.fontWeight = '600';
  c.append(v);
  if (sub) c.append(el('div', { class: 'xpv-muted' }, sub));
  parent.append(c);
  return c;
}

export default { el, richText, card };
