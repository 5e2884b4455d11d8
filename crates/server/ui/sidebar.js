// The left pane of groups and feeds: the views (all items, starred, hot, bookmarks), the
// groups with their feeds and unread counts, stopped feeds, and the reader's frequent tags.

import { app } from './state.js';
import { api } from './api.js';
import { h, icon, replace } from './dom.js';
import { withPart } from './lazy.js';
import { t, tParts } from './i18n.js';

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

/** The keys of a failing feed's state, with its error. */
const STATUS_WORDS = { backoff: 'feed.backoff', stopped: 'feed.stopped' };

/** Calls `use` with feed-status.js, loaded the first time (what a state's icon says when clicked). */
const feedStatus = (use) => withPart(t('part.feed_status'), (retry) => import('./feed-status.js' + retry), use);

/** Tags the left pane lists. */
const SIDEBAR_TAGS = 20;

/** The page of a tag's items. */
export function tagPath(name) {
  return '/tags/' + encodeURIComponent(name);
}

/** The address of the pane's entry for `route` (the one marked current), or null. */
function routeHref(r) {
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

  markCurrent() {
    const href = routeHref(this.selection);
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
      badge.setAttribute('aria-label', key === 'starred' ? t('count.starred', { count: n }) : t('count.unread', { count: n }));
    }
  }

  /** Draws the whole pane again from `app.subscriptions` and `app.groups`. */
  render() {
    const stopped = app.subscriptions.filter((s) => s.status === 'stopped').length;
    const resumeAll = stopped
      ? h('div', { class: 'stopped-feeds', role: 'note' },
        icon('stop'),
        h('span', null, t('feed.stopped_count', { count: stopped })),
        h('button', { type: 'button', class: 'button', id: 'resume-all-stopped', onclick: (e) => { const button = e.currentTarget; feedStatus((m) => m.resumeAllStopped(button)); } }, t('feed.resume_all')))
      : null;
    const empty = !app.subscriptions.length
      ? h('div', { class: 'empty-feeds' },
        h('p', null, t('sidebar.no_feeds')),
        h('p', null, tParts('sidebar.no_feeds_how', { subscribe: h('strong', null, t('nav.subscribe')), settings: h('a', { href: '/settings', 'data-link': '' }, t('page.settings')) })))
      : null;
    replace(this.root,
      topEntries(),
      h('h2', { class: 'pane-heading' }, t('sidebar.subscriptions')),
      resumeAll,
      empty,
      h('ul', { class: 'group-list', 'aria-label': t('sidebar.groups') }, this.groupSections()),
      this.tagsSection(),
    );
    this.updateCounts();
    this.markCurrent();
  }

  /** One entry a group, in the groups' order, each with its feeds by title. */
  groupSections() {
    const groups = app.groups.length
      ? [...app.groups].sort((a, b) => (a.position || 0) - (b.position || 0))
      : [{ id: null, name: t('nav.feeds'), is_default: true }];
    const byGroup = new Map();
    for (const sub of app.subscriptions) {
      const key = app.groups.length ? sub.group_id : null;
      if (!byGroup.has(key)) byGroup.set(key, []);
      byGroup.get(key).push(sub);
    }
    const sections = [];
    for (const group of groups) {
      const subs = byGroup.get(group.id) || [];
      if (!subs.length && group.is_default) continue;
      sections.push(this.groupSection(group, subs));
    }
    return sections;
  }

  /** A group's entry: its toggle (collapsed groups are remembered), its link and its feeds. */
  groupSection(group, subs) {
    const collapsed = this.collapsed.has(String(group.id));
    const listId = 'group-' + group.id;
    const toggle = h('button', {
      type: 'button',
      class: 'group-toggle',
      'aria-expanded': collapsed ? 'false' : 'true',
      'aria-controls': listId,
      'aria-label': t(collapsed ? 'sidebar.expand' : 'sidebar.collapse', { group: group.name }),
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
    return h('li', { class: 'group' + (collapsed ? ' collapsed' : '') },
      h('div', { class: 'group-head' }, toggle, heading),
      h('ul', { class: 'feed-list', id: listId, hidden: collapsed, 'aria-label': group.name }, subs.map((s) => feedEntry(s))),
    );
  }

  /** The most frequent tags of the reader's items (last 30 days), kept across renders. */
  tagsSection() {
    if (!this.tagsEl) {
      this.tagsEl = h('section', { class: 'tag-section', hidden: true, 'aria-labelledby': 'tags-heading' });
      loadTags(this.tagsEl).then((shown) => {
        if (shown) this.markCurrent();
      });
    }
    return this.tagsEl;
  }
}

/** Fills the tags' `section`; answers whether it could (the tags are a convenience: the pane works without them). */
async function loadTags(section) {
  let answer;
  try {
    answer = await api('GET', '/tags?limit=' + SIDEBAR_TAGS);
  } catch (e) {
    return false;
  }
  const tags = answer.tags || [];
  section.hidden = !tags.length;
  replace(section,
    h('h2', { class: 'pane-heading', id: 'tags-heading' }, t('sidebar.tags')),
    h('ul', { class: 'tag-cloud' }, tags.map((t) => h('li', null,
      h('a', { class: 'feed-link tag-link', href: tagPath(t.name), 'data-link': '', 'data-pane': 'main', dataset: { key: tagPath(t.name) } },
        h('span', { class: 'feed-title' }, t.name), h('span', { class: 'count' }, String(t.count)))))));
  return true;
}

/** The views above the groups: all items, starred, hot and bookmarks. */
function topEntries() {
  return h('ul', { class: 'feed-list top-entries', 'aria-label': t('sidebar.views') },
    h('li', { class: 'feed' }, h('a', { class: 'feed-link', href: '/all', 'data-link': '', 'data-pane': 'main', dataset: { key: '/all' } },
      icon('menu', 'favicon'), h('span', { class: 'feed-title' }, t('view.all')), h('span', { class: 'count', 'data-count': 'all' }))),
    h('li', { class: 'feed' }, h('a', { class: 'feed-link', href: '/all?filter=starred', 'data-link': '', 'data-pane': 'main', dataset: { key: '/all?filter=starred' } },
      icon('star', 'favicon'), h('span', { class: 'feed-title' }, t('view.starred')), h('span', { class: 'count', 'data-count': 'starred' }))),
    h('li', { class: 'feed' }, h('a', { class: 'feed-link', href: '/hot', 'data-link': '', 'data-pane': 'main', dataset: { key: '/hot' } },
      icon('flame', 'favicon'), h('span', { class: 'feed-title' }, t('view.hot')))),
    h('li', { class: 'feed' }, h('a', { class: 'feed-link', href: '/bookmarks', 'data-link': '', 'data-pane': 'main', dataset: { key: '/bookmarks' } },
      icon('bookmark', 'favicon'), h('span', { class: 'feed-title' }, t('nav.bookmarks')))),
  );
}

/** A feed's entry: its icon, title and count, and a button that explains a failing feed. */
function feedEntry(sub) {
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
  if (sub.suspended) {
    // Paused by the user: said before any fetch state, which does not matter to them now.
    const detail = t('feed.paused_detail');
    status = h('button', {
      type: 'button',
      class: 'status-icon status-paused',
      'aria-label': sub.title + ' — ' + detail,
      title: detail,
      onclick: () => feedStatus((m) => m.explainStatus(sub)),
    }, icon('pause'));
  } else if (sub.status === 'backoff' || sub.status === 'stopped') {
    const detail = t(STATUS_WORDS[sub.status], { error: sub.last_error || sub.status_reason || t('feed.last_fetch_failed') });
    status = h('button', {
      type: 'button',
      class: 'status-icon status-' + sub.status,
      'aria-label': sub.title + ' — ' + detail,
      title: detail,
      onclick: () => feedStatus((m) => m.explainStatus(sub)),
    }, icon(sub.status === 'stopped' ? 'stop' : 'warning'));
  }
  const state = sub.suspended ? 'paused' : sub.status;
  return h('li', { class: 'feed' + (state !== 'active' ? ' feed-' + state : '') }, link, status);
}
