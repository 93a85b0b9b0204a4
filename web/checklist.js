// The first hour: a new account's checklist, each step's state read from
// the service (so a reload shows where the person is): add the domain,
// publish its records (checked on their own while the page waits), create
// a mailbox, send a first message to the simulator, connect a mail app and
// connect an agent.

import * as api from './api.js';
import { h, field, input, form, busy, copyButton, loadingCard } from './ui.js';
import { recordsCard } from './domain.js';
import { credentialCard } from './mailboxes.js';

// Whether an account still has setting up to do.
export function needsChecklist(status) {
  return Boolean(status) && (!status.canSend || !(status.mailboxes || []).length);
}

function step(n, title, done, ...body) {
  return h(
    'li',
    { class: `step ${done ? 'done' : ''}`, 'data-step': n, 'data-done': String(done) },
    h('h2', {}, h('span', { class: 'step-mark', 'aria-hidden': 'true', text: done ? '✓' : String(n) }), ` ${title}`, done ? h('span', { class: 'visually-hidden', text: ' (done)' }) : null),
    ...body,
  );
}

// The simulator's domain: the service's own domain, which the DMARC record
// names (rua=mailto:dmarc@<service domain>).
function simulatorDomain(records) {
  const dmarc = records.find((r) => r.purpose === 'dmarc');
  const m = dmarc && /mailto:[^@]+@([^;\s]+)/.exec(dmarc.value);
  return m ? `simulator.${m[1]}` : null;
}

