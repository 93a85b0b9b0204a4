// Compose, reply, reply all and forward: plain text, Cc and Bcc, up to 3
// attachments, the spec's limits and the addresses checked before anything
// is sent (a refused try still counts against the send rate), a few seconds
// to undo, and a send for later that stays listed (Sent mail) until it goes.
// A reply and a forward name the message by its id (POST /reply, /forward):
// the service fills in whom a reply goes to, the subject, the threading and
// the quoted original, from the mailbox the message is in. Drafts for people
// signed in with an identity token.

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

// Why this message cannot be sent as it is, or null. `copies`: its Cc and
// Bcc, counted with To against the limit of 5 (an address once).
export function problem(to, text, files, subject = 'subject', sendAt = null, copies = [], needsText = true) {
  if (!to.length) return 'Add at least one recipient.';
  const everyone = [...to, ...copies];
  if (new Set(everyone.map((a) => bare(a).toLowerCase())).size > MAX_RECIPIENTS) return `At most ${MAX_RECIPIENTS} recipients in To, Cc and Bcc together.`;
  const bad = everyone.find((a) => !ADDRESS.test(bare(a)) || bare(a).length > 254);
  if (bad) return `“${bad}” is not an email address.`;
  if (!subject.trim()) return 'Add a subject.';
  if (needsText && !text.trim()) return 'Write a message.';
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
  const s = (subject || '').trim();
  const already = prefix === 'Fwd' ? /^fwd?:/i : new RegExp(`^${prefix}:`, 'i');
  return already.test(s) ? s : `${prefix}: ${s}`.trim();
}

// "Pal Smith <pal@partner.example>", or the address alone, by the names
// the message carries.
function named(m, address) {
  const name = address === m.from ? m.fromName : (m.names || {})[address];
  return name ? `${name} <${address}>` : address;
}

// Whom the service sends a reply to (POST /reply), shown as it will be: the
// sender, or its Reply-To (one's own sent message: its recipients); to all,
// its To and Cc too; never the mailbox it is in; each once.
export function replyRecipients(m, all) {
  const seen = new Set([(m.mailbox || '').toLowerCase()]);
  const keep = (list) => (list || []).filter((a) => {
    const key = (a || '').toLowerCase();
    if (!key || seen.has(key)) return false;
    seen.add(key);
    return true;
  });
  const outbound = m.box === 'outbound';
  const replyTo = m.replyTo && m.replyTo.length ? m.replyTo : [m.from];
  let to = keep(outbound ? m.to : replyTo);
  let cc = [];
  if (all) {
    if (!outbound) to = to.concat(keep(m.to));
    cc = keep(m.cc);
  }
  if (!to.length) [to, cc] = [cc, []];
  return { to, cc };
}

