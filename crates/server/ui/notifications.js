// Notification channels (F43): the user's Discord, Slack and generic webhooks with their rules,
// "Send test" and each channel's delivery log, over /api/v1/webhooks. The settings page hands in
// its `section` and `onSubmit` helpers, so this page looks and behaves like the others.

import { app } from './state.js';
import { api } from './api.js';
import { fullDate, h, replace } from './dom.js';
import { confirmDialog, errorBlock, showError, toast } from './dialogs.js';

const KINDS = { discord: 'Discord', slack: 'Slack', generic: 'Generic (JSON)' };
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
    feeds.length && 'feeds: ' + names(feeds, (id) => app.subscriptionByFeed(id)?.title),
    groups.length && 'groups: ' + names(groups, (id) => app.groups.find((g) => g.id === id)?.name),
    keywords.length && 'words: ' + keywords.join(', '),
  ].filter(Boolean);
  return parts.length ? parts.join(' · ') : 'every new item';
}

/** Its state: off, the breaker, failures in a row, what waits, the last message sent (tests
 * change none of it). */
function stateText(c) {
  return [
    c.enabled ? null : 'off',
    c.kind === 'generic' && !c.signed ? 'unsigned' : null,
    c.breaker_open_until ? 'paused after ' + c.failures + ' failures in a row, until ' + fullDate(c.breaker_open_until)
      : c.failures ? 'failed ' + c.failures + ' times in a row' : null,
    c.queued ? c.queued + (c.queued === 1 ? ' item waiting' : ' items waiting') : null,
    c.last_sent_at ? 'last sent ' + fullDate(c.last_sent_at) : null,
  ].filter(Boolean).join(' · ');
}

/** The channel as its row shows it. */
function facts(c) {
  const state = stateText(c);
  return h('span', { class: 'channel-facts' },
    h('strong', null, c.name), ' · ' + KINDS[c.kind] + ' · ', h('code', null, masked(c.url)),
    h('span', { class: 'hint' }, ' · ' + rulesText(c.rules)),
    state ? h('span', { class: 'hint channel-state' + (c.failures ? ' state-backoff' : '') }, ' · ' + state) : null);
}

/** Ticks for the feeds or groups a channel names. */
function picks(legend, name, choices, chosen) {
  return h('fieldset', { class: 'picks' }, h('legend', null, legend),
    choices.length ? choices.map(([id, label]) => h('label', { class: 'choice' },
      h('input', { type: 'checkbox', name, value: id, checked: chosen.includes(id) }), label)) : h('p', { class: 'hint' }, 'None yet.'));
}

const ticked = (set) => [...set.querySelectorAll('input:checked')].map((i) => Number(i.value));

/** The form that adds a channel (`channel` null) or changes one; `done` runs after a save. */
function channelForm(channel, onSubmit, done, cancel) {
  const n = channel ? 'channel-' + channel.id : 'new-channel';
  const rules = channel ? channel.rules : { feed_ids: [], group_ids: [], keywords: [] };
  const kind = h('select', { id: n + '-kind', disabled: Boolean(channel) },
    Object.entries(KINDS).map(([value, label]) => h('option', { value, selected: channel?.kind === value }, label)));
  const url = h('input', { type: 'text', id: n + '-url', inputmode: 'url', autocomplete: 'off', spellcheck: 'false', required: !channel,
    placeholder: channel ? 'Unchanged: ' + masked(channel.url) : EXAMPLES.discord });
  kind.addEventListener('change', () => { url.placeholder = EXAMPLES[kind.value]; });
  const name = h('input', { type: 'text', id: n + '-name', value: channel?.name || '', placeholder: 'The kind’s name' });
  const feeds = picks('Feeds', 'feed', app.subscriptions.map((s) => [s.feed_id, s.title]), rules.feed_ids);
  const groups = picks('Groups', 'group', app.groups.map((g) => [g.id, g.name]), rules.group_ids);
  const words = h('input', { type: 'text', id: n + '-words', value: rules.keywords.join(', ') });
  const enabled = h('input', { type: 'checkbox', id: n + '-on', checked: !channel || channel.enabled });
  const status = h('div', { 'aria-live': 'polite' });
  const form = h('form', { class: 'form narrow channel-form' },
    h('label', { for: n + '-kind' }, 'Kind'), kind,
    h('label', { for: n + '-url' }, 'Webhook address'), url,
    h('p', { class: 'hint' }, channel ? 'Leave empty to keep the address.' : 'Copy it from the channel’s settings in Discord or Slack.'),
    h('label', { for: n + '-name' }, 'Name'), name,
    feeds, groups,
    h('label', { for: n + '-words' }, 'Words'), words,
    h('p', { class: 'hint' }, 'Ticked feeds and groups only (none: all your feeds); with words, only items whose title or text has one of them. Separate words with commas.'),
    h('div', { class: 'check-row' }, enabled, h('label', { for: n + '-on' }, 'On')),
    status,
    h('div', { class: 'button-row' },
      h('button', { type: 'submit', class: 'button primary' }, channel ? 'Save' : 'Add channel'),
      cancel ? h('button', { type: 'button', class: 'button', onclick: cancel }, 'Cancel') : null));
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
  h('p', null, h('strong', null, 'Signing secret: '), h('code', { class: 'secret' }, secret)),
  h('p', { class: 'hint' }, 'Copy it now: it is not shown again. The receiver checks each message’s X-Tidings-Signature header with it (see Notifications in the documentation).'));

