// The search box (F35): search as you type, debounced, in the list being shown (same feed,
// group and filter) or in the bookmarks. It only builds the box and reports what to search;
// the caller turns that into a URL, so the list, reload and back all follow the address.

import { h, icon } from './dom.js';
import { beacon } from './api.js';
import { t } from './i18n.js';

/** Milliseconds of quiet typing before a search is sent. */
const DEBOUNCE_MS = 180;
/** Milliseconds a typed search's results stay on screen before it counts as meant (F45). */
const SETTLE_MS = 2000;

// The usage counts count a search the reader settled on, not each keystroke's search: the
// last search typed in the box, until it is counted or replaced.
let typed = '';
let settleTimer = null;

/** Counts `text` once, if it is the search typed last and not counted yet. */
function countSearch(text) {
  clearTimeout(settleTimer);
  settleTimer = null;
  if (!text || text !== typed) return;
  typed = '';
  beacon('/usage/searches', { q: text });
}

/**
 * Called when the first results of the search `text` are on screen: a search typed in the
 * box counts once they stay SETTLE_MS; one reached by a link, reload or Back does not.
 */
export function searchShown(text) {
  clearTimeout(settleTimer);
  if (text && text === typed) settleTimer = setTimeout(() => countSearch(text), SETTLE_MS);
}

/**
 * Creates the search box. `onSearch(text)` is called with the trimmed text (empty: back to
 * the plain list) after typing pauses, at once on Enter, and with '' on Escape.
 */
export function createSearchBox({ onSearch }) {
  let timer = null;
  let last = null;
  const input = h('input', {
    type: 'search',
    id: 'search-box',
    class: 'search-input',
    placeholder: t('search.placeholder'),
    'aria-label': t('search.label'),
    title: t('search.title'),
    autocomplete: 'off',
    spellcheck: 'false',
    maxlength: '400',
  });
  const fire = () => {
    clearTimeout(timer);
    timer = null;
    const text = input.value.trim();
    if (text === last) return;
    last = text;
    clearTimeout(settleTimer);
    typed = text;
    onSearch(text);
  };
  input.addEventListener('input', () => {
    clearTimeout(timer);
    timer = setTimeout(fire, DEBOUNCE_MS);
  });
  input.addEventListener('keydown', (event) => {
    if (event.key === 'Enter') {
      event.preventDefault();
      fire();
      // Enter says this is the search meant: it counts without waiting.
      countSearch(input.value.trim());
    } else if (event.key === 'Escape') {
      event.preventDefault();
      input.value = '';
      fire();
      input.blur();
    }
  });
  const form = h('form', { class: 'search', role: 'search', onsubmit: (e) => { e.preventDefault(); fire(); } },
    icon('search', 'search-icon'), input);
  return {
    element: form,
    /** Shows `text` as the current search without searching (after navigation). */
    show(text) {
      if (document.activeElement !== input || timer === null) {
        input.value = text || '';
        last = (text || '').trim();
      }
    },
    focus() {
      input.focus();
      input.select();
    },
  };
}

/**
 * The nodes of a search snippet. The server sends escaped text with matches in <mark>; only
 * text and <mark> are kept, whatever else the string might hold.
 */
export function snippetNodes(html) {
  const template = document.createElement('template');
  template.innerHTML = html || '';
  const nodes = [];
  for (const node of template.content.childNodes) {
    if (node.nodeName === 'MARK') nodes.push(h('mark', null, node.textContent));
    else nodes.push(document.createTextNode(node.textContent));
  }
  return nodes;
}
