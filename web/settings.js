// Agent settings: credits and the sending switches (the agent key; operators
// also the global pause), and the key's webhook (the agent key's, or an
// account key's for its account's mailboxes).

import * as api from './api.js';
import { h, field, input, form, busy, section, table, copyButton, when, loadingCard } from './ui.js';

const EVENTS = ['inbound.received', 'outbound.delivered', 'outbound.deferred', 'outbound.bounced', 'outbound.complained', 'suppression.added'];

export async function settingsPage(view, who) {
  view.append(h('h1', { text: 'Agent settings' }));
  const reload = async () => {
    view.replaceChildren();
    await settingsPage(view, who);
  };
  // Credits belong to the agent key (and operators, who may pause all
  // sending); a webhook to each key: the agent key's, or the account's.
  // Each card loads on its own and says so; a failing one shows why.
  const cards = [];
  if (who.kind !== 'account' && who.kind !== 'scoped') cards.push(loadingCard(null, async () => creditsCard(await api.get('/credits'), reload)));
  if (who.kind === 'agent' || who.kind === 'account' || who.kind === 'scoped') cards.push(loadingCard(null, () => webhookCard(reload)));
  for (const c of cards) c.classList.add('bare');
  view.append(...cards);
  await Promise.all(cards.map((c) => c.ready));
}

function toggle(label, on, body, reload) {
  const b = h('button', { type: 'button', class: on ? 'danger' : '', text: label });
  b.addEventListener('click', () => busy(b, async () => {
    await api.post('/credits', body);
    await reload();
  }));
  return b;
}

function creditsCard(c, reload) {
  const rows = [
    ['Credits remaining', `${c.credits.remaining} of ${c.credits.initial}`],
    ['Agent key', `…${c.agentKey.last4} · ${c.agentKey.disabled ? 'disabled' : c.agentKey.status}${c.agentKey.frozenUntil ? ` until ${when(c.agentKey.frozenUntil)}` : ''}`],
    ['All sending', c.sending.enabled ? 'on' : 'paused'],
  ];
  const actions = h('div', { class: 'actions' });
  if (c.canControl) {
    actions.append(c.agentKey.disabled
      ? toggle('Enable the agent key', false, { disabled: false }, reload)
      : toggle('Disable the agent key', true, { disabled: true }, reload));
  }
  if (c.canPauseAll) {
    actions.append(c.sending.enabled
      ? toggle('Pause all sending', true, { sendingEnabled: false }, reload)
      : toggle('Resume all sending', false, { sendingEnabled: true }, reload));
  }
  return section(
    'Credits and sending',
    h('dl', { class: 'settings', 'data-sending': c.sending.enabled ? 'on' : 'paused' }, rows.flatMap(([k, v]) => [h('dt', { text: k }), h('dd', { text: v })])),
    actions,
  );
}

async function webhookCard(reload) {
  const res = await api.get('/webhooks');
  const w = res.webhook;
  const url = input({ type: 'url', name: 'url', value: w ? w.url : '', placeholder: 'https://example.com/hooks/mail' });
  const chosen = new Set((w && w.events) || ['inbound.received']);
  const boxes = EVENTS.map((e) => h('label', { class: 'check' }, h('input', { type: 'checkbox', name: 'events', value: e, checked: chosen.has(e) }), e));
  const card = section(
    'Webhook',
    form({ 'aria-label': 'Webhook' }, [
      field('HTTPS URL', url),
      h('fieldset', {}, h('legend', { text: 'Events' }), boxes),
      h('button', { type: 'submit', text: w ? 'Save webhook' : 'Register webhook' }),
    ], async (el) => {
      const events = [...el.querySelectorAll('input[name=events]:checked')].map((b) => b.value);
      await api.post('/webhooks', { url: url.value.trim(), events });
      await reload();
    }),
  );
  if (!w) return card;
  const secret = h('code', { class: 'secret', text: w.secret });
  const rotate = h('button', { type: 'button', class: 'quiet', text: 'Rotate the secret' });
  rotate.addEventListener('click', () => busy(rotate, async () => { await api.post('/webhooks', { rotateSecret: true }); await reload(); }));
  const enable = h('button', { type: 'button', class: 'quiet', text: w.enabled ? 'Pause deliveries' : 'Resume deliveries' });
  enable.addEventListener('click', () => busy(enable, async () => { await api.post('/webhooks', { enabled: !w.enabled }); await reload(); }));
  const remove = h('button', { type: 'button', class: 'danger', text: 'Remove webhook' });
  remove.addEventListener('click', () => busy(remove, async () => { await api.del('/webhooks'); await reload(); }));
  card.append(
    h('p', { text: `Deliveries are ${w.enabled ? 'on' : 'paused'}. Signing secret:` }),
    h('div', { class: 'copy-row' }, secret, copyButton(w.secret, 'Copy the secret')),
    h('div', { class: 'actions' }, rotate, enable, remove),
    await deliveryLog(),
  );
  return card;
}

async function deliveryLog() {
  const res = await api.get('/webhooks/deliveries');
  const rows = (res.deliveries || []).map((d) => {
    const again = h('button', { type: 'button', class: 'quiet', text: 'Replay' });
    again.addEventListener('click', () => busy(again, () => api.post('/webhooks/replay', { eventId: d.eventId })));
    const result = d.status ? `HTTP ${d.status}` : d.error || '';
    return h(
      'tr',
      { 'data-event': d.eventId },
      h('td', { 'data-label': 'When', text: when(d.at) }),
      h('td', { 'data-label': 'Event', text: `${d.eventId}${d.replay ? ' (replay)' : ''} · attempt ${d.attempt ?? 1}` }),
      h('td', { 'data-label': 'Result', text: `${result}${d.latencyMs !== undefined ? ` in ${d.latencyMs} ms` : ''}` }),
      h('td', {}, again),
    );
  });
  return h('div', {}, h('h3', { text: 'Delivery log (7 days)' }), rows.length ? table(['When', 'Event', 'Result', ''], rows) : h('p', { text: 'No deliveries yet.' }));
}
