// An opened item (ItemList's methods, installed by item-list.js): one open at a time, marked
// read on opening, its content as listed or fetched, the full article (F6), the summary (F42),
// the media and the related items below it.

import { app } from './state.js';
import { api } from './api.js';
import { h, icon, replace } from './dom.js';
import { showError } from './dialogs.js';
import { later } from './lazy.js';
import { queueRead } from './reads.js';
import { language, t } from './i18n.js';

/** How long an item stays open before its related items are asked for, in milliseconds. */
const RELATED_AFTER_MS = 700;

/** The place of an opened item's media (media.js, loaded on demand: most items have none). */
function mediaSlot(item, enclosures, html, showImages) {
  if (!/youtu\.?be/.test(item.url) && !(enclosures || []).some((e) => e && e.url)) return null;
  const slot = h('div', { class: 'item-media-slot' });
  later(t('part.media'), (retry) => import('./media.js' + retry)).then((media) => {
    const block = media.mediaBlock(item, enclosures, html, showImages);
    if (block) slot.replaceWith(block);
    else slot.remove();
  }, () => slot.remove());
  return slot;
}

/** The summary block of an opened item, or null while it has none. Plain text, never HTML. */
function summaryBlock(item) {
  const summary = item.generated_summary;
  if (!summary) return null;
  return h('section', { class: 'item-summary', 'aria-label': t('item.summary') },
    h('h3', null, t('item.summary')),
    // In the article's language.
    h('p', { lang: item.language }, summary.text));
}

/**
 * The "Related" section of the opened item `id`: empty and hidden until its answer came (a
 * convenience: it stays hidden when the answer, or its module, fails). Asked only once the
 * item has stayed open a moment: reading fast with j/k passes items without a request each,
 * which the API's rate limit would count.
 */
function relatedSection(id) {
  const section = h('section', { class: 'related', hidden: true, 'aria-label': t('item.related') });
  setTimeout(() => {
    const body = section.parentElement;
    if (!section.isConnected || !body || body.offsetParent === null) return;
    later(t('part.related'), (retry) => import('./related.js' + retry))
      .then((related) => related.showRelated(section, id))
      .catch(() => {});
  }, RELATED_AFTER_MS);
  return section;
}

