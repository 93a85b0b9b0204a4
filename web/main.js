// The shell: who is signed in, the navigation, and the page for the hash
// route (#/mail, #/domain, ...). A hash route never carries a credential.

import * as api from './api.js';
import { h, failure } from './ui.js';
import { keyboard } from './keyboard.js';
import { startPage } from './start.js';
import { domainPage } from './domain.js';
import { mailboxesPage } from './mailboxes.js';
import { mailPage } from './mail.js';
import { settingsPage } from './settings.js';
import { operatorPage } from './operator.js';
import { sentPage } from './sent.js';
import { guardrailsPage } from './guardrails.js';

import { checklistPage, needsChecklist } from './checklist.js';

// Each page, and who sees it. A scoped key ('scoped') sees what its
// permissions allow (`may`): reading mail, managing the domain and mailboxes.
const PAGES = {
  start: { title: 'Get started', render: checklistPage, for: ['account'], when: (who) => who.firstRun },
  mail: { title: 'Mail', render: mailPage, for: ['account', 'person', 'operator', 'agent', 'scoped'] },
  domain: { title: 'Domain', render: domainPage, for: ['account', 'person', 'operator', 'scoped'], when: (who) => who.kind !== 'scoped' || who.may.read },
  mailboxes: { title: 'Mailboxes', render: mailboxesPage, for: ['account', 'person', 'operator', 'scoped'], when: (who) => who.kind !== 'scoped' || who.may.read },
  sent: { title: 'Sent mail', render: sentPage, for: ['account', 'operator', 'agent', 'scoped'], when: (who) => who.kind !== 'scoped' || who.may.read },
  guardrails: { title: 'Guardrails', render: guardrailsPage, for: ['account', 'operator'] },
  settings: { title: 'Agent settings', render: settingsPage, for: ['agent', 'account', 'operator', 'scoped'], when: (who) => who.kind !== 'scoped' || who.may.manage },
  operator: { title: 'Operators', render: operatorPage, for: ['operator'] },
};

const shown = (page) => page.for.includes(who.kind) && (!page.when || page.when(who));

// Who the credential belongs to: an account key (getAccountStatus answers),
// the agent key or an identity token (GET /credits answers; operators may
// pause all sending).
async function whoAmI() {
  if (api.isToken()) {
    const credits = await api.get('/credits');
    return { kind: credits.canPauseAll ? 'operator' : 'person', credits };
  }
  let status;
  try {
    status = await api.post('/getAccountStatus', {});
  } catch (e) {
    if (e.status !== 403) throw e;
    // A scoped key without the read permission, or the agent key.
    if (e.code === 'permission_missing') return { kind: 'scoped', may: await scopeOf(false) };
    const credits = await api.get('/credits');
    return { kind: 'agent', credits };
  }
  // Only the account's own key lists keys: a scoped key is refused.
  try {
    await api.get('/keys');
  } catch (e) {
    if (e.status !== 403) throw e;
    return { kind: 'scoped', status, may: await scopeOf(true) };
  }
  return { kind: 'account', status, firstRun: needsChecklist(status) };
}

// What a scoped key may do, asked without side effects: it reads when the
// account status answered; it manages when the webhook (a manage route)
// answers. Whether it may send is learnt when it sends.
async function scopeOf(read) {
  try {
    await api.get('/webhooks');
    return { read, manage: true };
  } catch (e) {
    if (e.status === 403) return { read, manage: false };
    throw e;
  }
}

let who = null;
const main = document.getElementById('main');
const nav = document.getElementById('nav');
const signOutButton = document.getElementById('signout');

function renderNav(current) {
  nav.replaceChildren(
    ...Object.entries(PAGES)
      .filter(([, page]) => shown(page))
      .map(([name, page]) =>
        h('a', { href: `#/${name}`, 'aria-current': name === current ? 'page' : undefined, text: page.title }),
      ),
  );
  nav.hidden = false;
  signOutButton.hidden = false;
}

async function route() {
  // "#/mail/thread/<id>?folder=archive": the page, its path, and (after
  // "?") the state the page reads itself.
  const address = location.hash.split('?')[0];
  const name = address.replace(/^#\//, '').split('/')[0];
  if (!api.signedIn()) {
    who = null;
    nav.hidden = true;
    signOutButton.hidden = true;
    main.replaceChildren(startPage({ onSignedIn: route }));
    document.title = 'Sign in · mailhost';
    return;
  }
  if (!who) {
    try {
      who = await whoAmI();
    } catch (e) {
      api.signOut();
      main.replaceChildren(startPage({ onSignedIn: route, error: e.message }));
      return;
    }
  }
  const fallback = Object.keys(PAGES).find((p) => shown(PAGES[p]));
  const page = PAGES[name] && shown(PAGES[name]) ? name : fallback;
  if (page !== name) {
    location.replace(`#/${page}${location.hash.replace(/^#\/[^/]*/, '')}`);
    return;
  }
  renderNav(page);
  document.title = `${PAGES[page].title} · mailhost`;
  const view = h('div', { class: 'page', 'data-page': page });
  const loading = h('p', { class: 'loading', role: 'status', text: 'Loading…' });
  main.replaceChildren(view, loading);
  keyboard.page(null);
  const arrived = navigated;
  navigated = false;
  try {
    await PAGES[page].render(view, who, { path: address.replace(/^#\/[^/]*\/?/, '').split('/').filter(Boolean) });
  } catch (e) {
    // Never a blank page: what went wrong, and a way to try again.
    if (!view.querySelector('h1')) view.prepend(h('h1', { text: PAGES[page].title }));
    view.append(failure(e, route));
  } finally {
    loading.remove();
  }
  // Arriving from the navigation, focus goes to the page's heading.
  if (arrived) {
    const heading = view.querySelector('h1');
    if (heading && !view.contains(document.activeElement)) {
      heading.tabIndex = -1;
      heading.focus();
    }
  }
}

// A route change the person asked for (not the first load).
let navigated = false;
nav.addEventListener('click', () => {
  navigated = true;
});

signOutButton.addEventListener('click', () => {
  api.signOut();
  who = null;
  location.hash = '';
  route();
});

window.addEventListener('hashchange', route);
keyboard.install();
route();
