// Guardrails: what lets an owner hand an agent a key safely. Scoped keys
// (minted with some permissions, mailboxes, a daily cap, an expiry and an
// approval rule; the key shown once), sends held for the owner's approval,
// the allow and block lists, and the audit log of who changed what.

import * as api from './api.js';
import { h, field, input, form, busy, section, table, copyButton, when, loadingCard } from './ui.js';

const PERMISSIONS = [
  ['read', 'Read mail and the outbox'],
  ['send', 'Send mail'],
  ['draft', 'Keep drafts'],
  ['manage', 'Manage domains, mailboxes, suppressions and webhooks'],
];
const APPROVALS = [
  ['none', 'Sends go out at once'],
  ['first_contact', 'Hold a send to anyone never mailed or heard from'],
  ['always', 'Hold every send for my approval'],
];

export async function guardrailsPage(view, who) {
  const reload = async () => {
    view.replaceChildren();
    await guardrailsPage(view, who);
  };
  const panel = h('div', { class: 'panel', 'aria-live': 'polite' });
  // Each card loads on its own: a slow or failing one says so in its place.
  const cards = [
    loadingCard(null, () => keysCard(panel, reload)),
    panel,
    loadingCard(null, () => holdsCard(reload)),
    loadingCard(null, () => listsCard(reload)),
    loadingCard(null, auditCard),
  ];
  for (const c of cards) if (c !== panel) c.classList.add('bare');
  view.append(h('h1', { text: 'Guardrails' }), ...cards);
  await Promise.all(cards.map((c) => c.ready));
}

function checks(name, options, chosen) {
  return options.map(([value, label]) =>
    h('label', { class: 'check' }, h('input', { type: 'checkbox', name, value, checked: chosen.includes(value) }), label),
  );
}

function checked(el, name) {
  return [...el.querySelectorAll(`input[name=${name}]:checked`)].map((b) => b.value);
}

function scopeOf(s) {
  const parts = [s.permissions.join(', ') || 'nothing'];
  parts.push(s.mailboxes ? `only ${s.mailboxes.join(', ')}` : 'every mailbox');
  if (s.dailySendCap) parts.push(`${s.dailySendCap} sends a day`);
  if (s.approval && s.approval !== 'none') parts.push(s.approval === 'always' ? 'every send held' : 'first contacts held');
  if (s.expiresAt) parts.push(`until ${when(s.expiresAt)}`);
  return parts.join(' · ');
}

async function mailboxAddresses() {
  const listed = await api.get('/listDomains');
  const domain = (listed.domains || []).find((d) => d.status !== 'removed');
  return domain ? domain.mailboxes.map((m) => m.address) : [];
}

function keyRows(keys, reload) {
  return keys.map((k) => {
    const revoke = h('button', { type: 'button', class: 'danger', text: 'Revoke', 'aria-label': `Revoke ${k.name}` });
    revoke.addEventListener('click', () => busy(revoke, async () => {
      await api.del('/keys', undefined, { id: k.id });
      await reload();
    }));
    return h(
      'tr',
      { 'data-key': k.id },
      h('td', { 'data-label': 'Name', text: `${k.name} (…${k.last4})` }),
      h('td', { 'data-label': 'May', text: scopeOf(k.scope) }),
      h('td', { 'data-label': 'Last used', text: k.lastUsedAt ? when(k.lastUsedAt) : 'never' }),
      h('td', {}, revoke),
    );
  });
}

function keysTable(keys, reload) {
  return keys.length ? table(['Name', 'May', 'Last used', ''], keyRows(keys, reload), 'Scoped keys, newest first.') : h('p', { text: 'No scoped keys yet.' });
}

