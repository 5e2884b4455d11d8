// The REST API client: JSON in and out, and every failure turned into an ApiFailure that
// carries what the user needs to read (F55): the category and the action from the server's
// error body, or our own words when the network or the server could not answer at all.

/** A failed request, with the API's error fields. */
export class ApiFailure extends Error {
  constructor(status, detail, retryAfter) {
    super(detail.message || 'The request failed.');
    this.status = status;
    this.code = detail.code || 'error';
    this.category = detail.category || 'system';
    this.action = detail.action || '';
    this.retryAfter = retryAfter;
  }
}

const CATEGORY_NAMES = {
  auth: 'Sign-in problem',
  validation: 'Check your input',
  feed: 'Feed problem',
  limit: 'Limit reached',
  system: 'Server problem',
  network: 'Offline',
  delivery: 'Not delivered',
};

/** The category as a short heading for people. */
export function categoryName(category) {
  return CATEGORY_NAMES[category] || 'Problem';
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
    message: offline
      ? 'You are offline.'
      : 'The server could not be reached.',
    action: offline
      ? 'Check your connection; tidings will work again once you are back online.'
      : 'Check your connection or whether the server is running, then try again.',
  });
}

/**
 * Sends a request to /api/v1 and answers with the parsed JSON body (null when empty).
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
  if (response.ok) return data;
  const retryAfter = Number(response.headers.get('Retry-After')) || null;
  const detail = (data && data.error) || {
    code: 'http_' + response.status,
    category: response.status >= 500 ? 'system' : 'validation',
    message: 'The server answered ' + response.status + '.',
    action: 'Try again later.',
  };
  if (response.status === 429 && retryAfter) {
    detail.message = 'Too many requests: try again in ' + retryAfter + ' s.';
    detail.action = 'Wait ' + retryAfter + ' seconds, then try again.';
  }
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