export async function checklistPage(view) {
  view.append(h('h1', { text: 'Get started' }));
  const reload = async () => {
    view.replaceChildren();
    await checklistPage(view);
  };
  const card = loadingCard(null, async () => {
    const [status, listed, outbox] = await Promise.all([
      api.post('/getAccountStatus', {}),
      api.get('/listDomains'),
      api.get('/outbox', { limit: 1 }).catch(() => ({ messages: [] })),
    ]);
    const domain = (listed.domains || []).find((d) => d.status !== 'removed');
    const verified = Boolean(domain && domain.status === 'verified');
    const mailboxes = domain ? domain.mailboxes.filter((m) => m.mode !== 'forward') : [];
    const sent = outbox.messages.length > 0;
    const steps = h('ol', { class: 'checklist' });

    // 1. The domain.
    const name = input({ name: 'domain', placeholder: 'example.com', autocapitalize: 'off' });
    steps.append(step(1, domain ? `Domain: ${domain.name}` : 'Add your domain', Boolean(domain),
      domain ? null : form({ 'aria-label': 'Add domain' }, [
        field('Domain you own', name, 'On a local server, a name under .test verifies against the server\'s own DNS.'),
        h('button', { type: 'submit', text: 'Add domain' }),
      ], async () => {
        await api.post('/addDomain', { domain: name.value.trim() });
        await reload();
      })));

    // 2. The records, checked on their own while the page is open.
    const records = domain && !verified ? await recordsCard(domain.name, async () => {}, true) : null;
    if (records) {
      records.classList.add('bare');
      // Verified by the automatic check: the next steps open.
      new MutationObserver(() => {
        if (records.querySelector('[data-domain-status=verified]')) reload();
      }).observe(records, { subtree: true, attributes: true, attributeFilter: ['data-domain-status'] });
    }
    steps.append(step(2, verified ? 'DNS records published and verified' : 'Publish these DNS records', verified,
      domain && !verified ? h('p', { class: 'hint', text: 'Copy each record to your DNS provider. This page checks them every few seconds; new records can take a while to appear.' }) : null,
      records));

    // 3. A mailbox.
    const local = input({ name: 'localPart', autocapitalize: 'off' });
    steps.append(step(3, mailboxes.length ? `Mailbox: ${mailboxes[0].address}` : 'Create a mailbox', mailboxes.length > 0,
      verified && !mailboxes.length ? form({ 'aria-label': 'Add mailbox' }, [
        field(`Name (before @${domain.name})`, local),
        h('button', { type: 'submit', text: 'Create mailbox' }),
      ], async () => {
        await api.post('/addMailbox', { domainId: domain.name, localPart: local.value.trim(), mode: 'hosted', forwardTo: [] });
        await reload();
      }) : null));

    // 4. A first message, to the simulator: delivered, nothing leaves.
    const simulator = domain ? simulatorDomain((await api.get('/getDnsInstructions', { domainId: domain.name })).instructions.records) : null;
    const first = h('button', { type: 'button', text: 'Send a test message' });
    first.addEventListener('click', () => busy(first, async () => {
      await api.post('/sendMail', { from: mailboxes[0].address, to: [`delivered@${simulator}`], subject: 'My first message', text: 'Hello from mailhost.' });
      await reload();
    }));
    steps.append(step(4, sent ? 'First message sent' : 'Send a first message', sent,
      mailboxes.length && !sent && simulator ? [h('p', { class: 'hint', text: `To delivered@${simulator}: the simulator answers like a real receiver, and nothing leaves the service.` }), h('div', { class: 'actions' }, first)] : null,
      sent ? h('p', { class: 'hint' }, 'See what became of it on ', h('a', { href: '#/sent', text: 'Sent mail' }), '.') : null));

    // 5. A mail app: IMAP and SMTP settings, the password shown once.
    const app = h('div', { class: 'panel' });
    const issue = h('button', { type: 'button', class: 'quiet', text: 'Show mail app settings' });
    issue.addEventListener('click', () => busy(issue, async () => {
      const res = await api.post('/issueMailboxCredential', { address: mailboxes[0].address });
      app.replaceChildren(credentialCard(res));
      app.querySelector('h2').focus();
    }));
    steps.append(step(5, 'Connect a mail app', mailboxes.some((m) => m.hasCredential),
      mailboxes.length ? [h('p', { class: 'hint', text: 'Any IMAP mail app (Thunderbird, Apple Mail, K-9) reads and sends with a password made for it.' }), h('div', { class: 'actions' }, issue), app] : null));

    // 6. An agent: a key of its own, the MCP endpoint and a line of config.
    const agent = h('div', { class: 'panel' });
    const mint = h('button', { type: 'button', class: 'quiet', text: 'Create a key for an agent' });
    mint.addEventListener('click', () => busy(mint, async () => {
      const created = await api.post('/keys', { name: 'my agent', permissions: ['read', 'send'], approval: 'first_contact' });
      agent.replaceChildren(agentCard(created.apiKey));
      agent.querySelector('h3').focus();
    }));
    steps.append(step(6, 'Connect an agent', false,
      verified ? [h('p', { class: 'hint', text: 'A key that reads and sends mail, holding a first send to anyone new for your approval. Change what it may do under Guardrails.' }), h('div', { class: 'actions' }, mint), agent] : null));
    return steps;
  });
  card.classList.add('bare');
  view.append(card);
  await card.ready;
}

function agentCard(key) {
  const url = `${location.origin}/mcp`;
  const claude = `claude mcp add --transport http mailhost ${url} --header "Authorization: Bearer ${key}"`;
  const json = JSON.stringify({ mcpServers: { mailhost: { type: 'http', url, headers: { Authorization: `Bearer ${key}` } } } });
  const line = (label, text, cls) => h('div', { class: 'copy-row' }, h('span', { class: 'label', text: label }), h('code', { class: cls || '', text }), copyButton(text, `Copy ${label.toLowerCase()}`));
  return h(
    'div',
    { class: 'agent-setup' },
    h('h3', { tabindex: '-1', text: 'Your agent\'s key and connection' }),
    h('p', { class: 'warning', text: 'Store this key now: it is shown this once.' }),
    line('Key', key, 'secret'),
    line('MCP URL', url),
    line('Claude Code', claude),
    line('MCP client JSON', json),
  );
}
