// Offline reading (issue 34): tidings keeps, in this browser's IndexedDB, the newest unread
// items of the reader's subscriptions with their content (how many is a setting of this
// device, 500 by default), the starred items, and what the first screen reads (the account,
// the preferences, the subscriptions, the groups, the counts). When the server cannot be
// reached, api.js asks this module, which answers from what is kept; marks made meanwhile
// (read, unread, star, unstar, mark all read) change what is kept at once and wait in a queue
// that survives reloads and restarts. They are sent in the order they were made when the
// server answers again, each with the time it was made: a mark made later on another device
// wins (the server drops the older one). Nothing here imports the app: api.js loads it.

import { t } from './i18n.js';

const DB_NAME = 'tidings-offline';
const DB_VERSION = 1;
/** How many unread items are kept when this device has no setting of its own. */
export const DEFAULT_KEEP = 500;
const KEEP_SETTING = 'tidings.offlineItems';
/** When the items were last kept (ms), and how often at most. */
const KEPT_AT = 'tidings.offlineKeptAt';
const KEEP_EVERY_MS = 5 * 60 * 1000;
/** The most starred items kept. */
const MAX_STARRED = 1000;
/** How many MB of the kept items' images this device keeps (0, the default: none). */
const IMAGES_SETTING = 'tidings.offlineImagesMB';
/**
 * Where the kept images are, by their address on this server (`/media`, which the items kept
 * with images point at): the service worker answers from here before the network. Not named
 * `tidings-…`, the prefix of the app's files, which a new build's worker drops.
 */
export const IMAGE_CACHE = 'offline-images';
/** The key, among the kept answers, of the kept images' sizes by address. */
const IMAGE_SIZES = 'images';
let opened = null;

