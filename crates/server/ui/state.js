// The state every view shares: who is signed in, their preferences, subscriptions, groups
// and counts, and the current views. Modules import this, never app.js: app.js installs the
// few behaviours that need the router or the dialogs (navigate, savePrefs, applyPrefs,
// signOut) with `installBehaviours`, so every import points away from app.js.

import { api } from './api.js';
import { compareNames } from './i18n.js';

const DEFAULT_PREFS = {
  theme: 'auto',
  page_size: 50,
  show_images: true,
  mark_read_on_open: true,
  mark_read_on_scroll: false,
  default_view: 'unread',
  summarize: 'on_demand',
  language: 'auto',
};

/** Everything the views share. */
/** What app.js provides: drawing the current URL, saving and applying preferences, signing out. */
const behaviours = {
  render() {},
  savePrefs: async () => false,
  applyPrefs() {},
  signOut: async () => {},
};

/** Called once by app.js with the behaviours that need the router or the dialogs. */
export function installBehaviours(provided) {
  Object.assign(behaviours, provided);
}

export const app = {
  me: null,
  prefs: { ...DEFAULT_PREFS },
  subscriptions: [],
  groups: [],
  starredCount: null,
  /** The server's time of the last counts, for "what arrived since" (live updates). */
  countsAsOf: null,
  route: null,
  sidebar: null,
  list: null,
  main: null,
  layoutReady: false,

  /** Goes to `url` inside the app, adding a history entry unless `replace`. */
  navigate(url, options = {}) {
    if (options.replace) history.replaceState(null, '', url);
    else history.pushState(null, '', url);
    behaviours.render();
  },

  /** Saves preference changes, applying them first and undoing them if the server refuses. */
  savePrefs(changes) {
    return behaviours.savePrefs(changes);
  },

  /** Applies the preferences to the page (theme, images). */
  applyPrefs() {
    behaviours.applyPrefs();
  },

  /** Signs out and goes to the sign-in page. */
  signOut() {
    return behaviours.signOut();
  },

  /** The subscription with this feed id. */
  subscriptionByFeed(feedId) {
    return this.subscriptions.find((s) => s.feed_id === feedId) || null;
  },

  /** Reloads subscriptions and groups, then redraws the left pane. */
  async reloadFeeds(options = {}) {
    const [subs, groups] = await Promise.all([
      api('GET', '/subscriptions', null, options),
      api('GET', '/groups', null, options).catch(() => null),
    ]);
    // Numbers by value: the server's order is as text ("Feed 1, 10, 2").
    this.subscriptions = ((subs && subs.subscriptions) || []).sort((a, b) => compareNames(a.title, b.title));
    this.groups = (groups && groups.groups) || [];
    if (this.sidebar) this.sidebar.render();
  },

  /** Reloads the unread counts in one cheap call and redraws the left pane. */
  async reloadCounts() {
    let counts;
    try {
      counts = await api('GET', '/counts');
    } catch (e) {
      return this.reloadFeeds();
    }
    const bySubscription = new Map();
    for (const c of (counts && counts.subscriptions) || []) {
      bySubscription.set(c.subscription_id, c.unread !== undefined ? c.unread : c.unread_count);
    }
    for (const s of this.subscriptions) {
      if (bySubscription.has(s.id)) s.unread_count = bySubscription.get(s.id);
    }
    if (counts && typeof counts.starred === 'number') this.starredCount = counts.starred;
    if (counts && counts.as_of) this.countsAsOf = counts.as_of;
    if (this.sidebar) this.sidebar.render();
  },

  /** Changes a subscription's unread count by `delta` (optimistic updates). */
  adjustUnread(feedId, delta) {
    const sub = this.subscriptionByFeed(feedId);
    if (sub) {
      sub.unread_count = Math.max(0, (sub.unread_count || 0) + delta);
      if (this.sidebar) this.sidebar.updateCounts();
    }
  },

  adjustStarred(delta) {
    if (typeof this.starredCount === 'number') {
      this.starredCount = Math.max(0, this.starredCount + delta);
      if (this.sidebar) this.sidebar.updateCounts();
    }
  },

  /** Shows the left pane (feeds) or the right pane (items) on a phone-sized screen. */
  showPane(pane) {
    document.body.dataset.pane = pane;
  },
};
