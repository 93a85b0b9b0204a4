// Mailboxes on the account's domain: list, add, change mode, delete, the
// IMAP/SMTP password (shown once) and the settings for a mail client.

import * as api from './api.js';
import { h, field, input, form, copyButton, section, table, busy, loadingCard } from './ui.js';

const MODES = [
  ['hosted', 'Hosted: stored here (webmail and IMAP)'],
  ['forward', 'Forward: relayed only (no webmail or IMAP)'],
  ['both', 'Both: stored and a copy forwarded'],
];

export async function mailboxesPage(view, who) {
  view.append(h('h1', { text: 'Mailboxes' }));
  // A scoped key without the manage permission sees the list, nothing to change.
  const manage = who.kind !== 'scoped' || who.may.manage;
  const reload = async () => {
    view.replaceChildren();
    await mailboxesPage(view, who);
  };
  const panel = h('div', { class: 'panel', 'aria-live': 'polite' });
  const content = loadingCard(null, async () => {
    const listed = await api.get('/listDomains');
    const domain = (listed.domains || []).find((d) => d.status !== 'removed');
    if (!domain) {
      return section('No domain yet', h('p', {}, 'Add and verify your domain first on the ', h('a', { href: '#/domain', text: 'Domain page' }), '.'));
    }
    return [listCard(domain, panel, reload, manage), panel, manage ? addCard(domain, reload) : null];
  });
  content.classList.add('bare');
  view.append(content);
  await content.ready;
}

function modeSelect(value) {
  return h('select', { name: 'mode' }, MODES.map(([v, label]) => h('option', { value: v, selected: v === value, text: label })));
}

function targets(text) {
  return text.split(/[\s,;]+/).map((t) => t.trim()).filter(Boolean);
}

function listCard(domain, panel, reload, manage) {
  const rows = domain.mailboxes.map((m) => {
    const actions = h('td', { class: 'row-actions' });
    const change = h('button', { type: 'button', class: 'quiet', text: 'Change mode' });
    change.addEventListener('click', () => panel.replaceChildren(modeCard(m, reload)));
    const remove = h('button', { type: 'button', class: 'danger', text: 'Delete' });
    remove.addEventListener('click', () => panel.replaceChildren(deleteCard(m, reload)));
    if (manage) actions.append(change, remove);
    if (manage && m.mode !== 'forward') {
      const pass = h('button', { type: 'button', class: 'quiet', text: m.hasCredential ? 'New IMAP/SMTP password' : 'IMAP/SMTP password' });
      pass.addEventListener('click', () =>
        busy(pass, async () => {
          const res = await api.post('/issueMailboxCredential', { address: m.address });
          panel.replaceChildren(credentialCard(res));
          // The password is what the person came for: focus goes there.
          panel.querySelector('h2').focus();
        }),
      );
      actions.append(pass);
    }
    return h(
      'tr',
      { 'data-mailbox': m.address },
      h('td', { 'data-label': 'Address', text: m.address }),
      h('td', { 'data-label': 'Mode', text: m.mode }),
      h('td', { 'data-label': 'Forwards to', text: (m.forwardTo || []).join(', ') }),
      h('td', { 'data-label': 'Mail server', class: m.mtaApplied ? 'ok' : 'pending', text: m.mtaApplied ? 'live' : 'pending (about a minute)' }),
      actions,
    );
  });
  return section(
    `Mailboxes on ${domain.name}`,
    rows.length ? table(['Address', 'Mode', 'Forwards to', 'Mail server', manage ? 'Actions' : ''], rows) : h('p', { text: 'No mailboxes yet.' }),
  );
}

function addCard(domain, reload) {
  const local = input({ name: 'localPart', autocapitalize: 'off' });
  const mode = modeSelect('hosted');
  const forward = h('textarea', { name: 'forwardTo', rows: 2 });
  return section(
    'Add a mailbox',
    form({ 'aria-label': 'Add mailbox' }, [
      field(`Name (before @${domain.name})`, local),
      field('Mode', mode),
      field('Forward to', forward, 'For forward or both: up to 5 addresses, one per line or separated by commas. Leave empty for hosted.'),
      h('button', { type: 'submit', text: 'Add mailbox' }),
    ], async () => {
      await api.post('/addMailbox', { domainId: domain.name, localPart: local.value.trim(), mode: mode.value, forwardTo: targets(forward.value) });
      await reload();
    }),
  );
}

function modeCard(m, reload) {
  const mode = modeSelect(m.mode);
  const forward = h('textarea', { name: 'forwardTo', rows: 2, text: (m.forwardTo || []).join('\n') });
  return section(
    `Change the mode of ${m.address}`,
    h('p', { text: 'Stored mail is kept. Forward-only mailboxes have no IMAP/SMTP login or webmail.' }),
    form({ 'aria-label': 'Change mode' }, [
      field('Mode', mode),
      field('Forward to', forward),
      h('button', { type: 'submit', text: 'Save mode' }),
    ], async () => {
      await api.post('/setMailboxMode', { domainId: m.domainId, localPart: m.localPart, mode: mode.value, forwardTo: targets(forward.value) });
      await reload();
    }),
  );
}

function deleteCard(m, reload) {
  const confirm = h('button', { type: 'button', class: 'danger', text: `Delete ${m.address}` });
  const card = section(
    `Delete ${m.address}?`,
    h('p', { text: 'Its stored mail is kept. The last mailbox of a verified domain cannot be deleted: add another one first.' }),
    h('div', { class: 'actions' }, confirm),
  );
  confirm.addEventListener('click', async () => {
    const done = await busy(confirm, () => api.post('/deleteMailbox', { address: m.address }));
    if (done) await reload();
  });
  return card;
}

export function credentialCard(res) {
  const pw = h('code', { class: 'secret', text: res.password });
  const settings = [
    ['Username', res.username],
    ['IMAP', `${res.imap.host} port ${res.imap.port} (${res.imap.security})`],
    ['SMTP', `${res.smtp.host} port ${res.smtp.port} (${res.smtp.security})`],
  ];
  const card = section(
    `Mail client settings for ${res.address}`,
    h('p', { class: 'warning', role: 'alert', text: 'Store this password now: it is shown only once.' }),
    h('div', { class: 'copy-row' }, pw, copyButton(res.password, 'Copy the password')),
    h('dl', { class: 'settings' }, settings.flatMap(([k, v]) => [h('dt', { text: k }), h('dd', { text: v })])),
    h('p', { class: 'hint', text: res.message }),
  );
  card.querySelector('h2').tabIndex = -1;
  return card;
}

