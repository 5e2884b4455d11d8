// The scraped source dialog (F7): configure, preview on the live page, subscribe or save.

import { app } from './state.js';
import { api } from './api.js';
import { fullDate, h, replace } from './dom.js';
import { errorBlock, modal, toast } from './dialogs.js';
import { t } from './i18n.js';

/** The scraper's fields: their name in the API, the key of their label, the kinds of page they apply to. */
const FIELDS = [
  { name: 'item_selector', label: 'scrape.item_selector', kinds: ['html'], example: '.w-dyn-item' },
  { name: 'data_key', label: 'scrape.data_key', kinds: ['nextjs', 'remix'], example: { nextjs: 'props.pageProps.posts', remix: 'posts' } },
  { name: 'context_key', label: 'scrape.context_key', kinds: ['remix'], example: 'routes/blog._index' },
  { name: 'title_selector', label: 'scrape.title', kinds: ['html', 'nextjs', 'remix'], example: 'title' },
  { name: 'url_selector', label: 'scrape.link', kinds: ['html', 'nextjs', 'remix'], example: 'slug' },
  { name: 'date_selector', label: 'scrape.date', kinds: ['html', 'nextjs', 'remix'], example: 'date' },
  { name: 'date_format', label: 'scrape.date_format', kinds: ['html', 'nextjs', 'remix'], example: '%B %d, %Y' },
  { name: 'summary_selector', label: 'item.summary', kinds: ['html', 'nextjs', 'remix'], example: 'excerpt' },
  { name: 'url_prefix', label: 'scrape.url_prefix', kinds: ['html', 'nextjs', 'remix'], example: 'https://example.com/blog/' },
];

/** The key of each kind's hint. */
const KIND_HINTS = { html: 'scrape.hint_html', nextjs: 'scrape.hint_nextjs', remix: 'scrape.hint_remix' };

/** The dialog: edits `subscription`'s scraper, or subscribes to a page (`url`). */
export function openScrape({ subscription, url } = {}) {
  const current = (subscription && subscription.scraper) || { kind: 'html' };
  const editing = Boolean(subscription);
  const address = h('input', { id: 'scrape-url', type: 'text', inputmode: 'url', required: true, spellcheck: 'false', placeholder: 'https://example.com/blog', value: editing ? subscription.feed_url : (url || ''), disabled: editing });
  const kind = h('select', { id: 'scrape-kind' },
    h('option', { value: 'html', selected: current.kind === 'html' }, t('scrape.kind_html')),
    h('option', { value: 'nextjs', selected: current.kind === 'nextjs' }, 'Next.js: __NEXT_DATA__'),
    h('option', { value: 'remix', selected: current.kind === 'remix' }, 'Remix: __remixContext'));
  const kindHint = h('p', { class: 'hint' });
  const inputs = {};
  const rows = FIELDS.map((field) => {
    const input = h('input', { id: 'scrape-' + field.name, name: field.name, type: 'text', spellcheck: 'false', value: current[field.name] || '' });
    inputs[field.name] = input;
    return { field, row: h('div', { class: 'scrape-field' }, h('label', { for: input.id }, t(field.label)), input) };
  });
  const showKind = () => {
    const chosen = kind.value;
    kindHint.textContent = t(KIND_HINTS[chosen]);
    for (const { field, row } of rows) {
      row.hidden = !field.kinds.includes(chosen);
      const example = typeof field.example === 'string' ? field.example : field.example[chosen];
      inputs[field.name].placeholder = example ? t('scrape.example', { example }) : '';
    }
  };
  kind.addEventListener('change', showKind);
  showKind();

  const status = h('div', { class: 'dialog-status', 'aria-live': 'polite' });
  const results = h('div', { class: 'scrape-preview', 'aria-live': 'polite' });
  const previewButton = h('button', { type: 'button', class: 'button', id: 'scrape-preview' }, t('scrape.preview'));
  const submit = h('button', { type: 'submit', class: 'button primary', id: 'scrape-submit' }, editing ? t('common.save') : t('nav.subscribe'));
  const cancel = h('button', { type: 'button', class: 'button' }, t('common.cancel'));
  const form = h('form', { class: 'form scrape-form', novalidate: true },
    h('label', { for: 'scrape-url' }, t('scrape.address')), address,
    h('label', { for: 'scrape-kind' }, t('scrape.kind')), kind, kindHint,
    rows.map((r) => r.row),
    status,
    results,
    h('div', { class: 'dialog-buttons' }, cancel, previewButton, submit));
  const dialog = modal('scrape-title', h('h2', { id: 'scrape-title' }, editing ? t('scrape.title_of', { feed: subscription.title }) : t('scrape.title_new')), form);
  dialog.classList.add('dialog-wide');
  cancel.addEventListener('click', () => dialog.close());
  (editing ? kind : address).focus();

  // Empty fields and those of other kinds are left out.
  const config = () => {
    const chosen = kind.value;
    const scraper = { kind: chosen };
    for (const { field } of rows) {
      const value = inputs[field.name].value.trim();
      if (value && field.kinds.includes(chosen)) scraper[field.name] = value;
    }
    return scraper;
  };
  const busy = (text) => replace(status, h('p', { class: 'progress-line' }, h('span', { class: 'spinner', 'aria-hidden': 'true' }), text));
  const failed = (e) => { replace(status, errorBlock(e)); replace(results); };
  const pageUrl = () => (editing ? subscription.feed_url : address.value.trim());

  const empty = () => failed({ category: 'validation', message: t('subscribe.empty'), action: t('scrape.empty_action') });
  previewButton.addEventListener('click', async () => {
    if (!pageUrl()) {
      empty();
      return;
    }
    previewButton.disabled = true;
    busy(t('scrape.reading'));
    try {
      const preview = await api('POST', '/scraped-sources/preview', { url: pageUrl(), scraper: config() });
      replace(status);
      showPreview(results, preview);
    } catch (e) {
      failed(e);
    } finally {
      previewButton.disabled = false;
    }
  });

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    if (!pageUrl()) {
      empty();
      return;
    }
    submit.disabled = true;
    busy(t('scrape.reading'));
    try {
      const body = { scraper: config() };
      const outcome = editing
        ? await api('PUT', '/subscriptions/' + subscription.id + '/scraper', body)
        : await api('POST', '/scraped-sources', Object.assign(body, { url: pageUrl() }));
      await app.reloadFeeds();
      dialog.close();
      const sub = outcome.subscription;
      toast({ title: editing ? t('scrape.saved') : t('subscribe.done'), message: t('scrape.items_on_page', { feed: sub.title, count: outcome.preview.items.length }) });
      if (!editing) {
        app.showPane('main');
        app.navigate('/feeds/' + sub.feed_id + '?filter=all');
      }
    } catch (e) {
      submit.disabled = false;
      failed(e);
    }
  });
  return dialog;
}

/** The items found. */
function showPreview(box, preview) {
  if (!preview.items.length) {
    replace(box, h('p', { class: 'hint' }, t('scrape.no_items')));
    return;
  }
  replace(box,
    h('p', { class: 'scrape-preview-title' }, t('scrape.items_on', { count: preview.items.length, page: preview.title || preview.url })),
    h('ol', { class: 'scrape-items' }, preview.items.map((item) => h('li', null,
      h('strong', null, item.title || t('scrape.no_title')),
      h('span', { class: 'hint' }, ' — ' + (item.published_at ? fullDate(item.published_at) : t('scrape.no_date'))),
      item.url ? h('div', { class: 'scrape-item-url' }, h('a', { href: item.url, target: '_blank', rel: 'noopener noreferrer' }, item.url)) : null))));
}
