// The shell: who is signed in, the navigation, and the page for the hash
// route (#/mail, #/domain, ...). A hash route never carries a credential.

import * as api from './api.js';
import { h } from './ui.js';
import { startPage } from './start.js';
import { domainPage } from './domain.js';
import { mailboxesPage } from './mailboxes.js';
import { mailPage } from './mail.js';
import { settingsPage } from './settings.js';
import { operatorPage } from './operator.js';
import { sentPage } from './sent.js';
import { guardrailsPage } from './guardrails.js';

const PAGES = {
  mail: { title: 'Mail', render: mailPage, for: ['account', 'person', 'operator', 'agent'] },
  domain: { title: 'Domain', render: domainPage, for: ['account', 'person', 'operator'] },
  mailboxes: { title: 'Mailboxes', render: mailboxesPage, for: ['account', 'person', 'operator'] },
  sent: { title: 'Sent mail', render: sentPage, for: ['account', 'operator', 'agent'] },
  guardrails: { title: 'Guardrails', render: guardrailsPage, for: ['account', 'operator'] },
  settings: { title: 'Agent settings', render: settingsPage, for: ['agent', 'account', 'operator'] },
  operator: { title: 'Operators', render: operatorPage, for: ['operator'] },
};

// Who the credential belongs to: an account key (getAccountStatus answers),
// the agent key or an identity token (GET /credits answers; operators may
// pause all sending).
async function whoAmI() {
  if (api.isToken()) {
    const credits = await api.get('/credits');
    return { kind: credits.canPauseAll ? 'operator' : 'person', credits };
  }
  try {
    const status = await api.post('/getAccountStatus', {});
    return { kind: 'account', status };
  } catch (e) {
    if (e.status !== 403) throw e;
    const credits = await api.get('/credits');
    return { kind: 'agent', credits };
  }
}

let who = null;
const main = document.getElementById('main');
const nav = document.getElementById('nav');
const signOutButton = document.getElementById('signout');

function renderNav(current) {
  nav.replaceChildren(
    ...Object.entries(PAGES)
      .filter(([, page]) => page.for.includes(who.kind))
      .map(([name, page]) =>
        h('a', { href: `#/${name}`, 'aria-current': name === current ? 'page' : undefined, text: page.title }),
      ),
  );
  nav.hidden = false;
  signOutButton.hidden = false;
}

async function route() {
  const name = location.hash.replace(/^#\//, '').split('/')[0];
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
  const fallback = Object.keys(PAGES).find((p) => PAGES[p].for.includes(who.kind));
  const page = PAGES[name] && PAGES[name].for.includes(who.kind) ? name : fallback;
  if (page !== name) {
    location.replace(`#/${page}`);
    return;
  }
  renderNav(page);
  document.title = `${PAGES[page].title} · mailhost`;
  const view = h('div', { class: 'page', 'data-page': page });
  main.replaceChildren(view);
  await PAGES[page].render(view, who);
}

signOutButton.addEventListener('click', () => {
  api.signOut();
  who = null;
  location.hash = '';
  route();
});

window.addEventListener('hashchange', route);
route();