async function keysCard(panel, reload) {
  const [res, addresses] = await Promise.all([api.get('/keys'), mailboxAddresses()]);
  const listed = h('div', { class: 'keys-list' }, keysTable(res.keys, reload));
  const name = input({ name: 'name', placeholder: 'Support agent' });
  const cap = input({ type: 'number', name: 'dailySendCap', min: '1', max: '50' });
  const expires = input({ type: 'date', name: 'expiresAt' });
  const approval = h('select', { name: 'approval' }, APPROVALS.map(([v, label]) => h('option', { value: v, text: label })));
  // One fieldset holds the whole form: disabled at once, submit included
  // (busy() re-enables the button itself when its work ends).
  const controls = h('fieldset', { class: 'plain' });
  const create = form({ 'aria-label': 'New key' }, [controls], async (el) => {
    const mailboxes = checked(el, 'mailboxes');
    const created = await api.post('/keys', {
      name: name.value.trim(),
      permissions: checked(el, 'permissions'),
      mailboxes: mailboxes.length ? mailboxes : undefined,
      dailySendCap: cap.value ? Number(cap.value) : undefined,
      expiresAt: expires.value ? new Date(`${expires.value}T23:59:59Z`).toISOString().replace('.000Z', 'Z') : undefined,
      approval: approval.value,
    });
    panel.replaceChildren(newKeyCard(created, reload));
    // The secret is shown once: the form is emptied and closed until the
    // person says they stored it (a second mint would replace the card).
    el.reset();
    controls.disabled = true;
    controls.after(h('p', { class: 'hint', text: 'Store the new key below, then choose “I stored it: continue” to create another.' }));
    listed.replaceChildren(keysTable((await api.get('/keys')).keys, reload));
  });
  controls.append(
    field('Name', name),
    h('fieldset', {}, h('legend', { text: 'Permissions' }), checks('permissions', PERMISSIONS, ['read'])),
    addresses.length
      ? h('fieldset', {}, h('legend', { text: 'Mailboxes (none ticked: every mailbox)' }), checks('mailboxes', addresses.map((a) => [a, a]), []))
      : null,
    field('Sends a day (optional, 1 to 50)', cap),
    field('Expires (optional)', expires),
    field('Approval', approval),
    h('button', { type: 'submit', text: 'Create key' }),
  );
  return section(
    'Keys for agents',
    h('p', { class: 'hint', text: 'A scoped key does only what you allow here. Revoking one stops it at its next request.' }),
    listed,
    create,
  );
}

function newKeyCard(created, reload) {
  const key = h('code', { class: 'secret', text: created.apiKey });
  const done = h('button', { type: 'button', text: 'I stored it: continue' });
  done.addEventListener('click', reload);
  return section(
    `Key “${created.key.name}” created`,
    h('p', { class: 'warning', text: 'Store this key now: it is shown this once and cannot be shown again.' }),
    h('div', { class: 'copy-row key-once' }, key, copyButton(created.apiKey, 'Copy the new key')),
    done,
  );
}

async function holdsCard(reload) {
  const res = await api.get('/holds');
  const rows = res.holds.map((hold) => {
    const cells = [
      h('td', { 'data-label': 'Asked', text: when(hold.createdAt) }),
      h('td', { 'data-label': 'Mail', text: `${hold.subject || '(no subject)'}: from ${hold.from} to ${hold.to.join(', ')}` }),
      h('td', { 'data-label': 'Text', text: hold.preview }),
      h('td', { 'data-label': 'By', text: hold.requestedBy.name || hold.requestedBy.email || hold.requestedBy.kind }),
      h('td', { 'data-label': 'Status' }, h('span', { class: 'status-pill', 'data-status': hold.status, text: hold.status })),
    ];
    const actions = h('td', {});
    if (hold.status === 'waiting') {
      for (const [label, path, cls] of [['Approve', '/holds/approve', 'ok'], ['Deny', '/holds/deny', 'danger']]) {
        const b = h('button', { type: 'button', class: cls, text: label, 'aria-label': `${label} “${hold.subject}”` });
        b.addEventListener('click', () => busy(b, async () => {
          await api.post(path, { holdId: hold.id });
          await reload();
        }));
        actions.append(b);
      }
    }
    return h('tr', { 'data-hold': hold.id }, ...cells, actions);
  });
  return section(
    'Held sends',
    h('p', { class: 'hint', text: 'Sends a key’s approval rule held for you. An approved send goes out once; a hold lapses after 24 hours.' }),
    rows.length ? table(['Asked', 'Mail', 'Text', 'By', 'Status', ''], rows) : h('p', { text: 'Nothing is waiting for you.' }),
  );
}

