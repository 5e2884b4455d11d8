// "Translate" on an opened item (issue 37), loaded with the first opened item in a language
// other than the reader's when the server has a translation provider: the translation of the
// title and text replaces the original in place, and the same button goes back and forth
// between the two. Translations are kept by the server; this page keeps the ones it showed.

import { api } from './api.js';
import { h } from './dom.js';
import { showError } from './dialogs.js';
import { language, t } from './i18n.js';

/** The translations this page got, by item id. */
const translations = new Map();

/** Puts `html` (sanitized by the server) in `content`, its links opening in a new tab. */
function fill(content, html, lang) {
  content.innerHTML = html || '';
  content.lang = lang || '';
  for (const link of content.querySelectorAll('a[href]')) {
    link.target = '_blank';
    link.rel = 'noopener noreferrer';
  }
}

/** Adds "Translate" to an opened item's tools. */
export function decorate(item, body) {
  const tools = body.querySelector('.item-tools');
  const content = body.querySelector('.item-content');
  if (!tools || !content || tools.querySelector('[data-action="translate"]')) return;
  const original = { html: content.innerHTML, lang: content.lang };
  const button = h('button', { type: 'button', class: 'button', 'data-action': 'translate', 'aria-pressed': 'false' }, t('translate.translate'));
  const show = (translation) => {
    fill(content, translation.content, translation.to);
    if (translation.title) content.prepend(h('h3', { class: 'item-translated-title' }, translation.title));
    content.append(h('p', { class: 'hint' }, t('translate.by', { provider: translation.provider })));
    button.setAttribute('aria-pressed', 'true');
    button.textContent = t('translate.show_original');
  };
  button.addEventListener('click', async () => {
    if (button.getAttribute('aria-pressed') === 'true') {
      fill(content, original.html, original.lang);
      button.setAttribute('aria-pressed', 'false');
      button.textContent = t('translate.show_translation');
      return;
    }
    if (translations.has(item.id)) return show(translations.get(item.id));
    button.disabled = true;
    button.textContent = t('translate.translating');
    try {
      const translation = await api('POST', '/items/' + item.id + '/translate', { to: language() });
      translations.set(item.id, translation);
      show(translation);
    } catch (e) {
      button.textContent = t('translate.translate');
      showError(e, t('translate.failed'));
    } finally {
      button.disabled = false;
    }
  });
  tools.insertBefore(button, tools.querySelector('[data-action="read"]'));
}
