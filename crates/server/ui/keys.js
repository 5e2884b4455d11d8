// Keyboard shortcuts (F54). Ignored while typing in a field or with a modifier other than
// Shift, and while a dialog is open (its own keys apply there).

import { beacon } from './api.js';
import { withPart } from './lazy.js';
import { t } from './i18n.js';

/** Shows the list of shortcuts, loading it the first time. */
export function openShortcuts() {
  return withPart(t('part.shortcuts'), (retry) => import('./shortcuts.js' + retry), (shortcuts) => shortcuts.showShortcuts());
}

/** Listens to the keys of the reader for the whole page. */
export function installKeys(app) {
  let pendingG = 0;

  document.addEventListener('keydown', (event) => {
    if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
    const target = event.target;
    if (target && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName))) return;
    if (document.querySelector('dialog[open]')) return;
    const list = app.list;
    const key = event.key;

    if (pendingG && Date.now() - pendingG < 1500) {
      pendingG = 0;
      const targets = { a: '/all?filter=all', s: '/all?filter=starred', u: '/all?filter=unread' };
      if (targets[key]) {
        event.preventDefault();
        app.showPane('main');
        app.navigate(targets[key]);
      }
      return;
    }
    pendingG = 0;

    switch (key) {
      case 'j':
      case 'k':
        if (list) {
          event.preventDefault();
          list.move(key === 'j' ? 1 : -1);
        }
        break;
      case 'o':
      case 'Enter':
        if (list && list.selected()) {
          // Enter on a focused button already activates it; avoid toggling twice.
          if (key === 'Enter' && target && target.closest && target.closest('button, a')) return;
          event.preventDefault();
          list.toggle(list.selected().id);
        }
        break;
      case 's':
        if (list && list.selected()) list.toggleStar(list.selected().id);
        break;
      case 'm':
        if (list && list.selected()) list.toggleRead(list.selected().id);
        break;
      case 'v': {
        const item = list && list.selected();
        if (item && item.url) {
          window.open(item.url, '_blank', 'noopener,noreferrer');
          beacon('/items/' + item.id + '/click');
        }
        break;
      }
      case 'A':
        if (list && list.markAllRead) {
          event.preventDefault();
          list.markAllRead();
        }
        break;
      case 'r':
        if (list && list.reload) list.reload();
        break;
      case 'g':
        pendingG = Date.now();
        break;
      case '/':
        event.preventDefault();
        if (app.search) app.search.focus();
        break;
      case '?':
        event.preventDefault();
        openShortcuts();
        break;
      default:
        break;
    }
  });
}
