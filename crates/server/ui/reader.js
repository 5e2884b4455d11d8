// The reader: the left pane of groups and feeds (F50) and the right pane's item list with
// infinite scroll, exclusive expand, read and star state (F51, F52), and the bookmarks.

import { app } from './state.js';
import { api, beacon, query } from './api.js';
import { fullDate, h, icon, replace, shortDate, toMillis } from './dom.js';
import { confirmDialog, showError, toast } from './dialogs.js';
import { searchShown, snippetNodes } from './search.js';
import { mediaBlock } from './media.js';
import { relatedSection } from './related.js';
import { requestSummary, summaryBlock } from './summary.js';

const COLLAPSED_KEY = 'tidings.collapsedGroups';

function collapsedGroups() {
  try {
    return new Set(JSON.parse(localStorage.getItem(COLLAPSED_KEY) || '[]'));
  } catch (e) {
    return new Set();
  }
}

function saveCollapsed(set) {
  try {
    localStorage.setItem(COLLAPSED_KEY, JSON.stringify([...set]));
  } catch (e) {
    // Collapsing still works for this visit.
  }
}

function countBadge(count, label) {
  const hidden = !count;
  return h('span', { class: 'count', hidden, 'aria-label': count + ' ' + label }, count > 999 ? '999+' : String(count || 0));
}

const STATUS_WORDS = {
  backoff: 'Failing, retrying later',
  stopped: 'Stopped',
};

/** The left pane: All items, Starred, Bookmarks, then the groups with their feeds. */
export class Sidebar {
  constructor(root) {
    this.root = root;
    this.selection = null;
    this.collapsed = collapsedGroups();
  }

  setSelection(route) {
    this.selection = route;
    this.markCurrent();
  }

  currentHref() {
    const r = this.selection;
    if (!r) return null;
    if (r.name === 'bookmarks') return '/bookmarks';
    if (r.name === 'feed-settings') return '/feeds/' + r.feedId;
    if (r.name !== 'items') return null;
    if (r.feedId) return '/feeds/' + r.feedId;
    if (r.groupId) return '/groups/' + r.groupId;
    if (r.tag) return tagPath(r.tag);
    if (r.hot) return '/hot';
    return r.filter === 'starred' ? '/all?filter=starred' : '/all';
  }

  markCurrent() {
    const href = this.currentHref();
    for (const link of this.root.querySelectorAll('a.feed-link')) {
      if (link.dataset.key === href) link.setAttribute('aria-current', 'page');
      else link.removeAttribute('aria-current');
    }
  }

  groupUnread(groupId) {
    return app.subscriptions.filter((s) => s.group_id === groupId).reduce((n, s) => n + (s.unread_count || 0), 0);
  }

  totalUnread() {
    return app.subscriptions.reduce((n, s) => n + (s.unread_count || 0), 0);
  }

  /** Updates the numbers only (cheap; called after every read/unread). */
  updateCounts() {
    for (const badge of this.root.querySelectorAll('[data-count]')) {
      const key = badge.dataset.count;
      let n = 0;
      if (key === 'all') n = this.totalUnread();
      else if (key === 'starred') n = app.starredCount || 0;
      else if (key.startsWith('g')) n = this.groupUnread(Number(key.slice(1)));
      else {
        const sub = app.subscriptions.find((s) => s.id === Number(key.slice(1)));
        n = sub ? sub.unread_count || 0 : 0;
      }
      badge.textContent = n > 999 ? '999+' : String(n);
      badge.hidden = !n;
      badge.setAttribute('aria-label', n + (key === 'starred' ? ' starred' : ' unread'));
    }
  }

  feedEntry(sub) {
    const key = '/feeds/' + sub.feed_id;
    const favicon = sub.favicon_url
      ? h('img', { class: 'favicon', src: sub.favicon_url, alt: '', width: 16, height: 16, loading: 'lazy', onerror: (e) => { e.target.hidden = true; } })
      : h('span', { class: 'favicon favicon-none', 'aria-hidden': 'true' });
    const link = h('a', { class: 'feed-link', href: key, 'data-link': '', 'data-pane': 'main', dataset: { key } },
      favicon,
      h('span', { class: 'feed-title' }, sub.title),
      h('span', { class: 'count', 'data-count': 's' + sub.id }),
    );
    let status = null;
    if (sub.status === 'backoff' || sub.status === 'stopped') {
      const detail = STATUS_WORDS[sub.status] + ': ' + (sub.last_error || sub.status_reason || 'the last fetch failed');
      status = h('button', {
        type: 'button',
        class: 'status-icon status-' + sub.status,
        'aria-label': sub.title + ' — ' + detail,
        title: detail,
        onclick: () => toast({
          title: sub.title + ': ' + STATUS_WORDS[sub.status].toLowerCase(),
          message: sub.last_error || sub.status_reason || 'The last fetch failed.',
          action: sub.status === 'stopped'
            ? 'Open the feed settings to resume it once the problem is fixed.'
            : 'tidings retries by itself, waiting longer after each failure.',
          kind: 'error',
          link: { href: '/feeds/' + sub.feed_id + '/settings', text: 'Feed settings' },
        }),
      }, icon(sub.status === 'stopped' ? 'stop' : 'warning'));
    }
    return h('li', { class: 'feed' + (sub.status !== 'active' ? ' feed-' + sub.status : '') }, link, status);
  }

