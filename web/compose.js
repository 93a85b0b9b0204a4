// Compose and reply: plain text, up to 3 attachments, the spec's limits
// checked before sending (the API's sentence shown when it refuses anyway);
// drafts for people signed in with an identity token.

import * as api from './api.js';
import { h, field, input, form, busy, showError } from './ui.js';

const MAX_FILES = 3;
const MAX_FILE = 2 * 1024 * 1024;
const MAX_TOTAL = 4 * 1024 * 1024;
const MAX_TEXT = 100 * 1024;
const MAX_RECIPIENTS = 5;
const TYPES = /^(image\/(jpeg|png|gif|webp)|application\/pdf|text\/.+|application\/vnd\.openxmlformats-officedocument\..+)$/;

function recipients(value) {
  return value.split(/[,;]/).map((a) => a.trim()).filter(Boolean);
}

// Why this message cannot be sent as it is, or null.
export function problem(to, text, files) {
  if (!to.length) return 'Add at least one recipient.';
  if (to.length > MAX_RECIPIENTS) return `At most ${MAX_RECIPIENTS} recipients.`;
  if (new TextEncoder().encode(text).length > MAX_TEXT) return 'The text is over 100 KB.';
  if (files.length > MAX_FILES) return `At most ${MAX_FILES} attachments.`;
  let total = 0;
  for (const f of files) {
    if (f.size > MAX_FILE) return `${f.name} is over 2 MB.`;
    if (f.type && !TYPES.test(f.type)) return `${f.name}: only images, PDF, text, CSV and Office files can be attached.`;
    total += f.size;
  }
  if (total > MAX_TOTAL) return 'The attachments are over 4 MB together.';
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

async function senders() {
  try {
    const listed = await api.get('/listDomains');
    return (listed.domains || []).flatMap((d) => d.mailboxes || []).filter((m) => m.mode !== 'forward').map((m) => m.address);
  } catch {
    return [];
  }
}

export function composeView({ reply, draft, onDone, onCancel }) {
  const last = reply && reply.last;
  const from = h('select', { name: 'from' }, h('option', { value: '', text: 'Default sender' }));
  const to = input({ type: 'text', name: 'to', autocomplete: 'email', value: draft ? [].concat(draft.to || []).join(', ') : last ? (last.box === 'outbound' ? last.to.join(', ') : last.from) : '' });
  const subjectText = draft ? draft.subject : last ? (/^re:/i.test(reply.thread.subject) ? reply.thread.subject : `Re: ${reply.thread.subject}`) : '';
  const subject = input({ name: 'subject', value: subjectText || '' });
  const text = h('textarea', { name: 'text', rows: 10, text: draft ? draft.text || '' : '' });
  const files = h('input', { type: 'file', name: 'attachments', multiple: true });
  const later = input({ type: 'datetime-local', name: 'sendAt' });
  let draftId = draft ? draft.id : null;
  senders().then((list) => {
    for (const a of list) from.append(h('option', { value: a, text: a }));
    const mine = last && (last.box === 'outbound' ? last.from : last.to.find((t) => list.includes(t)));
    if (mine && list.includes(mine)) from.value = mine;
  });
  const threading = last ? { inReplyTo: last.messageId, references: [last.messageId] } : draft && draft.inReplyTo ? { inReplyTo: draft.inReplyTo, references: draft.references } : {};
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
  const composed = form({ class: 'compose', 'aria-label': reply ? 'Reply' : 'New message' }, [
    h('h2', { text: reply ? 'Reply' : 'New message' }),
    field('From', from),
    field('To', to, 'Up to 5 addresses, separated by commas.'),
    field('Subject', subject),
    field('Message', text),
    field('Attachments', files, 'Up to 3 files: 2 MB each, 4 MB together.'),
    field('Send later (optional)', later, 'Up to 30 days ahead; until then it can be cancelled.'),
    controls,
  ], async () => {
    const list = [...files.files];
    const why = problem(recipients(to.value), text.value, list);
    if (why) throw new Error(why);
    const attachments = await Promise.all(list.map(async (f) => ({ filename: f.name, contentType: f.type || undefined, contentBase64: await base64(f) })));
    const res = await api.post('/sendMail', {
      to: recipients(to.value),
      subject: subject.value,
      text: text.value,
      from: from.value || undefined,
      ...threading,
      attachments: attachments.length ? attachments : undefined,
      sendAt: later.value ? new Date(later.value).toISOString().replace(/\.\d{3}Z$/, 'Z') : undefined,
    });
    if (draftId) await api.del('/drafts', undefined, { id: draftId }).catch(() => {});
    if (res.status) composed.replaceWith(waitingView(res, onDone));
    else await onDone(res.threadId);
  });
  return composed;
}

// A send accepted for later (202): held for the owner's approval, or
// scheduled; until it leaves it can be cancelled.
function waitingView(res, onDone) {
  const sentence = res.status === 'held'
    ? 'Held: the account owner was mailed this message and approves or denies it. It goes out once approved.'
    : `Scheduled: it goes out at ${new Date(res.sendAt).toLocaleString()}.`;
  const cancel = h('button', { type: 'button', class: 'danger', text: 'Cancel this send' });
  const back = h('button', { type: 'button', class: 'quiet', text: 'Back to mail' });
  back.addEventListener('click', () => onDone());
  const view = h('div', { class: 'compose waiting', 'data-waiting': res.status },
    h('h2', { text: res.status === 'held' ? 'Waiting for approval' : 'Scheduled' }),
    h('p', { role: 'status', text: sentence }),
    h('div', { class: 'actions' }, cancel, back));
  cancel.addEventListener('click', () => busy(cancel, async () => {
    const done = await api.post('/outbox/cancel', { messageId: res.messageId });
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
