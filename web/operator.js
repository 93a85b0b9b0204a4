// Operators: access requests (look up by email or domain, approve, deny,
// delete), the domain allowlist, and removing a customer's domain.

import * as api from './api.js';
import { h, field, input, form, busy, section, table, when } from './ui.js';

export async function operatorPage(view) {
  view.append(h('h1', { text: 'Operators' }), requestsCard(), await allowlistCard(), removeDomainCard());
}

function requestsCard() {
  const email = input({ type: 'email', name: 'email' });
  const domain = input({ name: 'domain' });
  const results = h('div', { 'aria-live': 'polite' });
  const search = async () => {
    const res = await api.get('/admin/requestDuplicates', { email: email.value.trim(), domain: domain.value.trim() });
    results.replaceChildren(requestTable(res.requests, search));
  };
  return section(
    'Access requests',
    form({ 'aria-label': 'Find access requests' }, [
      field('Contact email', email),
      field('Organization domain', domain),
      h('button', { type: 'submit', text: 'Find requests' }),
    ], search),
    results,
  );
}

function requestTable(requests, refresh) {
  if (!requests.length) return h('p', { text: 'No access requests match.' });
  const rows = requests.map((r) => {
    const act = (label, work, cls) => {
      const b = h('button', { type: 'button', class: cls || 'quiet', text: label });
      b.addEventListener('click', () => busy(b, async () => { await work(); await refresh(); }));
      return b;
    };
    return h(
      'tr',
      { 'data-request': r.id },
      h('td', { 'data-label': 'Request', text: r.id }),
      h('td', { 'data-label': 'Email', text: r.contactEmail || r.email || '' }),
      h('td', { 'data-label': 'Status', class: 'status', text: r.status || '' }),
      h('td', { 'data-label': 'When', text: when(r.createdAt) }),
      // A decision is for a verified request (pending is not yet): approve
      // what is not ready, deny what is not unavailable (a ready account's
      // key is revoked).
      h('td', { class: 'actions' },
        ['setting_up', 'unavailable'].includes(r.status) ? act('Approve', () => api.post('/admin/requestDecision', { id: r.id, decision: 'approve' }), 'ok') : null,
        ['setting_up', 'ready'].includes(r.status) ? act('Deny', () => api.post('/admin/requestDecision', { id: r.id, decision: 'deny' })) : null,
        act('Delete', () => api.post('/admin/requestDelete', { id: r.id }), 'danger')),
    );
  });
  return table(['Request', 'Email', 'Status', 'When', 'Actions'], rows);
}

async function allowlistCard() {
  const res = await api.get('/admin/domainAllowlist');
  const list = res.domains || res.allowlist || [];
  const name = input({ name: 'domain' });
  const card = h('div');
  const rebuild = async () => card.replaceWith(await allowlistCard());
  const rows = list.map((d) => {
    const value = typeof d === 'string' ? d : d.domain;
    const remove = h('button', { type: 'button', class: 'danger', text: 'Remove' });
    remove.addEventListener('click', () => busy(remove, async () => { await api.del('/admin/domainAllowlist', { domain: value }); await rebuild(); }));
    return h('tr', {}, h('td', { text: value }), h('td', {}, remove));
  });
  card.append(section(
    'Domain allowlist',
    h('p', { text: 'New accounts with an email on one of these domains are ready at once.' }),
    rows.length ? table(['Domain', ''], rows) : h('p', { text: 'The allowlist is empty.' }),
    form({ 'aria-label': 'Allowlist a domain' }, [field('Domain', name), h('button', { type: 'submit', text: 'Allowlist' })], async () => {
      await api.post('/admin/domainAllowlist', { domain: name.value.trim() });
      await rebuild();
    }),
  ));
  return card;
}

function removeDomainCard() {
  const owner = input({ type: 'email', name: 'ownerEmail' });
  const domain = input({ name: 'domainId' });
  const confirm = input({ name: 'confirm' });
  const done = h('p', { role: 'status' });
  return section(
    'Remove a customer domain',
    h('p', { class: 'warning', text: 'This removes the domain and all its mailboxes, and permanently deletes their stored mail.' }),
    form({ 'aria-label': 'Remove a domain' }, [
      field('Owner email', owner),
      field('Domain', domain),
      field('Type the domain again to confirm', confirm, 'Required when the domain has mailboxes.'),
      h('button', { type: 'submit', class: 'danger', text: 'Remove domain' }),
    ], async () => {
      await api.post('/operatorRemoveDomain', { ownerEmail: owner.value.trim(), domainId: domain.value.trim(), confirm: confirm.value.trim() || undefined });
      done.textContent = `${domain.value.trim()} was removed.`;
    }),
    done,
  );
}