  render() {
    const groups = app.groups.length
      ? [...app.groups].sort((a, b) => (a.position || 0) - (b.position || 0))
      : [{ id: null, name: 'Feeds', is_default: true }];
    const byGroup = new Map();
    for (const sub of app.subscriptions) {
      const key = app.groups.length ? sub.group_id : null;
      if (!byGroup.has(key)) byGroup.set(key, []);
      byGroup.get(key).push(sub);
    }
    const sections = [];
    for (const group of groups) {
      const subs = (byGroup.get(group.id) || []).sort((a, b) => a.title.localeCompare(b.title));
      if (!subs.length && group.is_default) continue;
      const collapsed = this.collapsed.has(String(group.id));
      const listId = 'group-' + group.id;
      const toggle = h('button', {
        type: 'button',
        class: 'group-toggle',
        'aria-expanded': collapsed ? 'false' : 'true',
        'aria-controls': listId,
        'aria-label': (collapsed ? 'Expand ' : 'Collapse ') + group.name,
        onclick: () => {
          const key = String(group.id);
          if (this.collapsed.has(key)) this.collapsed.delete(key);
          else this.collapsed.add(key);
          saveCollapsed(this.collapsed);
          this.render();
        },
      }, icon('chevron', 'chevron'));
      const heading = group.id !== null
        ? h('a', { class: 'feed-link group-link', href: '/groups/' + group.id, 'data-link': '', 'data-pane': 'main', dataset: { key: '/groups/' + group.id } },
          h('span', { class: 'feed-title' }, group.name), h('span', { class: 'count', 'data-count': 'g' + group.id }))
        : h('span', { class: 'group-name' }, group.name);
      sections.push(h('li', { class: 'group' + (collapsed ? ' collapsed' : '') },
        h('div', { class: 'group-head' }, toggle, heading),
        h('ul', { class: 'feed-list', id: listId, hidden: collapsed, 'aria-label': group.name }, subs.map((s) => this.feedEntry(s))),
      ));
    }
    const stopped = app.subscriptions.filter((s) => s.status === 'stopped').length;
    const resumeAll = stopped
      ? h('div', { class: 'stopped-feeds', role: 'note' },
        icon('stop'),
        h('span', null, stopped === 1 ? '1 feed is stopped' : stopped + ' feeds are stopped'),
        h('button', { type: 'button', class: 'button', id: 'resume-all-stopped', onclick: (e) => resumeAllStopped(e.currentTarget) }, 'Resume all'))
      : null;
    const empty = !app.subscriptions.length
      ? h('div', { class: 'empty-feeds' },
        h('p', null, 'No feeds yet.'),
        h('p', null, 'Use ', h('strong', null, 'Subscribe'), ' to add a site or a feed address, or import an OPML file in ', h('a', { href: '/settings', 'data-link': '' }, 'Settings'), '.'))
      : null;
    replace(this.root,
      h('ul', { class: 'feed-list top-entries', 'aria-label': 'Views' },
        h('li', { class: 'feed' }, h('a', { class: 'feed-link', href: '/all', 'data-link': '', 'data-pane': 'main', dataset: { key: '/all' } },
          icon('menu', 'favicon'), h('span', { class: 'feed-title' }, 'All items'), h('span', { class: 'count', 'data-count': 'all' }))),
        h('li', { class: 'feed' }, h('a', { class: 'feed-link', href: '/all?filter=starred', 'data-link': '', 'data-pane': 'main', dataset: { key: '/all?filter=starred' } },
          icon('star', 'favicon'), h('span', { class: 'feed-title' }, 'Starred'), h('span', { class: 'count', 'data-count': 'starred' }))),
        h('li', { class: 'feed' }, h('a', { class: 'feed-link', href: '/hot', 'data-link': '', 'data-pane': 'main', dataset: { key: '/hot' } },
          icon('flame', 'favicon'), h('span', { class: 'feed-title' }, 'Hot'))),
        h('li', { class: 'feed' }, h('a', { class: 'feed-link', href: '/bookmarks', 'data-link': '', 'data-pane': 'main', dataset: { key: '/bookmarks' } },
          icon('bookmark', 'favicon'), h('span', { class: 'feed-title' }, 'Bookmarks'))),
      ),
      h('h2', { class: 'pane-heading' }, 'Subscriptions'),
      resumeAll,
      empty,
      h('ul', { class: 'group-list', 'aria-label': 'Groups' }, sections),
      this.tagsSection(),
    );
    this.updateCounts();
    this.markCurrent();
  }

  /** The most frequent tags of the reader's items (last 30 days), kept across renders. */
  tagsSection() {
    if (!this.tagsEl) {
      this.tagsEl = h('section', { class: 'tag-section', hidden: true, 'aria-labelledby': 'tags-heading' });
      this.loadTags();
    }
    return this.tagsEl;
  }

  async loadTags() {
    let answer;
    try {
      answer = await api('GET', '/tags?limit=' + SIDEBAR_TAGS);
    } catch (e) {
      return; // The tags are a convenience: the pane works without them.
    }
    const tags = answer.tags || [];
    this.tagsEl.hidden = !tags.length;
    replace(this.tagsEl,
      h('h2', { class: 'pane-heading', id: 'tags-heading' }, 'Tags'),
      h('ul', { class: 'tag-cloud' }, tags.map((t) => h('li', null,
        h('a', { class: 'feed-link tag-link', href: tagPath(t.name), 'data-link': '', 'data-pane': 'main', dataset: { key: tagPath(t.name) } },
          h('span', { class: 'feed-title' }, t.name), h('span', { class: 'count' }, String(t.count)))))));
    this.markCurrent();
  }
}