/** What "Send test" did: sent, or the refusal's status and message; `kind` says where to look. */
function testResult(r, kind) {
  if (r.ok) return h('p', { class: 'success' }, 'Test sent' + (r.http_status ? ' (HTTP ' + r.http_status + ')' : '') + ' in ' + r.duration_ms + ' ms.');
  // The server's words name the HTTP status when there was an answer.
  const error = r.error || 'no answer';
  return errorBlock({ category: 'delivery', message: error[0].toUpperCase() + error.slice(1) + '.',
    action: kind === 'generic' ? 'Check the address and that the service behind it is up, then send another test.'
      : 'Check the address (copy it again from ' + KINDS[kind] + '), then send another test.' });
}

/** The delivery log, newest first. */
const logTable = (c, rows) => rows.length ? h('div', { class: 'scroll-x' }, h('table', { class: 'report' },
  h('caption', { class: 'visually-hidden' }, 'Delivery log of ' + c.name),
  h('thead', null, h('tr', null, ['Time', 'Status', 'HTTP', 'Items', 'Error', 'Took'].map((t) => h('th', { scope: 'col' }, t)))),
  h('tbody', null, rows.map((d) => h('tr', { class: 'delivery-' + d.status },
    h('td', null, fullDate(d.at)), h('td', null, d.status + (d.test ? ' (test)' : '')), h('td', null, d.http_status ?? '—'),
    h('td', null, d.items), h('td', null, d.error || ''), h('td', null, d.duration_ms + ' ms')))))) : h('p', { class: 'hint' }, 'Nothing logged yet.');

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
  const logButton = button('Delivery log', 'log', () => {
    const open = logButton.getAttribute('aria-expanded') === 'true';
    logButton.setAttribute('aria-expanded', String(!open));
    if (open) replace(log);
    else showLog();
  }, { 'aria-expanded': 'false' });
  const test = button('Send test', 'test', async () => {
    test.disabled = true;
    replace(result, h('p', { class: 'progress-line' }, h('span', { class: 'spinner', 'aria-hidden': 'true' }), 'Sending…'));
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
  const renew = c.kind === 'generic' ? button(c.signed ? 'New secret' : 'Sign messages', 'secret', async () => {
    if (c.signed && !(await confirmDialog('Make a new signing secret for “' + c.name + '”?',
      'Messages are signed with the new secret at once; the receiver needs it to accept them.', 'New secret'))) return;
    try {
      const { signing_secret: secret } = await api('POST', '/webhooks/' + c.id + '/secret');
      shownSecret = { id: c.id, secret };
      redraw();
    } catch (e) {
      replace(result, errorBlock(e));
    }
  }) : null;
  const secret = shownSecret?.id === c.id ? secretBlock(shownSecret.secret) : null;
  const edit = button('Edit', 'edit', () => replace(row, channelForm(c, onSubmit, redraw, redraw)));
  const remove = button('Delete', 'delete', async () => {
    if (!(await confirmDialog('Delete the channel “' + c.name + '”?', 'Its waiting items and its delivery log go with it.', 'Delete channel'))) return;
    try {
      await api('DELETE', '/webhooks/' + c.id);
      redraw();
    } catch (e) {
      showError(e, 'The channel was not deleted');
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
      replace(list, webhooks.length ? webhooks.map((c) => channelRow(c, onSubmit, draw)) : h('li', { class: 'hint' }, 'No channels yet.'));
    } catch (e) {
      replace(list, h('li', null, errorBlock(e)));
    }
  };
  const add = h('div');
  const drawForm = () => replace(add, channelForm(null, onSubmit, async () => {
    toast({ title: 'Channel added', message: 'Send a test to see that it works.' });
    drawForm();
    await draw();
    // The list is above the long form: the new channel is brought into sight.
    list.lastElementChild.scrollIntoView({ block: 'center' });
  }));
  draw();
  drawForm();
  return [
    section('Channels', h('p', null, 'New items of your feeds can go to Discord, Slack or any address that takes JSON: up to 20 channels.'), list),
    section('Add a channel', add),
  ];
}
