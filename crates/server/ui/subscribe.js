// The subscribe dialog (F53), loaded when first opened: a page or feed address, a group,
// discovery progress and errors.

import { app } from './state.js';
import { api } from './api.js';
import { h, replace } from './dom.js';
import { errorBlock, modal, toast } from './dialogs.js';

/**
 * The subscribe dialog: a page or feed URL, a group, discovery progress, errors. With
 * `onScrape`, it offers to scrape a page without a feed instead (called with the address).
 */
export function openSubscribe({ onScrape } = {}) {
  const input = h('input', { id: 'subscribe-url', name: 'url', type: 'text', inputmode: 'url', autocomplete: 'url', required: true, placeholder: 'https://example.com or https://example.com/feed.xml', spellcheck: 'false' });
  const groups = [...app.groups].sort((a, b) => (a.position || 0) - (b.position || 0));
  const group = groups.length
    ? h('select', { id: 'subscribe-group', name: 'group' }, groups.map((g) => h('option', { value: g.id, selected: g.is_default }, g.name)))
    : null;
  const status = h('div', { class: 'dialog-status', 'aria-live': 'polite' });
  const submit = h('button', { type: 'submit', class: 'button primary' }, 'Subscribe');
  const cancel = h('button', { type: 'button', class: 'button' }, 'Cancel');
  const form = h('form', { class: 'form', novalidate: true },
    h('label', { for: 'subscribe-url' }, 'Address of a site or of its feed'),
    input,
    h('p', { class: 'hint' }, 'A page is enough: tidings looks for the feed it links to, then at the usual places (/feed, /rss, /atom.xml…).'),
    group ? [h('label', { for: 'subscribe-group' }, 'Group'), group] : null,
    status,
    onScrape ? h('p', { class: 'hint' }, 'No feed? ', h('button', { type: 'button', class: 'link-button', id: 'scrape-instead', onclick: () => { dialog.close(); onScrape(input.value.trim()); } }, 'Scrape the page instead…')) : null,
    h('div', { class: 'dialog-buttons' }, cancel, submit));
  const dialog = modal('subscribe-title', h('h2', { id: 'subscribe-title' }, 'Subscribe'), form);
  cancel.addEventListener('click', () => dialog.close());
  input.focus();
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const url = input.value.trim();
    if (!url) {
      replace(status, errorBlock({ category: 'validation', message: 'The address is empty.', action: 'Type the address of a site or of its feed.' }));
      input.focus();
      return;
    }
    submit.disabled = true;
    input.setAttribute('aria-invalid', 'false');
    replace(status, h('p', { class: 'progress-line' }, h('span', { class: 'spinner', 'aria-hidden': 'true' }),
      'Looking for a feed at ' + url + ' and fetching it… this can take a few seconds.'));
    const body = { url };
    if (group) body.group_id = Number(group.value);
    try {
      const created = await api('POST', '/subscriptions', body);
      const sub = created.subscription;
      dialog.close();
      await app.reloadFeeds();
      toast({ title: 'Subscribed', message: sub.title + (sub.unread_count ? ': ' + sub.unread_count + (sub.unread_count === 1 ? ' item' : ' items') + ' to read.' : '.'), action: created.notice || null });
      app.showPane('main');
      app.navigate('/feeds/' + sub.feed_id + '?filter=all');
    } catch (e) {
      submit.disabled = false;
      input.setAttribute('aria-invalid', 'true');
      replace(status, errorBlock(e));
      input.focus();
    }
  });
}