/** The methods of ItemList that open, fill and close an item. */
export const openedItem = {
  toggle(id) {
    if (this.expandedId === id) this.collapse();
    else this.expand(id);
  },

  collapse() {
    const id = this.expandedId;
    if (id === null) return;
    this.expandedId = null;
    const li = this.liOf(id);
    if (li) {
      li.classList.remove('expanded');
      li.querySelector('.item-toggle').setAttribute('aria-expanded', 'false');
      const body = li.querySelector('.item-body');
      body.hidden = true;
      replace(body);
    }
    history.replaceState(null, '', this.urlFor(this.route.filter));
  },

  /** Expands one item, collapsing the one open before (exclusive expand), and marks it read. */
  expand(id, options = {}) {
    const item = this.byId.get(id);
    if (!item) return;
    performance.mark('tidings:expand-start');
    if (this.expandedId !== null && this.expandedId !== id) this.collapse();
    this.expandedId = id;
    const li = this.liOf(id);
    li.classList.add('expanded');
    li.querySelector('.item-toggle').setAttribute('aria-expanded', 'true');
    const body = li.querySelector('.item-body');
    // Listed with include=content, an item has its enclosures (maybe none) and content.
    const full = item.enclosures !== undefined ? item : this.detailCache.get(id);
    this.fillBody(body, item, full ? full.content || full.summary : item.summary, !full, full ? full.enclosures : []);
    body.hidden = false;
    const index = this.items.indexOf(item);
    if (index >= 0) this.selectedIndex = index;
    this.markSelected();
    // An opened item that does not fit in view is brought to the top, its title just below
    // the sticky header, so its text starts where the eye is.
    if (!options.noScroll) this.reveal(li, true);
    performance.mark('tidings:expand-end');
    if (!options.fromRoute || location.search.indexOf('item=' + id) < 0) history.replaceState(null, '', this.urlFor(this.route.filter, id));
    if (!item.is_read && app.prefs.mark_read_on_open !== false) {
      this.showRead(item, true);
      queueRead(this, item);
    }
    if (!full) this.loadDetail(id, body);
    if (this.items.length - index < 10) this.load();
  },

  async loadDetail(id, body) {
    try {
      const detail = await api('GET', '/items/' + id);
      const full = detail.item || detail;
      this.detailCache.set(id, full);
      if (this.expandedId === id) this.fillBody(body, this.byId.get(id), full.content || full.summary, false, full.enclosures);
    } catch (e) {
      if (this.expandedId === id) {
        body.querySelector('.item-content').appendChild(h('p', { class: 'inline-error', role: 'alert' }, e.message + ' ' + (e.action || '')));
      }
    }
  },

  /** The article from the item's page (F6), when one is known: listed, loaded or fetched. */
  fullTextOf(item) {
    const detail = this.detailCache.get(item.id);
    return item.full_content || (detail && detail.full_content) || null;
  },

  /** Whether an item shows its full article: the reader's choice for it, else its feed's mode. */
  showsFullText(item) {
    if (!this.fullTextOf(item)) return false;
    if (item.showFullText !== undefined) return item.showFullText;
    const sub = app.subscriptionByFeed(item.feed_id);
    return !sub || sub.full_text !== 'never';
  },

  /** Switches an opened item between its feed's content and its full article. */
  switchFullText(id) {
    const item = this.byId.get(id);
    if (!item) return;
    item.showFullText = !this.showsFullText(item);
    this.refillBody(item);
  },

  /** Fills an opened item's body again, with what is known of it. */
  refillBody(item) {
    const li = this.liOf(item.id);
    if (!li || this.expandedId !== item.id) return;
    const full = item.enclosures !== undefined ? item : this.detailCache.get(item.id);
    this.fillBody(li.querySelector('.item-body'), item, full ? full.content || full.summary : item.summary, !full, full ? full.enclosures : []);
  },

  /** "Load full article": the server fetches the item's page now and answers its article. */
  async loadFullText(id, button) {
    const item = this.byId.get(id);
    if (!item) return;
    button.disabled = true;
    button.textContent = t('item.loading_full');
    try {
      const loaded = await api('POST', '/items/' + id + '/full-content');
      item.full_content = loaded.full_content;
      item.showFullText = true;
      this.refillBody(item);
      // The article may make a short item long enough to summarize: the server says.
      const li = this.liOf(id);
      if (li && item.summarizable === undefined) this.loadDetail(id, li.querySelector('.item-body'));
    } catch (e) {
      button.disabled = false;
      button.textContent = t('item.load_full');
      showError(e, t('item.full_failed'));
    }
  },

  /** "Summarize": asks for the item's summary and shows it above the content once made. */
  async summarize(id, button) {
    const item = this.byId.get(id);
    if (!item) return;
    button.disabled = true;
    button.textContent = t('item.summarizing');
    try {
      const { requestSummary } = await later(t('part.summaries'), (retry) => import('./summary.js' + retry));
      if (await requestSummary(item)) this.refillBody(item);
      else button.textContent = t('item.summary_queued');
    } catch (e) {
      button.disabled = false;
      button.textContent = t('item.summarize');
      showError(e, t('item.summarize_failed'));
    }
  },

  /** Whether the server says the item's text is long enough to summarize (known once its
   * text is loaded; a short item is its own summary). */
  summarizable(item) {
    const known = item.summarizable !== undefined ? item : this.detailCache.get(item.id);
    return !!(known && known.summarizable);
  },

  fillBody(body, item, html, pending, enclosures) {
    const fullText = this.showsFullText(item) ? this.fullTextOf(item) : null;
    if (fullText) html = fullText;
    const media = mediaSlot(item, enclosures, html, app.prefs.show_images !== false);
    // The item's language (issue 37), for fonts, hyphenation and screen readers.
    const content = h('div', { class: 'item-content' + (pending ? ' pending' : '') + (fullText ? ' full-text' : ''), lang: item.language });
    // The server sanitized this HTML (F5); the CSP forbids scripts and inline handlers anyway.
    content.innerHTML = html || '';
    for (const link of content.querySelectorAll('a[href]')) {
      link.target = '_blank';
      link.rel = 'noopener noreferrer';
    }
    const actions = h('div', { class: 'item-tools' },
      item.url ? h('a', { class: 'button', href: item.url, target: '_blank', rel: 'noopener noreferrer', 'data-role': 'original', 'data-action': 'original' }, icon('external'), t('item.open_original')) : null,
      this.fullTextOf(item)
        ? h('button', { type: 'button', class: 'button', 'data-action': 'full-text', 'aria-pressed': fullText ? 'true' : 'false' }, fullText ? t('item.show_feed_text') : t('item.show_full'))
        : item.url ? h('button', { type: 'button', class: 'button', 'data-action': 'load-full-text' }, t('item.load_full')) : null,
      !item.generated_summary && this.summarizable(item) ? h('button', { type: 'button', class: 'button', 'data-action': 'summarize' }, t('item.summarize')) : null,
      h('button', { type: 'button', class: 'button', 'data-action': 'read' }, item.is_read ? t('item.mark_unread') : t('item.mark_read')),
      h('button', { type: 'button', class: 'button', 'data-action': 'bookmark' }, icon('bookmark'), t('item.bookmark')),
      // A rule of this feed, prefilled with the title's first words; the editor previews it.
      h('a', { class: 'button', href: '/rules?feed=' + item.feed_id + '&q=' + encodeURIComponent((item.title || '').split(/\s+/).slice(0, 4).join(' ')),
        'data-link': '', 'data-action': 'hide-like' }, t('item.hide_like')),
      item.author ? h('span', { class: 'item-author' }, t('item.by', { author: item.author })) : null);
    replace(body, media, summaryBlock(item), content, actions, relatedSection(item.id));
    later('habits', (retry) => import('./habits.js' + retry)).then((m) => m.decorate(this, item, body)).catch(() => {});
    if (this.translatable(item)) later('translate', (retry) => import('./translate.js' + retry)).then((m) => m.decorate(item, body)).catch(() => {});
  },

  /** Whether to offer "Translate" (issue 37): the server translates, and the item's language is
   * not the reader's or its feed is always translated (maybe into another language). */
  translatable(item) {
    const known = item.translatable !== undefined ? item : this.detailCache.get(item.id);
    const primary = (tag) => (tag || '').split('-')[0];
    if (!(known && known.translatable)) return false;
    return !!item.translated_title || (!!item.language && primary(item.language) !== primary(language()));
  },
};
