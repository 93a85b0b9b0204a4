// Small DOM helpers: elements built with textContent only (never innerHTML),
// labelled fields, an error sentence beside what caused it, and progress on
// buttons while their request runs.

// The Unicode bidirectional controls (marks, embeddings, overrides,
// isolates): one right-to-left override makes `receipt_<U+202E>fdp.exe` read
// as `receipt_exe.pdf`. Every text and attribute this app shows, and every
// name it saves a file under, goes without them (a stranger wrote much of
// it), so each character shows in its own direction.
const BIDI_CONTROLS = /[\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/g;

export function plain(value) {
  return String(value).replace(BIDI_CONTROLS, '');
}

export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith('on')) el.addEventListener(name.slice(2), value);
    else if (name === 'class') el.className = value;
    else if (name === 'text') el.textContent = plain(value);
    else el.setAttribute(name, value === true ? '' : plain(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(plain(child)));
  }
  return el;
}

let ids = 0;

// A labelled control: the label, the control, and a slot for its error.
export function field(label, control, hint) {
  if (!control.id) control.id = `f${++ids}`;
  const wrap = h('div', { class: 'field' }, h('label', { for: control.id, text: label }), control);
  if (hint) {
    const hintEl = h('p', { class: 'hint', id: `${control.id}-hint`, text: hint });
    control.setAttribute('aria-describedby', hintEl.id);
    wrap.append(hintEl);
  }
  return wrap;
}

export function input(attrs) {
  return h('input', { type: 'text', autocomplete: 'off', ...attrs });
}

// Where an error about `near` goes: after it, or after the row of buttons
// it sits in (never between a pair of buttons).
function anchor(near) {
  const row = near.closest && near.closest('.actions, .copy-row, .toolbar');
  return row || near;
}

// Shows `message` as an alert right after `near` (replacing an earlier one).
export function showError(near, message) {
  clearError(near);
  const el = h('p', { class: 'error', role: 'alert', text: message });
  el.dataset.errorFor = '1';
  anchor(near).after(el);
  return el;
}

export function clearError(near) {
  const next = anchor(near).nextElementSibling;
  if (next && next.dataset.errorFor) next.remove();
}

// Runs `work` with `button` showing progress; an error is shown beside
// `near` (the button by default), and the form keeps its input.
export async function busy(button, work, near) {
  const label = button.textContent;
  const target = near || button;
  clearError(target);
  button.disabled = true;
  button.setAttribute('aria-busy', 'true');
  button.textContent = `${label}…`;
  try {
    return await work();
  } catch (e) {
    showError(target, e.message);
    return undefined;
  } finally {
    button.disabled = false;
    button.removeAttribute('aria-busy');
    button.textContent = label;
  }
}

// A form whose submit runs `work` with progress on its submit button.
export function form(attrs, children, work) {
  const el = h('form', { novalidate: true, ...attrs }, children);
  // An error is about what was typed: it goes once the person types again.
  el.addEventListener('input', () => {
    const button = el.querySelector('button[type=submit]');
    if (button) clearError(button);
  });
  el.addEventListener('submit', (event) => {
    event.preventDefault();
    const button = el.querySelector('button[type=submit]');
    busy(button, () => work(el), button);
  });
  return el;
}

// A copy button and, beside it, the outcome announced as a status: the
// button's name stays what it says ("Copy ...") whatever happened.
export function copyButton(text, label) {
  const button = h('button', { type: 'button', class: 'copy', 'aria-label': label || 'Copy', text: 'Copy' });
  const status = h('span', { class: 'copy-status', role: 'status' });
  const control = h('span', { class: 'copy-control' }, button, status);
  button.addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText(text);
      status.textContent = 'Copied';
    } catch {
      // No clipboard (an insecure origin): select the text for the person instead.
      const range = document.createRange();
      range.selectNodeContents(control.previousElementSibling || button);
      const selection = window.getSelection();
      selection.removeAllRanges();
      selection.addRange(range);
      status.textContent = 'Selected: press Ctrl+C';
    }
  });
  return control;
}

export function section(title, ...children) {
  return h('section', { class: 'card' }, h('h2', { text: title }), ...children);
}

export function table(headers, rows, caption) {
  return h(
    'div',
    { class: 'table-wrap' },
    h(
      'table',
      {},
      caption ? h('caption', { text: caption }) : null,
      h('thead', {}, h('tr', {}, headers.map((t) => h('th', { scope: 'col', text: t })))),
      h('tbody', {}, rows),
    ),
  );
}

export function when(value) {
  if (!value) return '';
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? value : date.toLocaleString();
}

export function download(blob, filename) {
  const url = URL.createObjectURL(blob);
  const a = h('a', { href: url, download: plain(filename || '') || 'file', class: 'hidden' });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

// A card whose content is built by `build()` (a promise of nodes): it says
// it is loading, then shows the content, or the error and a way to try
// again; never nothing.
export function loadingCard(title, build) {
  const card = h('section', { class: 'card', 'aria-busy': 'true' }, title ? h('h2', { text: title }) : null);
  const body = h('div', {}, h('p', { class: 'loading', role: 'status', text: 'Loading…' }));
  card.append(body);
  const run = async () => {
    card.setAttribute('aria-busy', 'true');
    body.replaceChildren(h('p', { class: 'loading', role: 'status', text: 'Loading…' }));
    try {
      const built = await build();
      body.replaceChildren(...[].concat(built).filter(Boolean));
    } catch (e) {
      body.replaceChildren(failure(e, run));
    } finally {
      card.removeAttribute('aria-busy');
    }
  };
  card.ready = run();
  return card;
}

// An error where content should be, with a button that tries again.
export function failure(e, retry) {
  const again = h('button', { type: 'button', class: 'quiet', text: 'Try again' });
  again.addEventListener('click', retry);
  return h('div', { class: 'failure' }, h('p', { class: 'error', role: 'alert', text: e.message || String(e) }), h('div', { class: 'actions' }, again));
}

// A date as a mail list shows it: the time today, the weekday this week,
// the day and month this year, and the full date before.
export function shortDate(value, now = new Date()) {
  if (!value) return '';
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) return value;
  const day = (d) => new Date(d.getFullYear(), d.getMonth(), d.getDate()).getTime();
  const days = (day(now) - day(date)) / 86400000;
  if (days === 0) return date.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
  if (days > 0 && days < 7) return date.toLocaleDateString([], { weekday: 'short' });
  if (date.getFullYear() === now.getFullYear()) return date.toLocaleDateString([], { month: 'short', day: 'numeric' });
  return date.toLocaleDateString([], { year: 'numeric', month: 'short', day: 'numeric' });
}
