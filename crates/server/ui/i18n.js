// The UI's words in the reader's language (issue 34): one catalog per language, served in two
// parts (ui.rs): the first screen's, and the views' (loaded by lazy.js before a view).

/** The languages' codes, as the shell lists them (ui.rs LANGUAGES). */
export const LANGUAGES = document.documentElement.dataset.languages.split(' ');

/** The API's language: in it, the API's own (more specific) error messages are shown. */
export const API_LANGUAGE = 'en';

/** Browser tags that mean Simplified Chinese without saying so. */
const ALIASES = { zh: 'zh-Hans', 'zh-cn': 'zh-Hans', 'zh-sg': 'zh-Hans' };

let lang = API_LANGUAGE;
let messages = {};
let loaded = false;
/** The views' part: null until asked for, then the promise of its loading. */
let views = null;
let plurals = new Intl.PluralRules(lang);
let numbers = new Intl.NumberFormat(lang);
const collate = (code) => new Intl.Collator(code, { numeric: true, sensitivity: 'base' });
let collator = collate(lang);

/** The language in use. */
export function language() {
  return lang;
}

/** The first browser language tidings speaks (ja-JP is ja; zh-TW is not zh-Hans), else English. */
export function browserLanguage(tags = navigator.languages) {
  for (const tag of tags) {
    const lower = tag.toLowerCase();
    const code = LANGUAGES.find((c) => lower === c.toLowerCase() || lower.startsWith(c.toLowerCase() + '-')) || ALIASES[lower];
    if (LANGUAGES.includes(code)) return code;
  }
  return API_LANGUAGE;
}

/** The preference remembered on this browser, so that a visit loads its catalog first. */
export function rememberedPreference() {
  try {
    return localStorage.getItem('tidings.language') || 'auto';
  } catch (e) {
    return 'auto';
  }
}

async function fetchPart(code, part) {
  // Beside this module, under the same versioned path (cached for ever).
  const response = await fetch(new URL('./i18n/' + code + part + '.json', import.meta.url));
  if (!response.ok) throw new Error('HTTP ' + response.status + ': ' + response.url);
  return response.json();
}

/** Uses the language of `preference` (a code, or `auto`: the browser's), with `<html lang>`, once loaded. */
export async function useLanguage(preference) {
  try {
    localStorage.setItem('tidings.language', preference);
  } catch (e) {
    // Private mode: the next visit starts from the browser's language.
  }
  // The server writes the next visit's shell (its words while loading) in the same (ui.rs).
  document.cookie = 'tidings_language=' + preference + ';path=/;max-age=31536000;samesite=lax';
  const code = LANGUAGES.includes(preference) ? preference : browserLanguage();
  if (loaded && code === lang) return;
  // Views already drawn in the former language need theirs in the new one at once.
  const [first, rest] = await Promise.all([fetchPart(code, ''), views && fetchPart(code, '.views')]);
  messages = Object.assign(first, rest);
  loaded = true;
  lang = code;
  plurals = new Intl.PluralRules(code);
  numbers = new Intl.NumberFormat(code);
  collator = collate(code);
  document.documentElement.lang = code;
}

/** Loads the views' messages once (lazy.js, before a view or dialog is used). */
export function loadViews() {
  const code = lang;
  views = views || fetchPart(code, '.views').then((rest) => {
    if (code === lang) Object.assign(messages, rest);
  }, (e) => {
    views = null;
    throw e;
  });
  return views;
}

/** Whether the catalog in use has `key`. */
export function has(key) {
  return key in messages;
}

const show = (value) => (typeof value === 'number' ? numbers.format(value) : value);

/** The message `key`; plural forms (an object) are chosen by `params.count`. */
function template(key, params) {
  const text = messages[key] ?? key;
  return typeof text === 'string' ? text : text[plurals.select(params ? params.count : 0)] || text.other;
}

/** The message `key` in the language in use, its {placeholders} filled from `params`. */
export function t(key, params) {
  return template(key, params).replace(/\{(\w+)\}/g, (all, name) => (params && name in params ? show(params[name]) : all));
}

/** The message `key` as text and nodes for h(): a node in `params` keeps its place in the sentence. */
export function tParts(key, params) {
  return template(key, params).split(/\{(\w+)\}/).map((part, i) => (i % 2 ? show(params[part]) : part));
}

/** A number written the language's way, with Intl.NumberFormat's `options` if any. */
export function formatNumber(value, options) {
  return new Intl.NumberFormat(lang, options).format(value);
}

/** Compares names the language's way, numbers by value ("2" before "10"). */
export function compareNames(a, b) {
  return collator.compare(a, b);
}
