// The app: who is signed in, their preferences, subscriptions and groups, the layout of the
// two panes, and the router that maps every URL to a view (so reload and back work).

import { api, offline, query, whenRateLimited, whenSignedOut } from './api.js';
import { app, installBehaviours } from './state.js';
import { rememberedPreference, t, useLanguage } from './i18n.js';
import { h, icon, replace } from './dom.js';
import { showError, toast } from './dialogs.js';
import { later, withPart } from './lazy.js';
import { Sidebar } from './sidebar.js';
import { ItemList } from './item-list.js';
import { installKeys, openShortcuts } from './keys.js';
import { createSearchBox } from './search.js';

// The first screen — the feeds, the items and the keys — is imported above; every other view
// and dialog is loaded when first opened (lazy.js), with the `import()` written where it is
// used so that the graph of modules stays readable and checked (src/ui.rs).

/** Views without the signed-in layout. */
const PUBLIC_VIEWS = new Set(['login', 'setup']);

/** Saves preference changes, applying them first and undoing them if the server refuses. */
async function savePrefs(changes) {
  const before = { ...app.prefs };
  Object.assign(app.prefs, changes);
  applyPrefs();
  try {
    const saved = await api('PUT', '/preferences', changes);
    if (saved) Object.assign(app.prefs, saved.preferences || saved);
    applyPrefs();
  } catch (e) {
    app.prefs = before;
    applyPrefs();
    showError(e, t('prefs.not_saved'));
    return false;
  }
  // Every view reads its words as it draws: a new language draws the page again.
  if (changes.language) {
    await useLanguage(app.prefs.language).catch((e) => showError(e, t('prefs.not_saved')));
    app.layoutReady = false;
    render();
  }
  return true;
}

function applyPrefs() {
  // theme.js (loaded before the first paint) owns the resolution of "auto" to light or
  // dark and remembers the choice for the next visit.
  window.tidingsTheme.set(app.prefs.theme);
  document.body.classList.toggle('no-images', app.prefs.show_images === false);
  const button = document.getElementById('theme-button');
  if (button) updateThemeButton(button);
}

function parseRoute() {
  const path = location.pathname.replace(/\/+$/, '') || '/';
  const params = new URLSearchParams(location.search);
  const item = Number(params.get('item')) || null;
  let m;
  if (path === '/login') return { name: 'login' };
  if (path === '/setup') return { name: 'setup', token: params.get('token') || '' };
  if (path === '/settings') return { name: 'settings' };
  if (path === '/account') return { name: 'account' };
  if (path === '/notifications') return { name: 'notifications' };
  if (path === '/rules') {
    // An item's "Hide items like this" arrives with its feed and words.
    const feed = Number(params.get('feed')) || null;
    const words = (params.get('q') || '').trim();
    return { name: 'rules', start: feed || words ? { scope: feed ? { feed_id: feed } : {}, query: words, actions: ['hide'] } : null };
  }
  if (path === '/admin') return { name: 'admin' };
  const q = (params.get('q') || '').trim();
  if (path === '/bookmarks') return { name: 'bookmarks', item, q };
  if ((m = path.match(/^\/feeds\/(\d+)\/settings$/))) return { name: 'feed-settings', feedId: Number(m[1]) };
  const filter = ['all', 'unread', 'starred'].includes(params.get('filter')) ? params.get('filter') : null;
  const route = { name: 'items', filter, item, feedId: null, groupId: null, tag: null, hot: null, q };
  if ((m = path.match(/^\/feeds\/(\d+)$/))) route.feedId = Number(m[1]);
  else if ((m = path.match(/^\/groups\/(\d+)$/))) route.groupId = Number(m[1]);
  else if ((m = path.match(/^\/tags\/([^/]+)$/))) route.tag = tagName(m[1]);
  else if (path === '/hot') route.hot = HOT_WINDOWS.includes(params.get('window')) ? params.get('window') : HOT_WINDOWS[0];
  return route;
}

/** The hot list's windows, as `GET /items/hot` names them; the first is the default. */
const HOT_WINDOWS = ['24h', '7d', '30d'];

