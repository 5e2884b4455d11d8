// The list of keyboard shortcuts (F54), as a dialog loaded when first opened (`?`).

import { h } from './dom.js';
import { modal } from './dialogs.js';

/** The keyboard shortcuts, as a dialog (F54). */
const SHORTCUTS = [
  ['j', 'Next item'],
  ['k', 'Previous item'],
  ['o / Enter', 'Open or close the selected item'],
  ['s', 'Star or unstar'],
  ['m', 'Mark read or unread'],
  ['v', 'Open the original in a new tab'],
  ['shift + a', 'Mark all read in this view'],
  ['r', 'Reload the list'],
  ['g then a', 'Go to all items'],
  ['g then s', 'Go to starred items'],
  ['g then u', 'Go to unread items'],
  ['/', 'Search'],
  ['?', 'Show these shortcuts'],
];

/** Shows the shortcuts (once: a second `?` while open does nothing). */
export function showShortcuts() {
  if (document.querySelector('dialog.shortcuts')) return;
  const close = h('button', { type: 'button', class: 'button' }, 'Close');
  const dialog = modal('shortcuts-title',
    h('h2', { id: 'shortcuts-title' }, 'Keyboard shortcuts'),
    h('dl', { class: 'shortcut-list' }, SHORTCUTS.map(([keys, what]) => [h('dt', null, keys.split(' ').map((k) => (keys !== '/' && ['then', '+', '/'].includes(k) ? ' ' + k + ' ' : h('kbd', null, k)))), h('dd', null, what)])),
    h('div', { class: 'dialog-buttons' }, close));
  dialog.classList.add('shortcuts');
  close.addEventListener('click', () => dialog.close());
  close.focus();
}
