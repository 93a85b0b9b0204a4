// Webmail: folders, the thread list (newest first, unread bold, more with the
// cursor), one mailbox or all, search, a thread (its own link:
// #/mail/thread/<id>), compose and reply below the thread; drafts for
// signed-in people; and the mail kept out of the inbox (spam, quarantine),
// each message on its own. Keys: j/k, Enter, e, #, r, a, f, c, /, Escape.
//
// The list shown (folder, search, mailbox) is in the address after "?"
// (#/mail?folder=archive, #/mail/thread/<id>?q=lunch), so Back, Escape and
// the browser's Back return to the list the thread was opened from.

import * as api from './api.js';
import { h, field, input, form, busy, shortDate } from './ui.js';
import { threadView, singleMessageView } from './message.js';
import { composeView, draftsList, senders } from './compose.js';
import { keyboard, arrowTabs } from './keyboard.js';

// The three folders, then spam and the quarantine: views of their own
// (each message read alone), not folders.
const FOLDERS = ['inbox', 'archive', 'trash', 'spam', 'quarantine'];
const KEPT_OUT = ['spam', 'quarantine'];

// The list state the address names (after "?"), and the "?..." naming one.
function stateOf(hash) {
  const params = new URLSearchParams(hash.split('?')[1] || '');
  const folder = params.get('folder');
  return { folder: FOLDERS.includes(folder) ? folder : 'inbox', query: params.get('q') || '', mailbox: params.get('mailbox') || '' };
}

function suffixOf(state) {
  const params = new URLSearchParams();
  if (state.query) params.set('q', state.query);
  else if (state.folder !== 'inbox') params.set('folder', state.folder);
  if (state.mailbox) params.set('mailbox', state.mailbox);
  const text = params.toString();
  return text ? `?${text}` : '';
}