/** A tag's name from its address, spelled as the server names tags (NFKC, lower case). */
function tagName(segment) {
  let name = segment;
  try {
    name = decodeURIComponent(segment);
  } catch (e) {
    // A malformed escape: the server reads the segment as it is.
  }
  return name.normalize('NFKC').toLowerCase().trim();
}

/** The theme button's words for each theme. */
const THEME_LABELS = { auto: 'theme.auto', light: 'theme.light', dark: 'theme.dark' };

function updateThemeButton(button) {
  const theme = THEME_LABELS[app.prefs.theme] ? app.prefs.theme : 'auto';
  const label = t(THEME_LABELS[theme]);
  button.setAttribute('aria-label', t('theme.change', { theme: label }));
  button.title = label;
  replace(button, icon(theme === 'dark' ? 'moon' : theme === 'light' ? 'sun' : 'contrast'));
}

/** Cycles the theme: system → light → dark → system. */
export function cycleTheme() {
  const order = ['auto', 'light', 'dark'];
  const next = order[(order.indexOf(app.prefs.theme) + 1) % order.length];
  return app.savePrefs({ theme: next });
}

/**
 * Searches `text` in what is shown: the list's feed, group and filter, or the bookmarks; an
 * empty text goes back to the plain list. The first search of a list adds a history entry
 * (Back returns to the list); refining it replaces that entry.
 */
function runSearch(text) {
  const route = app.route || {};
  const options = { replace: Boolean(route.q) };
  if (route.name === 'bookmarks') {
    app.navigate('/bookmarks' + query({ q: text }), options);
    return;
  }
  const list = route.name === 'items' && app.list && app.list.basePath ? app.list : null;
  const base = list ? list.basePath() : '/all';
  const filter = list ? list.route.filter : 'all';
  app.showPane('main');
  app.navigate(base + query({ filter, q: text }), options);
}

/** The subscribe dialog, which offers to scrape a page without a feed instead. */
function openSubscribe() {
  const onScrape = (url) => withPart(t('part.scrape'), (retry) => import('./scrape.js' + retry), (scrape) => scrape.openScrape({ url }));
  return withPart(t('part.subscribe'), (retry) => import('./subscribe.js' + retry), (subscribe) => subscribe.openSubscribe({ onScrape }));
}

function buildLayout(root) {
  // Kept on `app` so that the `/` shortcut can focus it.
  app.search = createSearchBox({ onSearch: runSearch });
  const themeButton = h('button', { type: 'button', class: 'icon-button', id: 'theme-button', onclick: () => cycleTheme() });
  updateThemeButton(themeButton);
  const nav = h('nav', { id: 'feeds', class: 'pane pane-feeds', 'aria-label': t('nav.feeds') });
  const main = h('main', { id: 'main', class: 'pane pane-main', tabindex: '-1' });
  replace(
    root,
    h('a', { class: 'skip-link', href: '#main' }, t('nav.skip')),
    h(
      'header',
      { class: 'topbar' },
      h('a', { class: 'brand', href: '/', 'data-link': '' }, icon('feed', 'brand-mark'), h('span', null, 'tidings')),
      app.search.element,
      h('span', { class: 'topbar-spacer' }),
      h('button', { type: 'button', class: 'button primary', id: 'subscribe-button', onclick: () => openSubscribe() },
        icon('plus'), h('span', { class: 'label-wide' }, t('nav.subscribe'))),
      themeButton,
      h('button', { type: 'button', class: 'icon-button', 'aria-label': t('nav.shortcuts'), title: t('nav.shortcuts_key'), onclick: () => openShortcuts() }, icon('keyboard')),
      h('a', { class: 'icon-button', href: '/settings', 'data-link': '', 'aria-label': t('page.settings'), title: t('page.settings') }, icon('gear')),
    ),
    h('div', { class: 'panes' }, nav, main),
  );
  app.main = main;
  app.sidebar = new Sidebar(nav);
  app.layoutReady = true;
}

