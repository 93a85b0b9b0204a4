// Webmail: folders, the thread list (newest first, unread bold, more with the
// cursor), search, a thread, compose and reply; drafts for signed-in people;
// and the mail kept out of the inbox (quarantine), each message on its own.

import * as api from './api.js';
import { h, field, input, form, busy, when } from './ui.js';
import { threadView, singleMessageView } from './message.js';
import { composeView, draftsList } from './compose.js';

// The three folders, then the quarantine: a view of its own, not a folder.
const FOLDERS = ['inbox', 'archive', 'trash', 'quarantine'];

export async function mailPage(view) {
  const state = { folder: 'inbox', query: '' };
  const pane = h('div', { class: 'mail-pane' });
  const tabs = h('div', { class: 'folders', role: 'tablist', 'aria-label': 'Folders' });
  const search = input({ type: 'search', name: 'q', placeholder: 'Search mail' });
  const writeButton = h('button', { type: 'button', text: 'Write' });

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
  const showList = async () => {
    for (const tab of tabs.children) tab.setAttribute('aria-selected', String(tab.dataset.folder === state.folder && !state.query));
    const { folder, query } = state;
    await show(async () => {
      if (query) return [await searchList(query, openThread)];
      if (folder === 'quarantine') return [await quarantineList(openMessage)];
      const list = await threadList(folder, openThread);
      return api.isToken() && folder === 'inbox' ? [list, await draftsList(openCompose)] : [list];
    });
  };
  const openThread = async (id) => {
    const onReply = (t, last) => openCompose({ reply: { thread: t, last } });
    if (await show(async () => [await threadView(id, { onBack: showList, onReply })])) pane.querySelector('h2').focus?.();
  };
  const openMessage = async (id) => {
    if (await show(async () => [await singleMessageView(id, { onBack: showList })])) pane.querySelector('h2').focus?.();
  };
  const openCompose = (options) => {
    shown++;
    pane.replaceChildren(composeView({ ...options, onDone: async (threadId) => (threadId ? openThread(threadId) : showList()), onCancel: showList }));
    pane.querySelector('input, textarea')?.focus();
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
  writeButton.addEventListener('click', () => openCompose({}));
  const searchForm = form({ role: 'search', class: 'search' }, [field('Search', search), h('button', { type: 'submit', text: 'Search' })], async () => {
    state.query = search.value.trim();
    await showList();
  });
  view.append(h('h1', { text: 'Mail' }), h('div', { class: 'mail-bar' }, tabs, searchForm, writeButton), pane);
  await showList();
}

function row(item, open) {
  const unread = item.unreadCount > 0 || item.unread === true;
  const link = h('a', { href: `#/mail`, class: 'open' }, h('span', { class: 'subject', text: item.subject || '(no subject)' }));
  link.addEventListener('click', (e) => {
    e.preventDefault();
    open(item.threadId);
  });
  const who = item.participants ? item.participants.join(', ') : item.from;
  const count = item.messageCount ? ` (${item.messageCount})` : '';
  return h(
    'li',
    { class: unread ? 'unread' : '', 'data-thread': item.threadId },
    link,
    h('span', { class: 'who', text: `${who}${count}` }),
    item.preview ? h('span', { class: 'preview', text: item.preview }) : null,
    h('time', { text: when(item.lastActivity || item.date || item.ingestedAt) }),
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

function threadList(folder, open) {
  return pagedList({
    label: `Threads in ${folder}`,
    empty: `Nothing in ${folder}.`,
    load: async (cursor) => {
      const res = await api.get('/inbox', { view: 'threads', folder, limit: 25, cursor });
      return { items: res.threads, nextCursor: res.nextCursor };
    },
    render: (t) => row(t, open),
  });
}

async function searchList(query, open) {
  const res = await api.get('/inbox', { q: query, limit: 50 });
  const list = h('ul', { class: 'threads', 'aria-label': `Search results for ${query}` });
  for (const m of res.messages) list.append(row(m, open));
  if (!res.messages.length) list.append(h('li', { class: 'empty', text: 'No mail matches.' }));
  return list;
}

// Received mail kept out of the inbox (spoofed, or refused by the receive
// lists), newest first, for 30 days; each is read on its own.
function quarantineList(open) {
  return pagedList({
    label: 'Mail kept out of the inbox',
    hint: 'Mail that failed its sender\'s DMARC policy or that your receive lists refuse. Kept 30 days; it fires no webhook.',
    empty: 'Nothing kept out of the inbox.',
    load: async (cursor) => {
      const res = await api.get('/inbox', { view: 'quarantine', limit: 25, cursor });
      return { items: res.messages, nextCursor: res.nextCursor };
    },
    render: (m) => {
      const link = h('a', { href: '#/mail', class: 'open' }, h('span', { class: 'subject', text: m.subject || '(no subject)' }));
      link.addEventListener('click', (e) => {
        e.preventDefault();
        open(m.id);
      });
      const reason = ((m.quarantine && m.quarantine.reason) || '').replace(/_/g, ' ');
      return h('li', { 'data-message': m.id }, link, h('span', { class: 'who', text: m.from }), h('span', { class: 'preview', text: `Kept out: ${reason}` }), h('time', { text: when(m.ingestedAt || m.date) }));
    },
  });
}