/** Tags the left pane lists. */
const SIDEBAR_TAGS = 20;

/** The page of a tag's items. */
function tagPath(name) {
  return '/tags/' + encodeURIComponent(name);
}

/** An item's tags as links to their pages, best first. */
function tagLinks(item) {
  if (!item.tags || !item.tags.length) return null;
  return h('ul', { class: 'item-tags', 'aria-label': 'Tags' }, item.tags.slice(0, ITEM_TAGS_SHOWN).map((t) =>
    h('li', null, h('a', { class: 'tag', href: tagPath(t.name), 'data-link': '', title: 'Items tagged ' + t.name + ' (score ' + t.score + ')' }, t.name))));
}

/** Tags shown on an item in the list. */
const ITEM_TAGS_SHOWN = 5;

/** Puts every stopped feed of the user back on schedule (they are fetched at the next tick). */
async function resumeAllStopped(button) {
  button.disabled = true;
  try {
    const result = await api('POST', '/subscriptions/resume-stopped');
    toast({ title: result.resumed === 1 ? '1 feed resumed' : result.resumed + ' feeds resumed', message: 'They are fetched again within a minute.' });
    await app.reloadFeeds();
  } catch (e) {
    button.disabled = false;
    showError(e, 'The stopped feeds could not be resumed');
  }
}

function errorBlockText(e) {
  return h('p', { class: 'inline-error', role: 'alert' }, e.message + ' ' + (e.action || ''));
}

/** Plain text of a sanitized HTML fragment, for one-line excerpts. */
function excerpt(html, length) {
  if (!html) return '';
  const template = document.createElement('template');
  template.innerHTML = html;
  const text = (template.content.textContent || '').replace(/\s+/g, ' ').trim();
  return text.length > length ? text.slice(0, length - 1) + '…' : text;
}

/** The item's bookmark count (F40), or null while none is known (null is not 0). */
function popularityOf(item) {
  const popularity = item.popularity;
  return popularity && typeof popularity.count === 'number' ? popularity.count : null;
}

// Items opened are marked read in batches, one POST /items/mark-read for many, so that reading
// quickly with j/k costs one request per item (its content), not two, and stays well inside the
// per-user rate limit (F25). The queue is flushed within a moment, before any listing loads,
// and when the page goes away.
const READ_BATCH_DELAY_MS = 1500;
/** "Mark all read" asks first above this many items. */
const MARK_ALL_CONFIRM_ABOVE = 20;
/** How long the Undo of "Mark all read" is offered. */
const UNDO_MS = 10000;
/** How often counts and the current list look for news while the page is visible. */
const LIVE_POLL_MS = 30000;
const READ_BATCH_MAX = 100;
/** The most ids one mark-read takes (the API's limit). */
const MARK_IDS_MAX = 1000;
const pendingReads = new Map(); // item id -> { item, list }
let pendingReadsTimer = null;

/** Sends the queued "read" marks now; rolls them back with a message if the server refuses. */
export async function flushPendingReads() {
  clearTimeout(pendingReadsTimer);
  pendingReadsTimer = null;
  if (pendingReads.size === 0) return;
  const batch = [...pendingReads.values()];
  pendingReads.clear();
  try {
    await api('POST', '/items/mark-read', { ids: batch.map((entry) => entry.item.id) });
  } catch (e) {
    for (const { item, list } of batch) {
      if (item.is_read) list.showRead(item, false);
    }
    showError(e, batch.length === 1 ? 'The item could not be marked read' : 'The items could not be marked read');
  }
}

function queueRead(list, item) {
  pendingReads.set(item.id, { item, list });
  if (pendingReads.size >= READ_BATCH_MAX) flushPendingReads();
  else if (!pendingReadsTimer) pendingReadsTimer = setTimeout(flushPendingReads, READ_BATCH_DELAY_MS);
}

window.addEventListener('pagehide', () => {
  if (pendingReads.size === 0) return;
  const ids = [...pendingReads.keys()];
  pendingReads.clear();
  // keepalive lets the request finish after the page is gone.
  fetch('/api/v1/items/mark-read', {
    method: 'POST',
    credentials: 'same-origin',
    keepalive: true,
    headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
    body: JSON.stringify({ ids }),
  }).catch(() => {});
});

let livePoll = null;
let lastLook = 0;

/** Looks once for news: fresh counts, and new items in the current list. */
async function lookForNews() {
  if (!app.me || !app.sidebar) return;
  lastLook = Date.now();
  const since = app.countsAsOf;
  try {
    await app.reloadCounts();
    if (!since || !app.list || !app.list.checkArrivals) return;
    const updated = await api('GET', '/items/updated-feeds' + query({ since }));
    if (updated && updated.subscriptions.length) await app.list.checkArrivals(updated.subscriptions);
  } catch (e) {
    // A missed look is made up by the next one.
  }
}

/**
 * Keeps counts and the current list up to date by themselves (F51): a light look every
 * LIVE_POLL_MS while the page is visible, and at once when the reader comes back to it.
 */
