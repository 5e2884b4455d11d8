// Small DOM helpers: elements are built with h() and text nodes, never from strings of HTML,
// except an item's content, which the server has sanitized (F5). Dates are written in the
// language in use (i18n.js).

import { language } from './i18n.js';

/**
 * Creates an element. `attrs` keys: `class`, `text`, `on*` handlers (functions), `dataset`
 * (an object), booleans for boolean attributes, everything else as an attribute.
 */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  if (attrs) {
    for (const [key, value] of Object.entries(attrs)) {
      if (value === undefined || value === null || value === false) continue;
      if (key === 'class') el.className = value;
      else if (key === 'text') el.textContent = value;
      else if (key === 'dataset') Object.assign(el.dataset, value);
      else if (key.startsWith('on') && typeof value === 'function') el.addEventListener(key.slice(2), value);
      else if (value === true) el.setAttribute(key, '');
      else el.setAttribute(key, String(value));
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children) {
    if (child === undefined || child === null || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else if (child instanceof Node) el.appendChild(child);
    else el.appendChild(document.createTextNode(String(child)));
  }
}

/** Replaces the children of `el`. */
export function replace(el, ...children) {
  el.textContent = '';
  append(el, children);
  return el;
}

const SVG_NS = 'http://www.w3.org/2000/svg';

/** The paths of the few icons the UI draws, on a 24×24 grid. */
const ICONS = {
  star: 'M12 3.5l2.6 5.6 6.1.7-4.5 4.2 1.2 6L12 17l-5.4 3 1.2-6-4.5-4.2 6.1-.7z',
  flame: 'M12 21a6 6 0 0 0 6-6c0-4-3-6-4-10-2 2-3 4-3 6-1-1-1.5-2-1.5-3C7 10 6 12.5 6 15a6 6 0 0 0 6 6z',
  bookmark: 'M6 3.5h12v17l-6-4-6 4z',
  external: 'M14 4h6v6M20 4l-9 9M18 14v5a1 1 0 0 1-1 1H5a1 1 0 0 1-1-1V7a1 1 0 0 1 1-1h5',
  check: 'M4 12.5l5 5L20 6.5',
  warning: 'M12 3l10 18H2zM12 10v5M12 17.5v.5',
  stop: 'M8 3h8l5 5v8l-5 5H8l-5-5V8zM9 9l6 6M15 9l-6 6',
  pause: 'M9 5v14M15 5v14',
  plus: 'M12 5v14M5 12h14',
  gear: 'M12 8.5a3.5 3.5 0 1 0 0 7 3.5 3.5 0 0 0 0-7zM19 12l2-1.5-2-3.5-2.4.8-1.6-1L14.5 4h-5L9 6.8l-1.6 1L5 7 3 10.5 5 12l-2 1.5L5 17l2.4-.8 1.6 1 .5 2.8h5l.5-2.8 1.6-1 2.4.8 2-3.5z',
  back: 'M15 5l-7 7 7 7',
  feed: 'M5 19.5h.01M5 12a7.5 7.5 0 0 1 7.5 7.5M5 4.5a15 15 0 0 1 15 15',
  chevron: 'M9 6l6 6-6 6',
  menu: 'M4 7h16M4 12h16M4 17h16',
  refresh: 'M20 11a8 8 0 1 0-2.3 5.7M20 5v6h-6',
  moon: 'M20 14.5A8 8 0 0 1 9.5 4a8 8 0 1 0 10.5 10.5z',
  sun: 'M12 8a4 4 0 1 0 0 8 4 4 0 0 0 0-8zM12 2v2M12 20v2M4.9 4.9l1.4 1.4M17.7 17.7l1.4 1.4M2 12h2M20 12h2M4.9 19.1l1.4-1.4M17.7 6.3l1.4-1.4',
  keyboard: 'M3 7h18v10H3zM7 10h.01M10 10h.01M13 10h.01M16 10h.01M8 14h8',
  close: 'M6 6l12 12M18 6L6 18',
  search: 'M10.5 4a6.5 6.5 0 1 0 0 13 6.5 6.5 0 0 0 0-13zM15.2 15.2L20 20',
  play: 'M8 5l11 7-11 7z',
  download: 'M12 4v11M7 10l5 5 5-5M5 20h14',
  contrast: 'M12 3a9 9 0 1 0 0 18 9 9 0 0 0 0-18zM12 3v18M12 7h4M12 11h5M12 15h4',
};

/** An icon as inline SVG, hidden from assistive technology (its button carries the label). */
export function icon(name, className) {
  const svg = document.createElementNS(SVG_NS, 'svg');
  svg.setAttribute('viewBox', '0 0 24 24');
  svg.setAttribute('aria-hidden', 'true');
  svg.setAttribute('focusable', 'false');
  svg.setAttribute('class', 'icon' + (className ? ' ' + className : ''));
  const path = document.createElementNS(SVG_NS, 'path');
  path.setAttribute('d', ICONS[name] || '');
  svg.appendChild(path);
  return svg;
}

/** The date formats of the language in use, made once (making one is slow). */
let formats = {};

function dateFormats() {
  const lang = language();
  if (formats.lang !== lang) {
    formats = {
      lang,
      relative: new Intl.RelativeTimeFormat(lang, { numeric: 'auto' }),
      absolute: new Intl.DateTimeFormat(lang, { dateStyle: 'medium', timeStyle: 'short' }),
      day: new Intl.DateTimeFormat(lang, { dateStyle: 'medium' }),
    };
  }
  return formats;
}

/** Milliseconds since the epoch of an API time (RFC 3339 string or Unix seconds). */
export function toMillis(value) {
  if (typeof value === 'number') return value * 1000;
  const parsed = Date.parse(value);
  return Number.isNaN(parsed) ? 0 : parsed;
}

/** A short date for lists: relative within a week, else the date. */
export function shortDate(value) {
  const millis = toMillis(value);
  const seconds = (millis - Date.now()) / 1000;
  const { relative, day } = dateFormats();
  if (relative && Math.abs(seconds) < 7 * 86400) {
    for (const [unit, size] of [['day', 86400], ['hour', 3600], ['minute', 60]]) {
      if (Math.abs(seconds) >= size) return relative.format(Math.round(seconds / size), unit);
    }
    return relative.format(0, 'minute');
  }
  return day.format(new Date(millis));
}

/** The full date and time. */
export function fullDate(value) {
  return dateFormats().absolute.format(new Date(toMillis(value)));
}
