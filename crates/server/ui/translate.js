// "Translate" on an opened item (issue 37), loaded with the first opened item in a language
// other than the reader's when the server has a translation provider: the translation of the
// title and text (and of the generated summary, when the item has one) replaces the original
// in place, and the same button goes back and forth between the two. An item of a feed the
// reader always translates (the listing gave its translated title) opens translated, the
// original a click away. Translations are kept by the server; this page keeps the ones it
// showed.

import { api } from './api.js';
import { h } from './dom.js';
import { showError } from './dialogs.js';
import { language, t } from './i18n.js';

/** The translations this page got, by item id. */
const translations = new Map();
/** The items of always-translated feeds the reader switched back to the original. */
const keptOriginal = new Set();

/** Puts `html` (sanitized by the server) in `content`, its links opening in a new tab. */
function fill(content, html, lang) {
  content.innerHTML = html || '';
  content.lang = lang || '';
  for (const link of content.querySelectorAll('a[href]')) {
    link.target = '_blank';
    link.rel = 'noopener noreferrer';
  }
}

/** The language to translate `item` into: its feed's "always translate" one, else the UI's. */
function targetOf(item) {
  return item.translated_title ? item.translated_title.language : language();
}

/**
 * The summary in the target language, when the item has a generated summary: asked of the
 * server, which translates it once per item and language. A failure leaves the summary in its
 * own language (the item's translation is shown all the same).
 */
async function summaryIn(item, to) {
  if (!item.generated_summary) return null;
  try {
    const answer = await api('POST', '/items/' + item.id + '/summarize?translated=true&to=' + encodeURIComponent(to));
    return (answer && answer.translation) || null;
  } catch {
    return null;
  }
}

/**
 * The item's translation, with its summary's: `make` asks the server to translate it (kept
 * after); otherwise only a translation the server kept is read (null when there is none).
 */
async function translationOf(item, make) {
  const to = targetOf(item);
  let translation;
  let summary = null;
  if (make) {
    translation = await api('POST', '/items/' + item.id + '/translate', { to });
  } else {
    const detail = await api('GET', '/items/' + item.id + '?translated=true&to=' + encodeURIComponent(to));
    translation = detail && detail.translation;
    if (!translation) return null;
    summary = detail.summary_translation || null;
  }
  translation.summary = summary || await summaryIn(item, to);
  return translation;
}

/** Adds "Translate" to an opened item's tools; opens an always-translated item translated. */
export function decorate(item, body) {
  const tools = body.querySelector('.item-tools');
  const content = body.querySelector('.item-content');
  if (!tools || !content || tools.querySelector('[data-action="translate"]')) return;
  const summary = body.querySelector('.item-summary p');
  const original = { html: content.innerHTML, lang: content.lang, summary: summary && summary.textContent, summaryLang: summary && summary.lang };
  const button = h('button', { type: 'button', class: 'button', 'data-action': 'translate', 'aria-pressed': 'false' }, t('translate.translate'));
  // An always-translated item's row shows its translated title: the row's title changes
  // with the text, and no second title is put above the text.
  const row = item.translated_title ? document.getElementById('item-title-' + item.id) : null;
  const retitle = (text, lang) => {
    if (!row) return;
    row.textContent = text;
    row.lang = lang || '';
  };
  const show = (translation) => {
    fill(content, translation.content, translation.to);
    if (translation.title && !row) content.prepend(h('h3', { class: 'item-translated-title' }, translation.title));
    if (translation.title) retitle(translation.title, translation.to);
    content.append(h('p', { class: 'hint' }, t('translate.by', { provider: translation.provider })));
    if (summary && translation.summary) {
      summary.textContent = translation.summary.text;
      summary.lang = translation.summary.to;
    }
    button.setAttribute('aria-pressed', 'true');
    button.textContent = t('translate.show_original');
  };
  const showOriginal = () => {
    fill(content, original.html, original.lang);
    retitle(item.title || '', item.language);
    if (summary) {
      summary.textContent = original.summary;
      summary.lang = original.summaryLang || '';
    }
    button.setAttribute('aria-pressed', 'false');
    button.textContent = t('translate.show_translation');
  };
  const load = async (make) => {
    button.disabled = true;
    button.textContent = t('translate.translating');
    try {
      const translation = await translationOf(item, make);
      if (!translation) {
        button.textContent = t('translate.translate');
        return;
      }
      translations.set(item.id, translation);
      show(translation);
    } catch (e) {
      button.textContent = t('translate.translate');
      if (make) showError(e, t('translate.failed'));
    } finally {
      button.disabled = false;
    }
  };
  button.addEventListener('click', () => {
    if (button.getAttribute('aria-pressed') === 'true') {
      keptOriginal.add(item.id);
      return showOriginal();
    }
    keptOriginal.delete(item.id);
    if (translations.has(item.id)) return show(translations.get(item.id));
    return load(true);
  });
  tools.insertBefore(button, tools.querySelector('[data-action="read"]'));
  // A feed the reader always translates: its item opens in the translation already made.
  if (item.translated_title && !keptOriginal.has(item.id)) {
    if (translations.has(item.id)) show(translations.get(item.id));
    else load(false);
  }
}
