// Loading the item list (ItemList's methods, installed by item-list.js): pages through the
// cursor as the reader scrolls, an item linked by its address, and a reload. The bar that
// offers items arrived since is live.js's.

import { app } from './state.js';
import { api, query } from './api.js';
import { h, replace } from './dom.js';
import { showError } from './dialogs.js';
import { searchShown } from './search.js';
import { itemRow } from './item-row.js';
import { flushPendingReads } from './reads.js';
import { tagPath } from './sidebar.js';
import { t } from './i18n.js';

/** The methods of ItemList that fetch its items. */
export const listLoading = {
  async reload() {
    this.newBar.hidden = true;
    this.items = [];
    this.byId.clear();
    this.nextCursor = null;
    this.hasMore = true;
    this.expandedId = null;
    this.selectedIndex = -1;
    this.loadedAt = Date.now();
    this.detailCache.clear();
    replace(this.listEl);
    app.reloadCounts();
    await this.load();
  },

  /** The address of the next page: the hot list, a tag's items or the items of the view. */
  nextPagePath() {
    // The hot list has its own endpoint, ordered by count; it lists summaries only.
    const params = this.route.hot ? {
      window: this.route.hot,
      filter: this.route.filter,
      cursor: this.nextCursor,
      limit: app.prefs.page_size || 50,
    } : {
      filter: this.route.filter,
      feed_id: this.route.feedId,
      group_id: this.route.groupId,
      cursor: this.nextCursor,
      limit: app.prefs.page_size || 50,
      // Each item comes with what opening it shows, so reading costs no request per item.
      include: 'content',
      q: this.route.q,
    };
    // A tag's page lists through its own endpoint, with the same parameters.
    const path = this.route.hot ? '/items/hot' : this.route.tag ? tagPath(this.route.tag) + '/items' : '/items';
    return path + query(params);
  },

  /** Loads and shows the next page, unless one is loading or the list is complete. */
  async load() {
    if (this.loading || !this.hasMore || this.destroyed) return;
    this.loading = true;
    // A first page must not list as unread what was just read in the view before.
    if (this.nextCursor === null) await flushPendingReads();
    replace(this.endEl, h('span', { class: 'spinner', 'aria-hidden': 'true' }), t('list.loading'));
    let page;
    try {
      page = await api('GET', this.nextPagePath());
    } catch (e) {
      this.loading = false;
      if (this.destroyed) return;
      replace(this.endEl, h('div', { class: 'inline-error', role: 'alert' },
        h('strong', null, e.message), ' ', e.action || '', ' ',
        h('button', { type: 'button', class: 'button', onclick: () => this.load() }, t('common.try_again'))));
      return;
    }
    if (this.destroyed) return;
    const firstPage = this.items.length === 0;
    const fragment = document.createDocumentFragment();
    for (const item of page.items || []) {
      if (this.byId.has(item.id)) continue;
      this.items.push(item);
      this.byId.set(item.id, item);
      fragment.appendChild(itemRow(item));
    }
    this.listEl.appendChild(fragment);
    this.nextCursor = page.next_cursor || null;
    this.hasMore = Boolean(page.has_more && page.next_cursor);
    this.loading = false;
    if (firstPage) {
      performance.mark('tidings:first-page');
      // The frame after the next one has painted the list: measured by the UI benchmark.
      requestAnimationFrame(() => setTimeout(() => performance.mark('tidings:first-page-painted'), 0));
      if (this.route.item) this.openLinkedItem(this.route.item);
      searchShown(this.route.q);
    }
    this.showListEnd();
  },

  async openLinkedItem(id) {
    if (!this.byId.has(id)) {
      try {
        const detail = await api('GET', '/items/' + id);
        const item = detail.item || detail;
        this.detailCache.set(id, item);
        this.items.unshift(item);
        this.byId.set(item.id, item);
        this.listEl.insertBefore(itemRow(item), this.listEl.firstChild);
      } catch (e) {
        showError(e, t('list.linked_failed'));
        return;
      }
    }
    this.expand(id, { fromRoute: true });
  },
};