export async function mailPage(view, who, { path } = {}) {
  const state = stateOf(location.hash);
  // Deleting for good takes the manage permission.
  const mayDelete = !(who && who.kind === 'scoped' && !who.may.manage);
  view.append(h('h1', { text: 'Mail' }));
  // A scoped key that may not read: writing is all there is.
  if (who && who.kind === 'scoped' && !who.may.read) {
    const pane = h('div', { class: 'mail-pane' });
    const write = h('button', { type: 'button', text: 'Write' });
    const open = () => pane.replaceChildren(composeView({ onDone: () => pane.replaceChildren(), onCancel: () => pane.replaceChildren() }));
    write.addEventListener('click', open);
    view.append(h('p', { class: 'hint', text: 'This key may send but not read mail.' }), h('div', { class: 'actions' }, write), pane);
    keyboard.page({ c: open });
    return;
  }
  const pane = h('div', { class: 'mail-pane' });
  const tabs = h('div', { class: 'folders', role: 'tablist', 'aria-label': 'Folders' });
  const search = input({ type: 'search', name: 'q', placeholder: 'Search mail', value: state.query });
  const writeButton = h('button', { type: 'button', text: 'Write' });
  const mailboxChoice = h('select', { name: 'mailbox' }, h('option', { value: '', text: 'All mailboxes' }));
  // The agent key has no mailboxes of its own to list.
  const own = who && who.kind === 'agent' ? [] : await senders();
  for (const a of own) mailboxChoice.append(h('option', { value: a, text: a, selected: a === state.mailbox }));
  mailboxChoice.addEventListener('change', () => {
    state.mailbox = mailboxChoice.value;
    showList();
  });

  // The pane shows what was asked for last: a view whose answer arrives after
  // a newer request was made (a slow list after a click on another folder)
  // is dropped, never shown over the newer one.
  let shown = 0;
  const show = async (build) => {
    const mine = ++shown;
    pane.replaceChildren(h('p', { class: 'loading', role: 'status', text: 'Loading…' }));
    try {
      const parts = await build();
      if (mine === shown) pane.replaceChildren(...parts);
      return mine === shown;
    } catch (e) {
      if (mine === shown) pane.replaceChildren(h('p', { class: 'error', role: 'alert', text: e.message }));
      return false;
    }
  };
  const listKeys = () =>
    keyboard.page({
      j: () => step(pane, 1),
      k: () => step(pane, -1),
      c: () => openCompose({}),
      '/': () => search.focus(),
      e: () => actOnSelected(pane, { folder: 'archive' }, showList),
      '#': () => actOnSelected(pane, { folder: 'trash' }, showList),
    });
  let roving = () => {};
  // `notice`: a sentence shown above the list (a new message sent).
  const showList = async ({ notice } = {}) => {
    const at = `#/mail${suffixOf(state)}`;
    if (location.hash !== at) history.pushState(null, '', at);
    for (const tab of tabs.children) tab.setAttribute('aria-selected', String(tab.dataset.folder === state.folder && !state.query));
    roving();
    const { folder, query, mailbox } = state;
    const suffix = suffixOf(state);
    listKeys();
    const said = typeof notice === 'string' ? [h('p', { class: 'notice', role: 'status', text: notice })] : [];
    await show(async () => {
      if (query) return [...said, await searchList(query, mailbox, own, openMessage, suffix)];
      if (KEPT_OUT.includes(folder)) return [...said, await keptOutList(folder, openMessage, mailbox)];
      const list = await threadList(folder, mailbox, own, suffix);
      return api.isToken() && folder === 'inbox' ? [...said, list, await draftsList(openCompose)] : [...said, list];
    });
  };
  // A thread: its messages, and a reply written below them.
  const openThread = async (id, { push = true } = {}) => {
    const at = `#/mail/thread/${id}${suffixOf(state)}`;
    if (push && location.hash !== at) history.pushState(null, '', at);
    let thread = null;
    const onReply = (t, last, mode) => {
      const slot = thread.querySelector('.reply-slot');
      slot.replaceChildren(composeView({
        reply: { thread: t, last, mode },
        onDone: async () => openThread(id, { push: false }),
        onCancel: () => {
          slot.replaceChildren();
          thread.querySelector('h2').focus();
        },
      }));
      slot.querySelector('textarea')?.focus();
    };
    const opened = await show(async () => {
      thread = await threadView(id, { onBack: showList, onReply, own, mayDelete });
      return [thread];
    });
    if (!opened) return;
    thread.querySelector('h2').focus();
    keyboard.page({
      // Escape closes the reply being written, then the thread.
      Escape: () => {
        const slot = thread.querySelector('.reply-slot');
        if (slot.firstChild) {
          slot.replaceChildren();
          thread.querySelector('h2').focus();
        } else showList();
      },
      r: () => thread.querySelector('[data-action=reply]')?.click(),
      a: () => (thread.querySelector('[data-action=reply-all]') || thread.querySelector('[data-action=reply]'))?.click(),
      f: () => thread.querySelector('[data-action=forward]')?.click(),
      e: () => thread.querySelector('[data-action=archive]')?.click(),
      '#': () => thread.querySelector('[data-action=trash]')?.click(),
      c: () => openCompose({}),
    });
  };
  const openMessage = async (id) => {
    if (await show(async () => [await singleMessageView(id, { onBack: showList })])) pane.querySelector('h2').focus();
    keyboard.page({ Escape: showList });
  };
  const openCompose = (options) => {
    shown++;
    // A new message on no thread of this mailbox's: back to the list, saying it went.
    const sent = 'Sent. Sent mail shows what happens to it, recipient by recipient.';
    const onDone = async (threadId, { waiting } = {}) => (threadId ? openThread(threadId) : showList(waiting ? {} : { notice: sent }));
    pane.replaceChildren(composeView({ ...options, onDone, onCancel: showList }));
    pane.querySelector('input, textarea, select')?.focus();
    keyboard.page({ Escape: showList });
  };

  for (const folder of FOLDERS) {
    const tab = h('button', { type: 'button', role: 'tab', class: 'tab', 'data-folder': folder, text: folder[0].toUpperCase() + folder.slice(1) });
    tab.addEventListener('click', () => {
      state.folder = folder;
      state.query = '';
      search.value = '';
      showList();
    });
    tabs.append(tab);
  }
  roving = arrowTabs(tabs, (tab) => tab.click());
  writeButton.addEventListener('click', () => openCompose({}));
  const searchForm = form({ role: 'search', class: 'search' }, [field('Search', search), h('button', { type: 'submit', text: 'Search' })], async () => {
    state.query = search.value.trim();
    await showList();
  });
  const bar = h('div', { class: 'mail-bar' }, tabs, searchForm, writeButton);
  if (own.length > 1) bar.append(field('Mailbox', mailboxChoice));
  view.append(bar, pane);
  if (path && path[0] === 'thread' && path[1]) await openThread(path[1], { push: false });
  else await showList();
}

// j and k: the next or previous row's link takes the focus.
function step(pane, by) {
  const links = [...pane.querySelectorAll('ul.threads li a.open')];
  if (!links.length) return;
  const at = links.indexOf(document.activeElement);
  const next = links[Math.max(0, Math.min(links.length - 1, at < 0 ? (by > 0 ? 0 : links.length - 1) : at + by))];
  next.focus();
}

// e and # on the list: the focused row's thread, archived or trashed.
async function actOnSelected(pane, body, after) {
  const row = document.activeElement && document.activeElement.closest && document.activeElement.closest('li[data-thread]');
  if (!row || !pane.contains(row)) return;
  await api.post('/inbox', { thread: row.dataset.thread, ...body });
  await after();
}

// "Pal" from "Pal <pal@partner.example>" or from the names the thread (or
// message) carries by address, the address when it has none; the mailbox's
// own addresses left out (they are in every row).
function people(list, own, given = {}) {
  const mine = new Set(own.map((a) => a.toLowerCase()));
  const names = [];
  for (const who of list) {
    const match = /^\s*"?([^"<]*?)"?\s*<([^>]+)>\s*$/.exec(who);
    const address = (match ? match[2] : who).trim().toLowerCase();
    if (mine.has(address)) continue;
    const name = match && match[1].trim() ? match[1].trim() : given[address] || given[(match ? match[2] : who).trim()] || address;
    if (!names.includes(name)) names.push(name);
  }
  return names.length ? names.join(', ') : 'me';
}

