// Related items (F44): under an opened item, the reader's most similar items, asked once per
// item and kept while the page lives. A convenience: when the answer fails or is empty, the
// section stays hidden.

import { api } from './api.js';
import { h, replace, shortDate } from './dom.js';

/** Related items shown under an opened item. */
const SHOWN = 5;
/** Answers by item id (each a promise of the items), for items opened again. */
const answers = new Map();

/** How long an item stays open before its related items are asked for, in milliseconds. */
const ASK_AFTER_MS = 700;

/** The "Related" section of the opened item `id`: empty and hidden until its answer came. */
export function relatedSection(id) {
  const section = h('section', { class: 'related', hidden: true, 'aria-label': 'Related items' });
  // Asked only once the item has stayed open a moment: reading fast with j/k passes items
  // without a request each, which the API's rate limit would count.
  setTimeout(() => {
    const body = section.parentElement;
    if (!section.isConnected || !body || body.offsetParent === null) return;
    if (!answers.has(id)) {
      answers.set(id, api('GET', '/items/' + id + '/related?limit=' + SHOWN)
        .then((answer) => answer.items || [])
        .catch(() => {
          answers.delete(id); // asked again the next time the item opens
          return [];
        }));
    }
    answers.get(id).then((items) => {
      if (!items.length) return;
      replace(section,
        h('h3', { class: 'related-heading' }, 'Related'),
        h('ul', { class: 'related-list' }, items.map((item) => h('li', null,
          h('a', { href: '/feeds/' + item.feed_id + '?filter=all&item=' + item.id, 'data-link': '', title: 'Similarity ' + item.score.toFixed(2) },
            item.title || '(untitled)'),
          h('span', { class: 'related-meta' }, ' · ' + (item.feed_title || '') + ' · ' + shortDate(item.published_at))))));
      section.hidden = false;
    });
  }, ASK_AFTER_MS);
  return section;
}
