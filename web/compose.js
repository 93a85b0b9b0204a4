// Compose, reply, reply all and forward: plain text, up to 3 attachments,
// the spec's limits and the addresses checked before anything is sent (a
// refused try still counts against the send rate), a few seconds to undo,
// and a send for later that stays listed (Sent mail) until it goes.
// Drafts for people signed in with an identity token.

import * as api from './api.js';
import { h, field, input, form, busy, showError } from './ui.js';

const MAX_FILES = 3;
const MAX_FILE = 2 * 1024 * 1024;
const MAX_TOTAL = 4 * 1024 * 1024;
const MAX_TEXT = 100 * 1024;
const MAX_RECIPIENTS = 5;
const MAX_AHEAD_MS = 30 * 24 * 3600 * 1000;
// Seconds a send can still be undone, before it is handed to the service.
export const UNDO_SECONDS = 5;
const TYPES = /^(image\/(jpeg|png|gif|webp)|application\/pdf|text\/.+|application\/vnd\.openxmlformats-officedocument\..+)$/;
// The address a send accepts: a dot-atom local part and a domain name.
const ADDRESS = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*@([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z][A-Za-z0-9-]*$/;

function recipients(value) {
  return value.split(/[,;]/).map((a) => a.trim()).filter(Boolean);
}

// "Pal <pal@partner.example>" -> pal@partner.example.
function bare(address) {
  const m = /<([^>]+)>/.exec(address);
  return (m ? m[1] : address).trim();
}

// Why this message cannot be sent as it is, or null.
export function problem(to, text, files, subject = 'subject', sendAt = null) {
  if (!to.length) return 'Add at least one recipient.';
  if (to.length > MAX_RECIPIENTS) return `At most ${MAX_RECIPIENTS} recipients.`;
  const bad = to.find((a) => !ADDRESS.test(bare(a)) || bare(a).length > 254);
  if (bad) return `“${bad}” is not an email address.`;
  if (!subject.trim()) return 'Add a subject.';
  if (!text.trim()) return 'Write a message.';
  if (new TextEncoder().encode(text).length > MAX_TEXT) return 'The text is over 100 KB.';
  if (files.length > MAX_FILES) return `At most ${MAX_FILES} attachments.`;
  let total = 0;
  for (const f of files) {
    if (f.size > MAX_FILE) return `${f.name} is over 2 MB.`;
    if (f.type && !TYPES.test(f.type)) return `${f.name}: only images, PDF, text, CSV and Office files can be attached.`;
    total += f.size;
  }
  if (total > MAX_TOTAL) return 'The attachments are over 4 MB together.';
  if (sendAt) {
    const at = sendAt.getTime();
    if (Number.isNaN(at)) return 'Choose a date and time to send it, or leave Send later empty.';
    if (at <= Date.now()) return 'Choose a time in the future to send it.';
    if (at > Date.now() + MAX_AHEAD_MS) return 'Choose a time at most 30 days ahead.';
  }
  return null;
}

function base64(file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result).split(',')[1] || '');
    reader.onerror = () => reject(new Error(`${file.name} could not be read.`));
    reader.readAsDataURL(file);
  });
}

// The addresses this credential may send from: the hosted mailboxes of the
// account's domains (none when it cannot list them: the agent key).
export async function senders() {
  try {
    const listed = await api.get('/listDomains');
    return (listed.domains || []).flatMap((d) => d.mailboxes || []).filter((m) => m.mode !== 'forward').map((m) => m.address);
  } catch {
    return [];
  }
}

// Sends accepted for later, kept in this tab until the service lists them
// itself: Sent mail shows them with a Cancel button.
const WAITING = 'mailhost.waiting';

export function rememberedWaits() {
  try {
    return JSON.parse(sessionStorage.getItem(WAITING) || '[]');
  } catch {
    return [];
  }
}

export function rememberWait(wait) {
  sessionStorage.setItem(WAITING, JSON.stringify([wait, ...rememberedWaits().filter((w) => w.messageId !== wait.messageId)].slice(0, 50)));
}

export function forgetWait(messageId) {
  sessionStorage.setItem(WAITING, JSON.stringify(rememberedWaits().filter((w) => w.messageId !== messageId)));
}

function prefixed(prefix, subject) {
  const s = subject || '';
  return new RegExp(`^${prefix}:`, 'i').test(s) ? s : `${prefix}: ${s}`;
}

