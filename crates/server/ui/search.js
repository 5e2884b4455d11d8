// The search box (F35): search as you type, debounced, in the list being shown (same feed,
// group and filter) or in the bookmarks. It only builds the box and reports what to search;
// the caller turns that into a URL, so the list, reload and back all follow the address.

import { h, icon } from './dom.js';

/** Milliseconds of quiet typing before a search is sent. */
const DEBOUNCE_MS = 180;

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
    placeholder: 'Search',
    'aria-label': 'Search items (/)',
    title: 'Search (/): words, "a phrase", -excluded',
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
