// Related items (F44), loaded when an item first stays open: under it, the reader's most
// similar items, asked once per item and kept while the page lives. A convenience: when the
// answer fails or is empty, the section stays hidden.

import { api } from './api.js';
import { h, replace, shortDate } from './dom.js';
import { t } from './i18n.js';

/** Related items shown under an opened item. */
const SHOWN = 5;
/** Answers by item id (each a promise of the items), for items opened again. */
const answers = new Map();

/** Asks for the related items of item `id` (once) and shows them in its hidden `section`. */
export function showRelated(section, id) {
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
      h('h3', { class: 'related-heading' }, t('related.heading')),
      h('ul', { class: 'related-list' }, items.map((item) => h('li', null,
        // In the item's language, or its feed's "always translate" one once translated.
        h('a', { href: '/feeds/' + item.feed_id + '?filter=all&item=' + item.id, 'data-link': '', title: t('related.similarity', { score: item.score.toFixed(2) }),
          lang: item.translated_title ? item.translated_title.language : item.language },
        item.translated_title ? item.translated_title.text : item.title || t('item.untitled')),
        h('span', { class: 'related-meta' }, ' · ' + (item.feed_title || '') + ' · ' + shortDate(item.published_at))))));
    section.hidden = false;
  });
}
