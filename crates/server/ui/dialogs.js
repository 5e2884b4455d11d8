// Messages and dialogs: toasts for outcomes and errors (F55), a confirmation dialog, the
// subscribe dialog (F53) and the list of keyboard shortcuts (F54). Native <dialog> elements
// give focus trapping and Escape for free.

import { app } from './state.js';
import { api, categoryName } from './api.js';
import { h, icon, replace } from './dom.js';

/**
 * Shows a short message. `kind` 'error' makes it an alert that stays until dismissed;
 * others disappear after a few seconds (`duration` ms). A toast with a `key` replaces the
 * one with the same key, so a repeated notice never stacks. `button` ({text, onclick}) adds
 * an action, such as Undo.
 */
export function toast({ title, message, action, kind, link, key, duration, button }) {
  const box = document.getElementById('toasts');
  const close = h('button', { type: 'button', class: 'icon-button toast-close', 'aria-label': 'Dismiss' }, icon('close'));
  const el = h('div', { class: 'toast' + (kind === 'error' ? ' toast-error' : ''), role: kind === 'error' ? 'alert' : null, dataset: key ? { key } : {} },
    h('div', { class: 'toast-text' },
      title ? h('strong', { class: 'toast-title' }, title) : null,
      message ? h('span', { class: 'toast-message' }, message) : null,
      action ? h('span', { class: 'toast-action' }, action) : null,
      link ? h('a', { href: link.href, 'data-link': '' }, link.text) : null),
    button ? h('button', { type: 'button', class: 'button toast-button', onclick: () => { el.remove(); button.onclick(); } }, button.text) : null,
    close);
  close.addEventListener('click', () => el.remove());
  const same = key ? box.querySelector('.toast[data-key="' + key + '"]') : null;
  if (same) same.replaceWith(el);
  else box.appendChild(el);
  while (box.children.length > 4) box.firstChild.remove();
  setTimeout(() => el.remove(), duration || (kind === 'error' ? 12000 : 4000));
  return el;
}

/** Shows a failed action with the category and what to do, from the API's error body. */
export function showError(failure, what) {
  const category = failure.category || 'system';
  toast({
    title: (what ? what + ' — ' : '') + categoryName(category),
    message: failure.message,
    action: failure.action,
    kind: 'error',
  });
}

/** The block an inline form shows on failure. */
export function errorBlock(failure) {
  return h('div', { class: 'inline-error', role: 'alert' },
    h('strong', { class: 'error-category', dataset: { category: failure.category || 'system' } }, categoryName(failure.category)),
    h('p', { class: 'error-message' }, failure.message),
    failure.action ? h('p', { class: 'error-action' }, failure.action) : null);
}

/** Opens a modal dialog labelled by the element `labelId`; it is removed once closed. */
export function modal(labelId, ...children) {
  const dialog = h('dialog', { class: 'dialog', 'aria-labelledby': labelId }, ...children);
  dialog.addEventListener('close', () => dialog.remove());
  document.body.appendChild(dialog);
  dialog.showModal();
  return dialog;
}

/** Asks for a confirmation; resolves to true when confirmed. */
export function confirmDialog(title, message, confirmLabel, danger = true) {
  return new Promise((resolve) => {
    let answer = false;
    const confirm = h('button', { type: 'button', class: 'button ' + (danger ? 'danger' : 'primary') }, confirmLabel);
    const cancel = h('button', { type: 'button', class: 'button' }, 'Cancel');
    const dialog = modal('confirm-title',
      h('h2', { id: 'confirm-title' }, title),
      h('p', null, message),
      h('div', { class: 'dialog-buttons' }, cancel, confirm));
    confirm.addEventListener('click', () => { answer = true; dialog.close(); });
    cancel.addEventListener('click', () => dialog.close());
    dialog.addEventListener('close', () => resolve(answer));
    cancel.focus();
  });
}

/**
 * The subscribe dialog: a page or feed URL, a group, discovery progress, errors. With
 * `onScrape`, it offers to scrape a page without a feed instead (called with the address).
 */
export function openSubscribe({ onScrape } = {}) {
  const input = h('input', { id: 'subscribe-url', name: 'url', type: 'text', inputmode: 'url', autocomplete: 'url', required: true, placeholder: 'https://example.com or https://example.com/feed.xml', spellcheck: 'false' });
  const groups = [...app.groups].sort((a, b) => (a.position || 0) - (b.position || 0));
  const group = groups.length
    ? h('select', { id: 'subscribe-group', name: 'group' }, groups.map((g) => h('option', { value: g.id, selected: g.is_default }, g.name)))
    : null;
  const status = h('div', { class: 'dialog-status', 'aria-live': 'polite' });
  const submit = h('button', { type: 'submit', class: 'button primary' }, 'Subscribe');
  const cancel = h('button', { type: 'button', class: 'button' }, 'Cancel');
  const form = h('form', { class: 'form', novalidate: true },
    h('label', { for: 'subscribe-url' }, 'Address of a site or of its feed'),
    input,
    h('p', { class: 'hint' }, 'A page is enough: tidings looks for the feed it links to, then at the usual places (/feed, /rss, /atom.xml…).'),
    group ? [h('label', { for: 'subscribe-group' }, 'Group'), group] : null,
    status,
    onScrape ? h('p', { class: 'hint' }, 'No feed? ', h('button', { type: 'button', class: 'link-button', id: 'scrape-instead', onclick: () => { dialog.close(); onScrape(input.value.trim()); } }, 'Scrape the page instead…')) : null,
    h('div', { class: 'dialog-buttons' }, cancel, submit));
  const dialog = modal('subscribe-title', h('h2', { id: 'subscribe-title' }, 'Subscribe'), form);
  cancel.addEventListener('click', () => dialog.close());
  input.focus();
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const url = input.value.trim();
    if (!url) {
      replace(status, errorBlock({ category: 'validation', message: 'The address is empty.', action: 'Type the address of a site or of its feed.' }));
      input.focus();
      return;
    }
    submit.disabled = true;
    input.setAttribute('aria-invalid', 'false');
    replace(status, h('p', { class: 'progress-line' }, h('span', { class: 'spinner', 'aria-hidden': 'true' }),
      'Looking for a feed at ' + url + ' and fetching it… this can take a few seconds.'));
    const body = { url };
    if (group) body.group_id = Number(group.value);
    try {
      const created = await api('POST', '/subscriptions', body);
      const sub = created.subscription;
      dialog.close();
      await app.reloadFeeds();
      toast({ title: 'Subscribed', message: sub.title + (sub.unread_count ? ': ' + sub.unread_count + (sub.unread_count === 1 ? ' item' : ' items') + ' to read.' : '.'), action: created.notice || null });
      app.showPane('main');
      app.navigate('/feeds/' + sub.feed_id + '?filter=all');
    } catch (e) {
      submit.disabled = false;
      input.setAttribute('aria-invalid', 'true');
      replace(status, errorBlock(e));
      input.focus();
    }
  });
}

/** The keyboard shortcuts, as a dialog (F54). */
export const SHORTCUTS = [
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
