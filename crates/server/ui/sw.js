// The service worker: it keeps the app's shell and this build's files, so tidings opens
// without a network. The reader's data (the kept items, the lists and counts, the marks made
// offline) is kept by the app itself in IndexedDB (offline.js); the API is never answered
// from here. The server fills in the build's version and its files.
const VERSION = '{{V}}';
const CACHE = 'tidings-' + VERSION;
const FILES = {{FILES}};
const SHELL = '/';
/** The images offline.js keeps with the kept items (its IMAGE_CACHE): kept across builds. */
const IMAGES = 'offline-images';

self.addEventListener('install', (event) => {
  event.waitUntil(
    caches.open(CACHE)
      .then((cache) => cache.addAll([SHELL, ...FILES]))
      .then(() => self.skipWaiting()),
  );
});

// A new build's worker drops the files of the old ones and takes over the open pages.
self.addEventListener('activate', (event) => {
  event.waitUntil(
    caches.keys()
      .then((keys) => Promise.all(keys
        .filter((key) => key.startsWith('tidings-') && key !== CACHE)
        .map((key) => caches.delete(key))))
      .then(() => self.clients.claim()),
  );
});

self.addEventListener('fetch', (event) => {
  const request = event.request;
  if (request.method !== 'GET') return;
  const url = new URL(request.url);
  if (url.origin !== self.location.origin) return;
  if (request.mode === 'navigate') {
    // Every view is the same shell: from the network while there is one (it names the
    // current build), else the kept one.
    event.respondWith(fetch(request).catch(() =>
      caches.open(CACHE).then((cache) => cache.match(SHELL, { ignoreVary: true })).then((shell) => shell || Response.error())));
    return;
  }
  if (url.pathname === '/media') {
    // An image of a kept item (offline.js keeps them at their /media address when the reader
    // asks for images offline): the kept copy, online too, since a signed address always
    // names the same image; else the network.
    event.respondWith(caches.open(IMAGES).then((cache) => cache.match(request)).then((kept) => kept || fetch(request)));
    return;
  }
  if (url.pathname.startsWith('/ui/' + VERSION + '/')) {
    // This build's files never change under their path. The server's answers vary by
    // Origin (CORS) and encoding, which a module import's request may differ in: the kept
    // copy is the same file whatever they are.
    event.respondWith(caches.match(request, { ignoreVary: true }).then((kept) => kept || fetch(request)));
  }
});
