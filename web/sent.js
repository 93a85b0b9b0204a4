// Sent mail: what is still waiting to go out (scheduled or held, with a
// Cancel), each sent message with every recipient's timeline (GET /outbox),
// and the addresses mail no longer goes to (the suppression list).

import * as api from './api.js';
import { h, field, input, form, busy, section, table, when, shortDate, loadingCard } from './ui.js';
import { rememberedWaits, forgetWait } from './compose.js';

export async function sentPage(view, who) {
  const reload = async () => {
    view.replaceChildren();
    await sentPage(view, who);
  };
  const cards = [waitingCard(who), loadingCard('Sent messages', outboxList), loadingCard('Suppressed addresses', () => suppressions(reload))];
  view.append(h('h1', { text: 'Sent mail' }), ...cards);
  await Promise.all(cards.map((c) => c.ready));
}

// The reply as the remote said it; its text is the whole line, codes first,
// when the remote gave one (Postfix's own words carry none).
function replyOf(r) {
  const reply = r.reply;
  if (!reply) return '';
  const code = [reply.smtpCode, reply.enhancedStatus].filter(Boolean).join(' ');
  const said = reply.text && reply.text.startsWith(code) ? reply.text : [code, reply.text].filter(Boolean).join(' ');
  return [said, reply.remoteHost ? `(${reply.remoteHost})` : ''].filter(Boolean).join(' ');
}

// Sends that have not left: the ones this tab scheduled or saw held, and the
// owner's held sends. The seam: once the service lists its waiting sends
// itself, `waits()` reads that list instead of this tab's memory.
async function waits(who) {
  const mine = rememberedWaits();
  if (who && who.kind !== 'account' && who.kind !== 'operator') return mine;
  try {
    const res = await api.get('/holds');
    const known = new Set(mine.map((w) => w.messageId));
    const held = res.holds
      .filter((hold) => hold.status === 'waiting' && !known.has(hold.messageId))
      .map((hold) => ({ messageId: hold.messageId, holdId: hold.id, status: 'held', subject: hold.subject, to: hold.to }));
    return [...mine, ...held];
  } catch {
    return mine;
  }
}

function waitingCard(who) {
  return loadingCard('Waiting to go out', async () => {
    const list = await waits(who);
    if (!list.length) return h('p', { class: 'hint', text: 'Nothing is waiting: scheduled sends and sends held for approval show here until they go.' });
    return h('ul', { class: 'waiting-list' }, list.map((w) => {
      const status = h('span', { class: 'status-pill', 'data-status': w.status, text: w.status === 'held' ? 'waiting for approval' : `scheduled for ${when(w.sendAt)}` });
      const cancel = h('button', { type: 'button', class: 'danger', text: 'Cancel', 'aria-label': `Cancel “${w.subject}”` });
      const item = h('li', { 'data-waiting-message': w.messageId }, h('strong', { text: w.subject || '(no subject)' }), ` to ${(w.to || []).join(', ')} · `, status, ' ', cancel);
      cancel.addEventListener('click', () => busy(cancel, async () => {
        try {
          await api.post('/outbox/cancel', { messageId: w.messageId });
        } catch (e) {
          // Gone already (sent, or cancelled elsewhere): no longer waiting.
          if (e.status !== 404 && e.status !== 409) throw e;
        }
        forgetWait(w.messageId);
        item.replaceChildren(h('span', { role: 'status', text: `Cancelled: “${w.subject}” will not be sent.` }));
      }));
      return item;
    }));
  });
}

const STATUS_WORDS = {
  sent: 'handed to the receiving server',
  delivered: 'delivered',
  deferred: 'delayed: the receiving server asked to try again later',
  bounced: 'bounced',
  complained: 'marked as spam by the recipient',
  failed: 'failed',
};

