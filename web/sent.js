// Sent mail: what became of each message, per recipient (GET /outbox), and
// the addresses mail no longer goes to (the suppression list).

import * as api from './api.js';
import { h, field, input, form, busy, section, table, when } from './ui.js';

export async function sentPage(view) {
  const reload = async () => {
    view.replaceChildren();
    await sentPage(view);
  };
  view.append(h('h1', { text: 'Sent mail' }), await outboxCard(), await suppressionsCard(reload));
}

function replyOf(r) {
  const reply = r.reply;
  if (!reply) return '';
  const code = [reply.smtpCode, reply.enhancedStatus].filter(Boolean).join(' ');
  return [code, reply.text, reply.remoteHost ? `(${reply.remoteHost})` : ''].filter(Boolean).join(' ');
}

function outboxRows(messages) {
  return messages.flatMap((m) =>
    m.recipients.map((r, i) =>
      h(
        'tr',
        { 'data-message-id': m.messageId, 'data-recipient': r.address },
        h('td', { 'data-label': 'Sent', text: i === 0 ? when(m.createdAt) : '' }),
        h('td', { 'data-label': 'Subject', text: i === 0 ? m.subject || '(no subject)' : '' }),
        h('td', { 'data-label': 'To', text: r.address }),
        h('td', { 'data-label': 'Status' }, h('span', { class: 'status-pill', 'data-status': r.status, text: r.status })),
        h('td', { 'data-label': 'Last reply', text: replyOf(r) }),
      ),
    ),
  );
}

async function outboxCard() {
  const res = await api.get('/outbox', { limit: 25 });
  const card = section(
    'Delivery',
    h('p', { class: 'hint', text: 'Each recipient: sent, deferred, delivered, bounced, complained or failed, with the last reply of the receiving server.' }),
  );
  if (!res.messages.length) {
    card.append(h('p', { text: 'Nothing sent yet.' }));
    return card;
  }
  const wrap = table(['Sent', 'Subject', 'To', 'Status', 'Last reply'], outboxRows(res.messages), 'Sent mail, newest first.');
  card.append(wrap);
  const more = (cursor) => {
    if (!cursor) return;
    const button = h('button', { type: 'button', class: 'quiet more', text: 'More' });
    button.addEventListener('click', () => busy(button, async () => {
      const next = await api.get('/outbox', { limit: 25, cursor });
      wrap.querySelector('tbody').append(...outboxRows(next.messages));
      button.remove();
      more(next.nextCursor);
    }));
    card.append(button);
  };
  more(res.nextCursor);
  return card;
}

const REASONS = { hard_bounce: 'hard bounce', soft_bounces: 'soft bounces', complaint: 'complaint', manual: 'added by hand' };

async function suppressionsCard(reload) {
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
  return section(
    'Suppressed addresses',
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
  );
}
