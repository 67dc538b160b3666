// api.js - the only way pages talk to the server.
//
// API (stable; pages get it as ctx.api):
//   url(route, params)         -> relative URL 'data/plugin/profile/<route>?k=v&...'
//                                 (params with null/undefined values are left out;
//                                 never a leading '/', so any --path_prefix works).
//   json(route, params, opts?) -> Promise of the parsed JSON body.
//   text(route, params, opts?) -> Promise of the body as a string (CSV, version).
//   opts: {signal} (an AbortSignal, to cancel when the user navigates away).
//   Failures reject with an ApiError (an Error): message = the server's
//   {"error": "..."} text (or "HTTP <status>" when the body is not JSON),
//   plus .status (HTTP status, 0 for network errors), .file and .offset when
//   the server named them (decode failures), .route.
//   onActivity(fn): fn(pendingCount) is called whenever a request starts or
//   ends (the shell uses it for its loading indicator).

const PREFIX = 'data/plugin/profile/';

export class ApiError extends Error {
  constructor(message, status, extra = {}) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    if (extra.file !== undefined) this.file = extra.file;
    if (extra.offset !== undefined) this.offset = extra.offset;
    if (extra.route !== undefined) this.route = extra.route;
  }
}

export function url(route, params) {
  let u = PREFIX + String(route).replace(/^\/+/, '');
  if (params) {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(params)) {
      if (v === null || v === undefined) continue;
      q.append(k, String(v));
    }
    const s = q.toString();
    if (s) u += '?' + s;
  }
  return u;
}

let pending = 0;
const listeners = new Set();

function notify(delta) {
  pending += delta;
  for (const fn of listeners) {
    try { fn(pending); } catch (e) { /* a listener must not break requests */ }
  }
}

export function onActivity(fn) {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

async function request(route, params, opts = {}) {
  const u = url(route, params);
  notify(1);
  try {
    let res;
    try {
      res = await fetch(u, { signal: opts.signal, headers: { Accept: 'application/json' } });
    } catch (e) {
      if (e && e.name === 'AbortError') throw e;
      throw new ApiError(`Cannot reach the server (${e && e.message ? e.message : e})`, 0,
        { route });
    }
    const body = await res.text();
    if (!res.ok) {
      let msg = `HTTP ${res.status}${res.statusText ? ' ' + res.statusText : ''}`;
      let extra = { route };
      try {
        const j = JSON.parse(body);
        if (j && typeof j.error === 'string') {
          msg = j.error;
          extra = { route, file: j.file, offset: j.offset };
        }
      } catch (e) {
        if (body && body.length < 500) msg += `: ${body.trim()}`;
      }
      throw new ApiError(msg, res.status, extra);
    }
    return body;
  } finally {
    notify(-1);
  }
}

export async function text(route, params, opts) {
  return request(route, params, opts);
}

export async function json(route, params, opts) {
  const body = await request(route, params, opts);
  try {
    return JSON.parse(body);
  } catch (e) {
    throw new ApiError(`Invalid JSON from ${route}: ${e.message}`, 200, { route });
  }
}

export default { url, json, text, onActivity, ApiError };