function request(req) {
  return new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

function database() {
  if (!opened) {
    opened = new Promise((resolve, reject) => {
      const req = indexedDB.open(DB_NAME, DB_VERSION);
      req.onupgradeneeded = () => {
        const db = req.result;
        db.createObjectStore('answers');
        db.createObjectStore('items', { keyPath: 'id' });
        db.createObjectStore('queue', { keyPath: 'seq', autoIncrement: true });
      };
      req.onsuccess = () => resolve(req.result);
      req.onerror = () => reject(req.error);
    });
    opened.catch(() => { opened = null; });
  }
  return opened;
}

/** Runs `work(stores)` in one transaction over `names`; answers what it answers. */
async function transaction(names, mode, work) {
  const db = await database();
  return new Promise((resolve, reject) => {
    const tx = db.transaction(names, mode);
    const stores = Object.fromEntries(names.map((name) => [name, tx.objectStore(name)]));
    let result;
    Promise.resolve(work(stores)).then((value) => { result = value; }, reject);
    tx.oncomplete = () => resolve(result);
    tx.onerror = () => reject(tx.error);
    tx.onabort = () => reject(tx.error);
  });
}

/** How many unread items this device keeps for offline reading. */
export function keepLimit() {
  const text = localStorage.getItem(KEEP_SETTING);
  const saved = text === null ? NaN : Number(text);
  return Number.isInteger(saved) && saved >= 0 ? saved : DEFAULT_KEEP;
}

/** Sets how many unread items this device keeps (0 keeps none). */
export function setKeepLimit(n) {
  localStorage.setItem(KEEP_SETTING, String(Math.max(0, Math.min(5000, Math.floor(n) || 0))));
}

/** How many megabytes of images this device keeps with the kept items (0 keeps none). */
export function imageLimitMB() {
  const saved = Number(localStorage.getItem(IMAGES_SETTING));
  return Number.isFinite(saved) && saved > 0 ? Math.min(1000, saved) : 0;
}

/** Sets how many megabytes of images this device keeps (0 keeps none, and drops those kept). */
export function setImageLimitMB(mb) {
  localStorage.setItem(IMAGES_SETTING, String(Math.max(0, Math.min(1000, Math.floor(mb) || 0))));
  if (!imageLimitMB()) keepImages([]).catch(() => {});
}

/**
 * Remembers an answer the server gave. A different account than the one kept means another
 * person signed in on this browser: everything kept for the last one goes first.
 */
export async function remember(path, data) {
  if (data === null || data === undefined) return;
  if (path === '/me') {
    const kept = await transaction(['answers'], 'readonly', (s) => request(s.answers.get('/me')));
    const was = kept && kept.user && kept.user.id;
    if (was && data.user && was !== data.user.id) await forget();
  }
  await transaction(['answers'], 'readwrite', (s) => request(s.answers.put(data, path)));
}

/** Forgets everything kept, marks not yet sent included (at sign-out). */
export async function forget() {
  localStorage.removeItem(KEPT_AT);
  if (typeof caches !== 'undefined') await caches.delete(IMAGE_CACHE).catch(() => false);
  await transaction(['answers', 'items', 'queue'], 'readwrite', (s) => Promise.all([
    request(s.answers.clear()), request(s.items.clear()), request(s.queue.clear()),
  ]));
}

/** Every page of `path` (a listing), up to `most` items, read with `get`. */
async function pages(get, path, most) {
  const items = [];
  let cursor = null;
  while (items.length < most) {
    const limit = Math.min(200, most - items.length);
    const page = await get(path + '&limit=' + limit + (cursor ? '&cursor=' + encodeURIComponent(cursor) : ''));
    items.push(...((page && page.items) || []));
    if (!page || !page.has_more || !page.next_cursor) break;
    cursor = page.next_cursor;
  }
  return items;
}

/**
 * Keeps the newest unread items with their content and the starred ones, replacing what was
 * kept (marks still waiting to be sent are applied to the new copy). `get(path)` reads the
 * API. Answers how many items are kept.
 */
export async function keepItems(get) {
  // With images kept, every image points at this server (`/media`), which can be kept
  // whatever its host allows, and whose size is known.
  const withImages = imageLimitMB() > 0;
  const extra = '&include=content' + (withImages ? '&images=proxied' : '');
  const unread = await pages(get, '/items?filter=unread&order=newest' + extra, keepLimit());
  const starred = await pages(get, '/items?filter=starred&order=newest' + extra, MAX_STARRED);
  const byId = new Map();
  for (const item of [...unread, ...starred]) byId.set(item.id, item);
  const images = withImages ? [...byId.values()].flatMap(imagesOf) : [];
  const waiting = await queued();
  for (const entry of waiting) applyToItems(byId, entry);
  await transaction(['items'], 'readwrite', async (s) => {
    await request(s.items.clear());
    await Promise.all([...byId.values()].map((item) => request(s.items.put(item))));
  });
  // In the background: the items can be read offline at once, their images follow.
  keepImages(images).catch(() => {});
  return byId.size;
}

/**
 * The addresses of an item's images, its thumbnail first. Its HTML loses `srcset`, so that
 * offline the browser asks for the one image kept (`src`) rather than another width.
 */
function imagesOf(item) {
  const found = item.thumbnail_url ? [item.thumbnail_url] : [];
  if (!item.content) return found;
  const html = document.createElement('template');
  html.innerHTML = item.content;
  for (const img of html.content.querySelectorAll('img')) {
    img.removeAttribute('srcset');
    img.removeAttribute('sizes');
    if (img.getAttribute('src')) found.push(new URL(img.getAttribute('src'), location.href).href);
  }
  item.content = html.innerHTML;
  return found;
}

let keepingImages = null;

/**
 * Keeps the images at `urls` (this server's `/media` addresses, newest items' first) up to
 * the device's megabytes, and drops those kept before that are no longer named. An image that
 * does not fit is skipped; those after it may. Answers how many are kept and their bytes.
 */
export function keepImages(urls) {
  // One run at a time: a second waits for the first, then runs with its own list.
  const run = (keepingImages || Promise.resolve()).catch(() => {}).then(() => storeImages(urls));
  keepingImages = run;
  return run;
}

async function storeImages(urls) {
  if (typeof caches === 'undefined') return { kept: 0, bytes: 0 };
  const limit = imageLimitMB() * 1024 * 1024;
  const wanted = [...new Set(urls.filter((u) => u.startsWith(location.origin + '/media?')))];
  const cache = await caches.open(IMAGE_CACHE);
  const sizes = (await kept(IMAGE_SIZES)) || {};
  const keep = new Set(wanted);
  for (const request of await cache.keys()) {
    if (!keep.has(request.url) || !limit) await cache.delete(request);
  }
  const now = {};
  let bytes = 0;
  for (const url of limit ? wanted : []) {
    if (sizes[url] !== undefined && await cache.match(url)) {
      if (bytes + sizes[url] > limit) {
        await cache.delete(url);
        continue;
      }
      now[url] = sizes[url];
      bytes += sizes[url];
      continue;
    }
    if (bytes >= limit) break;
    // Not into the browser's HTTP cache too: what is kept is in IMAGE_CACHE, once.
    const blob = await fetch(url, { credentials: 'same-origin', cache: 'no-store' })
      .then((r) => (r.ok ? r.blob() : null), () => null);
    if (!blob || bytes + blob.size > limit) continue;
    await cache.put(url, new Response(blob, { headers: { 'Content-Type': blob.type || 'application/octet-stream' } }));
    now[url] = blob.size;
    bytes += blob.size;
  }
  await transaction(['answers'], 'readwrite', (s) => request(s.answers.put(now, IMAGE_SIZES)));
  return { kept: Object.keys(now).length, bytes };
}

/** How many images this device keeps, and their bytes. */
export async function keptImages() {
  const sizes = (await kept(IMAGE_SIZES)) || {};
  const values = Object.values(sizes);
  return { kept: values.length, bytes: values.reduce((a, b) => a + b, 0) };
}

/** The marks waiting to be sent, oldest first. */
export function queued() {
  return transaction(['queue'], 'readonly', (s) => request(s.queue.getAll()));
}

/** Applies a queued mark to a map of kept items. */
function applyToItems(byId, entry) {
  if (entry.kind === 'state') {
    const item = byId.get(entry.itemId);
    if (!item) return;
    if (typeof entry.body.is_read === 'boolean') item.is_read = entry.body.is_read;
    if (typeof entry.body.is_starred === 'boolean') item.is_starred = entry.body.is_starred;
  } else if (entry.kind === 'mark-read') {
    for (const item of byId.values()) {
      if (inScope(item, entry.body)) item.is_read = true;
    }
  }
}

/** Whether a mark-read of `body`'s scope (`all`, `feed_id`, `group_id`, each with `before`) takes the item. */
function inScope(item, body, groupOf) {
  if (body.before && Date.parse(item.published_at) >= Date.parse(body.before)) return false;
  if (body.starred && !item.is_starred) return false;
  if (body.feed_id) return item.feed_id === body.feed_id;
  if (body.group_id) return groupOf(item.subscription_id) === body.group_id;
  return !!body.all || !body.feed_id && !body.group_id;
}

async function kept(path) {
  return transaction(['answers'], 'readonly', (s) => request(s.answers.get(path)));
}

async function keptItems() {
  return transaction(['items'], 'readonly', (s) => request(s.items.getAll()));
}

/** The group of each subscription, from the kept list. */
async function groupLookup() {
  const subs = await kept('/subscriptions');
  const groups = new Map(((subs && subs.subscriptions) || []).map((s) => [s.id, s.group_id]));
  return (id) => groups.get(id);
}

/** A listing of the kept items, as `GET /items` answers (newest or oldest first, by pages). */
async function listing(params) {
  const groupOf = await groupLookup();
  const filter = params.get('filter') || 'all';
  const feedId = Number(params.get('feed_id')) || null;
  const groupId = Number(params.get('group_id')) || null;
  let items = (await keptItems()).filter((item) =>
    (filter !== 'unread' || !item.is_read)
    && (filter !== 'starred' || item.is_starred)
    && (!feedId || item.feed_id === feedId)
    && (!groupId || groupOf(item.subscription_id) === groupId));
  const sign = params.get('order') === 'oldest' ? 1 : -1;
  items.sort((a, b) => sign * (Date.parse(a.published_at) - Date.parse(b.published_at) || a.id - b.id));
  const start = Number((params.get('cursor') || '').replace('kept:', '')) || 0;
  const limit = Math.min(200, Number(params.get('limit')) || 50);
  const page = items.slice(start, start + limit);
  const more = start + limit < items.length;
  return { items: page, has_more: more, next_cursor: more ? 'kept:' + (start + limit) : null };
}

/**
 * Answers a request the server could not be reached for from what is kept, or `undefined`
 * when nothing kept answers it (the caller then reports the server as unreachable); says so
 * on the page when it answers.
 */
export async function answer(method, path, body) {
  const kept = await keptAnswer(method, path, body);
  if (kept !== undefined && !readingKept) {
    readingKept = true;
    showOffline(true, backOnline);
  }
  return kept;
}

/** What the first screen reads, kept as answered for opening the app offline. */
const KEPT = new Set(['/me', '/preferences', '/subscriptions', '/groups', '/counts']);

/** Whether the app is reading what this device kept, since the server could not be reached. */
let readingKept = false;
let flushing = false;
let onBack = null;

/** Registers what to do when the server answers again after the app read what was kept. */
export function whenBackOnline(handler) {
  onBack = handler;
}

/**
 * The server answered `path` with `data`: kept if the first screen reads it, and if the app
 * was reading what was kept, it is back online.
 */
export function answered(path, data) {
  if (readingKept) backOnline();
  return KEPT.has(path) ? remember(path, data) : undefined;
}

/**
 * The server answers again: the marks made offline go first, then the app reloads. While some
 * cannot be sent yet, the app stays offline and tries again.
 */
async function backOnline() {
  if (!readingKept || flushing) return;
  flushing = true;
  try {
    const { left } = await flush();
    if (left > 0) return;
    readingKept = false;
    showOffline(false);
    if (onBack) onBack();
  } catch (e) {
    // Tried again with the next answer or the next retry.
  } finally {
    flushing = false;
  }
}

/** What this device kept for the request, or undefined. */
async function keptAnswer(method, path, body) {
  const url = new URL(path, 'http://kept');
  if (method === 'GET') {
    if (!url.pathname.startsWith('/items')) return kept(url.pathname);
    if (url.pathname === '/items' && !url.searchParams.get('q')) return listing(url.searchParams);
    const one = url.pathname.match(/^\/items\/(\d+)$/);
    if (one) {
      const item = await transaction(['items'], 'readonly', (s) => request(s.items.get(Number(one[1]))));
      return item ? { item } : undefined;
    }
    if (url.pathname === '/items/updated-feeds') return { subscriptions: [] };
    return undefined;
  }
  const state = url.pathname.match(/^\/items\/(\d+)\/state$/);
  if (method === 'PUT' && state && body) return markOffline('state', Number(state[1]), body);
  if (method === 'POST' && url.pathname === '/items/mark-read' && body) {
    if (Array.isArray(body.ids)) {
      for (const id of body.ids) await markOffline('state', id, { is_read: true });
      return { marked: body.ids.length, undo: null };
    }
    return markOffline('mark-read', null, body);
  }
  return undefined;
}

/** Queues a mark made offline and applies it to what is kept, counts included. */
async function markOffline(kind, itemId, body) {
  const entry = { kind, itemId, body: { ...body }, at: new Date().toISOString() };
  const groupOf = kind === 'mark-read' ? await groupLookup() : null;
  return transaction(['answers', 'items', 'queue'], 'readwrite', async (s) => {
    await request(s.queue.add(entry));
    const countsAnswer = await request(s.answers.get('/counts'));
    const bySub = new Map(((countsAnswer && countsAnswer.subscriptions) || []).map((c) => [c.subscription_id, c]));
    const adjust = (item, wasRead, wasStarred) => {
      const c = bySub.get(item.subscription_id);
      if (c && wasRead !== item.is_read) c.unread = Math.max(0, c.unread + (item.is_read ? -1 : 1));
      if (countsAnswer && typeof countsAnswer.starred === 'number' && wasStarred !== item.is_starred) {
        countsAnswer.starred += item.is_starred ? 1 : -1;
      }
    };
    let result = null;
    if (kind === 'state') {
      const item = await request(s.items.get(itemId));
      if (item) {
        const [wasRead, wasStarred] = [item.is_read, item.is_starred];
        applyToItems(new Map([[itemId, item]]), entry);
        adjust(item, wasRead, wasStarred);
        await request(s.items.put(item));
        result = { item_id: itemId, is_read: item.is_read, is_starred: item.is_starred };
      } else {
        // Not kept (an item read and not starred): the mark waits all the same.
        const given = (value) => (typeof value === 'boolean' ? value : null);
        result = { item_id: itemId, is_read: given(body.is_read), is_starred: given(body.is_starred) };
      }
    } else {
      let marked = 0;
      for (const item of await request(s.items.getAll())) {
        if (item.is_read || !inScope(item, body, groupOf)) continue;
        item.is_read = true;
        adjust(item, false, item.is_starred);
        await request(s.items.put(item));
        marked += 1;
      }
      result = { marked, undo: null };
    }
    if (countsAnswer) await request(s.answers.put(countsAnswer, '/counts'));
    return result;
  });
}

/**
 * Sends the marks made offline, oldest first, each with the time it was made. A mark the
 * server refuses for good (the item is gone: 404; 400) is dropped; one it cannot take now
 * (no network, 429, 5xx) stays, with everything after it, for the next try. Answers how many
 * were sent and how many wait still.
 */
export async function flush() {
  let sent = 0;
  let left = 0;
  const waiting = await queued();
  for (const [n, entry] of waiting.entries()) {
    left = waiting.length - n;
    const [method, path, body] = entry.kind === 'state'
      ? ['PUT', '/items/' + entry.itemId + '/state', { ...entry.body, at: entry.at }]
      : ['POST', '/items/mark-read', entry.body];
    let response;
    try {
      response = await fetch('/api/v1' + path, {
        method,
        credentials: 'same-origin',
        headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
        body: JSON.stringify(body),
      });
    } catch (e) {
      break;
    }
    if (response.status === 429 || response.status >= 500 || response.status === 401) break;
    await transaction(['queue'], 'readwrite', (s) => request(s.queue.delete(entry.seq)));
    sent += 1;
    left -= 1;
  }
  return { sent, left };
}

let banner = null;
let retry = null;

/**
 * Shows or hides what says the app is reading what this device kept. While it shows, the
 * server is tried again now and then; `onBack` runs when it answers.
 */
export function showOffline(on, onBack) {
  document.documentElement.classList.toggle('offline', on);
  if (on && !banner) {
    banner = document.createElement('div');
    banner.className = 'offline-banner';
    banner.setAttribute('role', 'status');
    banner.textContent = t('banner.offline');
    document.body.prepend(banner);
  } else if (!on && banner) {
    banner.remove();
    banner = null;
  }
  if (on && !retry && onBack) {
    retry = setInterval(() => {
      fetch('/healthz', { cache: 'no-store' }).then((r) => { if (r.ok) onBack(); }, () => {});
    }, 15000);
  } else if (!on && retry) {
    clearInterval(retry);
    retry = null;
  }
}

/**
 * Starts offline reading once the app is up: registers the service worker, sends what was
 * marked offline, then keeps a fresh copy of the items (`get` reads the API). Answers how
 * many marks were sent.
 */
export async function start(get) {
  if ('serviceWorker' in navigator) {
    navigator.serviceWorker.register('/sw.js').catch(() => {});
  }
  const { sent } = await flush();
  // A fresh copy at most every few minutes: every reload would otherwise download the
  // kept items' content again.
  const last = Number(localStorage.getItem(KEPT_AT)) || 0;
  if (sent || Date.now() - last > KEEP_EVERY_MS) {
    await keepItems(get);
    localStorage.setItem(KEPT_AT, String(Date.now()));
  }
  return sent;
}
