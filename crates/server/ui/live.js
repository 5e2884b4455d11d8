// Live updates: counts and the current list keep up with new items by themselves (F51).

import { app } from './state.js';
import { api, query } from './api.js';

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