async function loadSession() {
  // Everything the first screen needs is asked for at once: one round trip, not three.
  const quiet = { quiet401: true };
  const me = api('GET', '/me', null, quiet);
  const prefs = api('GET', '/preferences', null, quiet).catch(() => null);
  const feeds = app.reloadFeeds(quiet).catch((e) => e);
  try {
    app.me = (await me).user;
  } catch (e) {
    if (e.status === 401) return false;
    throw e;
  }
  const [loaded, feedsError] = await Promise.all([prefs, feeds]);
  if (feedsError) throw feedsError;
  if (loaded) Object.assign(app.prefs, loaded.preferences || loaded);
  // The account's language may differ from the one remembered here (a new device).
  await useLanguage(app.prefs.language || 'auto').catch(() => false);
  app.applyPrefs();
  app.reloadCounts();
  startOffline();
  return true;
}

/** Offline reading (offline.js): started once the reader is up; back online, the lists reload. */
function startOffline() {
  offline().then((m) => {
    m.whenBackOnline(() => {
      app.reloadFeeds().then(() => app.reloadCounts()).catch(() => {});
      m.start(keptRead).catch(() => {});
    });
    return m.start(keptRead);
  }).catch(() => {});
}

/** A read for offline.js to keep: from the server only. */
const keptRead = (path) => api('GET', path, null, { quiet401: true, fresh: true });

/** The settings pages: the key of their title and the name of the function of settings.js that draws them. */
const PAGES = {
  settings: ['page.settings', 'renderSettings'],
  account: ['page.account', 'renderAccount'],
  notifications: ['page.notifications', 'renderNotifications'],
  rules: ['page.rules', 'renderRules'],
  admin: ['page.users', 'renderAdmin'],
  'feed-settings': ['page.feed_settings', 'renderFeedSettings'],
};

let renderToken = 0;

/**
 * Loads the part a view needs (lazy.js), saying so in `root` meanwhile. Answers its module,
 * or null when another view was asked for meanwhile or the load failed: then `root` shows the
 * error and a button to try again.
 */
async function viewPart(token, root, name, load) {
  replace(root, h('p', { class: 'boot-note' }, h('span', { class: 'spinner', 'aria-hidden': 'true' }), t('common.loading')));
  try {
    const part = await later(name, load);
    return token === renderToken ? part : null;
  } catch (e) {
    if (token === renderToken) {
      replace(root, h('div', { class: 'inline-error part-error', role: 'alert' },
        h('strong', null, e.message), ' ', e.action, ' ',
        h('button', { type: 'button', class: 'button', onclick: () => render() }, t('common.try_again'))));
    }
    return null;
  }
}

/** Draws the sign-in or the setup page, without the signed-in layout. */
async function renderPublic(token, root, route) {
  app.layoutReady = false;
  app.sidebar = null;
  if (app.list) app.list.destroy();
  app.list = null;
  const auth = await viewPart(token, root, t('part.sign_in'), (retry) => import('./auth.js' + retry));
  if (!auth) return;
  if (route.name === 'login') auth.renderSignIn(root, onSignedIn);
  else auth.renderSetup(root, route.token, onSignedIn);
}

/** Draws the right pane of a signed-in view: a list, the bookmarks or a settings page. */
async function renderMain(token, route) {
  const main = app.main;
  switch (route.name) {
    case 'items':
      if (app.list) {
        app.list.applyRoute(route);
      } else {
        if (!route.filter) route.filter = app.prefs.default_view || 'unread';
        app.list = new ItemList(main, route);
      }
      document.title = app.list.title() + ' · tidings';
      break;
    case 'bookmarks': {
      document.title = t('nav.bookmarks') + ' · tidings';
      const bookmarks = await viewPart(token, main, t('part.bookmarks'), (retry) => import('./bookmarks.js' + retry));
      if (bookmarks) app.list = new bookmarks.BookmarkList(main, route);
      break;
    }
    default: {
      const [title, draw] = PAGES[route.name];
      document.title = t(title) + ' · tidings';
      const settings = await viewPart(token, main, t('part.settings'), (retry) => import('./settings.js' + retry));
      if (!settings) return;
      if (route.name === 'feed-settings') settings[draw](main, route.feedId);
      else if (route.name === 'rules') settings[draw](main, route.start);
      else settings[draw](main);
    }
  }
}