export function composeView({ reply, draft, onDone, onCancel }) {
  const last = reply && reply.last;
  const mode = reply ? reply.mode || 'reply' : null;
  const answers = mode === 'reply' || mode === 'reply-all';
  const forwards = mode === 'forward';
  const title = { reply: 'Reply', 'reply-all': 'Reply all', forward: 'Forward' }[mode] || 'New message';
  const from = h('select', { name: 'from' }, h('option', { value: '', text: 'Loading addresses…' }));
  const to = input({ type: 'text', name: 'to', autocomplete: 'email' });
  const cc = input({ type: 'text', name: 'cc', autocomplete: 'email' });
  const bcc = input({ type: 'text', name: 'bcc', autocomplete: 'email' });
  const subject = input({ name: 'subject' });
  const text = h('textarea', { name: 'text', rows: 10 });
  const files = h('input', { type: 'file', name: 'attachments', multiple: true });
  const later = input({ type: 'datetime-local', name: 'sendAt' });
  const quote = h('input', { type: 'checkbox', name: 'quote', checked: true });
  const carry = h('input', { type: 'checkbox', name: 'includeAttachments', checked: true });
  let threading = draft && draft.inReplyTo ? { inReplyTo: draft.inReplyTo, references: draft.references } : {};
  if (draft) {
    to.value = [].concat(draft.to || []).join(', ');
    cc.value = [].concat(draft.cc || []).join(', ');
    bcc.value = [].concat(draft.bcc || []).join(', ');
    subject.value = draft.subject || '';
    text.value = draft.text || '';
  }
  // Whom a reply goes to: the service sends to these, from the mailbox the
  // message is in; shown by name, not typed (Forward or a new message goes
  // to anyone).
  const whom = answers ? replyRecipients(last, mode === 'reply-all') : null;
  if (answers) {
    to.value = whom.to.map((a) => named(last, a)).join(', ');
    cc.value = whom.cc.map((a) => named(last, a)).join(', ');
    subject.value = prefixed('Re', last.subject || reply.thread.subject);
    for (const el of [to, cc, subject]) el.readOnly = true;
  }
  if (forwards) {
    subject.value = prefixed('Fwd', last.subject || reply.thread.subject);
    subject.readOnly = true;
  }
  let draftId = draft ? draft.id : null;
  const ready = senders().then((list) => {
    // The first of the account's addresses is chosen: the service refuses a
    // send without one when there are several. With none listed (the agent
    // key), the service's default sender. A reply or forward goes from the
    // mailbox the message is in.
    from.replaceChildren(...(list.length ? list.map((a) => h('option', { value: a, text: a })) : [h('option', { value: '', text: 'Default sender' })]));
    if (reply) {
      if (!list.includes(last.mailbox)) from.append(h('option', { value: last.mailbox, text: last.mailbox }));
      from.value = last.mailbox;
      from.disabled = true;
    } else if (draft && draft.from && list.includes(draft.from)) from.value = draft.from;
  });
  const cancel = h('button', { type: 'button', class: 'quiet', text: 'Cancel' });
  cancel.addEventListener('click', onCancel);
  const controls = h('div', { class: 'actions' }, h('button', { type: 'submit', text: 'Send' }), cancel);
  // A draft keeps everything but the files: To, Cc, Bcc, From, Subject and
  // the message.
  if (api.isToken() && !reply) {
    const save = h('button', { type: 'button', class: 'quiet', text: 'Save draft' });
    save.addEventListener('click', async () => {
      const saved = await busy(save, async () => {
        const copies = { cc: recipients(cc.value), bcc: recipients(bcc.value) };
        const res = await api.post('/drafts', { id: draftId || undefined, to: recipients(to.value), ...copies, from: from.value || undefined, subject: subject.value, text: text.value, ...threading });
        draftId = res.draft.id;
        return true;
      }, controls);
      if (saved) save.textContent = 'Saved';
    });
    controls.append(save);
  }
  const attached = (last && last.attachments) || [];
  const composed = form({ class: 'compose', 'aria-label': title }, [
    h('h2', { text: title }),
    field('From', from),
    field('To', to, answers ? 'Filled in from the message you answer.' : 'Up to 5 addresses in To, Cc and Bcc, separated by commas.'),
    answers ? (cc.value ? field('Cc', cc) : null) : field('Cc', cc),
    answers ? null : field('Bcc', bcc, 'Each gets a copy; no one sees who was on Bcc.'),
    field('Subject', subject),
    field(forwards ? 'Note (optional)' : 'Message', text),
    answers ? h('label', { class: 'check' }, quote, 'Quote the original below my reply') : null,
    forwards && attached.length ? h('label', { class: 'check' }, carry, `Include its ${attached.length === 1 ? 'attachment' : `${attached.length} attachments`}`) : null,
    forwards ? h('p', { class: 'hint', text: 'The original message follows your note.' }) : field('Attachments', files, 'Up to 3 files: 2 MB each, 4 MB together.'),
    field('Send later (optional)', later, 'Up to 30 days ahead; until then it can be cancelled.'),
    controls,
  ], async () => {
    await ready;
    const list = [...files.files];
    const sendAt = later.value ? new Date(later.value) : null;
    const copies = answers ? [] : [...recipients(cc.value), ...recipients(bcc.value)];
    const why = problem(answers ? whom.to : recipients(to.value), text.value, forwards ? [] : list, subject.value, sendAt, copies, !forwards);
    if (why) throw new Error(why);
    const attachments = await Promise.all(list.map(async (f) => ({ filename: f.name, contentType: f.type || undefined, contentBase64: await base64(f) })));
    const at = sendAt ? sendAt.toISOString().replace(/\.\d{3}Z$/, 'Z') : undefined;
    const addressesIn = (value) => (recipients(value).length ? recipients(value).map(bare) : undefined);
    let path = '/sendMail';
    let body;
    if (answers) {
      path = '/reply';
      body = { id: last.id, text: text.value, all: mode === 'reply-all' || undefined, quote: quote.checked ? undefined : false, attachments: attachments.length ? attachments : undefined, sendAt: at };
    } else if (forwards) {
      path = '/forward';
      body = { id: last.id, to: addressesIn(to.value), cc: addressesIn(cc.value), bcc: addressesIn(bcc.value), text: text.value.trim() ? text.value : undefined, includeAttachments: attached.length && !carry.checked ? false : undefined, sendAt: at };
    } else {
      body = {
        to: recipients(to.value).map(bare),
        cc: addressesIn(cc.value),
        bcc: addressesIn(bcc.value),
        subject: subject.value,
        text: text.value,
        from: from.value || undefined,
        ...threading,
        attachments: attachments.length ? attachments : undefined,
        sendAt: at,
      };
    }
    // A few seconds to take it back: nothing has left the page yet.
    if (!(await undoWindow(composed))) return;
    const res = await api.post(path, body);
    if (draftId) await api.del('/drafts', undefined, { id: draftId }).catch(() => {});
    if (res.status) {
      rememberWait({ messageId: res.messageId, holdId: res.holdId, status: res.status, sendAt: res.sendAt, subject: res.subject || body.subject, to: res.to || body.to });
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
  back.addEventListener('click', () => onDone(undefined, { waiting: true }));
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
