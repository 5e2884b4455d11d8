// The scraped source dialog (F7): configure, preview on the live page, subscribe or save.

import { app } from './state.js';
import { api } from './api.js';
import { fullDate, h, replace } from './dom.js';
import { errorBlock, modal, toast } from './dialogs.js';

const FIELDS = [
  { name: 'item_selector', label: 'Item selector', kinds: ['html'], example: '.w-dyn-item' },
  { name: 'data_key', label: 'Data key', kinds: ['nextjs', 'remix'], example: { nextjs: 'props.pageProps.posts', remix: 'posts' } },
  { name: 'context_key', label: 'Context key', kinds: ['remix'], example: 'routes/blog._index' },
  { name: 'title_selector', label: 'Title', kinds: ['html', 'nextjs', 'remix'], example: 'title' },
  { name: 'url_selector', label: 'Link', kinds: ['html', 'nextjs', 'remix'], example: 'slug' },
  { name: 'date_selector', label: 'Date', kinds: ['html', 'nextjs', 'remix'], example: 'date' },
  { name: 'date_format', label: 'Date format (strftime)', kinds: ['html', 'nextjs', 'remix'], example: '%B %d, %Y' },
  { name: 'summary_selector', label: 'Summary', kinds: ['html', 'nextjs', 'remix'], example: 'excerpt' },
  { name: 'url_prefix', label: 'URL prefix', kinds: ['html', 'nextjs', 'remix'], example: 'https://example.com/blog/' },
];

const KIND_HINTS = {
  html: 'CSS selectors; the fields are looked for inside each item.',
  nextjs: 'Key paths (keys joined by dots) into __NEXT_DATA__, then inside each item.',
  remix: 'A route of __remixContext, a key path to its list, then paths inside each item.',
};

/** The dialog: edits `subscription`'s scraper, or subscribes to a page (`url`). */
export function openScrape({ subscription, url } = {}) {
  const current = (subscription && subscription.scraper) || { kind: 'html' };
  const editing = Boolean(subscription);
  const address = h('input', { id: 'scrape-url', type: 'text', inputmode: 'url', required: true, spellcheck: 'false', placeholder: 'https://example.com/blog', value: editing ? subscription.feed_url : (url || ''), disabled: editing });
  const kind = h('select', { id: 'scrape-kind' },
    h('option', { value: 'html', selected: current.kind === 'html' }, 'Plain HTML (Webflow…)'),
    h('option', { value: 'nextjs', selected: current.kind === 'nextjs' }, 'Next.js: __NEXT_DATA__'),
    h('option', { value: 'remix', selected: current.kind === 'remix' }, 'Remix: __remixContext'));
  const kindHint = h('p', { class: 'hint' });
  const inputs = {};
  const rows = FIELDS.map((field) => {
    const input = h('input', { id: 'scrape-' + field.name, name: field.name, type: 'text', spellcheck: 'false', value: current[field.name] || '' });
    inputs[field.name] = input;
    return { field, row: h('div', { class: 'scrape-field' }, h('label', { for: input.id }, field.label), input) };
  });
  const showKind = () => {
    const chosen = kind.value;
    kindHint.textContent = KIND_HINTS[chosen];
    for (const { field, row } of rows) {
      row.hidden = !field.kinds.includes(chosen);
      const example = typeof field.example === 'string' ? field.example : field.example[chosen];
      inputs[field.name].placeholder = example ? 'e.g. ' + example : '';
    }
  };
  kind.addEventListener('change', showKind);
  showKind();

  const status = h('div', { class: 'dialog-status', 'aria-live': 'polite' });
  const results = h('div', { class: 'scrape-preview', 'aria-live': 'polite' });
  const previewButton = h('button', { type: 'button', class: 'button', id: 'scrape-preview' }, 'Preview');
  const submit = h('button', { type: 'submit', class: 'button primary', id: 'scrape-submit' }, editing ? 'Save' : 'Subscribe');
  const cancel = h('button', { type: 'button', class: 'button' }, 'Cancel');
  const form = h('form', { class: 'form scrape-form', novalidate: true },
    h('label', { for: 'scrape-url' }, 'Address of the page'), address,
    h('label', { for: 'scrape-kind' }, 'Kind of page'), kind, kindHint,
    rows.map((r) => r.row),
    status,
    results,
    h('div', { class: 'dialog-buttons' }, cancel, previewButton, submit));
  const dialog = modal('scrape-title', h('h2', { id: 'scrape-title' }, editing ? 'Scraper of ' + subscription.title : 'Scrape a page without a feed'), form);
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

  previewButton.addEventListener('click', async () => {
    if (!pageUrl()) {
      failed({ category: 'validation', message: 'The address is empty.', action: 'Type the address of the page to scrape.' });
      return;
    }
    previewButton.disabled = true;
    busy('Reading the page…');
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
      failed({ category: 'validation', message: 'The address is empty.', action: 'Type the address of the page to scrape.' });
      return;
    }
    submit.disabled = true;
    busy('Reading the page…');
    try {
      const body = { scraper: config() };
      const outcome = editing
        ? await api('PUT', '/subscriptions/' + subscription.id + '/scraper', body)
        : await api('POST', '/scraped-sources', Object.assign(body, { url: pageUrl() }));
      await app.reloadFeeds();
      dialog.close();
      const sub = outcome.subscription;
      toast({ title: editing ? 'Scraper saved' : 'Subscribed', message: sub.title + ': ' + outcome.preview.items.length + ' items on the page.' });
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
    replace(box, h('p', { class: 'hint' }, 'No items.'));
    return;
  }
  replace(box,
    h('p', { class: 'scrape-preview-title' }, preview.items.length + ' items on ' + (preview.title || preview.url) + ':'),
    h('ol', { class: 'scrape-items' }, preview.items.map((item) => h('li', null,
      h('strong', null, item.title || '(no title)'),
      item.published_at ? h('span', { class: 'hint' }, ' — ' + fullDate(item.published_at)) : h('span', { class: 'hint' }, ' — no date'),
      item.url ? h('div', { class: 'scrape-item-url' }, h('a', { href: item.url, target: '_blank', rel: 'noopener noreferrer' }, item.url)) : null))));
}
