// Live updates: counts and the current list keep up with new items by themselves (F51).

import { app } from './state.js';
import { api, query } from './api.js';
import { h, icon, replace } from './dom.js';
import { t } from './i18n.js';

/** How often counts and the current list look for news while the page is visible. */
const LIVE_POLL_MS = 30000;

let livePoll = null;
let lastLook = 0;

/** Looks once for news: fresh counts, and new items in the current list. */
async function lookForNews() {
  if (!app.me || !app.sidebar) return;
  lastLook = Date.now();
  const since = app.countsAsOf;
  try {
    await app.reloadCounts();
    // The item list (ItemList), not the bookmarks' list.
    if (!since || !app.list || !app.list.newBar) return;
    const updated = await api('GET', '/items/updated-feeds' + query({ since }));
    if (updated && updated.subscriptions.length) await checkArrivals(app.list, updated.subscriptions);
  } catch (e) {
    // A missed look is made up by the next one.
  }
}

/**
 * Told which subscriptions received items since the last look, checks whether `list` lists
 * new ones, and offers them behind a bar instead of moving the list under the reader.
 */
async function checkArrivals(list, updated) {
  const route = list.route;
  if (list.destroyed || route.filter === 'starred' || route.q || list.loading) return;
  const inView = updated.filter((u) => {
    if (route.feedId) return u.feed_id === route.feedId;
    if (route.groupId) {
      const sub = app.subscriptions.find((s) => s.id === u.subscription_id);
      return sub && sub.group_id === route.groupId;
    }
    return true;
  });
  if (!inView.length) return;
  const page = await api('GET', '/items' + query({
    filter: route.filter,
    feed_id: route.feedId,
    group_id: route.groupId,
    limit: app.prefs.page_size || 50,
  }));
  if (list.destroyed) return;
  const fresh = ((page && page.items) || []).filter((item) => !list.byId.has(item.id)).length;
  if (!fresh) return;
  const more = page.has_more && fresh === page.items.length;
  const label = t(more ? 'list.new_items_more' : 'list.new_items', { count: fresh });
  replace(list.newBar, h('button', { type: 'button', class: 'button primary', onclick: () => showNew(list) }, icon('refresh'), label));
  list.newBar.hidden = false;
}

/** Shows the new items: the list reloads from the top, where they are. */
async function showNew(list) {
  list.newBar.hidden = true;
  replace(list.newBar);
  const root = list.scrollRoot() || document.scrollingElement;
  root.scrollTop = 0;
  await list.reload();
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
