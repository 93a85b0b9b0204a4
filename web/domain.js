// The account's domain: the records to publish (with copy buttons), each
// record's state as last checked (kept by the service, so it survives a
// reload), a check that runs on its own while the domain waits for DNS and
// on "Check now", the DMARC reports, and the account's next step.

import * as api from './api.js';
import { h, field, input, form, copyButton, table, busy, when, loadingCard } from './ui.js';
import { forPeople } from './words.js';

// How often a domain waiting for DNS is checked again while the page is open.
export const RECHECK_SECONDS = 20;
// A domain this young that does not verify yet is waiting for DNS, not failing.
const FRESH_MS = 24 * 3600 * 1000;

export async function domainPage(view, who) {
  view.append(h('h1', { text: 'Domain' }));
  const account = h('div', { class: 'account-slot' });
  const refresh = async () => {
    if (who.kind !== 'account') return;
    const card = loadingCard('Account', statusCard);
    account.replaceChildren(card);
    await card.ready;
  };
  refresh();
  view.append(account);
  const main = loadingCard(null, async () => {
    const listed = await api.get('/listDomains');
    const domain = (listed.domains || []).find((d) => d.status !== 'removed');
    const mayManage = who.kind !== 'scoped' || who.may.manage;
    if (!domain) {
      if (!mayManage) return h('p', { text: 'No domain yet. The account owner adds it.' });
      return addForm(view, who);
    }
    const name = domain.name || domain.id;
    const records = await recordsCard(name, refresh, mayManage);
    // DMARC reports are the domain's, read by the owner (a key kept to
    // some mailboxes is refused them).
    if (who.kind === 'scoped') return records;
    const dmarc = loadingCard('DMARC reports', () => dmarcReports(name));
    return [records, dmarc];
  });
  main.classList.add('bare');
  view.append(main);
  await main.ready;
}

// Who sent a report: its organisation, and, when its mail proved nothing,
// the address it came from.
function reporter(r) {
  const name = (r.reporter && (r.reporter.orgName || r.reporter.email)) || 'unknown';
  return r.authenticated ? name : `${name} (not proven: mailed from ${(r.mail && r.mail.from) || 'an unknown sender'})`;
}

// The DMARC aggregate reports receivers sent about the domain: what they
// add up to, the sources failing most, and each report.
async function dmarcReports(name) {
  const res = await api.get('/dmarcReports', { domainId: name });
  const reports = res.reports || [];
  if (!reports.length) {
    return h('p', { class: 'dmarc-summary', text: 'No reports yet. Receivers send them, usually daily, to the address your DMARC record names.' });
  }
  const s = res.summary || {};
  const failing = (s.topFailingSources || []).map((f) => h('li', { text: `${f.sourceIp}: ${f.messages} failing` }));
  const rows = reports.map((r) =>
    h(
      'tr',
      { 'data-report': r.id },
      h('td', { 'data-label': 'Reporter', text: reporter(r) }),
      h('td', { 'data-label': 'Period', text: r.period ? `${when(r.period.begin)} to ${when(r.period.end)}` : '' }),
      h('td', { 'data-label': 'Messages', text: String(r.messages ?? '') }),
      h('td', { 'data-label': 'Failing', text: String(r.failing ?? '') }),
    ),
  );
  const unproven = s.unauthenticated ?? 0;
  return [
    h('p', { class: 'dmarc-summary', text: `${s.messages ?? 0} messages: ${s.passing ?? 0} passing, ${s.failing ?? 0} failing.` }),
    unproven
      ? h('p', { class: 'dmarc-unproven', text: `${unproven} more ${unproven === 1 ? 'report is' : 'reports are'} left out: ${unproven === 1 ? 'its mail does' : 'their mail does'} not prove who sent ${unproven === 1 ? 'it' : 'them'}.` })
      : null,
    failing.length ? h('ul', { class: 'failing-sources', 'aria-label': 'Sources failing most' }, ...failing) : null,
    table(['Reporter', 'Period', 'Messages', 'Failing'], rows, 'Aggregate reports, newest first.'),
  ];
}

// The account's status and next step, in words for people.
async function statusCard() {
  const status = await api.post('/getAccountStatus', {});
  return [
    h('p', {}, 'Status: ', h('strong', { 'data-status': status.status, text: status.status.replace(/_/g, ' ') })),
    h('p', { class: 'next-step', text: status.canSend ? 'You can send mail.' : forPeople(status.reason || 'You cannot send yet.') }),
  ];
}

