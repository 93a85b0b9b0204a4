// The account's domain: the records to publish (with copy buttons), a check
// that runs verifyDomain and marks each record, and the account's next step.

import * as api from './api.js';
import { h, field, input, form, copyButton, section, table, busy, when } from './ui.js';

export async function domainPage(view, who) {
  view.append(h('h1', { text: 'Domain' }));
  const account = h('div');
  const refresh = async () => {
    if (who.kind === 'account') account.replaceChildren(await statusCard());
  };
  await refresh();
  view.append(account);
  const listed = await api.get('/listDomains');
  const domain = (listed.domains || []).find((d) => d.status !== 'removed');
  if (!domain) {
    view.append(addCard(view, who));
    return;
  }
  view.append(await recordsCard(domain.name || domain.id, refresh));
  view.append(await dmarcCard(domain.name || domain.id));
}

// The DMARC aggregate reports receivers sent about the domain: what they
// add up to, the sources failing most, and each report.
async function dmarcCard(name) {
  const res = await api.get('/dmarcReports', { domainId: name });
  if (!res.reports.length) {
    return section(
      'DMARC reports',
      h('p', { class: 'dmarc-summary', text: 'No reports yet. Receivers send them, usually daily, to the address your DMARC record names.' }),
    );
  }
  const s = res.summary;
  const failing = s.topFailingSources.map((f) => h('li', { text: `${f.sourceIp}: ${f.messages} failing` }));
  const rows = res.reports.map((r) =>
    h(
      'tr',
      { 'data-report': r.id },
      h('td', { 'data-label': 'Reporter', text: r.authenticated ? r.reporter.orgName : `${r.reporter.orgName} (not proven: mailed from ${(r.mail && r.mail.from) || 'an unknown sender'})` }),
      h('td', { 'data-label': 'Period', text: `${when(r.period.begin)} to ${when(r.period.end)}` }),
      h('td', { 'data-label': 'Messages', text: String(r.messages) }),
      h('td', { 'data-label': 'Failing', text: String(r.failing) }),
    ),
  );
  return section(
    'DMARC reports',
    h('p', { class: 'dmarc-summary', text: `${s.messages} messages: ${s.passing} passing, ${s.failing} failing.` }),
    s.unauthenticated
      ? h('p', { class: 'dmarc-unproven', text: `${s.unauthenticated} more ${s.unauthenticated === 1 ? 'report is' : 'reports are'} left out: ${s.unauthenticated === 1 ? 'its mail does' : 'their mail does'} not prove who sent ${s.unauthenticated === 1 ? 'it' : 'them'}.` })
      : false,
    failing.length ? h('ul', { class: 'failing-sources', 'aria-label': 'Sources failing most' }, ...failing) : false,
    table(['Reporter', 'Period', 'Messages', 'Failing'], rows, 'Aggregate reports, newest first.'),
  );
}

// The account's status and next step, in the API's own sentences.
async function statusCard() {
  const status = await api.post('/getAccountStatus', {});
  return section(
    'Account',
    h('p', {}, 'Status: ', h('strong', { 'data-status': status.status, text: status.status })),
    h('p', { class: 'next-step', text: status.canSend ? 'You can send mail.' : status.reason || 'You cannot send yet.' }),
  );
}

function addCard(view, who) {
  const name = input({ name: 'domain', placeholder: 'example.com', autocapitalize: 'off' });
  return section(
    'Add your domain',
    h('p', { text: 'Each account holds one domain. You will publish three DNS records on it.' }),
    form({ 'aria-label': 'Add domain' }, [
      field('Domain you own', name),
      h('button', { type: 'submit', text: 'Add domain' }),
    ], async () => {
      await api.post('/addDomain', { domain: name.value.trim() });
      view.replaceChildren();
      await domainPage(view, who);
    }),
  );
}

const PURPOSE = { mx: 'Mail exchanger', spf: 'SPF (sending)', dkim: 'DKIM key', dmarc: 'DMARC (recommended)' };

async function recordsCard(name, refresh) {
  const res = await api.get('/getDnsInstructions', { domainId: name });
  const state = h('strong', { 'data-domain-status': res.status, text: res.status });
  const reason = h('p', { class: 'reason', text: res.domain.failureReason || '' });
  const marks = {};
  const rows = res.instructions.records.map((r) => {
    const mark = h('td', { class: 'mark', 'data-purpose': r.purpose, text: r.optional ? 'optional' : '—' });
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
  const check = h('button', { type: 'button', text: 'Check now' });
  check.addEventListener('click', () =>
    busy(check, async () => {
      const v = await api.post('/verifyDomain', { domainId: name });
      state.textContent = v.domain.status;
      state.dataset.domainStatus = v.domain.status;
      reason.textContent = v.transient ? v.message || 'A DNS lookup did not finish; try again shortly.' : v.failureReason || v.domain.failureReason || '';
      for (const [purpose, found] of Object.entries(v.checks || {})) {
        if (!marks[purpose]) continue;
        const optional = purpose === 'dmarc';
        marks[purpose].textContent = found ? 'found' : optional ? 'not published (optional)' : 'missing or wrong';
        marks[purpose].className = `mark ${found ? 'ok' : optional ? '' : 'bad'}`;
      }
      await refresh();
    }),
  );
  return section(
    `DNS records for ${name}`,
    h('p', {}, 'Status: ', state, res.domain.checkedAt ? ` · last checked ${when(res.domain.checkedAt)}` : ''),
    reason,
    table(['What', 'Type', 'Host', 'Priority', 'Value', 'Check'], rows, 'Publish these records at your DNS provider, then check.'),
    h('div', { class: 'actions' }, check),
  );
}
