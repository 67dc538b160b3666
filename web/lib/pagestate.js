// pagestate.js - a page's own part of the URL hash, for deep links.
//
// The shell (app.js) owns run/tool/host in the hash; a page keeps its view
// (trace time range and hosts, the selected event, a table's sort and
// filter) under its own keys next to them, so a reloaded or shared link
// opens the same view.  Writes replace the history entry (no Back step
// per scroll) and never re-render the page.

let params = new URLSearchParams();
let write = null;

// Called by the shell before each page render.
export function bind(initial, writer) {
  params = new URLSearchParams(initial);
  write = writer;
}

export function get(key) {
  return params.get(key);
}

// Set (or, with null/undefined/'', remove) keys: set({a: 1, b: null}).
export function set(kv) {
  for (const [k, v] of Object.entries(kv)) {
    if (v === null || v === undefined || v === '') params.delete(k);
    else params.set(k, String(v));
  }
  if (write) write(params);
}

export default { bind, get, set };