function addForm(view, who) {
  const name = input({ name: 'domain', placeholder: 'example.com', autocapitalize: 'off' });
  return [
    h('h2', { text: 'Add your domain' }),
    h('p', { text: 'Each account holds one domain. You will publish three DNS records on it. On a local server, a domain under .test verifies against the server\'s own DNS.' }),
    form({ 'aria-label': 'Add domain' }, [
      field('Domain you own', name),
      h('button', { type: 'submit', text: 'Add domain' }),
    ], async () => {
      await api.post('/addDomain', { domain: name.value.trim() });
      view.replaceChildren();
      await domainPage(view, who);
    }),
  ];
}

const PURPOSE = { mx: 'Mail exchanger', spf: 'SPF (sending)', dkim: 'DKIM key', dmarc: 'DMARC (recommended)' };

// Whether the domain is still within its first day: not yet seen is normal.
function fresh(domain) {
  return domain.status !== 'verified' && Date.now() - new Date(domain.createdAt).getTime() < FRESH_MS;
}

// A record's mark: found, optional, or (missing) waiting or wrong.
function markOf(purpose, found, checked, waiting) {
  const optional = purpose === 'dmarc';
  if (!checked) return [optional ? 'optional' : 'not checked yet', 'mark'];
  if (found) return ['found', 'mark ok'];
  if (optional) return ['not published (optional)', 'mark'];
  return waiting ? ['not seen yet', 'mark waiting'] : ['missing or wrong', 'mark bad'];
}

function statusWords(domain) {
  if (domain.status === 'verified') return 'verified';
  return fresh(domain) ? 'waiting for DNS' : 'not verified';
}

export async function recordsCard(name, refresh, mayManage) {
  const res = await api.get('/getDnsInstructions', { domainId: name });
  const state = h('strong', { 'data-domain-status': res.status });
  const checked = h('span', { class: 'checked-at' });
  const reason = h('p', { class: 'reason' });
  const marks = {};
  const rows = res.instructions.records.map((r) => {
    const mark = h('td', { class: 'mark', 'data-purpose': r.purpose });
    marks[r.purpose] = mark;
    return h(
      'tr',
      { 'data-record': r.purpose },
      h('td', { 'data-label': 'What', text: PURPOSE[r.purpose] || r.purpose }),
      h('td', { 'data-label': 'Type', class: 'type', text: r.type }),
      h('td', { 'data-label': 'Host' }, h('code', { class: 'host', text: r.host }), copyButton(r.host, `Copy the ${r.purpose} host`)),
      h('td', { 'data-label': 'Priority', class: 'priority', text: r.priority ?? '' }),
      h('td', { 'data-label': 'Value' }, h('code', { class: 'value', text: r.value }), copyButton(r.value, `Copy the ${r.purpose} value`)),
      mark,
    );
  });
  // Everything the page says about the check comes from the domain as the
  // service keeps it: a reload shows the same marks.
  const paint = (domain, transient) => {
    state.textContent = statusWords(domain);
    state.dataset.domainStatus = domain.status;
    state.dataset.waiting = String(fresh(domain));
    checked.textContent = domain.checkedAt ? ` · last checked ${when(domain.checkedAt)}` : ' · not checked yet';
    reason.textContent = transient || (domain.status === 'verified' ? '' : domain.failureReason || '');
    for (const [purpose, mark] of Object.entries(marks)) {
      const [text, cls] = markOf(purpose, domain.checks && domain.checks[purpose], Boolean(domain.checks), fresh(domain));
      mark.textContent = text;
      mark.className = cls;
    }
  };
  paint(res.domain);
  const check = h('button', { type: 'button', text: 'Check now' });
  const run = async () => {
    const v = await api.post('/verifyDomain', { domainId: name });
    // The domain as the service now keeps it (marks, last checked): what a
    // reload shows too.
    const kept = await api.get('/getDnsInstructions', { domainId: name });
    paint(kept.domain, v.transient ? forPeople(v.message || 'A DNS lookup did not finish; try again shortly.') : '');
    await refresh();
    return kept.domain;
  };
  check.addEventListener('click', () => busy(check, run));
  // While the domain waits for DNS and the page is open, it checks itself.
  let timer = null;
  const again = () => {
    clearTimeout(timer);
    timer = setTimeout(async () => {
      if (!check.isConnected) return;
      if (state.dataset.domainStatus === 'verified') return;
      if (!check.disabled) await busy(check, run);
      again();
    }, RECHECK_SECONDS * 1000);
  };
  if (mayManage && res.domain.status !== 'verified') again();
  return h(
    'section',
    { class: 'card' },
    h('h2', { text: `DNS records for ${name}` }),
    h('p', {}, 'Status: ', state, checked),
    reason,
    table(['What', 'Type', 'Host', 'Priority', 'Value', 'Check'], rows, res.domain.status === 'verified' ? 'The records your DNS provider publishes.' : 'Publish these records at your DNS provider; the page checks them every few seconds while it waits.'),
    mayManage ? h('div', { class: 'actions' }, check) : null,
  );
}
