// Keyboard shortcuts, as Gmail and Fastmail have them: a page says which
// keys it answers (keyboard.page({...})); keys typed into a field are the
// field's, except Escape. "?" lists them.

import { h } from './ui.js';

const HELP = [
  ['j / k', 'Next / previous conversation'],
  ['Enter', 'Open the conversation'],
  ['e', 'Archive'],
  ['#', 'Move to trash'],
  ['r', 'Reply'],
  ['a', 'Reply to all'],
  ['f', 'Forward'],
  ['c', 'Write a new message'],
  ['/', 'Search'],
  ['Escape', 'Close: back to the list'],
  ['?', 'These shortcuts'],
];

let keys = {};

function typing(target) {
  return Boolean(target && target.closest && target.closest('input, textarea, select, [contenteditable=""], [contenteditable=true]'));
}

function onKey(event) {
  if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
  if (document.querySelector('dialog[open]') && event.key !== 'Escape') return;
  if (event.key !== 'Escape' && typing(event.target)) return;
  if (event.key === '?') {
    event.preventDefault();
    help();
    return;
  }
  const run = keys[event.key];
  if (!run) return;
  event.preventDefault();
  run(event);
}

function help() {
  const close = h('button', { type: 'button', text: 'Close' });
  const dialog = h(
    'dialog',
    { class: 'shortcuts', 'aria-labelledby': 'shortcuts-title' },
    h('h2', { id: 'shortcuts-title', text: 'Keyboard shortcuts' }),
    h('dl', { class: 'settings' }, HELP.flatMap(([k, what]) => [h('dt', {}, h('kbd', { text: k })), h('dd', { text: what })])),
    close,
  );
  close.addEventListener('click', () => dialog.close());
  dialog.addEventListener('close', () => dialog.remove());
  document.body.append(dialog);
  dialog.showModal();
  close.focus();
}

export const keyboard = {
  install() {
    document.addEventListener('keydown', onKey);
  },
  // The current page's keys (null: none).
  page(map) {
    keys = map || {};
  },
};

// Arrow keys, Home and End across a tab list (the WAI-ARIA tabs pattern):
// one tab in the Tab order, the others reached with the arrows.
export function arrowTabs(list, onChoose) {
  const tabs = () => [...list.querySelectorAll('[role=tab]')];
  const roving = () => {
    for (const t of tabs()) t.tabIndex = t.getAttribute('aria-selected') === 'true' ? 0 : -1;
    if (!tabs().some((t) => t.tabIndex === 0) && tabs()[0]) tabs()[0].tabIndex = 0;
  };
  list.addEventListener('keydown', (event) => {
    const all = tabs();
    const at = all.indexOf(document.activeElement);
    if (at < 0) return;
    const to = { ArrowRight: at + 1, ArrowDown: at + 1, ArrowLeft: at - 1, ArrowUp: at - 1, Home: 0, End: all.length - 1 }[event.key];
    if (to === undefined) return;
    event.preventDefault();
    const next = all[(to + all.length) % all.length];
    next.focus();
    onChoose(next);
  });
  return roving;
}
