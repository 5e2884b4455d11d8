// Reading habits (issue 34): the reading time of an opened item, "mark read up to here", and
// marking items read as the reader scrolls past them (a preference); and an opened story's
// copies in other feeds (issue 35). Loaded with the first opened item, or with the list when
// the preference is on.

import { api } from './api.js';
import { h } from './dom.js';
import { showError, toast } from './dialogs.js';
import { queueRead } from './reads.js';
import { t } from './i18n.js';

/** Words a minute of text in alphabetic scripts, read silently at an unhurried pace. */
const WORDS_PER_MINUTE = 230;
/** Characters a minute of Japanese, Chinese or Korean text, which has no spaces to count. */
const CJK_PER_MINUTE = 500;
/** The most ids one mark-read request takes (the API's limit). */
const MARK_IDS_MAX = 1000;
const CJK = /[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]/g;

/** About how many minutes `text` takes to read, at least one. */
export function readingMinutes(text) {
  const cjk = (text.match(CJK) || []).length;
  const words = (text.replace(CJK, ' ').match(/\S+/g) || []).length;
  return Math.max(1, Math.round(words / WORDS_PER_MINUTE + cjk / CJK_PER_MINUTE));
}

/** "Also in": the other copies of a story (issue 35), each a link that opens it in its feed. */
function copiesSection(item) {
  const copies = item.cluster?.also_in || [];
  return copies.length ? h('section', { class: 'related copies', 'aria-label': t('copies.heading') },
    h('h3', { class: 'related-heading' }, t('copies.heading')),
    h('ul', { class: 'related-list' }, copies.map((c) => h('li', null,
      h('a', { href: '/feeds/' + c.feed_id + '?filter=all&item=' + c.item_id, 'data-link': '' }, c.feed_title))))) : '';
}

/**
 * "Unsubscribe" for a newsletter's item (issue 36): its List-Unsubscribe links, which the
 * server marks `data-unsubscribe` in the item's footer (the sanitizer drops that attribute
 * from the sender's own HTML, so no message can pass another link off as this one). A web
 * link opens in a new tab; a mailto: link opens the reader's mail program.
 */
function unsubscribeActions(content) {
  return [...content.querySelectorAll('p[data-unsubscribe]')].map((p) => {
    const href = p.dataset.unsubscribe;
    const mail = /^mailto:/i.test(href);
    return mail || /^https?:/i.test(href) ? h('a', { class: 'button', href, 'data-action': 'unsubscribe', target: mail ? null : '_blank', rel: mail ? null : 'noopener noreferrer' },
      t(mail ? 'newsletters.unsubscribe_mail' : 'newsletters.unsubscribe')) : '';
  });
}

/** Adds the reading time, "Mark read up to here", Unsubscribe and the story's other copies to an opened item. */
export function decorate(list, item, body) {
  const tools = body.querySelector('.item-tools');
  const content = body.querySelector('.item-content');
  if (!tools || !content || tools.querySelector('.reading-time')) return;
  const minutes = readingMinutes(content.textContent || '');
  tools.prepend(h('span', { class: 'item-author reading-time' }, t('habits.reading_time', { count: minutes })));
  tools.after(copiesSection(item));
  const upTo = h('button', { type: 'button', class: 'button', 'data-role': 'read-up-to' }, t('habits.read_up_to'));
  upTo.addEventListener('click', () => markUpTo(list, item));
  tools.insertBefore(upTo, tools.querySelector('[data-action="bookmark"]'));
  tools.querySelector('[data-action="hide-like"]').before(...unsubscribeActions(content));
}

/** Marks read this item and every item listed above it, in a few requests; undone if refused. */
export async function markUpTo(list, item) {
  const index = list.items.indexOf(item);
  if (index < 0) return;
  const unread = list.items.slice(0, index + 1).filter((i) => !i.is_read);
  for (const i of unread) list.showRead(i, true);
  try {
    for (let start = 0; start < unread.length; start += MARK_IDS_MAX) {
      const ids = unread.slice(start, start + MARK_IDS_MAX).map((i) => i.id);
      await api('POST', '/items/mark-read', { ids });
    }
  } catch (e) {
    for (const i of unread) list.showRead(i, false);
    showError(e, t('item.not_marked_read', { count: unread.length }));
    return;
  }
  toast({ key: 'marked-read', title: t('habits.marked_title'), message: t('habits.marked_up_to', { count: unread.length }) });
}

/**
 * Marks items read as they leave the list through its top, scrolled past (the preference
 * `mark_read_on_scroll`); batched with the items opened (reads.js). Answers a function that
 * stops it.
 */
export function watchScroll(list) {
  const root = list.scrollRoot();
  const seen = new IntersectionObserver((entries) => {
    for (const entry of entries) {
      const top = entry.rootBounds ? entry.rootBounds.top : 0;
      if (entry.isIntersecting || entry.boundingClientRect.bottom > top) continue;
      const item = list.byId.get(Number(entry.target.dataset.id));
      if (item && !item.is_read) {
        list.showRead(item, true);
        queueRead(list, item);
      }
    }
  }, { root, threshold: 0 });
  const watch = (li) => { if (li.matches && li.matches('li.item')) seen.observe(li); };
  list.listEl.querySelectorAll('li.item').forEach(watch);
  const added = new MutationObserver((changes) => {
    for (const change of changes) change.addedNodes.forEach(watch);
  });
  added.observe(list.listEl, { childList: true });
  return () => {
    seen.disconnect();
    added.disconnect();
  };
}