const LIST_NAMES = {
  'send allow': 'May send only to',
  'send block': 'Never send to',
  'receive allow': 'Accept mail only from',
  'receive block': 'Refuse mail from',
};

async function listsCard(reload) {
  const res = await api.get('/lists');
  const rows = res.entries.map((e) => {
    const remove = h('button', { type: 'button', class: 'quiet', text: 'Remove', 'aria-label': `Remove ${e.entry}` });
    remove.addEventListener('click', () => busy(remove, async () => {
      await api.del('/lists', undefined, { direction: e.direction, kind: e.kind, entry: e.entry, mailbox: e.mailbox });
      await reload();
    }));
    return h(
      'tr',
      { 'data-entry': `${e.direction} ${e.kind} ${e.entry}` },
      h('td', { 'data-label': 'Rule', text: LIST_NAMES[`${e.direction} ${e.kind}`] }),
      h('td', { 'data-label': 'Address or domain', text: e.entry }),
      h('td', { 'data-label': 'Mailbox', text: e.mailbox || 'every mailbox' }),
      h('td', {}, remove),
    );
  });
  const rule = h('select', { name: 'rule' }, Object.entries(LIST_NAMES).map(([v, label]) => h('option', { value: v, text: label })));
  const entry = input({ name: 'entry', placeholder: 'partner.example or someone@partner.example' });
  const mailbox = input({ type: 'email', name: 'mailbox', placeholder: 'every mailbox' });
  return section(
    'Allow and block lists',
    h('p', { class: 'hint', text: 'A domain also covers its subdomains. A block wins over an allow; once an allow list holds an entry, only what it names passes.' }),
    rows.length ? table(['Rule', 'Address or domain', 'Mailbox', ''], rows) : h('p', { text: 'No lists yet: every recipient and sender passes.' }),
    form({ 'aria-label': 'Add a list entry' }, [
      field('Rule', rule),
      field('Address or domain', entry),
      field('Mailbox (optional)', mailbox),
      h('button', { type: 'submit', text: 'Add entry' }),
    ], async () => {
      const [direction, kind] = rule.value.split(' ');
      await api.post('/lists', { direction, kind, entry: entry.value.trim(), mailbox: mailbox.value.trim() || undefined });
      await reload();
    }),
  );
}

// Who did it, as a person reads it: the key's name, the person's email.
function actorOf(a) {
  switch (a.kind) {
    case 'account_key': return 'the account key';
    case 'agent_key': return 'the agent key';
    case 'scoped_key': return a.name || `the key …${(a.keyId || '').slice(-4)}`;
    case 'emailed_code': return 'the emailed code';
    case 'mail_host': return 'the mail host';
    default: return a.email || a.name || a.kind.replace(/_/g, ' ');
  }
}

