// The list of keyboard shortcuts (F54), as a dialog loaded when first opened (`?`).

import { h } from './dom.js';
import { modal } from './dialogs.js';
import { t } from './i18n.js';

/** The keyboard shortcuts (F54): the keys, which stay as they are in every language, and the key of what they do. */
const SHORTCUTS = [
  ['j', 'keys.next'],
  ['k', 'keys.previous'],
  ['o / Enter', 'keys.open'],
  ['s', 'keys.star'],
  ['m', 'keys.read'],
  ['v', 'keys.original'],
  ['shift + a', 'keys.mark_all'],
  ['r', 'keys.reload'],
  ['g then a', 'keys.go_all'],
  ['g then s', 'keys.go_starred'],
  ['g then u', 'keys.go_unread'],
  ['/', 'keys.search'],
  ['?', 'keys.help'],
];

/** Shows the shortcuts (once: a second `?` while open does nothing). */
export function showShortcuts() {
  if (document.querySelector('dialog.shortcuts')) return;
  const close = h('button', { type: 'button', class: 'button' }, t('common.close'));
  // Between keys: "then" is a word of the language; "+" and "/" are signs.
  const joiner = (k) => ' ' + (k === 'then' ? t('keys.then') : k) + ' ';
  const dialog = modal('shortcuts-title',
    h('h2', { id: 'shortcuts-title' }, t('nav.shortcuts')),
    h('dl', { class: 'shortcut-list' }, SHORTCUTS.map(([keys, what]) => [h('dt', null, keys.split(' ').map((k) => (keys !== '/' && ['then', '+', '/'].includes(k) ? joiner(k) : h('kbd', null, k)))), h('dd', null, t(what))])),
    h('div', { class: 'dialog-buttons' }, close));
  dialog.classList.add('shortcuts');
  close.addEventListener('click', () => dialog.close());
  close.focus();
}
