// The REST API client: JSON in and out, and every failure turned into an ApiFailure that
// carries what the user needs to read (F55): the category and the action from the server's
// error body, or our own words when the network or the server could not answer at all.

import { API_LANGUAGE, has, language, loadViews, t } from './i18n.js';

/**
 * An API error's message and action in the language in use, by its code (the views' part of
 * the catalog); else, and in the API's language, the API's own, more specific words.
 */
function localized(detail, retryAfter) {
  const key = ['apierror', detail.code].join('.');
  if (language() === API_LANGUAGE || !detail.code || !has(key)) return [detail.message, detail.action];
  const params = { seconds: retryAfter || 0 };
  return [t(key, params), has(key + '.action') ? t(key + '.action', params) : ''];
}

/** A failed request, with the API's error fields (message and action in the UI's language). */
export class ApiFailure extends Error {
  constructor(status, detail, retryAfter) {
    const [message, action] = localized(detail, retryAfter);
    super(message || t('error.request_failed'));
    this.status = status;
    this.code = detail.code || 'error';
    this.category = detail.category || 'system';
    this.action = action || '';
    this.retryAfter = retryAfter;
  }
}

/** The category as a short heading for people. */
export function categoryName(category) {
  return has('category.' + category) ? t('category.' + category) : t('category.other');
}

/** Called with every 401, so the app can go to the sign-in page. */
let onUnauthenticated = null;

/** Registers what to do when the session has ended. */
export function whenSignedOut(handler) {
  onUnauthenticated = handler;
}

/** Called with the seconds to wait when the server says "too many requests". */
let onRateLimited = null;

/** Registers what to show while requests wait for the rate limit to reset. */
export function whenRateLimited(handler) {
  onRateLimited = handler;
}

// After a 429 every request waits until the server's Retry-After has passed, then the refused
// request is sent once more: a reader who was too fast loses nothing, and the wait does not
// spend more of the budget (F25).
const MAX_RETRY_WAIT_S = 120;
let pausedUntil = 0;

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function offlineFailure() {
  const offline = typeof navigator !== 'undefined' && navigator.onLine === false;
  return new ApiFailure(0, {
    code: offline ? 'offline' : 'network_error',
    category: 'network',
    message: offline ? t('network.offline') : t('network.unreachable'),
    action: offline ? t('network.offline_check') : t('network.unreachable_action'),
  });
}

/** Offline reading (offline.js), loaded when first needed: a first visit never waits for it. */
export const offline = () => import('./offline.js');

/**
 * Sends a request to /api/v1 and answers with the parsed JSON body (null when empty).
 * When the server cannot be reached, what this device kept answers instead, unless
 * `options.fresh` asks for the server's answer only.
 * `body` is sent as JSON unless it is a Blob or string with `options.contentType`.
 */
export async function api(method, path, body, options = {}) {
  const init = { method, headers: { Accept: 'application/json' }, credentials: 'same-origin' };
  if (body !== undefined && body !== null) {
    if (options.contentType) {
      init.headers['Content-Type'] = options.contentType;
      init.body = body;
    } else {
      init.headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
  }
  if (options.headers) Object.assign(init.headers, options.headers);
  let response;
  for (let attempt = 0; ; attempt++) {
    const wait = pausedUntil - Date.now();
    if (wait > 0) await sleep(wait);
    try {
      response = await fetch('/api/v1' + path, init);
    } catch (e) {
      // The server cannot be reached: what this device kept answers, if it can.
      const kept = options.raw || options.fresh ? undefined : await offline().then((m) => m.answer(method, path, body), () => undefined);
      if (kept !== undefined) return kept;
      throw offlineFailure();
    }
    // Only the request budget's refusal (nothing remaining) is waited out; other 429s, such
    // as a feed refreshed by hand a moment ago, are answers for the person.
    const seconds = Number(response.headers.get('Retry-After')) || 0;
    // A limit on one action (sign-in, subscribing, refreshing a feed) is not the budget.
    const actionLimit = ['sign-in', 'sign-in-account', 'subscribe', 'feed-refresh'].includes(response.headers.get('X-RateLimit-Scope'));
    const budgetSpent = response.headers.get('X-RateLimit-Remaining') === '0' && !actionLimit;
    if (response.status !== 429 || !budgetSpent || attempt > 0 || options.noRetry || seconds <= 0 || seconds > MAX_RETRY_WAIT_S) break;
    // A little past the reset, so that the retry lands in the new window.
    pausedUntil = Math.max(pausedUntil, Date.now() + seconds * 1000 + 250);
    if (onRateLimited) onRateLimited(seconds);
  }
  if (options.raw && response.ok) return response;
  const text = await response.text();
  let data = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch (e) {
      data = null;
    }
  }
  if (response.ok) {
    if (method === 'GET') offline().then((m) => m.answered(path, data)).catch(() => {});
    return data;
  }
  const retryAfter = Number(response.headers.get('Retry-After')) || null;
  const detail = (data && data.error) || {
    code: 'http_' + response.status,
    category: response.status >= 500 ? 'system' : 'validation',
    message: t('network.http_status', { status: String(response.status) }),
    action: t('network.try_later'),
  };
  if (response.status === 429 && retryAfter) {
    detail.message = t('rate.refused', { count: retryAfter });
    detail.action = t('rate.wait', { count: retryAfter });
  }
  // An error's words in the reader's language are in the views' part of the catalog, which
  // a first screen has not loaded yet.
  if (language() !== API_LANGUAGE && detail.code && !has(['apierror', detail.code].join('.'))) await loadViews().catch(() => {});
  const failure = new ApiFailure(response.status, detail, retryAfter);
  if (response.status === 401 && onUnauthenticated && !options.quiet401) onUnauthenticated(failure);
  throw failure;
}

/**
 * Reports a use to the usage counts (F45) in the background: a POST that outlives the page
 * (keepalive, like sendBeacon) and whose outcome nobody waits for, so opening a link or
 * searching is never held up or interrupted by it.
 */
export function beacon(path, body) {
  const init = { method: 'POST', keepalive: true, credentials: 'same-origin', headers: {} };
  if (body) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  fetch('/api/v1' + path, init).catch(() => {});
}

/** Query string of the defined values of `params`. */
export function query(params) {
  const parts = [];
  for (const [key, value] of Object.entries(params)) {
    if (value === undefined || value === null || value === '') continue;
    parts.push(encodeURIComponent(key) + '=' + encodeURIComponent(value));
  }
  return parts.length ? '?' + parts.join('&') : '';
}
