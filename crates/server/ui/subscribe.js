// The subscribe dialog (F53), loaded when first opened: a page or feed address, a group,
// discovery progress and errors.

import { app } from './state.js';
import { api } from './api.js';
import { h, replace } from './dom.js';
import { errorBlock, modal, toast } from './dialogs.js';
import { t, tParts } from './i18n.js';

/**
 * The subscribe dialog: a page or feed URL, a group, discovery progress, errors. With
 * `onScrape`, it offers to scrape a page without a feed instead (called with the address).
 */
export function openSubscribe({ onScrape } = {}) {
  const input = h('input', { id: 'subscribe-url', name: 'url', type: 'text', inputmode: 'url', autocomplete: 'url', required: true, placeholder: t('subscribe.placeholder'), spellcheck: 'false' });
  const groups = [...app.groups].sort((a, b) => (a.position || 0) - (b.position || 0));
  const group = groups.length
    ? h('select', { id: 'subscribe-group', name: 'group' }, groups.map((g) => h('option', { value: g.id, selected: g.is_default }, g.name)))
    : null;
  const status = h('div', { class: 'dialog-status', 'aria-live': 'polite' });
  const submit = h('button', { type: 'submit', class: 'button primary' }, t('nav.subscribe'));
  const cancel = h('button', { type: 'button', class: 'button' }, t('common.cancel'));
  const scrape = onScrape ? h('button', { type: 'button', class: 'link-button', id: 'scrape-instead', onclick: () => { dialog.close(); onScrape(input.value.trim()); } }, t('subscribe.scrape_instead')) : null;
  const form = h('form', { class: 'form', novalidate: true },
    h('label', { for: 'subscribe-url' }, t('subscribe.address')),
    input,
    h('p', { class: 'hint' }, t('subscribe.hint')),
    group ? [h('label', { for: 'subscribe-group' }, t('list.group')), group] : null,
    status,
    scrape ? h('p', { class: 'hint' }, tParts('subscribe.no_feed', { scrape })) : null,
    h('div', { class: 'dialog-buttons' }, cancel, submit));
  const dialog = modal('subscribe-title', h('h2', { id: 'subscribe-title' }, t('nav.subscribe')), form);
  cancel.addEventListener('click', () => dialog.close());
  input.focus();
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const url = input.value.trim();
    if (!url) {
      replace(status, errorBlock({ category: 'validation', message: t('subscribe.empty'), action: t('subscribe.empty_action') }));
      input.focus();
      return;
    }
    submit.disabled = true;
    input.setAttribute('aria-invalid', 'false');
    replace(status, h('p', { class: 'progress-line' }, h('span', { class: 'spinner', 'aria-hidden': 'true' }),
      t('subscribe.looking', { url })));
    const body = { url };
    if (group) body.group_id = Number(group.value);
    try {
      const created = await api('POST', '/subscriptions', body);
      const sub = created.subscription;
      dialog.close();
      await app.reloadFeeds();
      toast({ title: t('subscribe.done'), message: sub.unread_count ? t('subscribe.done_unread', { feed: sub.title, count: sub.unread_count }) : t('subscribe.done_empty', { feed: sub.title }), action: created.notice || null });
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
