// The item list's frame (ItemList's methods, installed by item-list.js): the header with the
// title, actions, filters and the failing feed's banner; the end of the list (loading, empty,
// everything, load more); and scrolling an item into the band below the sticky headers.

import { app } from './state.js';
import { query } from './api.js';
import { h, icon, replace } from './dom.js';
import { t, tParts } from './i18n.js';

/** The methods of ItemList that draw its frame and scroll it. */
export const listLayout = {
  /** The hot list's window choice: the items of the last day, week or month by count. */
  hotWindows() {
    return h('nav', { class: 'tabs hot-windows', 'aria-label': t('hot.within') },
      [['24h', t('hot.24h')], ['7d', t('hot.7d')], ['30d', t('hot.30d')]].map(([value, label]) =>
        h('a', {
          class: 'tab',
          href: '/hot' + query({ window: value, filter: this.route.filter }),
          'data-link': '',
          'aria-current': value === this.route.hot ? 'page' : false,
        }, label)));
  },

  /** The note above a feed's items while it fails or is stopped. */
  statusBanner(sub) {
    if (!sub || sub.status === 'active') return null;
    return h('div', { class: 'banner banner-' + sub.status, role: 'note' },
      icon(sub.status === 'stopped' ? 'stop' : 'warning'),
      h('div', null,
        h('strong', null, sub.status === 'stopped' ? t('banner.stopped') : t('banner.failing')),
        ' ',
        h('span', { class: 'feed-error' }, sub.last_error || sub.status_reason || ''),
        ' ',
        h('a', { href: '/feeds/' + sub.feed_id + '/settings', 'data-link': '' }, sub.status === 'stopped' ? t('banner.resume') : t('page.feed_settings'))));
  },

  /** Draws the empty list in its frame and starts watching the end of it (infinite scroll). */
  build() {
    const sub = this.subscription();
    const filters = [['all', t('filter.all')], ['unread', t('filter.unread')], ['starred', t('filter.starred')]].map(([value, label]) =>
      h('a', {
        class: 'tab',
        href: this.urlFor(value),
        'data-link': '',
        'aria-current': value === this.route.filter ? 'page' : false,
      }, label));
    this.listEl = h('ul', { class: 'items', 'aria-label': t('list.items') });
    this.newBar = h('div', { class: 'new-items', 'aria-live': 'polite', hidden: true });
    this.endEl = h('div', { class: 'list-end', 'aria-live': 'polite' });
    this.sentinel = h('div', { class: 'sentinel', 'aria-hidden': 'true' });
    this.headingEl = h('h1', { class: 'list-title', id: 'list-title' }, this.title());
    replace(this.root,
      h('div', { class: 'list-header' },
        h('div', { class: 'list-title-row' },
          h('a', { class: 'icon-button only-phone', href: '#feeds', 'aria-label': t('list.back'), onclick: (e) => { e.preventDefault(); app.showPane('feeds'); } }, icon('back')),
          this.headingEl,
          h('span', { class: 'list-actions' },
            h('button', { type: 'button', class: 'icon-button', 'aria-label': t('list.reload'), title: t('list.reload_key'), onclick: () => this.reload() }, icon('refresh')),
            h('button', { type: 'button', class: 'button', id: 'mark-all-read', title: t('list.mark_all_read_key'), onclick: () => this.markAllRead() }, icon('check'), h('span', null, t('list.mark_all_read'))),
            sub ? h('a', { class: 'icon-button', href: '/feeds/' + sub.feed_id + '/settings', 'data-link': '', 'aria-label': t('page.feed_settings'), title: t('page.feed_settings') }, icon('gear')) : null)),
        h('nav', { class: 'tabs', 'aria-label': t('filter.label') }, filters),
        this.route.hot ? this.hotWindows() : null,
        this.statusBanner(sub),
        this.newBar),
      this.listEl,
      this.sentinel,
      this.endEl);
    this.root.setAttribute('aria-labelledby', 'list-title');
    this.observer = new IntersectionObserver((entries) => {
      if (entries.some((e) => e.isIntersecting)) this.load();
    }, { root: this.scrollRoot(), rootMargin: '0px 0px 1600px 0px' });
    this.observer.observe(this.sentinel);
    this.listEl.addEventListener('click', (event) => this.onClick(event));
    // Tab and Shift+Tab scroll the focused control into view by the browser's rule, which
    // leaves it under the sticky headers when it comes from above: bring it below them.
    this.listEl.addEventListener('focusin', (event) => {
      if (event.target.matches(':focus-visible')) this.reveal(event.target);
    });
  },

  /** The end of the list after a page: why it is empty, that it is all, or "Load more". */
  showListEnd() {
    if (!this.items.length && this.route.q) {
      const none = { all: 'end.no_match', unread: 'end.no_unread_match', starred: 'end.no_starred_match' }[this.route.filter] || 'end.no_match';
      replace(this.endEl, h('p', { class: 'empty' }, t(none, { q: this.route.q }), ' ',
        this.route.filter !== 'all' ? h('a', { href: this.urlFor('all'), 'data-link': '' }, t('end.search_all')) : null));
    } else if (!this.items.length && this.route.hot) {
      replace(this.endEl, h('p', { class: 'empty' }, t('end.nothing_hot'), ' ',
        this.route.hot !== '30d' ? h('a', { href: '/hot' + query({ window: '30d', filter: this.route.filter }), 'data-link': '' }, t('end.look_30d')) : null));
    } else if (!this.items.length) {
      replace(this.endEl, h('p', { class: 'empty' }, this.route.filter === 'unread'
        ? t('end.nothing_unread')
        : this.route.filter === 'starred' ? t('end.no_starred') : t('end.no_items'), ' ',
      this.route.filter !== 'all' ? h('a', { href: this.urlFor('all'), 'data-link': '' }, t('end.show_all')) : null));
    } else if (!this.hasMore) {
      replace(this.endEl, h('p', { class: 'empty' }, t('end.everything', { count: this.items.length })));
    } else {
      replace(this.endEl, h('button', { type: 'button', class: 'button', onclick: () => this.load() }, t('end.load_more')));
      // The sentinel may still be in view after a short page: keep filling.
      requestAnimationFrame(() => {
        const root = this.scrollRoot();
        const bottom = root ? root.getBoundingClientRect().bottom : window.innerHeight;
        if (this.sentinel.getBoundingClientRect().top < bottom + 1600) this.load();
      });
    }
  },

  /** The element that scrolls: the pane on wide screens, the page on phones. */
  scrollRoot() {
    return window.matchMedia('(max-width: 760px)').matches ? null : this.root;
  },

  /** The visible band of the list: below the sticky headers, above the bottom edge. */
  visibleBand() {
    const root = this.scrollRoot();
    let top = root ? root.getBoundingClientRect().top : 0;
    for (const sticky of document.querySelectorAll('.topbar, .list-header')) {
      const box = sticky.getBoundingClientRect();
      if (box.height && box.top <= top + 1) top = Math.max(top, box.bottom);
    }
    return { top, bottom: root ? root.getBoundingClientRect().bottom : window.innerHeight };
  },

  /**
   * Scrolls `li` into the visible band: the least that shows it whole, or, with `toTop` and
   * when it does not fit, its top at the band's top. `scrollIntoView` would put it under the
   * sticky headers.
   */
  reveal(li, toTop) {
    const band = this.visibleBand();
    const rect = li.getBoundingClientRect();
    let by = 0;
    if (rect.top < band.top || (toTop && rect.bottom > band.bottom)) by = rect.top - band.top;
    else if (rect.bottom > band.bottom) by = Math.min(rect.bottom - band.bottom, rect.top - band.top);
    if (!by) return;
    const root = this.scrollRoot();
    if (root) root.scrollTop += by;
    else window.scrollBy(0, by);
  },
};
