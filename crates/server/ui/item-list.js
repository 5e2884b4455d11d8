// The right pane's item list (F51, F52): a feed, a group, a tag, the hot list or everything,
// with the all/unread/starred filter, infinite scroll, exclusive expand, read and star state,
// and j/k. The class holds the list's state and its selection; its other methods come in
// named pieces, each a module: the frame (list-layout.js), loading (list-loading.js), the
// opened item (item-open.js) and the items' state (item-state.js).

import { app } from './state.js';
import { beacon, query } from './api.js';
import { tagPath } from './sidebar.js';
import { listLayout } from './list-layout.js';
import { listLoading } from './list-loading.js';
import { openedItem } from './item-open.js';
import { itemState } from './item-state.js';
import { t } from './i18n.js';
import { later } from './lazy.js';

/** The right pane for a feed, a group or everything, with the all/unread/starred filter. */
export class ItemList {
  constructor(root, route) {
    this.root = root;
    this.route = { ...route };
    this.items = [];
    this.byId = new Map();
    this.nextCursor = null;
    this.hasMore = true;
    this.loading = false;
    this.expandedId = null;
    this.selectedIndex = -1;
    this.loadedAt = Date.now();
    this.destroyed = false;
    this.detailCache = new Map();
    this.build();
    this.load();
    this.watchScroll();
  }

  /** Whether `route` shows the same listing (only the expanded item may differ). */
  sameView(route) {
    return route.name === 'items' && route.feedId === this.route.feedId && route.groupId === this.route.groupId
      && (route.tag || null) === (this.route.tag || null)
      && (route.hot || null) === (this.route.hot || null)
      && (route.filter || app.prefs.default_view || 'unread') === this.route.filter
      && (route.q || '') === (this.route.q || '');
  }

  /** Follows a URL change within the same listing (back/forward between items). */
  applyRoute(route) {
    if (route.item && route.item !== this.expandedId && this.byId.has(route.item)) this.expand(route.item, { fromRoute: true });
    else if (!route.item && this.expandedId) this.collapse();
  }

  destroy() {
    this.destroyed = true;
    if (this.observer) this.observer.disconnect();
    if (this.unwatch) this.unwatch();
  }

  /** Marks items read as they are scrolled past, if asked (habits.js). */
  watchScroll() {
    if (!app.prefs.mark_read_on_scroll) return;
    later('habits', (retry) => import('./habits.js' + retry)).then((m) => {
      if (!this.destroyed) this.unwatch = m.watchScroll(this);
    }).catch(() => {});
  }

  subscription() {
    return this.route.feedId ? app.subscriptionByFeed(this.route.feedId) : null;
  }

  title() {
    if (this.route.q) return t('list.search_title', { q: this.route.q });
    if (this.route.feedId) {
      const sub = this.subscription();
      return sub ? sub.title : t('list.feed');
    }
    if (this.route.groupId) {
      const group = app.groups.find((g) => g.id === this.route.groupId);
      return group ? group.name : t('list.group');
    }
    if (this.route.tag) return t('list.tag_title', { tag: this.route.tag });
    if (this.route.hot) return t('view.hot');
    return this.route.filter === 'starred' ? t('view.starred') : t('view.all');
  }

  basePath() {
    if (this.route.feedId) return '/feeds/' + this.route.feedId;
    if (this.route.groupId) return '/groups/' + this.route.groupId;
    if (this.route.tag) return tagPath(this.route.tag);
    if (this.route.hot) return '/hot';
    return '/all';
  }

  urlFor(filter, item) {
    return this.basePath() + query({ window: this.route.hot, filter, q: this.route.q, item });
  }

  liOf(id) {
    return this.listEl.querySelector('li[data-id="' + id + '"]');
  }

  onClick(event) {
    const target = event.target.closest('[data-action]');
    if (!target) return;
    const li = target.closest('li.item');
    const id = Number(li.dataset.id);
    const index = this.items.findIndex((i) => i.id === id);
    if (index >= 0) this.select(index, { focus: false });
    switch (target.dataset.action) {
      case 'toggle': this.toggle(id); break;
      case 'star': this.toggleStar(id); break;
      case 'read': this.toggleRead(id); break;
      case 'bookmark': this.bookmark(id); break;
      case 'full-text': this.switchFullText(id); break;
      case 'load-full-text': this.loadFullText(id, target); break;
      case 'summarize': this.summarize(id, target); break;
      // The link opens as usual; the click is counted beside it (F45).
      case 'original': beacon('/items/' + id + '/click'); break;
      default: break;
    }
  }

  markSelected() {
    const previous = this.listEl.querySelector('li.selected');
    if (previous) previous.classList.remove('selected');
    const item = this.items[this.selectedIndex];
    if (item) {
      const li = this.liOf(item.id);
      if (li) li.classList.add('selected');
    }
  }

  select(index, options = {}) {
    if (index < 0 || index >= this.items.length) return;
    this.selectedIndex = index;
    this.markSelected();
    const li = this.liOf(this.items[index].id);
    if (li && options.focus !== false) {
      li.querySelector('.item-toggle').focus({ preventScroll: true });
      this.reveal(li, false);
    }
  }

  /** j/k: moves the selection; when an item is open, the next one opens in its place. */
  move(step) {
    performance.mark('tidings:move-start');
    const index = Math.min(Math.max(this.selectedIndex + step, 0), this.items.length - 1);
    if (index === this.selectedIndex && this.selectedIndex >= 0) return;
    const wasOpen = this.expandedId !== null;
    this.select(index);
    if (wasOpen) this.expand(this.items[index].id);
    if (this.items.length - index < 10) this.load();
    performance.mark('tidings:move-end');
  }

  selected() {
    return this.items[this.selectedIndex] || null;
  }
}

Object.assign(ItemList.prototype, listLayout, listLoading, openedItem, itemState);
