// Notification channels (F43): the user's Discord, Slack and generic webhooks with their rules,
// "Send test" and each channel's delivery log, over /api/v1/webhooks. The settings page hands in
// its `section` and `onSubmit` helpers, so this page looks and behaves like the others.

import { app } from './state.js';
import { api } from './api.js';
import { fullDate, h, replace } from './dom.js';
import { confirmDialog, errorBlock, showError, toast } from './dialogs.js';
import { has, t } from './i18n.js';

/** The kinds of channel with their names: brands, and a word of the language for the rest. */
const KINDS = { discord: 'Discord', slack: 'Slack', generic: 'generic' };
const kindName = (kind) => (kind === 'generic' ? t('channels.generic_json') : KINDS[kind]);
const EXAMPLES = {
  discord: 'https://discord.com/api/webhooks/…/…',
  slack: 'https://hooks.slack.com/services/T…/B…/…',
  generic: 'https://example.com/hook',
};

/** A webhook URL is its own password: only its host and first path part are shown. */
function masked(url) {
  try {
    const u = new URL(url);
    const first = u.pathname.split('/')[1];
    return u.host + (first ? '/' + first : '') + '/…';
  } catch (e) {
    return '…';
  }
}

const names = (ids, find) => ids.map((id) => find(id) || '#' + id).join(', ');

/** What a channel gets, in words. */
function rulesText({ feed_ids: feeds, group_ids: groups, keywords }) {
  const parts = [
    feeds.length && t('channels.rule_feeds', { names: names(feeds, (id) => app.subscriptionByFeed(id)?.title) }),
    groups.length && t('channels.rule_groups', { names: names(groups, (id) => app.groups.find((g) => g.id === id)?.name) }),
    keywords.length && t('channels.rule_words', { words: keywords.join(', ') }),
  ].filter(Boolean);
  return parts.length ? parts.join(' · ') : t('channels.every_item');
}

/** Its state: off, the breaker, failures in a row, what waits, the last message sent (tests
 * change none of it). */
function stateText(c) {
  return [
    c.enabled ? null : t('channels.off'),
    c.kind === 'generic' && !c.signed ? t('channels.unsigned') : null,
    c.breaker_open_until ? t('channels.breaker', { count: c.failures, date: fullDate(c.breaker_open_until) })
      : c.failures ? t('channels.failed_times', { count: c.failures }) : null,
    c.queued ? t('channels.waiting', { count: c.queued }) : null,
    c.last_sent_at ? t('channels.last_sent', { date: fullDate(c.last_sent_at) }) : null,
  ].filter(Boolean).join(' · ');
}

/** The channel as its row shows it. */
function facts(c) {
  const state = stateText(c);
  return h('span', { class: 'channel-facts' },
    h('strong', null, c.name), ' · ' + kindName(c.kind) + ' · ', h('code', null, masked(c.url)),
    h('span', { class: 'hint' }, ' · ' + rulesText(c.rules)),
    state ? h('span', { class: 'hint channel-state' + (c.failures ? ' state-backoff' : '') }, ' · ' + state) : null);
}

/** Ticks for the feeds or groups a channel names. */
function picks(legend, name, choices, chosen) {
  return h('fieldset', { class: 'picks' }, h('legend', null, legend),
    choices.length ? choices.map(([id, label]) => h('label', { class: 'choice' },
      h('input', { type: 'checkbox', name, value: id, checked: chosen.includes(id) }), label)) : h('p', { class: 'hint' }, t('channels.none_yet')));
}

const ticked = (set) => [...set.querySelectorAll('input:checked')].map((i) => Number(i.value));