// To, subject and the quoted text of a reply, reply all or forward.
function answering(reply, own) {
  const last = reply.last;
  const mode = reply.mode || 'reply';
  if (mode === 'forward') {
    const quoted = `\n\n---------- Forwarded message ----------\nFrom: ${last.from}\nSubject: ${last.subject || ''}\nTo: ${(last.to || []).join(', ')}\n\n${last.preview || ''}`;
    return { to: '', subject: prefixed('Fwd', reply.thread.subject), text: quoted, threading: {} };
  }
  const mine = (a) => own.includes(bare(a).toLowerCase());
  let to = last.box === 'outbound' ? last.to : [last.from];
  if (mode === 'reply-all') {
    to = [last.from, ...(last.to || [])].filter((a) => !mine(a));
  }
  to = [...new Set(to.map(bare))];
  return {
    to: to.join(', '),
    subject: prefixed('Re', reply.thread.subject),
    text: '',
    threading: { inReplyTo: last.messageId, references: [last.messageId] },
  };
}

export function composeView({ reply, draft, onDone, onCancel }) {
  const last = reply && reply.last;
  const mode = reply ? reply.mode || 'reply' : null;
  const title = { reply: 'Reply', 'reply-all': 'Reply all', forward: 'Forward' }[mode] || 'New message';
  const from = h('select', { name: 'from' }, h('option', { value: '', text: 'Loading addresses…' }));
  const to = input({ type: 'text', name: 'to', autocomplete: 'email' });
  const subject = input({ name: 'subject' });
  const text = h('textarea', { name: 'text', rows: 10 });
  const files = h('input', { type: 'file', name: 'attachments', multiple: true });
  const later = input({ type: 'datetime-local', name: 'sendAt' });
  let threading = draft && draft.inReplyTo ? { inReplyTo: draft.inReplyTo, references: draft.references } : {};
  if (draft) {
    to.value = [].concat(draft.to || []).join(', ');
    subject.value = draft.subject || '';
    text.value = draft.text || '';
  }
  let draftId = draft ? draft.id : null;
  const ready = senders().then((list) => {
    // The first of the account's addresses is chosen: the service refuses a
    // send without one when there are several. With none listed (the agent
    // key), the service's default sender.
    from.replaceChildren(...(list.length ? list.map((a) => h('option', { value: a, text: a })) : [h('option', { value: '', text: 'Default sender' })]));
    if (reply) {
      const own = list.map((a) => a.toLowerCase());
      const answer = answering(reply, own);
      to.value = answer.to;
      subject.value = answer.subject;
      text.value = answer.text;
      threading = answer.threading;
      const mine = last.box === 'outbound' ? last.from : [...(last.to || [])].map(bare).find((t) => own.includes(t.toLowerCase()));
      if (mine && list.includes(bare(mine))) from.value = bare(mine);
    }
  });
  const cancel = h('button', { type: 'button', class: 'quiet', text: 'Cancel' });
  cancel.addEventListener('click', onCancel);
  const controls = h('div', { class: 'actions' }, h('button', { type: 'submit', text: 'Send' }), cancel);
  if (api.isToken()) {
    const save = h('button', { type: 'button', class: 'quiet', text: 'Save draft' });
    save.addEventListener('click', async () => {
      const saved = await busy(save, async () => {
        const res = await api.post('/drafts', { id: draftId || undefined, to: recipients(to.value), subject: subject.value, text: text.value, ...threading });
        draftId = res.draft.id;
        return true;
      }, controls);
      if (saved) save.textContent = 'Saved';
    });
    controls.append(save);
  }
  const composed = form({ class: 'compose', 'aria-label': title }, [
    h('h2', { text: title }),
    field('From', from),
    field('To', to, 'Up to 5 addresses, separated by commas.'),
    field('Subject', subject),
    field('Message', text),
    field('Attachments', files, 'Up to 3 files: 2 MB each, 4 MB together.'),
    field('Send later (optional)', later, 'Up to 30 days ahead; until then it can be cancelled.'),
    controls,
  ], async () => {
    await ready;
    const list = [...files.files];
    const sendAt = later.value ? new Date(later.value) : null;
    const why = problem(recipients(to.value), text.value, list, subject.value, sendAt);
    if (why) throw new Error(why);
    const attachments = await Promise.all(list.map(async (f) => ({ filename: f.name, contentType: f.type || undefined, contentBase64: await base64(f) })));
    const body = {
      to: recipients(to.value).map(bare),
      subject: subject.value,
      text: text.value,
      from: from.value || undefined,
      ...threading,
      attachments: attachments.length ? attachments : undefined,
      sendAt: sendAt ? sendAt.toISOString().replace(/\.\d{3}Z$/, 'Z') : undefined,
    };
    // A few seconds to take it back: nothing has left the page yet.
    if (!(await undoWindow(composed))) return;
    const res = await api.post('/sendMail', body);
    if (draftId) await api.del('/drafts', undefined, { id: draftId }).catch(() => {});
    if (res.status) {
      rememberWait({ messageId: res.messageId, holdId: res.holdId, status: res.status, sendAt: res.sendAt, subject: body.subject, to: body.to });
      composed.replaceWith(waitingView(res, onDone));
    } else await onDone(res.threadId);
  });
  return composed;
}

