// capture.js - the "Capture Profile" dialog (TensorBoard's sampling mode).
//
// openCaptureDialog({onDone}) shows a modal <dialog> asking for the
// profiler service address(es) of running jobs (jax.profiler.start_server /
// tf.profiler.experimental.server.start), the duration, the number of
// retries and the host / device / Python tracer levels.  Capture starts the
// server-side job (capture_profile?service_addr=...), then polls
// capture_profile?capture_id=N, showing the progress, until the job is done;
// on success it waits until the new run is listed and calls onDone(run).
// Relative URLs only (api.url), like every request of the dashboard.

import * as api from './api.js';

function h(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k === 'text') e.textContent = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? '' : v);
  }
  for (const k of kids) if (k !== null && k !== undefined) e.append(k);
  return e;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// The last values the user typed, for the next capture in this tab.
const last = { service_addr: '', duration: 1000, num_retry: 3, host_tracer_level: 2,
  device_tracer_level: 1, python_tracer_level: 0, delay: 0 };

function field(label, input, hint) {
  return h('label', { class: 'xpv-cap-field' }, h('span', { text: label }), input,
    hint ? h('small', { class: 'xpv-muted', text: hint }) : null);
}

function levelSelect(id, value, options) {
  const s = h('select', { id });
  for (const [v, text] of options) s.append(h('option', { value: String(v), text }));
  s.value = String(value);
  return s;
}

async function getJson(route, params) {
  const res = await fetch(api.url(route, params), { cache: 'no-store' });
  let body = null;
  try { body = await res.json(); } catch (e) { body = null; }
  if (!res.ok) {
    throw new api.ApiError(body && body.error ? body.error : `HTTP ${res.status}`, res.status);
  }
  return body || {};
}

let open = null;
let reset = null;
let doneFn = null;

export function openCaptureDialog({ onDone } = {}) {
  doneFn = onDone;
  if (open) {
    if (reset) reset();
    if (!open.open) open.showModal();
    return open;
  }
  const addr = h('input', { id: 'xpv-cap-addr', type: 'text', required: true, autocomplete: 'off',
    spellcheck: 'false', placeholder: 'localhost:9999', value: last.service_addr });
  const duration = h('input', { id: 'xpv-cap-duration', type: 'number', min: '1', max: '86400000',
    step: '1', required: true, value: String(last.duration) });
  const retries = h('input', { id: 'xpv-cap-retry', type: 'number', min: '0', max: '100',
    step: '1', required: true, value: String(last.num_retry) });
  const delay = h('input', { id: 'xpv-cap-delay', type: 'number', min: '0', max: '86400000',
    step: '1', value: String(last.delay) });
  const hostLevel = levelSelect('xpv-cap-host-level', last.host_tracer_level,
    [[1, '1 (critical)'], [2, '2 (info)'], [3, '3 (verbose)'], [0, '0 (off)']]);
  const devLevel = levelSelect('xpv-cap-device-level', last.device_tracer_level,
    [[1, '1 (on)'], [0, '0 (off)']]);
  const pyLevel = levelSelect('xpv-cap-python-level', last.python_tracer_level,
    [[0, '0 (off)'], [1, '1 (on)']]);
  const status = h('div', { id: 'xpv-cap-status', class: 'xpv-cap-status', role: 'status', 'aria-live': 'polite' });
  const bar = h('progress', { id: 'xpv-cap-progress', max: '100', hidden: true });
  const submit = h('button', { type: 'submit', id: 'xpv-cap-submit', class: 'xpv-btn xpv-btn-primary', text: 'Capture' });
  const cancel = h('button', { type: 'button', class: 'xpv-btn', text: 'Close', id: 'xpv-cap-close' });
  const form = h('form', { method: 'dialog', class: 'xpv-cap-form' },
    h('h2', { text: 'Capture Profile' }),
    h('p', { class: 'xpv-muted', text: 'Take a profile from running jobs that started a profiler server ' +
      '(jax.profiler.start_server(port) or tf.profiler.experimental.server.start(port)). ' +
      'It becomes a new run of this log directory.' }),
    field('Profile service URL(s)', addr, 'host:port or grpc://host:port; several separated by commas'),
    h('div', { class: 'xpv-cap-row' },
      field('Profiling duration (ms)', duration),
      field('Number of retries', retries),
      field('Delay (ms)', delay)),
    h('div', { class: 'xpv-cap-row' },
      field('Host trace level', hostLevel),
      field('Device trace level', devLevel),
      field('Python trace level', pyLevel)),
    bar, status,
    h('div', { class: 'xpv-cap-actions' }, cancel, submit));
  const dlg = h('dialog', { id: 'xpv-capture', class: 'xpv-capture', 'aria-labelledby': 'xpv-cap-title' }, form);
  form.querySelector('h2').id = 'xpv-cap-title';
  document.body.append(dlg);
  open = dlg;

  let busy = false;
  reset = () => {
    if (busy) return;
    status.textContent = '';
    status.className = 'xpv-cap-status';
    bar.hidden = true;
  };
  const setStatus = (text, cls) => {
    status.textContent = text;
    status.className = 'xpv-cap-status' + (cls ? ' ' + cls : '');
  };
  cancel.addEventListener('click', () => dlg.close());
  dlg.addEventListener('cancel', (ev) => { if (busy) ev.preventDefault(); });

  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    if (busy) return;
    const params = {
      service_addr: addr.value.trim(),
      duration: duration.value, num_retry: retries.value,
      host_tracer_level: hostLevel.value, device_tracer_level: devLevel.value,
      python_tracer_level: pyLevel.value, delay: delay.value || 0,
    };
    if (!params.service_addr) { setStatus('Enter the address of a profiler server.', 'xpv-cap-error'); addr.focus(); return; }
    Object.assign(last, params);
    busy = true;
    submit.disabled = true;
    cancel.disabled = true;
    bar.hidden = false;
    bar.removeAttribute('value');
    setStatus(`Starting a capture from ${params.service_addr}\u2026`);
    try {
      const { token } = await getJson('capture_token', {});
      let job = await getJson('capture_profile', Object.assign({ token }, params));
      const id = job.capture_id;
      while (job.running) {
        const exp = Math.max(1, Number(job.expected_ms) || 1);
        const el = Number(job.elapsed_ms) || 0;
        bar.value = Math.min(95, (100 * el) / (exp + 1000));
        setStatus(`Capturing from ${(job.targets || []).join(', ')}: ${(el / 1000).toFixed(1)} s` +
          ` (profiling for ${(exp / 1000).toFixed(1)} s)\u2026`);
        await sleep(400);
        job = await getJson('capture_profile', { capture_id: id });
      }
      if (job.error) throw new Error(job.error);
      bar.value = 100;
      const run = String(job.run);
      setStatus(`Captured run ${run}. Opening it\u2026`, 'xpv-cap-ok');
      // The run list is rescanned about once a second.
      for (let i = 0; i < 50; i++) {
        const runs = await getJson('runs');
        if (Array.isArray(runs) && runs.map(String).includes(run)) break;
        await sleep(200);
      }
      setStatus(`Captured run ${run}.`, 'xpv-cap-ok');
      busy = false;
      dlg.close();
      if (doneFn) doneFn(run);
    } catch (e) {
      bar.hidden = true;
      setStatus(`Capture failed: ${e && e.message ? e.message : e}`, 'xpv-cap-error');
    } finally {
      busy = false;
      submit.disabled = false;
      cancel.disabled = false;
    }
  });
  dlg.showModal();
  addr.focus();
  return dlg;
}
