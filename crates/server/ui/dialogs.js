// Messages and dialogs: toasts for outcomes and errors (F55), inline error blocks and a
// confirmation dialog. Native <dialog> elements give focus trapping and Escape for free. The
// subscribe dialog (subscribe.js) and the shortcuts (shortcuts.js) load when first opened.

import { categoryName } from './api.js';
import { h, icon } from './dom.js';
import { t } from './i18n.js';

/**
 * Shows a short message. `kind` 'error' makes it an alert that stays until dismissed;
 * others disappear after a few seconds (`duration` ms). A toast with a `key` replaces the
 * one with the same key, so a repeated notice never stacks. `button` ({text, onclick}) adds
 * an action, such as Undo.
 */
export function toast({ title, message, action, kind, link, key, duration, button }) {
  const box = document.getElementById('toasts');
  const close = h('button', { type: 'button', class: 'icon-button toast-close', 'aria-label': t('common.dismiss') }, icon('close'));
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
    title: what ? t('error.what_category', { what, category: categoryName(category) }) : categoryName(category),
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
    const cancel = h('button', { type: 'button', class: 'button' }, t('common.cancel'));
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