/** The form that adds a channel (`channel` null) or changes one; `done` runs after a save. */
function channelForm(channel, onSubmit, done, cancel) {
  const n = channel ? 'channel-' + channel.id : 'new-channel';
  const rules = channel ? channel.rules : { feed_ids: [], group_ids: [], keywords: [] };
  const kind = h('select', { id: n + '-kind', disabled: Boolean(channel) },
    Object.keys(KINDS).map((value) => h('option', { value, selected: channel?.kind === value }, kindName(value))));
  const url = h('input', { type: 'text', id: n + '-url', inputmode: 'url', autocomplete: 'off', spellcheck: 'false', required: !channel,
    placeholder: channel ? t('channels.unchanged', { url: masked(channel.url) }) : EXAMPLES.discord });
  kind.addEventListener('change', () => { url.placeholder = EXAMPLES[kind.value]; });
  const name = h('input', { type: 'text', id: n + '-name', value: channel?.name || '', placeholder: t('channels.name_placeholder') });
  const feeds = picks(t('nav.feeds'), 'feed', app.subscriptions.map((s) => [s.feed_id, s.title]), rules.feed_ids);
  const groups = picks(t('sidebar.groups'), 'group', app.groups.map((g) => [g.id, g.name]), rules.group_ids);
  const words = h('input', { type: 'text', id: n + '-words', value: rules.keywords.join(', ') });
  const enabled = h('input', { type: 'checkbox', id: n + '-on', checked: !channel || channel.enabled });
  const status = h('div', { 'aria-live': 'polite' });
  const form = h('form', { class: 'form narrow channel-form' },
    h('label', { for: n + '-kind' }, t('channels.kind')), kind,
    h('label', { for: n + '-url' }, t('channels.address')), url,
    h('p', { class: 'hint' }, channel ? t('channels.keep_address') : t('channels.copy_address')),
    h('label', { for: n + '-name' }, t('keys_api.name')), name,
    feeds, groups,
    h('label', { for: n + '-words' }, t('channels.words')), words,
    h('p', { class: 'hint' }, t('channels.rules_hint')),
    h('div', { class: 'check-row' }, enabled, h('label', { for: n + '-on' }, t('channels.on'))),
    status,
    h('div', { class: 'button-row' },
      h('button', { type: 'submit', class: 'button primary' }, channel ? t('common.save') : t('channels.add')),
      cancel ? h('button', { type: 'button', class: 'button', onclick: cancel }, t('common.cancel')) : null));
  onSubmit(form, status, async () => {
    const body = {
      name: name.value.trim() || null,
      rules: { feed_ids: ticked(feeds), group_ids: ticked(groups), keywords: words.value.split(/[,，、]/).map((w) => w.trim()).filter(Boolean) },
      enabled: enabled.checked,
    };
    if (url.value.trim()) body.url = url.value.trim();
    if (channel) await api('PATCH', '/webhooks/' + channel.id, body);
    else {
      const { webhook } = await api('POST', '/webhooks', { kind: kind.value, ...body });
      // A generic channel's signing secret comes in this answer only.
      if (webhook.signing_secret) shownSecret = { id: webhook.id, secret: webhook.signing_secret };
    }
    done();
  });
  return form;
}

/** The signing secret just made for a channel, shown in its row until the page is left: no
 * later answer carries it. */
let shownSecret = null;

/** A new signing secret, shown once with how receivers check it. */
const secretBlock = (secret) => h('div', { class: 'notice channel-secret', role: 'status' },
  h('p', null, h('strong', null, t('channels.secret')), ' ', h('code', { class: 'secret' }, secret)),
  h('p', { class: 'hint' }, t('channels.secret_hint')));

/** What "Send test" did: sent, or the refusal's status and message; `kind` says where to look. */
function testResult(r, kind) {
  if (r.ok) return h('p', { class: 'success' }, r.http_status ? t('channels.test_sent_http', { status: String(r.http_status), ms: r.duration_ms }) : t('channels.test_sent', { ms: r.duration_ms }));
  // The server's words name the HTTP status when there was an answer.
  const error = r.error || t('channels.no_answer');
  return errorBlock({ category: 'delivery', message: error[0].toUpperCase() + error.slice(1) + '.',
    action: kind === 'generic' ? t('channels.check_generic') : t('channels.check_brand', { service: KINDS[kind] }) });
}

/** The delivery log, newest first. */
const logTable = (c, rows) => rows.length ? h('div', { class: 'scroll-x' }, h('table', { class: 'report' },
  h('caption', { class: 'visually-hidden' }, t('channels.log_of', { channel: c.name })),
  h('thead', null, h('tr', null, [t('channels.time'), t('feedpage.status'), 'HTTP', t('list.items'), t('channels.error'), t('channels.took')].map((label) => h('th', { scope: 'col' }, label)))),
  h('tbody', null, rows.map((d) => h('tr', { class: 'delivery-' + d.status },
    h('td', null, fullDate(d.at)), h('td', null, (has('status.' + d.status) ? t('status.' + d.status) : d.status) + (d.test ? ' ' + t('channels.test_mark') : '')), h('td', null, d.http_status ?? '—'),
    h('td', null, d.items), h('td', null, d.error || ''), h('td', null, d.duration_ms + ' ms')))))) : h('p', { class: 'hint' }, t('channels.nothing_logged'));

