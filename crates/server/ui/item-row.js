// One row of the item list, closed: its unread dot, title, feed, date, excerpt or search
// snippet, popularity, star and tags. Opening it fills its body (item-open.js).

import { fullDate, h, icon, shortDate, toMillis } from './dom.js';
import { snippetNodes } from './search.js';
import { tagPath } from './sidebar.js';

/** Tags shown on an item in the list. */
const ITEM_TAGS_SHOWN = 5;

/** An item's tags as links to their pages, best first. */
function tagLinks(item) {
  if (!item.tags || !item.tags.length) return null;
  return h('ul', { class: 'item-tags', 'aria-label': 'Tags' }, item.tags.slice(0, ITEM_TAGS_SHOWN).map((t) =>
    h('li', null, h('a', { class: 'tag', href: tagPath(t.name), 'data-link': '', title: 'Items tagged ' + t.name + ' (score ' + t.score + ')' }, t.name))));
}

/** Plain text of a sanitized HTML fragment, for one-line excerpts. */
function excerpt(html, length) {
  if (!html) return '';
  const template = document.createElement('template');
  template.innerHTML = html;
  const text = (template.content.textContent || '').replace(/\s+/g, ' ').trim();
  return text.length > length ? text.slice(0, length - 1) + '…' : text;
}

/** The item's bookmark count (F40), or null while none is known (null is not 0). */
function popularityOf(item) {
  const popularity = item.popularity;
  return popularity && typeof popularity.count === 'number' ? popularity.count : null;
}

/** The list entry of `item`, closed, with an empty body for when it opens. */
export function itemRow(item) {
  const li = h('li', { class: 'item' + (item.is_read ? ' is-read' : '') + (item.is_starred ? ' is-starred' : ''), dataset: { id: item.id } });
  const titleId = 'item-title-' + item.id;
  const date = h('time', { datetime: new Date(toMillis(item.published_at)).toISOString(), title: fullDate(item.published_at) + (item.is_date_estimated ? ' (estimated: the feed gave no date)' : '') },
    shortDate(item.published_at));
  const popularity = popularityOf(item);
  li.appendChild(h('article', { 'aria-labelledby': titleId },
    h('div', { class: 'item-head' },
      h('button', { type: 'button', class: 'item-toggle', 'aria-expanded': 'false', 'aria-controls': 'item-body-' + item.id, 'data-action': 'toggle' },
        h('span', { class: 'unread-dot', 'aria-hidden': 'true' }),
        h('span', { class: 'item-text' },
          h('span', { class: 'item-title', id: titleId }, item.title || excerpt(item.summary, 80) || '(untitled)'),
          h('span', { class: 'item-meta' },
            h('span', { class: 'item-feed' }, item.feed_title || ''),
            ' · ', date,
            item.is_date_estimated ? h('span', { class: 'estimated', title: 'The feed gave no date; this is when tidings first saw the item.' }, ' (estimated)') : null,
            h('span', { class: 'visually-hidden state-text' }, item.is_read ? ', read' : ', unread')),
          item.snippet !== undefined
            ? h('span', { class: 'item-excerpt search-snippet' }, snippetNodes(item.snippet))
            : h('span', { class: 'item-excerpt' }, excerpt(item.summary, 180)))),
      popularity !== null ? h('span', { class: 'popularity', title: popularity + ' bookmarks', 'aria-label': popularity + ' bookmarks' }, icon('bookmark'), String(popularity)) : null,
      h('button', { type: 'button', class: 'icon-button star', 'data-action': 'star', 'aria-pressed': item.is_starred ? 'true' : 'false', 'aria-label': 'Star', title: 'Star (s)' }, icon('star'))),
    tagLinks(item),
    h('div', { class: 'item-body', id: 'item-body-' + item.id, hidden: true })));
  return li;
}
