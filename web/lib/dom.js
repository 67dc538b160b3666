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
// else: build those as DOM nodes (never innerHTML), the rest as text.
export function richText(parent, text) {
  const re = /<a href="([^"]*)"[^>]*>(.*?)<\/a>/g;
  let last = 0, m;
  const s = String(text || '');
  while ((m = re.exec(s)) !== null) {
    if (m.index > last) parent.append(s.slice(last, m.index));
    const a = el('a', { href: m[1], target: '_blank', rel: 'noopener noreferrer' }, m[2]);
    parent.append(a);
    last = re.lastIndex;
  }
  if (last < s.length) parent.append(s.slice(last));
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
