// One row of the item list, closed: its unread dot, title, feed, date, excerpt or search
// snippet, popularity, star and tags. Opening it fills its body (item-open.js).

import { fullDate, h, icon, shortDate, toMillis } from './dom.js';
import { snippetNodes } from './search.js';
import { tagPath } from './sidebar.js';
import { t } from './i18n.js';

/** Tags shown on an item in the list. */
const ITEM_TAGS_SHOWN = 5;

/** An item's tags as links to their pages, best first. */
function tagLinks(item) {
  if (!item.tags || !item.tags.length) return null;
  return h('ul', { class: 'item-tags', 'aria-label': t('sidebar.tags') }, item.tags.slice(0, ITEM_TAGS_SHOWN).map((tag) =>
    h('li', null, h('a', { class: 'tag', href: tagPath(tag.name), 'data-link': '', title: t('item.tagged', { tag: tag.name, score: String(tag.score) }) }, tag.name))));
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
  const date = h('time', { datetime: new Date(toMillis(item.published_at)).toISOString(), title: item.is_date_estimated ? t('item.date_estimated', { date: fullDate(item.published_at) }) : fullDate(item.published_at) },
    shortDate(item.published_at));
  const popularity = popularityOf(item);
  li.appendChild(h('article', { 'aria-labelledby': titleId },
    h('div', { class: 'item-head' },
      h('button', { type: 'button', class: 'item-toggle', 'aria-expanded': 'false', 'aria-controls': 'item-body-' + item.id, 'data-action': 'toggle' },
        h('span', { class: 'unread-dot', 'aria-hidden': 'true' }),
        h('span', { class: 'item-text' },
          // An always-translated feed's item: the original title on hover.
          item.translated_title
            ? h('span', { class: 'item-title translated', id: titleId, lang: item.translated_title.language, title: item.title || '' }, item.translated_title.text)
            : h('span', { class: 'item-title', id: titleId, lang: item.language }, item.title || excerpt(item.summary, 80) || t('item.untitled')),
          h('span', { class: 'item-meta' },
            h('span', { class: 'item-feed' }, item.feed_title || ''),
            ' · ', date,
            item.is_date_estimated ? h('span', { class: 'estimated', title: t('item.estimated_title') }, ' ', t('item.estimated')) : null,
            item.cluster ? h('span', { class: 'also-in' }, ' · ', t('item.also_in', { feeds: item.cluster.also_in.map((c) => c.feed_title).join(', ') })) : null,
            h('span', { class: 'visually-hidden state-text' }, t(item.is_read ? 'item.state_read' : 'item.state_unread'))),
          item.snippet !== undefined
            ? h('span', { class: 'item-excerpt search-snippet' }, snippetNodes(item.snippet))
            : h('span', { class: 'item-excerpt', lang: item.language }, excerpt(item.summary, 180)))),
      popularity !== null ? h('span', { class: 'popularity', title: t('item.bookmarks', { count: popularity }), 'aria-label': t('item.bookmarks', { count: popularity }) }, icon('bookmark'), String(popularity)) : null,
      h('button', { type: 'button', class: 'icon-button star', 'data-action': 'star', 'aria-pressed': item.is_starred ? 'true' : 'false', 'aria-label': t('item.star'), title: t('item.star_key') }, icon('star'))),
    tagLinks(item),
    h('div', { class: 'item-body', id: 'item-body-' + item.id, hidden: true })));
  return li;
}
