// The Bookmarks view, loaded when first opened: saved copies of items, which outlive the
// items and their feeds.

import { app } from './state.js';
import { api, query } from './api.js';
import { h, icon, replace, shortDate } from './dom.js';
import { confirmDialog, showError } from './dialogs.js';
import { searchShown } from './search.js';
import { t } from './i18n.js';

function errorBlockText(e) {
  return h('p', { class: 'inline-error', role: 'alert' }, e.message + ' ' + (e.action || ''));
}

/** The Bookmarks view: saved copies of items, which outlive the items and their feeds. */
export class BookmarkList {
  constructor(root, route) {
    this.root = root;
    this.route = route;
    this.items = [];
    this.selectedIndex = -1;
    this.expandedId = null;
    this.render();
  }

  sameView() {
    return false;
  }

  destroy() {}

  title() {
    return t('nav.bookmarks');
  }

  async render() {
    this.listEl = h('ul', { class: 'items', 'aria-label': t('nav.bookmarks') });
    replace(this.root,
      h('div', { class: 'list-header' },
        h('div', { class: 'list-title-row' },
          h('a', { class: 'icon-button only-phone', href: '#feeds', 'aria-label': t('list.back'), onclick: (e) => { e.preventDefault(); app.showPane('feeds'); } }, icon('back')),
          h('h1', { class: 'list-title', id: 'list-title' }, t('nav.bookmarks')))),
      this.listEl);
    let data;
    try {
      data = await api('GET', '/bookmarks' + query({ q: this.route.q }));
    } catch (e) {
      this.listEl.replaceWith(h('div', { class: 'inline-error', role: 'alert' }, e.message + ' ' + (e.action || '')));
      return;
    }
    this.items = (data && data.bookmarks) || [];
    searchShown(this.route.q);
    if (!this.items.length && this.route.q) {
      this.listEl.replaceWith(h('p', { class: 'empty' }, t('bookmarks.no_match', { q: this.route.q })));
      return;
    }
    if (!this.items.length) {
      this.listEl.replaceWith(h('p', { class: 'empty' }, t('bookmarks.none')));
      return;
    }
    for (const b of this.items) {
      const bodyId = 'bookmark-body-' + b.id;
      const body = h('div', { class: 'item-body', id: bodyId, hidden: true });
      const toggle = h('button', { type: 'button', class: 'item-toggle', 'aria-expanded': 'false', 'aria-controls': bodyId },
        h('span', { class: 'item-text' },
          // The item's language (issue 37), for fonts, hyphenation and screen readers.
          h('span', { class: 'item-title', lang: b.language }, b.title || t('item.untitled')),
          h('span', { class: 'item-meta' }, (b.feed_title || '') + (b.published_at ? ' · ' + shortDate(b.published_at) : ''))));
      const li = h('li', { class: 'item is-read', dataset: { id: b.id } },
        h('article', null, h('div', { class: 'item-head' }, toggle,
          h('button', { type: 'button', class: 'icon-button', 'aria-label': t('bookmarks.delete'), title: t('bookmarks.delete'), onclick: () => this.remove(b, li) }, icon('close'))),
        body));
      toggle.addEventListener('click', () => this.toggle(b, li));
      this.listEl.appendChild(li);
    }
    if (this.route.item) {
      const b = this.items.find((x) => x.id === this.route.item);
      if (b) this.toggle(b, this.listEl.querySelector('li[data-id="' + b.id + '"]'));
    }
  }

  toggle(b, li) {
    const open = this.listEl.querySelector('li.expanded');
    if (open && open !== li) {
      open.classList.remove('expanded');
      open.querySelector('.item-toggle').setAttribute('aria-expanded', 'false');
      open.querySelector('.item-body').hidden = true;
    }
    const body = li.querySelector('.item-body');
    const opening = body.hidden;
    li.classList.toggle('expanded', opening);
    li.querySelector('.item-toggle').setAttribute('aria-expanded', opening ? 'true' : 'false');
    body.hidden = !opening;
    this.expandedId = opening ? b.id : null;
    this.selectedIndex = this.items.indexOf(b);
    if (opening) this.fill(b, body);
    history.replaceState(null, '', '/bookmarks' + (opening ? '?item=' + b.id : ''));
  }

  /** Shows a bookmark's saved copy, fetched on first opening (the list omits content). */
  async fill(b, body) {
    if (b.content === undefined) {
      try {
        const data = await api('GET', '/bookmarks/' + b.id);
        b.content = (data.bookmark || data).content || '';
      } catch (e) {
        replace(body, errorBlockText(e));
        return;
      }
    }
    {
      const content = h('div', { class: 'item-content', lang: b.language });
      content.innerHTML = b.content || '';
      for (const link of content.querySelectorAll('a[href]')) {
        link.target = '_blank';
        link.rel = 'noopener noreferrer';
      }
      replace(body, content, h('div', { class: 'item-tools' },
        b.url ? h('a', { class: 'button', href: b.url, target: '_blank', rel: 'noopener noreferrer' }, icon('external'), t('item.open_original')) : null));
    }
  }

  async remove(b, li) {
    if (!(await confirmDialog(t('bookmarks.delete_title'), t('bookmarks.delete_message', { title: b.title || t('bookmarks.this_item') }), t('bookmarks.delete')))) return;
    try {
      await api('DELETE', '/bookmarks/' + b.id);
      li.remove();
      this.items = this.items.filter((x) => x !== b);
    } catch (e) {
      showError(e, t('bookmarks.delete_failed'));
    }
  }

  move(step) {
    const index = Math.min(Math.max(this.selectedIndex + step, 0), this.items.length - 1);
    const b = this.items[index];
    if (!b) return;
    this.selectedIndex = index;
    const li = this.listEl.querySelector('li[data-id="' + b.id + '"]');
    li.querySelector('.item-toggle').focus();
    if (this.expandedId !== null) this.toggle(b, li);
  }

  selected() {
    return null;
  }
}