// "Sending in 5 s · Undo · Send now": resolves true to send, false when the
// person took it back (the form is as it was).
function undoWindow(composed) {
  return new Promise((resolve) => {
    let left = UNDO_SECONDS;
    const status = h('span', { role: 'status', text: `Sending in ${left} s.` });
    const undo = h('button', { type: 'button', class: 'quiet', text: 'Undo', 'aria-keyshortcuts': 'Escape' });
    const now = h('button', { type: 'button', class: 'quiet', text: 'Send now' });
    const bar = h('div', { class: 'undo-bar' }, status, undo, now);
    composed.append(bar);
    undo.focus();
    const finish = (send) => {
      clearInterval(timer);
      bar.remove();
      composed.removeEventListener('keydown', onEscape);
      if (!send) composed.querySelector('button[type=submit]')?.focus();
      resolve(send);
    };
    const onEscape = (e) => {
      if (e.key === 'Escape') {
        e.preventDefault();
        e.stopPropagation();
        finish(false);
      }
    };
    composed.addEventListener('keydown', onEscape);
    const timer = setInterval(() => {
      left -= 1;
      if (left <= 0) finish(true);
      else status.textContent = `Sending in ${left} s.`;
    }, 1000);
    undo.addEventListener('click', () => finish(false));
    now.addEventListener('click', () => finish(true));
  });
}

// A send accepted for later (202): held for the owner's approval, or
// scheduled; until it leaves it can be cancelled, here or on Sent mail.
export function waitingView(res, onDone) {
  const sentence = res.status === 'held'
    ? 'Held: the account owner was mailed this message and approves or denies it. It goes out once approved.'
    : `Scheduled: it goes out at ${new Date(res.sendAt).toLocaleString()}. Sent mail lists it until then.`;
  const cancel = h('button', { type: 'button', class: 'danger', text: 'Cancel this send' });
  const back = h('button', { type: 'button', class: 'quiet', text: 'Back to mail' });
  back.addEventListener('click', () => onDone());
  const view = h('div', { class: 'compose waiting', 'data-waiting': res.status },
    h('h2', { text: res.status === 'held' ? 'Waiting for approval' : 'Scheduled' }),
    h('p', { role: 'status', text: sentence }),
    h('div', { class: 'actions' }, cancel, back));
  cancel.addEventListener('click', () => busy(cancel, async () => {
    const done = await api.post('/outbox/cancel', { messageId: res.messageId });
    forgetWait(res.messageId);
    view.querySelector('[role=status]').textContent = done.creditsRemaining !== undefined
      ? `Cancelled: nothing was sent and the credit came back (${done.creditsRemaining} left).`
      : 'Cancelled: nothing was sent.';
    cancel.remove();
  }));
  return view;
}

export async function draftsList(open) {
  const wrap = h('section', { class: 'drafts' }, h('h2', { text: 'Drafts' }));
  try {
    const res = await api.get('/drafts');
    const list = h('ul', { class: 'threads' });
    for (const d of res.drafts || []) {
      const link = h('a', { href: '#/mail', text: d.subject || '(no subject)' });
      link.addEventListener('click', (e) => {
        e.preventDefault();
        open({ draft: d });
      });
      list.append(h('li', {}, link, h('span', { class: 'who', text: [].concat(d.to || []).join(', ') })));
    }
    if (!list.children.length) list.append(h('li', { class: 'empty', text: 'No drafts.' }));
    wrap.append(list);
  } catch (e) {
    showError(wrap.firstChild, e.message);
  }
  return wrap;
}