// The change in words: "agent-7 sent 'Invoice' to bob@…".
const DID = {
  sendMail: (t) => `sent mail${t.to ? ` to ${[].concat(t.to).join(', ')}` : ''}`,
  reply: (t) => `replied to the message ${t.id || t.messageId || ''}`,
  forward: (t) => `forwarded the message ${t.id || t.messageId || ''}${t.to ? ` to ${[].concat(t.to).join(', ')}` : ''}`,
  markSpam: (t) => `reported the message ${t.messageId || t.id || ''} as ${t.spam === false ? 'not spam' : 'spam'}`,
  deleteMail: (t) => (t.thread ? `deleted a conversation for good` : `deleted ${t.id || t.messageId ? `the message ${t.id || t.messageId}` : 'the trash'} for good`),
  createKey: (t) => `created the key ${t.name ? `“${t.name}”` : t.id || ''}`,
  revokeKey: (t) => `revoked the key ${t.name ? `“${t.name}”` : t.id || ''}`,
  addDomain: (t) => `added the domain ${t.domain || t.domainId || ''}`,
  verifyDomain: (t) => `checked the DNS of ${t.domainId || t.domain || ''}`,
  addMailbox: (t) => `added the mailbox ${t.address || [t.localPart, t.domainId].filter(Boolean).join('@')}`,
  deleteMailbox: (t) => `deleted the mailbox ${t.address || ''}`,
  setMailboxMode: (t) => `changed the mode of ${t.address || [t.localPart, t.domainId].filter(Boolean).join('@')}${t.mode ? ` to ${t.mode}` : ''}`,
  issueMailboxCredential: (t) => `issued a mail app password for ${t.address || ''}`,
  approveHold: (t) => `approved the held send ${t.holdId || ''}`,
  denyHold: (t) => `denied the held send ${t.holdId || ''}`,
  cancelSend: (t) => `cancelled the send ${t.messageId || ''}`,
  setWebhook: () => 'changed the webhook',
  deleteWebhook: () => 'removed the webhook',
  addSuppression: (t) => `stopped mail to ${t.address || ''}`,
  removeSuppression: (t) => `allowed mail to ${t.address || ''} again`,
  addListEntry: (t) => `added ${t.entry || ''} to a ${t.direction || ''} ${t.kind || ''} list`,
  removeListEntry: (t) => `removed ${t.entry || ''} from a ${t.direction || ''} ${t.kind || ''} list`,
};

function sentence(c) {
  const target = c.target || {};
  const did = DID[c.operation];
  const what = did ? did(target).replace(/\s+/g, ' ').trim() : `${c.operation.replace(/([A-Z])/g, ' $1').toLowerCase()}${Object.keys(target).length ? ` (${Object.entries(target).map(([k, v]) => `${k} ${typeof v === 'string' ? v : JSON.stringify(v)}`).join(', ')})` : ''}`;
  return `${actorOf(c.actor)} ${what}`;
}

function auditRows(changes) {
  return changes.map((c) =>
    h(
      'tr',
      { 'data-change': c.requestId },
      h('td', { 'data-label': 'When', text: when(c.at) }),
      h('td', { 'data-label': 'What happened', text: sentence(c) }),
      h('td', { 'data-label': 'Outcome', text: c.error ? `refused: ${c.error}` : 'done' }),
    ),
  );
}

async function auditCard() {
  const actor = input({ name: 'actor', placeholder: 'key_… or an email' });
  const operation = input({ name: 'operation', placeholder: 'sendMail' });
  const results = h('div', { 'aria-live': 'polite' });
  const load = async () => {
    const query = { actor: actor.value.trim(), operation: operation.value.trim(), limit: 25 };
    const res = await api.get('/audit', query);
    if (!res.changes.length) {
      results.replaceChildren(h('p', { text: 'No changes match.' }));
      return;
    }
    const wrap = table(['When', 'What happened', 'Outcome'], auditRows(res.changes), 'Changes, newest first (kept 90 days).');
    results.replaceChildren(wrap);
    const more = (cursor) => {
      if (!cursor) return;
      const button = h('button', { type: 'button', class: 'quiet more', text: 'More' });
      button.addEventListener('click', () => busy(button, async () => {
        const next = await api.get('/audit', { ...query, cursor });
        wrap.querySelector('tbody').append(...auditRows(next.changes));
        button.remove();
        more(next.nextCursor);
      }));
      results.append(button);
    };
    more(res.nextCursor);
  };
  await load();
  return section(
    'Audit log',
    form({ 'aria-label': 'Filter the audit log', class: 'filters' }, [
      field('Who (a key id or an email)', actor),
      field('Operation', operation),
      h('button', { type: 'submit', text: 'Filter' }),
    ], load),
    results,
  );
}