function row(item, own, suffix = '') {
  const unread = item.unreadCount > 0 || item.unread === true;
  // A thread's names by address; a message's: its sender's and the others'.
  const given = { ...(item.names || {}), ...(item.fromName ? { [item.from]: item.fromName } : {}) };
  const who = people(item.participants || [item.from], own, given);
  const count = item.messageCount > 1 ? ` (${item.messageCount})` : '';
  const at = item.lastActivity || item.date || item.ingestedAt;
  const link = h(
    'a',
    { href: `#/mail/thread/${item.threadId}${suffix}`, class: 'open' },
    h('span', { class: 'who', text: `${who}${count}` }),
    h('span', { class: 'subject', text: item.subject || '(no subject)' }),
    item.preview ? h('span', { class: 'preview', text: item.preview }) : null,
  );
  return h(
    'li',
    { class: unread ? 'unread' : '', 'data-thread': item.threadId },
    link,
    h('time', { datetime: at || '', title: at ? new Date(at).toLocaleString() : '', text: shortDate(at) }),
    unread ? h('span', { class: 'badge', text: item.unreadCount ? `${item.unreadCount} unread` : 'unread' }) : null,
  );
}

// A list read a page at a time: `load(cursor)` answers `{items, nextCursor}`,
// and "More" asks for the next page below the ones shown.
async function pagedList({ label, hint, load, render, empty }) {
  const list = h('ul', { class: 'threads', 'aria-label': label });
  const wrap = h('div', {}, hint ? h('p', { class: 'hint', text: hint }) : null, list);
  const more = async (cursor) => {
    const page = await load(cursor);
    for (const item of page.items) list.append(render(item));
    if (!list.children.length) list.append(h('li', { class: 'empty', text: empty }));
    if (page.nextCursor) {
      const button = h('button', { type: 'button', class: 'quiet more', text: 'More' });
      button.addEventListener('click', () => busy(button, async () => {
        await more(page.nextCursor);
        button.remove();
      }));
      wrap.append(button);
    }
  };
  await more();
  return wrap;
}

function threadList(folder, mailbox, own, suffix) {
  return pagedList({
    label: `Threads in ${folder}`,
    empty: `Nothing in ${folder}.`,
    load: async (cursor) => {
      const res = await api.get('/inbox', { view: 'threads', folder, mailbox, limit: 25, cursor });
      return { items: res.threads, nextCursor: res.nextCursor };
    },
    render: (t) => row(t, own, suffix),
  });
}

// The full search (GET /search): words in any order, phrases and Gmail's
// operators (from:, has:attachment, in:trash...), each hit with the words
// where it matched. Spam and quarantined hits have no thread: read alone.
function searchList(query, mailbox, own, open, suffix) {
  return pagedList({
    label: `Search results for ${query}`,
    hint: 'Words match in any order. Try from:, to:, subject:, has:attachment, is:unread or in:trash.',
    empty: 'No mail matches.',
    load: async (cursor) => {
      const res = await api.get('/search', { q: query, mailbox, limit: 25, cursor });
      return { items: res.messages, nextCursor: res.nextCursor };
    },
    render: (m) => (m.quarantine ? keptOutRow(m, open) : row({ ...m, preview: m.snippet || m.preview }, own, suffix)),
  });
}

const KEPT = {
  spam: {
    label: 'Spam',
    hint: 'Mail judged to be spam, or that you reported. Kept 30 days; "Not spam" moves a message back to the inbox.',
    empty: 'No spam.',
  },
  quarantine: {
    label: 'Mail kept out of the inbox',
    hint: 'Mail that failed its sender\'s DMARC policy or that your receive lists refuse. Kept 30 days; it fires no webhook.',
    empty: 'Nothing kept out of the inbox.',
  },
};

// Received mail kept out of the inbox (spam; spoofed, or refused by the
// receive lists), newest first, for 30 days; each is read on its own.
function keptOutList(kind, open, mailbox) {
  return pagedList({
    ...KEPT[kind],
    load: async (cursor) => {
      const res = await api.get('/inbox', { view: kind, mailbox, limit: 25, cursor });
      return { items: res.messages, nextCursor: res.nextCursor };
    },
    render: (m) => keptOutRow(m, open),
  });
}

function keptOutRow(m, open) {
  const link = h('a', { href: '#/mail', class: 'open' }, h('span', { class: 'who', text: m.fromName ? `${m.fromName} <${m.from}>` : m.from }), h('span', { class: 'subject', text: m.subject || '(no subject)' }));
  link.addEventListener('click', (e) => {
    e.preventDefault();
    open(m.id);
  });
  const reason = ((m.quarantine && m.quarantine.reason) || '').replace(/_/g, ' ');
  const at = m.ingestedAt || m.date;
  return h('li', { 'data-message': m.id }, link, h('span', { class: 'preview', text: `Kept out: ${reason}` }), h('time', { datetime: at || '', text: shortDate(at) }));
}
