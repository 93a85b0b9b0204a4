// Getting in: sign in with a key or an identity token, or request access,
// enter the emailed code and keep the key shown once. And, with no key at
// all, deciding a send an agent's key held, by the code its owner was mailed.

import * as api from './api.js';
import { forPeople } from './words.js';
import { h, field, input, form, busy, copyButton, section, showError } from './ui.js';

export function startPage({ onSignedIn, error }) {
  const view = h('div', { class: 'page start', 'data-page': 'start' });
  view.append(h('h1', { text: 'Hosted mailboxes and mail sending' }), signInCard(onSignedIn, error), requestCard(onSignedIn), holdCard());
  const local = document.querySelector('meta[name=mailhost-local-sign-in]');
  if (local && local.content === 'on') view.append(operatorCard(onSignedIn));
  return view;
}

// The local server's sign-in for its operators (--operator-emails): a code
// mailed to the operator (locally, to the outbox) for an identity token.
function operatorCard(onSignedIn) {
  const email = input({ type: 'email', name: 'operatorEmail', autocomplete: 'email' });
  const step = h('div', { class: 'step' });
  return section(
    'Operator sign-in (this server)',
    h('p', { class: 'hint', text: 'For the operators this local server names. A deployed service signs operators in with its identity provider.' }),
    form({ 'aria-label': 'Operator sign-in' }, [
      field('Operator email', email),
      h('button', { type: 'submit', text: 'Email me a sign-in code' }),
    ], async () => {
      const asked = await api.post('/local-sign-in', { email: email.value.trim() });
      const code = input({ name: 'signInCode', inputmode: 'numeric', autocomplete: 'one-time-code', maxlength: 8 });
      step.replaceChildren(
        h('p', { class: 'notice', text: asked.message }),
        form({ 'aria-label': 'Operator code' }, [
          field('Sign-in code', code),
          h('button', { type: 'submit', text: 'Sign in as operator' }),
        ], async () => {
          const res = await api.post('/local-sign-in/verify', { email: email.value.trim(), code: code.value.trim() });
          api.signIn(res.token);
          await onSignedIn();
        }),
      );
      code.focus();
    }),
    step,
  );
}

// A held send decided by the 8-digit code mailed to the account's owner:
// POST /holds/approve or /holds/deny with no credential at all.
function holdCard() {
  const hold = input({ name: 'holdId', placeholder: 'snd_…', autocomplete: 'off' });
  const code = input({ name: 'holdCode', inputmode: 'numeric', autocomplete: 'one-time-code', maxlength: 8 });
  const result = h('p', { class: 'notice', role: 'status' });
  const decide = (path, done) => async () => {
    if (!/^snd_/.test(hold.value.trim())) throw new Error('Enter the hold from the approval email: the line “Hold: snd_…”.');
    if (!/^\d{8}$/.test(code.value.trim())) throw new Error('Enter the 8-digit approval code from the same email.');
    const res = await api.call('POST', path, { body: { holdId: hold.value.trim(), code: code.value.trim() }, anonymous: true });
    result.textContent = done(res.hold);
  };
  const deny = h('button', { type: 'button', class: 'danger', text: 'Deny it' });
  const decision = form({ 'aria-label': 'Decide a held send' }, [
    field('Hold', hold, 'From the approval email: the line "Hold: snd_…".'),
    field('Approval code', code),
    h('div', { class: 'actions' }, h('button', { type: 'submit', text: 'Approve and send' }), deny),
  ], decide('/holds/approve', (held) => (held.kind === 'scheduled' ? `Approved: “${held.subject}” goes out at ${held.dueAt}.` : `Approved: “${held.subject}” was sent.`)));
  deny.addEventListener('click', () => busy(deny, decide('/holds/deny', (held) => `Denied: “${held.subject}” will not be sent.`), deny));
  return section(
    'A send waiting for you',
    h('p', { class: 'hint', text: 'A key you gave an agent may hold a send for your approval; the email it sent you has the hold and an 8-digit code. No key is needed here.' }),
    decision,
    result,
  );
}

function signInCard(onSignedIn, error) {
  const secret = input({ type: 'password', name: 'credential', autocomplete: 'off', required: true });
  const card = section(
    'Sign in',
    form({ 'aria-label': 'Sign in' }, [
      field('Key or identity token', secret, 'Your account key, or an operator identity token (mailhost token --operator).'),
      h('button', { type: 'submit', text: 'Sign in' }),
    ], async () => {
      if (!secret.value.trim()) throw new Error('Paste your key or identity token first.');
      api.signIn(secret.value);
      secret.value = '';
      await onSignedIn();
    }),
  );
  if (error) showError(card.querySelector('h2'), error);
  return card;
}

function requestCard(onSignedIn) {
  const email = input({ type: 'email', name: 'contactEmail', autocomplete: 'email' });
  const org = input({ name: 'domain', placeholder: 'example.com' });
  const agent = input({ name: 'agentName' });
  const use = h('textarea', { name: 'intendedUse', rows: 2 });
  const step = h('div', { class: 'step' });
  const card = section(
    'Request access',
    h('p', { text: 'We email you an 8-digit code. Enter it here to get your key.' }),
    form({ 'aria-label': 'Request access' }, [
      field('Your email', email),
      field('Organization domain', org),
      field('Agent name', agent),
      field('What you will use it for', use),
      h('button', { type: 'submit', text: 'Email me a code' }),
    ], async () => {
      const res = await api.post('/requestAccess', {
        contactEmail: email.value.trim(),
        domain: org.value.trim(),
        agentName: agent.value.trim(),
        intendedUse: use.value.trim(),
      });
      step.replaceChildren(codeForm(res, email.value.trim(), step, onSignedIn));
      step.querySelector('input').focus();
    }),
    step,
  );
  return card;
}

function codeForm(requested, email, step, onSignedIn) {
  const code = input({ name: 'code', inputmode: 'numeric', autocomplete: 'one-time-code', maxlength: 8 });
  return h(
    'div',
    {},
    h('p', { class: 'notice', text: requested.message || `We sent a code to ${email}.` }),
    form({ 'aria-label': 'Enter the code' }, [
      field('Code from the email', code),
      h('button', { type: 'submit', text: 'Verify code' }),
    ], async () => {
      const res = await api.post('/verifyAccessRequest', { requestId: requested.requestId, code: code.value.trim() });
      step.replaceChildren(outcome(res, onSignedIn));
    }),
  );
}

function outcome(res, onSignedIn) {
  if (res.status !== 'ready' || !res.apiKey) {
    return h('p', { class: 'notice', role: 'status', text: res.message ? forPeople(res.message) : `Your request is ${res.status}.` });
  }
  const key = h('code', { class: 'secret', text: res.apiKey });
  const go = h('button', { type: 'button', text: 'I stored it: continue' });
  go.addEventListener('click', async () => {
    api.signIn(res.apiKey);
    await onSignedIn();
  });
  return h(
    'div',
    { class: 'key-once' },
    h('p', { class: 'warning', role: 'alert', text: 'Store this key now. It is shown only once and kept only in this browser tab until you sign out.' }),
    h('div', { class: 'copy-row' }, key, copyButton(res.apiKey, 'Copy the key')),
    go,
  );
}