export function startLiveUpdates() {
  clearInterval(livePoll);
  livePoll = setInterval(() => {
    if (document.visibilityState === 'visible') lookForNews();
  }, LIVE_POLL_MS);
  const comeBack = () => {
    // Coming back twice within a few seconds (focus and visibility together) looks once.
    if (document.visibilityState === 'visible' && Date.now() - lastLook > 2000) lookForNews();
  };
  document.addEventListener('visibilitychange', comeBack);
  window.addEventListener('focus', comeBack);
}

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
  }

  subscription() {
    return this.route.feedId ? app.subscriptionByFeed(this.route.feedId) : null;
  }

  title() {
    if (this.route.q) return 'Search: ' + this.route.q;
    if (this.route.feedId) {
      const sub = this.subscription();
      return sub ? sub.title : 'Feed';
    }
    if (this.route.groupId) {
      const group = app.groups.find((g) => g.id === this.route.groupId);
      return group ? group.name : 'Group';
    }
    if (this.route.tag) return 'Tag: ' + this.route.tag;
    if (this.route.hot) return 'Hot';
    return this.route.filter === 'starred' ? 'Starred' : 'All items';
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

  /** The hot list's window choice: the items of the last day, week or month by count. */
  hotWindows() {
    return h('nav', { class: 'tabs hot-windows', 'aria-label': 'Published within' },
      [['24h', 'Last 24 hours'], ['7d', 'Last 7 days'], ['30d', 'Last 30 days']].map(([value, label]) =>
        h('a', {
          class: 'tab',
          href: '/hot' + query({ window: value, filter: this.route.filter }),
          'data-link': '',
          'aria-current': value === this.route.hot ? 'page' : false,
        }, label)));
  }

  build() {
    const sub = this.subscription();
    const filters = [['all', 'All'], ['unread', 'Unread'], ['starred', 'Starred']].map(([value, label]) =>
      h('a', {
        class: 'tab',
        href: this.urlFor(value),
        'data-link': '',
        'aria-current': value === this.route.filter ? 'page' : false,
      }, label));
    const banner = sub && sub.status !== 'active'
      ? h('div', { class: 'banner banner-' + sub.status, role: 'note' },
        icon(sub.status === 'stopped' ? 'stop' : 'warning'),
        h('div', null,
          h('strong', null, sub.status === 'stopped' ? 'This feed is stopped. ' : 'This feed is failing; tidings retries later. '),
          h('span', { class: 'feed-error' }, sub.last_error || sub.status_reason || ''),
          ' ',
          h('a', { href: '/feeds/' + sub.feed_id + '/settings', 'data-link': '' }, sub.status === 'stopped' ? 'Resume it in the feed settings' : 'Feed settings')))
      : null;
    this.listEl = h('ul', { class: 'items', 'aria-label': 'Items' });
    this.newBar = h('div', { class: 'new-items', 'aria-live': 'polite', hidden: true });
    this.endEl = h('div', { class: 'list-end', 'aria-live': 'polite' });
    this.sentinel = h('div', { class: 'sentinel', 'aria-hidden': 'true' });
    this.headingEl = h('h1', { class: 'list-title', id: 'list-title' }, this.title());
    replace(this.root,
      h('div', { class: 'list-header' },
        h('div', { class: 'list-title-row' },
          h('a', { class: 'icon-button only-phone', href: '#feeds', 'aria-label': 'Back to the feeds', onclick: (e) => { e.preventDefault(); app.showPane('feeds'); } }, icon('back')),
          this.headingEl,
          h('span', { class: 'list-actions' },
            h('button', { type: 'button', class: 'icon-button', 'aria-label': 'Reload the list', title: 'Reload (r)', onclick: () => this.reload() }, icon('refresh')),
            h('button', { type: 'button', class: 'button', id: 'mark-all-read', title: 'Mark all read (shift+a)', onclick: () => this.markAllRead() }, icon('check'), h('span', null, 'Mark all read')),
            sub ? h('a', { class: 'icon-button', href: '/feeds/' + sub.feed_id + '/settings', 'data-link': '', 'aria-label': 'Feed settings', title: 'Feed settings' }, icon('gear')) : null)),
        h('nav', { class: 'tabs', 'aria-label': 'Filter' }, filters),
        this.route.hot ? this.hotWindows() : null,
        banner,
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
  }

  /** The element that scrolls: the pane on wide screens, the page on phones. */
  scrollRoot() {
    return window.matchMedia('(max-width: 760px)').matches ? null : this.root;
  }

  /** The visible band of the list: below the sticky headers, above the bottom edge. */
  visibleBand() {
    const root = this.scrollRoot();
    let top = root ? root.getBoundingClientRect().top : 0;
    for (const sticky of document.querySelectorAll('.topbar, .list-header')) {
      const box = sticky.getBoundingClientRect();
      if (box.height && box.top <= top + 1) top = Math.max(top, box.bottom);
    }
    return { top, bottom: root ? root.getBoundingClientRect().bottom : window.innerHeight };
  }

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
  }

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
  }

  async load() {
    if (this.loading || !this.hasMore || this.destroyed) return;
    this.loading = true;
    // A first page must not list as unread what was just read in the view before.
    if (this.nextCursor === null) await flushPendingReads();
    replace(this.endEl, h('span', { class: 'spinner', 'aria-hidden': 'true' }), 'Loading items…');
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
    let page;
    try {
      // A tag's page lists through its own endpoint, with the same parameters.
      const path = this.route.hot ? '/items/hot' : this.route.tag ? tagPath(this.route.tag) + '/items' : '/items';
      page = await api('GET', path + query(params));
    } catch (e) {
      this.loading = false;
      if (this.destroyed) return;
      replace(this.endEl, h('div', { class: 'inline-error', role: 'alert' },
        h('strong', null, e.message), ' ', e.action || '', ' ',
        h('button', { type: 'button', class: 'button', onclick: () => this.load() }, 'Try again')));
      return;
    }
    if (this.destroyed) return;
    const firstPage = this.items.length === 0;
    const fragment = document.createDocumentFragment();
    for (const item of page.items || []) {
      if (this.byId.has(item.id)) continue;
      this.items.push(item);
      this.byId.set(item.id, item);
      fragment.appendChild(this.renderItem(item));
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
    if (!this.items.length && this.route.q) {
      replace(this.endEl, h('p', { class: 'empty' }, 'No ' + (this.route.filter === 'all' ? '' : this.route.filter + ' ') + 'items match “' + this.route.q + '”. ',
        this.route.filter !== 'all' ? h('a', { href: this.urlFor('all'), 'data-link': '' }, 'Search all items') : null));
    } else if (!this.items.length && this.route.hot) {
      replace(this.endEl, h('p', { class: 'empty' }, 'Nothing hot here yet: the list shows items whose links people bookmarked, once the server counts them (popularity is off unless the administrator turns it on). ',
        this.route.hot !== '30d' ? h('a', { href: '/hot' + query({ window: '30d', filter: this.route.filter }), 'data-link': '' }, 'Look at the last 30 days') : null));
    } else if (!this.items.length) {
      replace(this.endEl, h('p', { class: 'empty' }, this.route.filter === 'unread'
        ? 'Nothing unread here. '
        : this.route.filter === 'starred' ? 'No starred items here. ' : 'No items here yet. ',
      this.route.filter !== 'all' ? h('a', { href: this.urlFor('all'), 'data-link': '' }, 'Show all items') : null));
    } else if (!this.hasMore) {
      replace(this.endEl, h('p', { class: 'empty' }, 'That is everything: ' + this.items.length + (this.items.length === 1 ? ' item.' : ' items.')));
    } else {
      replace(this.endEl, h('button', { type: 'button', class: 'button', onclick: () => this.load() }, 'Load more'));
      // The sentinel may still be in view after a short page: keep filling.
      requestAnimationFrame(() => {
        const root = this.scrollRoot();
        const bottom = root ? root.getBoundingClientRect().bottom : window.innerHeight;
        if (this.sentinel.getBoundingClientRect().top < bottom + 1600) this.load();
      });
    }
  }

  async openLinkedItem(id) {
    if (!this.byId.has(id)) {
      try {
        const detail = await api('GET', '/items/' + id);
        const item = detail.item || detail;
        this.detailCache.set(id, item);
        this.items.unshift(item);
        this.byId.set(item.id, item);
        this.listEl.insertBefore(this.renderItem(item), this.listEl.firstChild);
      } catch (e) {
        showError(e, 'The linked item could not be shown');
        return;
      }
    }
    this.expand(id, { fromRoute: true });
  }

  renderItem(item) {
    const li = h('li', { class: 'item' + (item.is_read ? ' is-read' : '') + (item.is_starred ? ' is-starred' : ''), dataset: { id: item.id } });
    const titleId = 'item-title-' + item.id;
    const date = h('time', { datetime: new Date(toMillis(item.published_at)).toISOString(), title: fullDate(item.published_at) + (item.is_date_estimated ? ' (estimated: the feed gave no date)' : '') },
      shortDate(item.published_at));
    const popularity = popularityOf(item);
    li.appendChild(h('article', { 'aria-labelledby': titleId },
      h('div', { class: 'item-head' },
        h('button', { type: 'button', class: 'item-toggle', 'aria-expanded': 'false', 'aria-controls': 'item-body-' + item.id, 'data-action': 'toggle' },
          h('span', { class: 'unread-dot', 'aria-hidden': 'true' }),
          h('span', { class: 'item-text' },
            h('span', { class: 'item-title', id: titleId }, item.title || excerpt(item.summary, 80) || '(untitled)'),
            h('span', { class: 'item-meta' },
              h('span', { class: 'item-feed' }, item.feed_title || ''),
              ' · ', date,
              item.is_date_estimated ? h('span', { class: 'estimated', title: 'The feed gave no date; this is when tidings first saw the item.' }, ' (estimated)') : null,
              h('span', { class: 'visually-hidden state-text' }, item.is_read ? ', read' : ', unread')),
            item.snippet !== undefined
              ? h('span', { class: 'item-excerpt search-snippet' }, snippetNodes(item.snippet))
              : h('span', { class: 'item-excerpt' }, excerpt(item.summary, 180)))),
        popularity !== null ? h('span', { class: 'popularity', title: popularity + ' bookmarks', 'aria-label': popularity + ' bookmarks' }, icon('bookmark'), String(popularity)) : null,
        h('button', { type: 'button', class: 'icon-button star', 'data-action': 'star', 'aria-pressed': item.is_starred ? 'true' : 'false', 'aria-label': 'Star', title: 'Star (s)' }, icon('star'))),
      tagLinks(item),
      h('div', { class: 'item-body', id: 'item-body-' + item.id, hidden: true })));
    return li;
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

  toggle(id) {
    if (this.expandedId === id) this.collapse();
    else this.expand(id);
  }

  collapse() {
    const id = this.expandedId;
    if (id === null) return;
    this.expandedId = null;
    const li = this.liOf(id);
    if (li) {
      li.classList.remove('expanded');
      li.querySelector('.item-toggle').setAttribute('aria-expanded', 'false');
      const body = li.querySelector('.item-body');
      body.hidden = true;
      replace(body);
    }
    history.replaceState(null, '', this.urlFor(this.route.filter));
  }

  /** Expands one item, collapsing the one open before (exclusive expand), and marks it read. */
  expand(id, options = {}) {
    const item = this.byId.get(id);
    if (!item) return;
    performance.mark('tidings:expand-start');
    if (this.expandedId !== null && this.expandedId !== id) this.collapse();
    this.expandedId = id;
    const li = this.liOf(id);
    li.classList.add('expanded');
    li.querySelector('.item-toggle').setAttribute('aria-expanded', 'true');
    const body = li.querySelector('.item-body');
    // Listed with include=content, an item has its enclosures (maybe none) and content.
    const full = item.enclosures !== undefined ? item : this.detailCache.get(id);
    this.fillBody(body, item, full ? full.content || full.summary : item.summary, !full, full ? full.enclosures : []);
    body.hidden = false;
    const index = this.items.indexOf(item);
    if (index >= 0) this.selectedIndex = index;
    this.markSelected();
    // An opened item that does not fit in view is brought to the top, its title just below
    // the sticky header, so its text starts where the eye is.
    if (!options.noScroll) this.reveal(li, true);
    performance.mark('tidings:expand-end');
    if (!options.fromRoute || location.search.indexOf('item=' + id) < 0) history.replaceState(null, '', this.urlFor(this.route.filter, id));
    if (!item.is_read && app.prefs.mark_read_on_open !== false) {
      this.showRead(item, true);
      queueRead(this, item);
    }
    if (!full) this.loadDetail(id, body);
    if (this.items.length - index < 10) this.load();
  }

  async loadDetail(id, body) {
    try {
      const detail = await api('GET', '/items/' + id);
      const full = detail.item || detail;
      this.detailCache.set(id, full);
      if (this.expandedId === id) this.fillBody(body, this.byId.get(id), full.content || full.summary, false, full.enclosures);
    } catch (e) {
      if (this.expandedId === id) {
        body.querySelector('.item-content').appendChild(h('p', { class: 'inline-error', role: 'alert' }, e.message + ' ' + (e.action || '')));
      }
    }
  }

  /** The article from the item's page (F6), when one is known: listed, loaded or fetched. */
  fullTextOf(item) {
    const detail = this.detailCache.get(item.id);
    return item.full_content || (detail && detail.full_content) || null;
  }

  /** Whether an item shows its full article: the reader's choice for it, else its feed's mode. */
  showsFullText(item) {
    if (!this.fullTextOf(item)) return false;
    if (item.showFullText !== undefined) return item.showFullText;
    const sub = app.subscriptionByFeed(item.feed_id);
    return !sub || sub.full_text !== 'never';
  }

  /** Switches an opened item between its feed's content and its full article. */
  switchFullText(id) {
    const item = this.byId.get(id);
    if (!item) return;
    item.showFullText = !this.showsFullText(item);
    this.refillBody(item);
  }

  /** Fills an opened item's body again, with what is known of it. */
  refillBody(item) {
    const li = this.liOf(item.id);
    if (!li || this.expandedId !== item.id) return;
    const full = item.enclosures !== undefined ? item : this.detailCache.get(item.id);
    this.fillBody(li.querySelector('.item-body'), item, full ? full.content || full.summary : item.summary, !full, full ? full.enclosures : []);
  }

  /** "Load full article": the server fetches the item's page now and answers its article. */
  async loadFullText(id, button) {
    const item = this.byId.get(id);
    if (!item) return;
    button.disabled = true;
    button.textContent = 'Loading the full article…';
    try {
      const loaded = await api('POST', '/items/' + id + '/full-content');
      item.full_content = loaded.full_content;
      item.showFullText = true;
      this.refillBody(item);
      // The article may make a short item long enough to summarize: the server says.
      const li = this.liOf(id);
      if (li && item.summarizable === undefined) this.loadDetail(id, li.querySelector('.item-body'));
    } catch (e) {
      button.disabled = false;
      button.textContent = 'Load full article';
      showError(e, 'The full article could not be loaded');
    }
  }

  /** "Summarize": asks for the item's summary and shows it above the content once made. */
  async summarize(id, button) {
    const item = this.byId.get(id);
    if (!item) return;
    button.disabled = true;
    button.textContent = 'Summarizing…';
    try {
      if (await requestSummary(item)) this.refillBody(item);
      else button.textContent = 'Summary queued';
    } catch (e) {
      button.disabled = false;
      button.textContent = 'Summarize';
      showError(e, 'The item could not be summarized');
    }
  }

  /** Whether the server says the item's text is long enough to summarize (known once its
   * text is loaded; a short item is its own summary). */
  summarizable(item) {
    const known = item.summarizable !== undefined ? item : this.detailCache.get(item.id);
    return !!(known && known.summarizable);
  }

  fillBody(body, item, html, pending, enclosures) {
    const fullText = this.showsFullText(item) ? this.fullTextOf(item) : null;
    if (fullText) html = fullText;
    const media = mediaBlock(item, enclosures, html, app.prefs.show_images !== false);
    const content = h('div', { class: 'item-content' + (pending ? ' pending' : '') + (fullText ? ' full-text' : '') });
    // The server sanitized this HTML (F5); the CSP forbids scripts and inline handlers anyway.
    content.innerHTML = html || '';
    for (const link of content.querySelectorAll('a[href]')) {
      link.target = '_blank';
      link.rel = 'noopener noreferrer';
    }
    const actions = h('div', { class: 'item-tools' },
      item.url ? h('a', { class: 'button', href: item.url, target: '_blank', rel: 'noopener noreferrer', 'data-role': 'original', 'data-action': 'original' }, icon('external'), 'Open original') : null,
      this.fullTextOf(item)
        ? h('button', { type: 'button', class: 'button', 'data-action': 'full-text', 'aria-pressed': fullText ? 'true' : 'false' }, fullText ? 'Show feed text' : 'Show full article')
        : item.url ? h('button', { type: 'button', class: 'button', 'data-action': 'load-full-text' }, 'Load full article') : null,
      !item.generated_summary && this.summarizable(item) ? h('button', { type: 'button', class: 'button', 'data-action': 'summarize' }, 'Summarize') : null,
      h('button', { type: 'button', class: 'button', 'data-action': 'read' }, item.is_read ? 'Mark unread' : 'Mark read'),
      h('button', { type: 'button', class: 'button', 'data-action': 'bookmark' }, icon('bookmark'), 'Bookmark'),
      item.author ? h('span', { class: 'item-author' }, 'by ' + item.author) : null);
    replace(body, media, summaryBlock(item), content, actions, relatedSection(item.id));
  }

  /** Shows an item as read or unread, with the unread counts, without asking the server. */
  showRead(item, value) {
    if (item.is_read === value) return;
    item.is_read = value;
    const li = this.liOf(item.id);
    if (li) {
      li.classList.toggle('is-read', value);
      const state = li.querySelector('.state-text');
      if (state) state.textContent = value ? ', read' : ', unread';
      const button = li.querySelector('[data-action="read"]');
      if (button) button.textContent = value ? 'Mark unread' : 'Mark read';
    }
    app.adjustUnread(item.feed_id, value ? -1 : 1);
  }

  /** Sets the read state at once, then tells the server; undone with a message if refused. */
  async setRead(item, isRead) {
    if (item.is_read === isRead) return;
    // An explicit choice replaces a queued "read" mark.
    pendingReads.delete(item.id);
    this.showRead(item, isRead);
    try {
      await api('PUT', '/items/' + item.id + '/state', { is_read: isRead });
    } catch (e) {
      this.showRead(item, !isRead);
      showError(e, isRead ? 'The item could not be marked read' : 'The item could not be marked unread');
    }
  }

  toggleRead(id) {
    const item = this.byId.get(id);
    if (item) this.setRead(item, !item.is_read);
  }

  async toggleStar(id) {
    const item = this.byId.get(id);
    if (!item) return;
    const apply = (value) => {
      item.is_starred = value;
      const li = this.liOf(id);
      if (li) {
        li.classList.toggle('is-starred', value);
        li.querySelector('[data-action="star"]').setAttribute('aria-pressed', value ? 'true' : 'false');
      }
      app.adjustStarred(value ? 1 : -1);
    };
    const value = !item.is_starred;
    apply(value);
    try {
      await api('PUT', '/items/' + id + '/state', { is_starred: value });
    } catch (e) {
      apply(!value);
      showError(e, value ? 'The item could not be starred' : 'The star could not be removed');
    }
  }

  async bookmark(id) {
    try {
      await api('POST', '/bookmarks', { item_id: id });
      toast({ title: 'Bookmarked', message: 'A copy is kept in Bookmarks, even if the feed removes it.', link: { href: '/bookmarks', text: 'Open Bookmarks' } });
    } catch (e) {
      showError(e, 'The bookmark was not saved');
    }
  }

  /** How many unread items "Mark all read" would mark here, as far as the UI knows. */
  unreadInView() {
    if (this.route.filter === 'starred') {
      // Only starred items are listed; when more pages follow, the starred count bounds them.
      const listed = this.items.filter((item) => !item.is_read).length;
      return this.hasMore ? Math.max(listed, app.starredCount || 0) : listed;
    }
    if (this.route.feedId) {
      const sub = this.subscription();
      return sub ? sub.unread_count || 0 : 0;
    }
    if (this.route.groupId) return app.sidebar ? app.sidebar.groupUnread(this.route.groupId) : 0;
    if (this.route.tag || this.route.hot) return this.items.filter((item) => !item.is_read).length;
    return app.sidebar ? app.sidebar.totalUnread() : 0;
  }

  /**
   * Marks what this view lists read — a feed, a group, everything, or in Starred only the
   * starred items — with the API's before-time rule: only items published before the list
   * was loaded (or the newest loaded one), so items that arrived since stay unread. Above
   * MARK_ALL_CONFIRM_ABOVE items it asks first; an Undo restores exactly the state before.
   */
  async markAllRead() {
    const count = this.unreadInView();
    if (count > MARK_ALL_CONFIRM_ABOVE
      && !(await confirmDialog('Mark ' + count + ' items read?', this.title() + ': every unread item listed here becomes read. You can undo it for a few seconds.', 'Mark all read', false))) return;
    const newest = this.items.reduce((max, item) => Math.max(max, toMillis(item.published_at)), 0);
    const before = new Date(Math.max(this.loadedAt, newest + 1000)).toISOString().replace(/\.\d{3}Z$/, 'Z');
    const changed = this.items.filter((item) => !item.is_read && toMillis(item.published_at) < Date.parse(before));
    let body;
    if (this.route.tag || this.route.hot) {
      // No scope covers a tag or the hot list: its page marks the items it lists, by id.
      body = { ids: changed.map((item) => item.id).slice(0, MARK_IDS_MAX) };
    } else {
      body = { before };
      if (this.route.feedId) body.feed_id = this.route.feedId;
      else if (this.route.groupId) body.group_id = this.route.groupId;
      else if (this.route.filter !== 'starred') body.all = true;
      if (this.route.filter === 'starred') body.starred = true;
    }
    const show = (value) => {
      for (const item of changed) {
        item.is_read = value;
        const li = this.liOf(item.id);
        if (li) {
          li.classList.toggle('is-read', value);
          const state = li.querySelector('.state-text');
          if (state) state.textContent = value ? ', read' : ', unread';
        }
      }
    };
    show(true);
    let result;
    try {
      await flushPendingReads();
      result = await api('POST', '/items/mark-read', body);
    } catch (e) {
      show(false);
      showError(e, 'Nothing was marked read');
      app.reloadCounts();
      return;
    }
    app.reloadCounts();
    const marked = result ? result.marked : changed.length;
    toast({
      key: 'marked-read',
      title: 'Marked read',
      message: this.title() + ': ' + marked + (marked === 1 ? ' item is' : ' items are') + ' read.',
      duration: UNDO_MS,
      button: result && result.undo ? { text: 'Undo', onclick: () => this.undoMarkAll(result.undo, show) } : null,
    });
  }

  /** Restores the state before a "Mark all read". */
  async undoMarkAll(undo, show) {
    try {
      await api('POST', '/items/mark-read/undo', undo);
      if (!this.destroyed) show(false);
      toast({ key: 'marked-read', title: 'Undone', message: 'The items are unread again.' });
    } catch (e) {
      showError(e, 'The items could not be made unread again');
    }
    app.reloadCounts();
  }

  /**
   * Live updates: told which subscriptions received items since the last look, checks
   * whether this view lists new ones, and offers them behind a bar instead of moving the
   * list under the reader.
   */
  async checkArrivals(updated) {
    if (this.destroyed || this.route.filter === 'starred' || this.route.q || this.loading) return;
    const inView = updated.filter((u) => {
      if (this.route.feedId) return u.feed_id === this.route.feedId;
      if (this.route.groupId) {
        const sub = app.subscriptions.find((s) => s.id === u.subscription_id);
        return sub && sub.group_id === this.route.groupId;
      }
      return true;
    });
    if (!inView.length) return;
    const page = await api('GET', '/items' + query({
      filter: this.route.filter,
      feed_id: this.route.feedId,
      group_id: this.route.groupId,
      limit: app.prefs.page_size || 50,
    }));
    if (this.destroyed) return;
    const fresh = ((page && page.items) || []).filter((item) => !this.byId.has(item.id)).length;
    if (!fresh) return;
    const label = fresh + (page.has_more && fresh === page.items.length ? '+' : '') + (fresh === 1 ? ' new item' : ' new items');
    replace(this.newBar, h('button', { type: 'button', class: 'button primary', onclick: () => this.showNew() }, icon('refresh'), label));
    this.newBar.hidden = false;
  }

  /** Shows the new items: the list reloads from the top, where they are. */
  async showNew() {
    this.newBar.hidden = true;
    replace(this.newBar);
    const root = this.scrollRoot() || document.scrollingElement;
    root.scrollTop = 0;
    await this.reload();
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
    return 'Bookmarks';
  }

  async render() {
    this.listEl = h('ul', { class: 'items', 'aria-label': 'Bookmarks' });
    replace(this.root,
      h('div', { class: 'list-header' },
        h('div', { class: 'list-title-row' },
          h('a', { class: 'icon-button only-phone', href: '#feeds', 'aria-label': 'Back to the feeds', onclick: (e) => { e.preventDefault(); app.showPane('feeds'); } }, icon('back')),
          h('h1', { class: 'list-title', id: 'list-title' }, 'Bookmarks'))),
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
      this.listEl.replaceWith(h('p', { class: 'empty' }, 'No bookmarks match “' + this.route.q + '”.'));
      return;
    }
    if (!this.items.length) {
      this.listEl.replaceWith(h('p', { class: 'empty' }, 'No bookmarks yet. Open an item and choose Bookmark to keep a copy of it.'));
      return;
    }
    for (const b of this.items) {
      const bodyId = 'bookmark-body-' + b.id;
      const body = h('div', { class: 'item-body', id: bodyId, hidden: true });
      const toggle = h('button', { type: 'button', class: 'item-toggle', 'aria-expanded': 'false', 'aria-controls': bodyId },
        h('span', { class: 'item-text' },
          h('span', { class: 'item-title' }, b.title || '(untitled)'),
          h('span', { class: 'item-meta' }, (b.feed_title || '') + (b.published_at ? ' · ' + shortDate(b.published_at) : ''))));
      const li = h('li', { class: 'item is-read', dataset: { id: b.id } },
        h('article', null, h('div', { class: 'item-head' }, toggle,
          h('button', { type: 'button', class: 'icon-button', 'aria-label': 'Delete bookmark', title: 'Delete bookmark', onclick: () => this.remove(b, li) }, icon('close'))),
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
      const content = h('div', { class: 'item-content' });
      content.innerHTML = b.content || '';
      for (const link of content.querySelectorAll('a[href]')) {
        link.target = '_blank';
        link.rel = 'noopener noreferrer';
      }
      replace(body, content, h('div', { class: 'item-tools' },
        b.url ? h('a', { class: 'button', href: b.url, target: '_blank', rel: 'noopener noreferrer' }, icon('external'), 'Open original') : null));
    }
  }

  async remove(b, li) {
    if (!(await confirmDialog('Delete this bookmark?', 'The saved copy of “' + (b.title || 'this item') + '” is removed.', 'Delete bookmark'))) return;
    try {
      await api('DELETE', '/bookmarks/' + b.id);
      li.remove();
      this.items = this.items.filter((x) => x !== b);
    } catch (e) {
      showError(e, 'The bookmark was not deleted');
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
