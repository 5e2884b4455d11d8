// Parts of the UI that load when first used (the settings pages, the sign-in pages, the
// dialogs, summaries, related items…), so that the first screen — the feeds and the items —
// downloads only what it draws. Each part is an ES module fetched by `import()` from the same
// versioned folder as the rest, with the same caching and Content-Security-Policy.
//
// Callers write the `import()` call themselves, with the module's path spelled out: the
// tests that guard the import graph (src/ui.rs) read those calls, so an on-demand edge counts
// like a static one.

import { showError } from './dialogs.js';
import { loadViews, t } from './i18n.js';

/** The modules loaded so far (or loading), by name: each part is fetched once per page. */
const parts = new Map();

/** How many loads failed on this page: a retry asks for another address (see `later`). */
let failures = 0;

/**
 * Loads the part `name` with `load`, which calls `import()` for it with `retry` appended to
 * the path, and answers the module. A failed load rejects with an error shaped as the API's
 * (category, message, action), so the usual error displays explain it; the next call tries
 * again. Browsers remember a failed module address for the life of the page, hence `retry`:
 * empty the first time, a query string after a failure (the server ignores it).
 */
export function later(name, load) {
  if (!parts.has(name)) {
    const retry = failures ? '?retry=' + failures : '';
    // A part shows the views' messages: they come with its module (i18n.js).
    const loading = Promise.all([load(retry), loadViews()]).then(([module]) => module).catch((cause) => {
      parts.delete(name);
      failures += 1;
      throw partFailure(name, cause);
    });
    parts.set(name, loading);
  }
  return parts.get(name);
}

/**
 * Loads the part `name` (see `later`; named in the language in use, as messages name it)
 * and calls `use` with its module. A failed load shows a
 * message with what to do, and the control that asked for the part stays alive for another try.
 */
export function withPart(name, load, use) {
  return later(name, load).then(use, (e) => showError(e, t('part.not_opened', { part: name })));
}

/** The error of a part that could not be loaded, in the words of an API failure. */
function partFailure(name, cause) {
  const offline = navigator.onLine === false;
  const error = new Error(offline ? t('part.offline', { part: name }) : t('part.not_loaded', { part: name }));
  error.status = 0;
  error.code = 'part_not_loaded';
  error.category = 'network';
  error.action = offline ? t('part.offline_action') : t('part.not_loaded_action');
  error.cause = cause;
  return error;
}