/** Draws the view of the current URL. */
export async function render() {
  const token = ++renderToken;
  const route = parseRoute();
  app.route = route;
  const root = document.getElementById('app');
  root.classList.remove('booting');
  root.removeAttribute('aria-busy');

  if (PUBLIC_VIEWS.has(route.name)) {
    await renderPublic(token, root, route);
    return;
  }
  if (!app.me) {
    let signedIn = false;
    try {
      signedIn = await loadSession();
    } catch (e) {
      replace(root, h('div', { class: 'boot-note' }, h('p', null, e.message), h('p', null, e.action || '')));
      return;
    }
    if (token !== renderToken) return;
    if (!signedIn) {
      const next = location.pathname + location.search;
      history.replaceState(null, '', '/login' + (next !== '/' ? '?next=' + encodeURIComponent(next) : ''));
      return render();
    }
  }
  if (!app.layoutReady) buildLayout(root);
  app.search.show(route.q);
  app.sidebar.setSelection(route);
  if (app.list && (route.name !== 'items' || !app.list.sameView(route))) {
    app.list.destroy();
    app.list = null;
  }
  await renderMain(token, route);
}

function onSignedIn(user) {
  app.me = null;
  app.layoutReady = false;
  const params = new URLSearchParams(location.search);
  const next = params.get('next');
  const target = next && next.startsWith('/') && !next.startsWith('//') ? next : '/';
  if (user) app.me = null;
  app.navigate(target, { replace: true });
}

/** Signs out and goes to the sign-in page. */
async function signOut() {
  try {
    await api('DELETE', '/session');
  } catch (e) {
    // The session may already be gone; the sign-in page is right either way.
  }
  // What this device kept for offline reading is the account's: it goes with the session.
  await offline().then((m) => m.forget()).catch(() => {});
  app.me = null;
  app.layoutReady = false;
  app.navigate('/login', { replace: true });
}

whenSignedOut(() => {
  if (PUBLIC_VIEWS.has(app.route && app.route.name)) return;
  app.me = null;
  app.layoutReady = false;
  toast({ title: t('session.signed_out'), message: t('session.ended'), action: t('session.sign_in_again') });
  const next = location.pathname + location.search;
  app.navigate('/login?next=' + encodeURIComponent(next), { replace: true });
});

// Links marked data-link stay inside the app; others (open original, OPML export) do not.
document.addEventListener('click', (event) => {
  if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
  const link = event.target.closest && event.target.closest('a[data-link]');
  if (!link) return;
  event.preventDefault();
  const url = link.getAttribute('href');
  if (link.dataset.pane) app.showPane(link.dataset.pane);
  if (url !== location.pathname + location.search) app.navigate(url);
  else render();
});

// One calm notice however many requests wait: they are sent again by themselves (api.js).
whenRateLimited((seconds) => toast({
  key: 'rate-limited',
  title: t('rate.title'),
  message: t('rate.message', { seconds }),
  action: t('rate.action'),
  duration: seconds * 1000 + 3000,
}));

window.addEventListener('popstate', () => render());
window.addEventListener('offline', () => toast({ title: t('network.offline_title'), message: t('network.offline'), action: t('network.offline_action'), kind: 'error' }));
window.addEventListener('online', () => toast({ title: t('network.online_title'), message: t('network.online') }));

installBehaviours({ render, savePrefs, applyPrefs, signOut });
// Live updates start a moment later: the first screen draws without waiting for them.
import('./live.js').then((m) => m.startLiveUpdates()).catch(() => {});
document.body.dataset.pane = location.pathname === '/' && !location.search ? 'feeds' : 'main';
installKeys(app);
// The catalog of the language remembered here (or the browser's) comes before any drawing.
useLanguage(rememberedPreference()).catch(() => useLanguage('en')).then(render, (e) => {
  replace(document.getElementById('app'), h('p', { class: 'boot-note' }, e.message));
});