/** One channel's row: its facts, Send test, Delivery log, Edit and Delete. */
function channelRow(c, onSubmit, redraw) {
  const row = h('li', { class: 'row channel', dataset: { id: c.id } });
  const result = h('div', { class: 'channel-more', 'aria-live': 'polite' });
  const log = h('div', { class: 'channel-more' });
  const button = (label, action, onclick, extra) => h('button', { type: 'button', class: 'button', dataset: { action }, onclick, ...extra }, label);
  const showLog = async () => {
    try {
      replace(log, logTable(c, (await api('GET', '/webhooks/' + c.id + '/deliveries')).deliveries));
    } catch (e) {
      replace(log, errorBlock(e));
    }
  };
  const logButton = button(t('channels.log'), 'log', () => {
    const open = logButton.getAttribute('aria-expanded') === 'true';
    logButton.setAttribute('aria-expanded', String(!open));
    if (open) replace(log);
    else showLog();
  }, { 'aria-expanded': 'false' });
  const test = button(t('channels.send_test'), 'test', async () => {
    test.disabled = true;
    replace(result, h('p', { class: 'progress-line' }, h('span', { class: 'spinner', 'aria-hidden': 'true' }), t('channels.sending')));
    try {
      replace(result, testResult(await api('POST', '/webhooks/' + c.id + '/test'), c.kind));
      // The test is logged: an open log shows it.
      if (log.firstChild) showLog();
    } catch (e) {
      replace(result, errorBlock(e));
    } finally {
      test.disabled = false;
    }
  });
  // Generic channels are signed; one made before signing, or whose secret was lost, gets a new
  // secret here (the old one stops at once).
  const renew = c.kind === 'generic' ? button(c.signed ? t('channels.new_secret') : t('channels.sign'), 'secret', async () => {
    if (c.signed && !(await confirmDialog(t('channels.new_secret_title', { channel: c.name }),
      t('channels.new_secret_message'), t('channels.new_secret')))) return;
    try {
      const { signing_secret: secret } = await api('POST', '/webhooks/' + c.id + '/secret');
      shownSecret = { id: c.id, secret };
      redraw();
    } catch (e) {
      replace(result, errorBlock(e));
    }
  }) : null;
  const secret = shownSecret?.id === c.id ? secretBlock(shownSecret.secret) : null;
  const edit = button(t('channels.edit'), 'edit', () => replace(row, channelForm(c, onSubmit, redraw, redraw)));
  const remove = button(t('common.delete'), 'delete', async () => {
    if (!(await confirmDialog(t('channels.delete_title', { channel: c.name }), t('channels.delete_message'), t('channels.delete')))) return;
    try {
      await api('DELETE', '/webhooks/' + c.id);
      redraw();
    } catch (e) {
      showError(e, t('channels.delete_failed'));
    }
  }, { class: 'button danger' });
  return replace(row, facts(c), h('span', { class: 'row-buttons' }, test, logButton, renew, edit, remove), secret, result, log);
}

/** The Notifications page's sections, for `section(title, ...content)` and `onSubmit`. */
export function notificationSections(section, onSubmit) {
  shownSecret = null;
  const list = h('ul', { class: 'plain-list', id: 'channels' });
  const draw = async () => {
    try {
      const { webhooks } = await api('GET', '/webhooks');
      replace(list, webhooks.length ? webhooks.map((c) => channelRow(c, onSubmit, draw)) : h('li', { class: 'hint' }, t('channels.none')));
    } catch (e) {
      replace(list, h('li', null, errorBlock(e)));
    }
  };
  const add = h('div');
  const drawForm = () => replace(add, channelForm(null, onSubmit, async () => {
    toast({ title: t('channels.added'), message: t('channels.added_message') });
    drawForm();
    await draw();
    // The list is above the long form: the new channel is brought into sight.
    list.lastElementChild.scrollIntoView({ block: 'center' });
  }));
  draw();
  drawForm();
  return [
    section(t('channels.title'), h('p', null, t('channels.intro')), list),
    section(t('channels.add_title'), add),
  ];
}