// One sent message: its subject and date, then each recipient with what
// happened to it, oldest first.
function messageItem(m) {
  const people = m.recipients.map((r) =>
    h(
      'li',
      { 'data-recipient': r.address },
      h('div', { class: 'recipient-line' }, h('span', { class: 'address', text: r.address }), ' ', h('span', { class: 'status-pill', 'data-status': r.status, text: r.status })),
      h('ol', { class: 'timeline', 'aria-label': `What happened to the mail to ${r.address}` },
        (r.history && r.history.length ? r.history : [{ status: r.status, at: r.updatedAt }]).map((c) =>
          h('li', {}, h('time', { datetime: c.at, text: when(c.at) }), ` ${STATUS_WORDS[c.status] || c.status}`))),
      replyOf(r) ? h('p', { class: 'hint reply', text: `Last reply: ${replyOf(r)}` }) : null,
    ),
  );
  return h(
    'article',
    { class: 'sent-message', 'data-message-id': m.messageId },
    h('header', {}, h('h3', { text: m.subject || '(no subject)' }), h('time', { datetime: m.createdAt, title: when(m.createdAt), text: shortDate(m.createdAt) })),
    m.from ? h('p', { class: 'hint', text: `From ${m.from}` }) : null,
    h('ul', { class: 'recipients' }, people),
  );
}

async function outboxList() {
  const res = await api.get('/outbox', { limit: 25 });
  const hint = h('p', { class: 'hint', text: 'Each recipient: sent, deferred, delivered, bounced, complained or failed, with the last reply of the receiving server.' });
  if (!res.messages.length) return [hint, h('p', { text: 'Nothing sent yet.' })];
  const list = h('div', { class: 'sent-list' }, res.messages.map(messageItem));
  const parts = [hint, list];
  const more = (cursor) => {
    if (!cursor) return null;
    const button = h('button', { type: 'button', class: 'quiet more', text: 'More' });
    button.addEventListener('click', () => busy(button, async () => {
      const next = await api.get('/outbox', { limit: 25, cursor });
      list.append(...next.messages.map(messageItem));
      const again = more(next.nextCursor);
      if (again) button.replaceWith(again);
      else button.remove();
    }));
    return button;
  };
  parts.push(more(res.nextCursor));
  return parts;
}

const REASONS = { hard_bounce: 'hard bounce', soft_bounces: 'soft bounces', complaint: 'complaint', manual: 'added by hand' };

async function suppressions(reload) {
  const res = await api.get('/suppressions', { limit: 50 });
  const rows = res.suppressions.map((s) => {
    const remove = h('button', { type: 'button', class: 'quiet', text: 'Remove', 'aria-label': `Remove ${s.address}` });
    remove.addEventListener('click', () => busy(remove, async () => {
      await api.del('/suppressions', undefined, { address: s.address });
      await reload();
    }));
    return h(
      'tr',
      { 'data-suppressed': s.address },
      h('td', { 'data-label': 'Address', text: s.address }),
      h('td', { 'data-label': 'Why', text: [REASONS[s.reason] || s.reason, s.note, s.reply ? replyOf(s) : ''].filter(Boolean).join(': ') }),
      h('td', { 'data-label': 'Since', text: when(s.createdAt) }),
      h('td', {}, remove),
    );
  });
  const address = input({ type: 'email', name: 'address', placeholder: 'someone@example.org' });
  const note = input({ name: 'reason', placeholder: 'Asked not to be mailed' });
  return [
    h('p', { class: 'hint', text: 'A hard bounce or a complaint stops later mail to an address; a send to one is refused before any credit is spent.' }),
    rows.length ? table(['Address', 'Why', 'Since', ''], rows) : h('p', { text: 'No address is suppressed.' }),
    form({ 'aria-label': 'Suppress an address' }, [
      field('Address', address),
      field('Note (optional)', note),
      h('button', { type: 'submit', text: 'Suppress' }),
    ], async () => {
      await api.post('/suppressions', { address: address.value.trim(), reason: note.value.trim() || undefined });
      await reload();
    }),
  ];
}

