// Settings pages (F53): preferences and theme, groups, OPML import/export, import from
// another reader, newsletters' receiving addresses; the account (password, two-step sign-in,
// API keys, sessions, deletion);
// notification channels; users for administrators; one feed's settings.

import { app } from './state.js';
import { api, offline, query } from './api.js';
import { fullDate, h, icon, replace } from './dom.js';
import { confirmDialog, errorBlock, showError, toast } from './dialogs.js';
import { openScrape } from './scrape.js';
import { twoStepSettings } from './mfa.js';
import { identitiesSection, passwordSwitch } from './identities.js';
import { notificationSections } from './notifications.js';
import { readerImportSection } from './reader-import.js';
import { ruleSections } from './rules.js';
import { LANGUAGES, formatNumber, has, language, t, tParts } from './i18n.js';

function pageHeader(title, ...extra) {
  return h('div', { class: 'list-header' },
    h('div', { class: 'list-title-row' },
      h('a', { class: 'icon-button only-phone', href: '#feeds', 'aria-label': t('list.back'), onclick: (e) => { e.preventDefault(); app.showPane('feeds'); } }, icon('back')),
      h('h1', { class: 'list-title', id: 'page-title' }, title)),
    h('nav', { class: 'tabs', 'aria-label': t('settings.pages') },
      [['/settings', t('settings.reading')], ['/account', t('page.account')], ['/notifications', t('page.notifications')], ['/rules', t('page.rules')], app.me && app.me.is_admin ? ['/admin', t('page.users')] : null]
        .filter(Boolean)
        .map(([href, label]) => h('a', { class: 'tab', href, 'data-link': '', 'aria-current': location.pathname === href ? 'page' : false }, label))),
    ...extra);
}

function section(title, ...content) {
  // Letters of any script, so that headings in Japanese or Chinese make ids too.
  const id = 'section-' + title.toLowerCase().replace(/[^\p{L}\p{N}]+/gu, '-');
  return h('section', { class: 'settings-section', 'aria-labelledby': id }, h('h2', { id }, title), ...content);
}

/** Runs `action` for a form's submit, with its button disabled and errors shown inline. */
function onSubmit(form, status, action) {
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const button = form.querySelector('button[type=submit]');
    if (button) button.disabled = true;
    replace(status);
    try {
      await action();
    } catch (e) {
      if (e && e.category) replace(status, errorBlock(e));
      else throw e;
    } finally {
      if (button) button.disabled = false;
    }
  });
}

function page(root, title, ...sections) {
  root.removeAttribute('aria-labelledby');
  replace(root, pageHeader(title), h('div', { class: 'settings' }, ...sections));
  root.setAttribute('aria-labelledby', 'page-title');
}

/** Reading preferences, theme, groups and OPML. */
export function renderSettings(root) {
  const prefs = app.prefs;
  const themeChoices = h('fieldset', { class: 'choices' },
    h('legend', null, t('settings.theme')),
    [['auto', t('settings.theme_auto')], ['light', t('settings.theme_light')], ['dark', t('settings.theme_dark')]].map(([value, label]) =>
      h('label', { class: 'choice' },
        h('input', { type: 'radio', name: 'theme', value, checked: prefs.theme === value, onchange: () => app.savePrefs({ theme: value }) }),
        label)));
  const markRead = h('input', { type: 'checkbox', id: 'pref-mark-read', checked: prefs.mark_read_on_open !== false, onchange: (e) => app.savePrefs({ mark_read_on_open: e.target.checked }) });
  const onScroll = h('input', { type: 'checkbox', id: 'pref-mark-read-scroll', checked: !!prefs.mark_read_on_scroll, onchange: (e) => app.savePrefs({ mark_read_on_scroll: e.target.checked }) });
  const images = h('input', { type: 'checkbox', id: 'pref-images', checked: prefs.show_images !== false, onchange: (e) => app.savePrefs({ show_images: e.target.checked }) });
  const view = h('select', { id: 'pref-view', onchange: (e) => app.savePrefs({ default_view: e.target.value }) },
    [['unread', t('filter.unread')], ['all', t('filter.all')], ['starred', t('filter.starred')]].map(([value, label]) => h('option', { value, selected: prefs.default_view === value }, label)));
  const summarize = h('select', { id: 'pref-summarize', onchange: (e) => app.savePrefs({ summarize: e.target.value }) },
    [['on_demand', t('settings.summarize_on_demand')], ['all', t('settings.summarize_all')], ['chosen', t('settings.summarize_chosen')]].map(([value, label]) => h('option', { value, selected: (prefs.summarize || 'on_demand') === value }, label)));
  // A story from several feeds (issue 35): listed once, and read in one copy or in all.
  const collapse = h('input', { type: 'checkbox', id: 'pref-collapse', checked: prefs.collapse_duplicates !== false, onchange: (e) => app.savePrefs({ collapse_duplicates: e.target.checked }).then(() => app.reloadCounts()) });
  const copiesRead = h('select', { id: 'pref-copies-read', onchange: (e) => app.savePrefs({ duplicates_read: e.target.value }) },
    ['cluster', 'copy'].map((value) => h('option', { value, selected: (prefs.duplicates_read || 'cluster') === value }, t('settings.copies_read.' + value))));
  const pageSize = h('select', { id: 'pref-page-size', onchange: (e) => app.savePrefs({ page_size: Number(e.target.value) }) },
    [25, 50, 100, 200].map((n) => h('option', { value: n, selected: Number(prefs.page_size) === n }, String(n))));

  page(root, t('page.settings'),
    section(t('settings.appearance'), themeChoices, languageChoice()),
    section(t('settings.reading'),
      h('div', { class: 'check-row' }, markRead, h('label', { for: 'pref-mark-read' }, t('settings.mark_read_on_open'))),
      h('div', { class: 'check-row' }, onScroll, h('label', { for: 'pref-mark-read-scroll' }, t('settings.mark_read_on_scroll'))),
      h('div', { class: 'check-row' }, images, h('label', { for: 'pref-images' }, t('settings.show_images'))),
      h('div', { class: 'check-row' }, collapse, h('label', { for: 'pref-collapse' }, t('settings.collapse_duplicates'))),
      h('div', { class: 'field-row' }, h('label', { for: 'pref-copies-read' }, t('settings.copies_read')), copiesRead),
      h('div', { class: 'field-row' }, h('label', { for: 'pref-view' }, t('settings.default_view')), view),
      h('div', { class: 'field-row' }, h('label', { for: 'pref-page-size' }, t('settings.page_size')), pageSize),
      h('div', { class: 'field-row' }, h('label', { for: 'pref-summarize' }, t('item.summarize')), summarize),
      h('p', { class: 'hint' }, t('settings.summarize_hint'))),
    offlineSection(),
    groupsSection(),
    opmlSection(),
    readerImportSection(section, onSubmit),
    newslettersSection());
}

/** A language's name in itself (日本語, English), as people look for their own. */
function languageName(code) {
  try {
    return new Intl.DisplayNames([code], { type: 'language' }).of(code);
  } catch (e) {
    return code;
  }
}

/** The language of the UI: the browser's (`auto`) or one of the catalogs' (issue 34). */
function languageChoice() {
  const chosen = app.prefs.language || 'auto';
  const select = h('select', { id: 'pref-language', onchange: (e) => app.savePrefs({ language: e.target.value }) },
    ['auto', ...LANGUAGES].map((code) => h('option', { value: code, selected: chosen === code, lang: code === 'auto' ? null : code },
      code === 'auto' ? t('settings.language_auto') : languageName(code))));
  return h('div', { class: 'field-row' }, h('label', { for: 'pref-language' }, t('settings.language')), select);
}

/** How many unread items this device keeps for reading offline (a setting of the device). */
function offlineSection() {
  const keep = h('select', { id: 'pref-offline-items' },
    [0, 100, 250, 500, 1000, 2000].map((n) => h('option', { value: n }, n ? formatNumber(n) : t('settings.offline_none'))));
  offline().then((m) => {
    keep.value = String(m.keepLimit());
    keep.addEventListener('change', () => {
      const count = Number(keep.value);
      m.setKeepLimit(count);
      toast({ title: t('common.saved'), message: count ? t('settings.offline_saved', { count }) : t('settings.offline_saved_none') });
    });
  }).catch(() => { keep.disabled = true; });
  return section(t('settings.offline'),
    h('div', { class: 'field-row' }, h('label', { for: 'pref-offline-items' }, t('settings.offline_items')), keep),
    offlineImages(),
    h('p', { class: 'hint' }, t('settings.offline_hint')));
}

/** How many megabytes of the kept items' images this device keeps, and how many it holds. */
function offlineImages() {
  const mb = (n) => formatNumber(n, { style: 'unit', unit: 'megabyte', maximumFractionDigits: 1 });
  const choice = h('select', { id: 'pref-offline-images' },
    [0, 25, 100, 250, 500].map((n) => h('option', { value: n }, n ? mb(n) : t('settings.offline_images_none'))));
  const held = h('p', { class: 'hint', id: 'offline-images-held' });
  const show = (m) => m.keptImages().then(({ kept, bytes }) => {
    held.textContent = t('settings.offline_images_held', { count: kept, size: mb(bytes / 1048576) });
  });
  offline().then((m) => {
    choice.value = String(m.imageLimitMB());
    show(m);
    choice.addEventListener('change', () => {
      const limit = Number(choice.value);
      m.setImageLimitMB(limit);
      toast({ title: t('common.saved'), message: limit ? t('settings.offline_images_saved', { size: mb(limit) }) : t('settings.offline_images_saved_none') });
      setTimeout(() => show(m), 500);
    });
  }).catch(() => { choice.disabled = true; });
  return h('div', {}, h('div', { class: 'field-row' }, h('label', { for: 'pref-offline-images' }, t('settings.offline_images')), choice), held);
}

function groupsSection() {
  const list = h('ul', { class: 'plain-list' });
  const draw = () => replace(list, [...app.groups].sort((a, b) => (a.position || 0) - (b.position || 0)).map((g) => {
    const name = h('input', { type: 'text', value: g.name, 'aria-label': t('groups.name_of', { group: g.name }) });
    const status = h('div', { 'aria-live': 'polite' });
    const form = h('form', { class: 'inline-form' }, name,
      h('button', { type: 'submit', class: 'button' }, t('groups.rename')),
      g.is_default ? h('span', { class: 'hint' }, t('groups.default')) : h('button', {
        type: 'button', class: 'button danger', onclick: async () => {
          if (!(await confirmDialog(t('groups.delete_title', { group: g.name }), t('groups.delete_message'), t('groups.delete')))) return;
          try {
            await api('DELETE', '/groups/' + g.id);
            await app.reloadFeeds();
            draw();
          } catch (e) {
            showError(e, t('groups.delete_failed'));
          }
        },
      }, t('common.delete')), status);
    onSubmit(form, status, async () => {
      await api('PATCH', '/groups/' + g.id, { name: name.value.trim() });
      await app.reloadFeeds();
      toast({ title: t('groups.renamed'), message: name.value.trim() });
    });
    return h('li', null, form);
  }));
  draw();
  const newName = h('input', { type: 'text', id: 'new-group', required: true });
  const status = h('div', { 'aria-live': 'polite' });
  const form = h('form', { class: 'inline-form' }, h('label', { for: 'new-group' }, t('groups.new')), newName, h('button', { type: 'submit', class: 'button' }, t('groups.create')), status);
  onSubmit(form, status, async () => {
    await api('POST', '/groups', { name: newName.value.trim() });
    newName.value = '';
    await app.reloadFeeds();
    draw();
  });
  return section(t('sidebar.groups'), list, form);
}

/** A status the API names (`added`, `interrupted`…) in the language in use, or as named. */
const statusWord = (status) => (has('status.' + status) ? t('status.' + status) : status);

/** The per-URL report of a finished OPML import. */
function importReport(job) {
  const counts = { skipped: job.skipped, failed: job.failed, refused: job.refused || 0, count: job.total };
  return [
    h('p', null, tParts(job.refused ? 'opml.report_refused' : 'opml.report', { ...counts, added: h('strong', null, t('opml.added', { count: job.added })) })),
    job.status === 'interrupted' ? h('p', { class: 'notice', role: 'alert' }, t('opml.interrupted')) : null,
    job.status === 'failed' ? h('p', { class: 'notice', role: 'alert' }, t('opml.failed', { error: job.error || t('opml.unknown_error') })) : null,
    job.notice ? h('p', { class: 'notice', role: 'alert' }, job.notice) : null,
    job.entries.length ? h('table', { class: 'report' },
      h('caption', { class: 'visually-hidden' }, t('opml.report_caption')),
      h('thead', null, h('tr', null, h('th', { scope: 'col' }, t('list.feed')), h('th', { scope: 'col' }, t('opml.result')), h('th', { scope: 'col' }, t('opml.reason')))),
      h('tbody', null, job.entries.map((e) => h('tr', { class: 'report-' + e.status },
        h('td', null, h('span', { class: 'report-title' }, e.title || ''), h('span', { class: 'report-url' }, e.url)),
        h('td', null, statusWord(e.status)),
        h('td', null, e.reason || '', e.what_to_do ? h('span', { class: 'report-what-to-do' }, ' ' + e.what_to_do) : null))))) : null,
  ];
}

/** How far a running import got: a progress bar and its counters. */
function importProgress(job, name) {
  return [
    h('p', null, h('span', { class: 'spinner', 'aria-hidden': 'true' }), t('opml.progress', { file: name || t('media.the_file'), checked: job.checked, count: job.total, added: job.added, failed: job.failed })),
    h('progress', { class: 'import-progress', max: String(Math.max(job.total, 1)), value: String(job.checked), 'aria-label': t('opml.checked') }),
  ];
}

function opmlSection() {
  const file = h('input', { type: 'file', id: 'opml-file', accept: '.opml,.xml,text/x-opml,text/xml,application/xml' });
  const status = h('div', { class: 'opml-report', 'aria-live': 'polite' });
  const history = h('div');
  const form = h('form', { class: 'inline-form' }, h('label', { for: 'opml-file' }, t('opml.file')), file, h('button', { type: 'submit', class: 'button primary' }, t('opml.import')));
  // The import runs on the server; this page follows it until it is done (and picks a running
  // one up again when the page is opened anew).
  let following = null;
  const follow = async (id, name) => {
    following = id;
    for (;;) {
      const job = await api('GET', '/opml/imports/' + id);
      if (following !== id || !status.isConnected) return;
      if (job.status !== 'running') {
        replace(status, ...importReport(job));
        following = null;
        await app.reloadFeeds();
        drawHistory();
        return;
      }
      replace(status, ...importProgress(job, name));
      // Every 1.5 s: the reader's own requests keep most of the per-user rate limit.
      await new Promise((resolve) => setTimeout(resolve, 1500));
    }
  };
  onSubmit(form, status, async () => {
    const chosen = file.files && file.files[0];
    if (!chosen) {
      replace(status, errorBlock({ category: 'validation', message: t('opml.no_file'), action: t('opml.no_file_action') }));
      return;
    }
    replace(status, h('p', null, h('span', { class: 'spinner', 'aria-hidden': 'true' }), t('opml.uploading', { file: chosen.name })));
    const started = await api('POST', '/opml', chosen, { contentType: 'text/x-opml', headers: { 'X-File-Name': encodeURIComponent(chosen.name) } });
    replace(status, ...importProgress({ checked: 0, total: started.total, added: 0, failed: 0 }, chosen.name));
    drawHistory();
    follow(started.import_id, chosen.name).catch((e) => replace(status, errorBlock(e)));
  });
  const drawHistory = async () => {
    try {
      const data = await api('GET', '/opml/imports');
      const running = data.imports.find((i) => i.status === 'running');
      if (running && following === null) {
        follow(running.id, running.file_name && decodeURIComponent(running.file_name)).catch(() => {});
      }
      const done = data.imports.filter((i) => i.status !== 'running');
      if (!done.length) return replace(history);
      replace(history, h('h3', null, t('opml.earlier')), h('ul', { class: 'plain-list' }, done.map((i) =>
        h('li', null, fullDate(i.created_at) + ' — ' + (i.file_name ? decodeURIComponent(i.file_name) + ': ' : '')
          + t('opml.earlier_counts', { added: i.added, skipped: i.skipped, failed: i.failed }) + (i.status === 'done' ? '' : ' (' + statusWord(i.status) + ')')))));
    } catch (e) {
      replace(history);
    }
  };
  drawHistory();
  return section(t('opml.title'),
    h('p', null, t('opml.intro')),
    form, status,
    h('p', null, h('a', { class: 'button', href: '/api/v1/opml', download: 'tidings.opml' }, t('opml.export'))),
    history);
}

/** Puts `text` on the clipboard and says `message`, or selects `shown` for the reader to copy
 * when the browser does not allow it. */
async function copyText(text, shown, message) {
  try {
    await navigator.clipboard.writeText(text);
    toast({ title: t('keys_api.copied'), message });
  } catch (e) {
    const range = document.createRange();
    range.selectNodeContents(shown);
    getSelection().removeAllRanges();
    getSelection().addRange(range);
  }
}

/** One address: itself, its label and date, Copy and Revoke. */
function addressRow(a, draw) {
  const shown = h('code', { class: 'mail-address' }, a.address);
  const revoke = async () => {
    if (!(await confirmDialog(t('newsletters.revoke_title', { address: a.address }), t('newsletters.revoke_message'), t('newsletters.revoke_address')))) return;
    try {
      await api('DELETE', '/mail-addresses/' + a.id);
      draw();
    } catch (e) {
      showError(e, t('newsletters.revoke_failed'));
    }
  };
  return h('li', { class: 'row', 'data-id': a.id },
    h('span', null, shown, h('span', { class: 'hint' }, (a.label ? ' · ' + a.label : '') + ' · ' + t('keys_api.created', { date: fullDate(a.created_at) }))),
    h('span', null,
      h('button', { type: 'button', class: 'button', 'data-action': 'copy', 'aria-label': t('newsletters.copy_address', { address: a.address }), onclick: () => copyText(a.address, shown, t('newsletters.copied')) }, t('keys_api.copy')),
      ' ',
      h('button', { type: 'button', class: 'button danger', 'data-action': 'revoke', 'aria-label': t('newsletters.revoke_address_of', { address: a.address }), onclick: revoke }, t('keys_api.revoke'))));
}

/** Newsletters by email (issue 36): the receiving addresses, or a note that the server
 * receives no mail (no TIDINGS_MAIL_DOMAIN). */
function newslettersSection() {
  const list = h('ul', { class: 'plain-list', id: 'mail-addresses' });
  const label = h('input', { type: 'text', id: 'mail-label', maxlength: 32, pattern: '[A-Za-z0-9._\\-]{1,32}', 'aria-describedby': 'mail-label-hint', placeholder: t('newsletters.label_example') });
  const status = h('div', { 'aria-live': 'polite' });
  const form = h('form', { class: 'inline-form wrap', id: 'mail-address-form' },
    h('label', { for: 'mail-label' }, t('newsletters.label')), label,
    h('button', { type: 'submit', class: 'button primary' }, t('newsletters.create')), status,
    h('p', { class: 'hint', id: 'mail-label-hint' }, t('newsletters.label_hint')));
  const body = h('div', null, h('p', null, t('newsletters.intro')), form, list);
  const draw = async () => {
    try {
      const { enabled, addresses } = await api('GET', '/mail-addresses');
      if (!enabled) replace(body, h('p', { class: 'hint', id: 'mail-off' }, t('newsletters.off')));
      else replace(list, addresses.length ? addresses.map((a) => addressRow(a, draw)) : h('li', { class: 'hint' }, t('newsletters.none')));
    } catch (e) {
      replace(list, h('li', null, errorBlock(e)));
    }
  };
  onSubmit(form, status, async () => {
    const value = label.value.trim();
    await api('POST', '/mail-addresses', value ? { label: value } : {});
    label.value = '';
    await draw();
  });
  draw();
  return section(t('newsletters.title'), body);
}

/** The account: password, API keys, sessions, sign out, deletion. */
export function renderAccount(root) {
  const me = app.me;
  page(root, t('page.account'),
    section(t('account.you'),
      h('p', null, tParts(me.is_admin ? 'account.signed_in_admin' : 'account.signed_in', { user: h('strong', null, me.username) })),
      h('button', { type: 'button', class: 'button', id: 'sign-out', onclick: () => app.signOut() }, t('account.sign_out'))),
    passwordSection(),
    section(t('auth.two_step'), ...twoStepSettings()),
    identitiesSection(section),
    keysSection(),
    sessionsSection(),
    deleteSection());
}

/** An account made by single sign-on has no password: setting one and deleting the account
 * then need a sign-in of the last 10 minutes (the server's rule), renewed by this link. */
const freshSignInHint = () => h('p', { class: 'hint' }, tParts('account.fresh_sign_in', {
  link: h('a', { href: '/auth/oidc/start?next=/account', id: 'sign-in-again' }, t('account.sign_in_again')),
}));

function passwordSection() {
  const status = h('div', { 'aria-live': 'polite' });
  const has = app.me.has_password;
  const current = has ? h('input', { type: 'password', id: 'current-password', autocomplete: 'current-password', required: true }) : null;
  const next = h('input', { type: 'password', id: 'new-password', autocomplete: 'new-password', required: true, minlength: 12, 'aria-describedby': 'new-password-hint' });
  const keep = h('input', { type: 'checkbox', id: 'keep-access' });
  const form = h('form', { class: 'form narrow', id: 'password-form' },
    has ? [h('label', { for: 'current-password' }, t('account.current_password')), current] : freshSignInHint(),
    h('label', { for: 'new-password' }, t('account.new_password')), next,
    h('p', { class: 'hint', id: 'new-password-hint' }, t('account.new_password_hint')),
    h('div', { class: 'check-row' }, keep, h('label', { for: 'keep-access' }, t('account.keep_access'))),
    status,
    h('button', { type: 'submit', class: 'button primary' }, has ? t('account.change_password') : t('account.set_password')));
  onSubmit(form, status, async () => {
    await api('PUT', '/me/password', { ...(has ? { current_password: current.value } : {}), new_password: next.value, keep_other_sessions: keep.checked, keep_api_keys: keep.checked });
    next.value = '';
    const done = h('p', { class: 'success' }, (has ? t('account.password_changed') : t('account.password_set')) + (keep.checked ? '' : ' ' + t('account.others_signed_out')));
    if (!has) {
      // Now the account has one: the forms ask for it from here on.
      app.me.has_password = true;
      const again = passwordSection();
      form.closest('section').replaceWith(again);
      again.append(done);
      document.getElementById('delete-form')?.closest('section').replaceWith(deleteSection());
      return;
    }
    current.value = '';
    replace(status, done);
  });
  return section(t('auth.password'), form);
}

/** Days until a new API key expires, as the form proposes it. */
const KEY_DAYS = 90;

function keysSection() {
  const list = h('ul', { class: 'plain-list' });
  const shown = h('div', { 'aria-live': 'polite' });
  const draw = async () => {
    try {
      const data = await api('GET', '/api-keys');
      replace(list, data.api_keys.length ? data.api_keys.map((k) => h('li', { class: 'row' },
        h('span', null, h('strong', null, k.name), ' ', h('code', null, k.prefix + '…'), ' · ', k.scope === 'read_write' ? t('keys_api.read_write_short') : t('keys_api.read_short'),
          h('span', { class: 'hint' }, ' · ' + t('keys_api.created', { date: fullDate(k.created_at) })
            + ' · ' + (k.last_used_at ? t('keys_api.last_used', { date: fullDate(k.last_used_at) }) : t('keys_api.never_used'))
            + (k.expires_at ? ' · ' + t('keys_api.expires_on', { date: fullDate(k.expires_at) }) : ''))),
        h('button', { type: 'button', class: 'button danger', onclick: async () => {
          if (!(await confirmDialog(t('keys_api.revoke_title', { key: k.name }), t('keys_api.revoke_message'), t('keys_api.revoke_key')))) return;
          try {
            await api('DELETE', '/api-keys/' + k.id);
            draw();
          } catch (e) {
            showError(e, t('keys_api.revoke_failed'));
          }
        } }, t('keys_api.revoke')))) : h('li', { class: 'hint' }, t('keys_api.none')));
    } catch (e) {
      replace(list, h('li', null, errorBlock(e)));
    }
  };
  draw();
  const name = h('input', { type: 'text', id: 'key-name', required: true, placeholder: t('keys_api.name_example') });
  const scope = h('select', { id: 'key-scope' }, h('option', { value: 'read' }, t('keys_api.read')), h('option', { value: 'read_write' }, t('keys_api.read_write')));
  // A key that is forgotten should not work for ever: 90 days are proposed, and clearing the
  // date makes a key that never expires.
  const expiry = h('input', { type: 'date', id: 'key-expiry', value: new Date(Date.now() + KEY_DAYS * 86400000).toISOString().slice(0, 10), 'aria-describedby': 'key-expiry-hint' });
  const status = h('div', { 'aria-live': 'polite' });
  const form = h('form', { class: 'inline-form wrap' },
    h('label', { for: 'key-name' }, t('keys_api.name')), name,
    h('label', { for: 'key-scope' }, t('keys_api.access')), scope,
    h('label', { for: 'key-expiry' }, t('keys_api.expires')), expiry,
    h('button', { type: 'submit', class: 'button primary' }, t('keys_api.create')), status,
    h('p', { class: 'hint', id: 'key-expiry-hint' }, t('keys_api.expiry_hint', { count: KEY_DAYS })));
  onSubmit(form, status, async () => {
    const body = { name: name.value.trim(), scope: scope.value };
    if (expiry.value) body.expires_at = expiry.value + 'T00:00:00Z';
    const created = await api('POST', '/api-keys', body);
    name.value = '';
    const keyText = h('code', { class: 'secret', id: 'new-api-key' }, created.key);
    replace(shown, h('div', { class: 'banner banner-active', role: 'note' },
      h('div', null,
        h('strong', null, t('keys_api.copy_now')), ' ',
        keyText, ' ',
        h('button', { type: 'button', class: 'button', onclick: () => copyText(created.key, keyText, t('keys_api.copied_message')) }, t('keys_api.copy')),
        h('p', { class: 'hint' }, t('keys_api.how')))));
    draw();
  });
  return section(t('keys_api.title'), h('p', null, t('keys_api.intro')), form, shown, list);
}

function sessionsSection() {
  const list = h('ul', { class: 'plain-list' });
  const draw = async () => {
    try {
      const data = await api('GET', '/me/sessions');
      replace(list, data.sessions.map((s) => h('li', { class: 'row' },
        h('span', null, h('strong', null, browserName(s.user_agent)), s.current ? ' ' + t('sessions.this_browser') : '',
          h('span', { class: 'hint' }, ' · ' + (s.ip || t('sessions.unknown_address')) + ' · ' + t('keys_api.last_used', { date: fullDate(s.last_seen_at) }))),
        s.current ? null : h('button', { type: 'button', class: 'button', onclick: async () => {
          try {
            await api('DELETE', '/me/sessions/' + s.id);
            draw();
          } catch (e) {
            showError(e, t('sessions.end_failed'));
          }
        } }, t('account.sign_out')))));
    } catch (e) {
      replace(list, h('li', null, errorBlock(e)));
    }
  };
  draw();
  return section(t('sessions.title'), h('p', null, t('sessions.intro')), list);
}

function browserName(agent) {
  if (!agent) return t('sessions.unknown_browser');
  for (const name of ['Firefox', 'Edg', 'Chrome', 'Safari']) {
    const browser = name === 'Edg' ? 'Edge' : name;
    if (agent.includes(name)) return /Mobile|Android|iPhone/.test(agent) ? t('sessions.on_phone', { browser }) : browser;
  }
  return agent.slice(0, 40);
}

function deleteSection() {
  const has = app.me.has_password;
  const confirmName = h('input', { type: 'text', id: 'delete-confirm', autocomplete: 'off', 'aria-describedby': 'delete-hint' });
  const password = has ? h('input', { type: 'password', id: 'delete-password', autocomplete: 'current-password', required: true }) : null;
  const status = h('div', { 'aria-live': 'polite' });
  const form = h('form', { class: 'form narrow', id: 'delete-form' },
    h('p', { id: 'delete-hint' }, has ? t('delete.hint_password') : t('delete.hint')),
    has ? null : freshSignInHint(),
    h('label', { for: 'delete-confirm' }, t('auth.username')), confirmName,
    has ? [h('label', { for: 'delete-password' }, t('auth.password')), password] : null, status,
    h('button', { type: 'submit', class: 'button danger' }, t('delete.button')));
  onSubmit(form, status, async () => {
    if (confirmName.value.trim() !== app.me.username) {
      replace(status, errorBlock({ category: 'validation', message: t('delete.mismatch'), action: t('delete.mismatch_action', { user: app.me.username }) }));
      return;
    }
    await api('DELETE', '/me', has ? { password: password.value } : { confirm_username: confirmName.value.trim() });
    app.me = null;
    app.layoutReady = false;
    app.navigate('/login', { replace: true });
  });
  return section(t('delete.title'), form);
}

/** Notification channels (F43): Discord, Slack and generic webhooks for new items. */
export function renderNotifications(root) {
  page(root, t('page.notifications'), ...notificationSections(section, onSubmit));
}

/** Rules; `start` prefills a new rule (an item's "Hide items like this"). */
export function renderRules(root, start) {
  page(root, t('page.rules'), ...ruleSections(section, onSubmit, start));
}

/** User management for administrators. */
export function renderAdmin(root) {
  const list = h('ul', { class: 'plain-list' });
  const draw = async () => {
    try {
      const data = await api('GET', '/users');
      replace(list, data.users.map((u) => {
        const patch = async (changes, what) => {
          try {
            await api('PATCH', '/users/' + u.id, changes);
            draw();
          } catch (e) {
            showError(e, what);
          }
        };
        return h('li', { class: 'row' },
          h('span', null, h('strong', null, u.username), u.is_admin ? ' · ' + t('users.admin') : '', u.is_disabled ? ' · ' + t('users.disabled') : '',
            h('span', { class: 'hint' }, ' · ' + t('users.last_sign_in', { date: u.last_login_at ? fullDate(u.last_login_at) : t('users.never') }))),
          h('span', { class: 'row-buttons' },
            h('button', { type: 'button', class: 'button', onclick: () => patch({ is_admin: !u.is_admin }, t('users.role_failed')) }, u.is_admin ? t('users.make_user') : t('users.make_admin')),
            h('button', { type: 'button', class: 'button', onclick: () => patch({ is_disabled: !u.is_disabled }, t('users.account_failed')) }, u.is_disabled ? t('users.enable') : t('users.disable')),
            u.id === app.me.id ? null : h('button', { type: 'button', class: 'button danger', onclick: async () => {
              if (!(await confirmDialog(t('users.delete_title', { user: u.username }), t('users.delete_message'), t('users.delete')))) return;
              try {
                await api('DELETE', '/users/' + u.id);
                draw();
              } catch (e) {
                showError(e, t('users.delete_failed'));
              }
            } }, t('common.delete'))));
      }));
    } catch (e) {
      replace(list, h('li', null, errorBlock(e)));
    }
  };
  draw();
  const name = h('input', { type: 'text', id: 'user-name', required: true, autocomplete: 'off' });
  const password = h('input', { type: 'password', id: 'user-password', required: true, autocomplete: 'new-password', minlength: 12 });
  const admin = h('input', { type: 'checkbox', id: 'user-admin' });
  const status = h('div', { 'aria-live': 'polite' });
  const form = h('form', { class: 'form narrow' },
    h('label', { for: 'user-name' }, t('auth.username')), name,
    h('label', { for: 'user-password' }, t('users.password')), password,
    h('div', { class: 'check-row' }, admin, h('label', { for: 'user-admin' }, t('users.administrator'))),
    status, h('button', { type: 'submit', class: 'button primary' }, t('users.create')));
  onSubmit(form, status, async () => {
    await api('POST', '/users', { username: name.value.trim(), password: password.value, is_admin: admin.checked });
    name.value = '';
    password.value = '';
    admin.checked = false;
    replace(status, h('p', { class: 'success' }, t('users.created')));
    draw();
  });
  const resumeStatus = h('div', { 'aria-live': 'polite' });
  const resumeAll = h('button', { type: 'button', class: 'button', id: 'resume-all-feeds' }, t('users.resume_all'));
  resumeAll.addEventListener('click', async () => {
    resumeAll.disabled = true;
    replace(resumeStatus);
    try {
      const result = await api('POST', '/feeds/resume-stopped');
      replace(resumeStatus, h('p', { class: 'success' }, t('users.resumed', { count: result.resumed })));
      app.reloadFeeds().catch(() => {});
    } catch (e) {
      replace(resumeStatus, errorBlock(e));
    } finally {
      resumeAll.disabled = false;
    }
  });
  page(root, t('page.users'), section(t('page.users'), list), section(t('users.add'), form),
    section(t('users.stopped_feeds'),
      h('p', { class: 'hint' }, t('users.stopped_hint')),
      h('div', { class: 'button-row' }, resumeAll), resumeStatus),
    passwordSwitch(section),
    usageSection());
}

/** Usage counts (F45): the top items, tags and searches of a day or of the days up to it. */
function usageSection() {
  const today = new Date().toISOString().slice(0, 10);
  const day = h('input', { type: 'date', id: 'usage-day', value: today, max: today });
  const days = h('select', { id: 'usage-days' },
    [[1, t('usage.that_day')], [7, t('usage.days_to_it', { count: 7 })], [30, t('usage.days_to_it', { count: 30 })]].map(([n, label]) => h('option', { value: n }, label)));
  const report = h('div', { id: 'usage-report', 'aria-live': 'polite' });
  const top = (title, rows, row) => h('div', { class: 'usage-list' }, h('h3', null, title),
    rows.length ? h('ol', null, rows.map(row)) : h('p', { class: 'hint' }, t('usage.none')));
  const draw = async () => {
    try {
      const r = await api('GET', '/admin/usage' + query({ day: day.value, days: days.value, limit: 10 }));
      const span = r.first_day === r.last_day ? t('usage.on', { day: r.last_day }) : t('usage.from_to', { first: r.first_day, last: r.last_day });
      const totals = { clicks: r.totals.clicks, tags: r.totals.tag_views, searches: r.totals.searches, span, count: r.retention_days };
      replace(report,
        r.enabled ? null : h('p', { class: 'hint' }, t('usage.off')),
        h('p', null, t('usage.totals', totals)),
        top(t('usage.items'), r.items, (i) => h('li', { 'data-item': i.item_id },
          i.url ? h('a', { href: i.url, target: '_blank', rel: 'noopener noreferrer' }, i.title || i.url) : (i.title || t('usage.deleted_item')),
          h('span', { class: 'usage-count' }, ' · ' + i.clicks))),
        top(t('usage.tags'), r.tags, (tag) => h('li', null, tag.tag, h('span', { class: 'usage-count' }, ' · ' + tag.views))),
        top(t('usage.searches'), r.searches, (s) => h('li', null, s.query, h('span', { class: 'usage-count' }, ' · ' + s.searches))));
    } catch (e) {
      replace(report, errorBlock(e));
    }
  };
  day.addEventListener('change', draw);
  days.addEventListener('change', draw);
  draw();
  return section(t('usage.title'),
    h('p', { class: 'hint' }, t('usage.intro')),
    h('div', { class: 'usage-controls' }, h('label', { for: 'usage-day' }, t('usage.day')), day, days),
    report);
}

/** The full-text modes of a subscription (F6), as the API spells them, with the keys of their labels. */
const FULL_TEXT_MODES = [
  ['auto', 'feedpage.full_auto'],
  ['always', 'feedpage.full_always'],
  ['never', 'feedpage.full_never'],
];

const INTERVALS = Array.from({ length: 24 }, (_, i) => (i + 1) * 30);

/** "Every 30 minutes", "Every 1.5 hours": plural forms need the number, so a whole hour is an integer. */
function intervalLabel(minutes) {
  if (minutes < 60) return t('feedpage.every_minutes', { count: minutes });
  const hours = minutes / 60;
  return t('feedpage.every_hours', { count: Number.isInteger(hours) ? hours : Number(hours.toFixed(1)) });
}

/** One feed's settings: title, group, interval, status with resume, refresh, unsubscribe. */
export async function renderFeedSettings(root, feedId) {
  let sub = app.subscriptionByFeed(feedId);
  if (!sub) {
    await app.reloadFeeds();
    sub = app.subscriptionByFeed(feedId);
  }
  if (!sub) {
    page(root, t('feedpage.not_found'), h('p', null, t('feedpage.not_followed')));
    return;
  }
  const title = h('input', { type: 'text', id: 'feed-title', value: sub.custom_title || '', placeholder: sub.feed_title || sub.feed_url });
  const group = h('select', { id: 'feed-group' }, app.groups.map((g) => h('option', { value: g.id, selected: g.id === sub.group_id }, g.name)));
  const interval = h('select', { id: 'feed-interval' }, INTERVALS.map((m) => h('option', { value: m, selected: m === sub.interval_minutes }, intervalLabel(m))));
  const fullText = h('select', { id: 'feed-full-text' }, FULL_TEXT_MODES.map(([mode, label]) => h('option', { value: mode, selected: mode === sub.full_text }, t(label))));
  const summarize = h('input', { type: 'checkbox', id: 'feed-summarize', checked: !!sub.summarize });
  const translate = h('input', { type: 'checkbox', id: 'feed-translate', checked: !!sub.translate });
  const duplicates = h('select', { id: 'feed-duplicates' }, ['merge', 'prefer', 'never'].map((mode) => h('option', { value: mode, selected: mode === (sub.duplicates || 'merge') }, t('feedpage.duplicates.' + mode))));
  const status = h('div', { 'aria-live': 'polite' });
  const form = h('form', { class: 'form narrow' },
    h('label', { for: 'feed-title' }, t('scrape.title')), title,
    h('p', { class: 'hint' }, t('feedpage.title_hint')),
    app.groups.length ? [h('label', { for: 'feed-group' }, t('list.group')), group] : null,
    h('label', { for: 'feed-interval' }, t('feedpage.interval')), interval,
    h('label', { for: 'feed-full-text' }, t('feedpage.full_articles')), fullText,
    h('p', { class: 'hint' }, t('feedpage.full_hint')),
    h('div', { class: 'check-row' }, summarize, h('label', { for: 'feed-summarize' }, t('feedpage.summarize'))),
    h('p', { class: 'hint' }, t('feedpage.summarize_hint')),
    h('div', { class: 'check-row' }, translate, h('label', { for: 'feed-translate' }, t('translate.feed'))),
    h('p', { class: 'hint' }, t('translate.feed_hint')),
    h('label', { for: 'feed-duplicates' }, t('feedpage.duplicates')), duplicates,
    h('p', { class: 'hint' }, t('feedpage.duplicates_hint')),
    status,
    h('button', { type: 'submit', class: 'button primary' }, t('common.save')));
  onSubmit(form, status, async () => {
    const changes = { title: title.value.trim() || null, interval_minutes: Number(interval.value), full_text: fullText.value, summarize: summarize.checked, duplicates: duplicates.value, translate: translate.checked };
    if (translate.checked) changes.translate_to = sub.translate_to || language();
    if (app.groups.length) changes.group_id = Number(group.value);
    await api('PATCH', '/subscriptions/' + sub.id, changes);
    await app.reloadFeeds();
    replace(status, h('p', { class: 'success' }, t('common.saved')));
  });

  const stateStatus = h('div', { 'aria-live': 'polite' });
  // Pausing is the user's own: the feed stays fetched for others who follow it.
  const pause = h('input', { type: 'checkbox', role: 'switch', id: 'feed-paused', checked: !!sub.suspended });
  pause.addEventListener('change', async () => {
    pause.disabled = true;
    try {
      await api('PATCH', '/subscriptions/' + sub.id, { suspended: pause.checked });
      await app.reloadFeeds();
      toast(pause.checked
        ? { title: t('feedpage.paused'), message: t('feedpage.paused_toast') }
        : { title: t('feedpage.resumed'), message: t('feedpage.resumed_toast') });
    } catch (e) {
      pause.checked = !pause.checked;
      replace(stateStatus, errorBlock(e));
    } finally {
      pause.disabled = false;
    }
  });
  const pauseRow = [
    h('div', { class: 'check-row' }, pause, h('label', { for: 'feed-paused' }, t('feedpage.pause'))),
    h('p', { class: 'hint' }, t('feedpage.pause_hint')),
  ];
  const resume = h('button', { type: 'button', class: 'button primary', id: 'resume-feed' }, t('feedpage.resume'));
  const refresh = h('button', { type: 'button', class: 'button', id: 'refresh-feed' }, icon('refresh'), t('feedpage.refresh'));
  resume.addEventListener('click', async () => {
    resume.disabled = true;
    try {
      await api('POST', '/subscriptions/' + sub.id + '/resume');
      await app.reloadFeeds();
      renderFeedSettings(root, feedId);
      toast({ title: t('feedpage.resumed'), message: t('feedpage.resumed_next_round') });
    } catch (e) {
      resume.disabled = false;
      replace(stateStatus, errorBlock(e));
    }
  });
  refresh.addEventListener('click', async () => {
    refresh.disabled = true;
    replace(stateStatus, h('p', null, h('span', { class: 'spinner', 'aria-hidden': 'true' }), t('feedpage.fetching')));
    try {
      const outcome = await api('POST', '/subscriptions/' + sub.id + '/refresh');
      replace(stateStatus, h('p', { class: 'success' }, outcome.result === 'busy'
        ? t('feedpage.busy')
        : t('feedpage.fetched', { new: outcome.items_inserted, updated: outcome.items_updated })));
      await app.reloadFeeds();
    } catch (e) {
      replace(stateStatus, errorBlock(e));
    } finally {
      refresh.disabled = false;
    }
  });
  const unsubscribe = h('button', { type: 'button', class: 'button danger', id: 'unsubscribe' }, t('feedpage.unsubscribe'));
  unsubscribe.addEventListener('click', async () => {
    if (!(await confirmDialog(t('feedpage.unsubscribe_title', { feed: sub.title }), t('feedpage.unsubscribe_message'), t('feedpage.unsubscribe')))) return;
    try {
      await api('DELETE', '/subscriptions/' + sub.id);
      await app.reloadFeeds();
      toast({ title: t('feedpage.unsubscribed'), message: sub.title });
      app.navigate('/all');
    } catch (e) {
      showError(e, t('feedpage.unsubscribe_failed'));
    }
  });
  const kindNames = { html: t('feedpage.kind_html'), nextjs: 'Next.js, __NEXT_DATA__', remix: 'Remix, __remixContext' };
  const editScraper = sub.scraper
    ? h('button', { type: 'button', class: 'button', id: 'edit-scraper', onclick: () => openScrape({ subscription: sub }).addEventListener('close', () => renderFeedSettings(root, feedId)) }, t('feedpage.edit_scraper'))
    : null;
  const statusWords = { active: t('feedpage.state_active'), backoff: t('feedpage.state_backoff'), stopped: t('feedpage.state_stopped') };
  // Push (F18): only the single subscription carries it; a failure to load it hides the row.
  const push = await api('GET', '/subscriptions/' + sub.id).then((r) => r.subscription.push, () => null);
  const pushWords = {
    active: () => t('push.active', { date: fullDate(push.active_until) }),
    pending: () => t('push.pending'),
    denied: () => (push.denied_reason ? t('push.denied_because', { reason: push.denied_reason }) : t('push.denied')),
    inactive: () => (push.enabled ? t('push.not_yet') : t('push.off')),
  };
  root.removeAttribute('aria-labelledby');
  replace(root,
    h('div', { class: 'list-header' },
      h('div', { class: 'list-title-row' },
        h('a', { class: 'icon-button', href: '/feeds/' + feedId, 'data-link': '', 'aria-label': t('feedpage.back') }, icon('back')),
        h('h1', { class: 'list-title', id: 'page-title' }, sub.title))),
    h('div', { class: 'settings' },
      section(t('list.feed'), form),
      section(t('feedpage.status'),
        h('dl', { class: 'facts' },
          h('dt', null, t('feedpage.state')), h('dd', { class: 'feed-state state-' + sub.status }, statusWords[sub.status] || sub.status),
          sub.last_error ? [h('dt', null, t('feedpage.last_error')), h('dd', { class: 'feed-error' }, sub.last_error)] : null,
          sub.status_reason && sub.status_reason !== sub.last_error ? [h('dt', null, t('opml.reason')), h('dd', null, sub.status_reason)] : null,
          h('dt', null, t('feedpage.address')), h('dd', null, h('code', null, sub.feed_url)),
          sub.site_url ? [h('dt', null, t('feedpage.site')), h('dd', null, h('a', { href: sub.site_url, target: '_blank', rel: 'noopener noreferrer' }, sub.site_url))] : null,
          sub.last_success_at ? [h('dt', null, t('feedpage.last_fetched')), h('dd', null, fullDate(sub.last_success_at))] : null,
          h('dt', null, t('feedpage.next_check')), h('dd', null, fullDate(sub.next_check_at)),
          push ? [h('dt', null, t('push.title')), h('dd', { id: 'feed-push', class: 'push-' + push.state }, (pushWords[push.state] || (() => push.state))())] : null,
          push && push.last_error ? [h('dt', null, t('push.error')), h('dd', { class: 'feed-error' }, push.last_error)] : null,
          push && push.pushes ? [h('dt', null, t('push.last')), h('dd', null, t('push.last_count', { date: fullDate(push.last_push_at), count: push.pushes }))] : null),
        pauseRow,
        h('div', { class: 'button-row' }, sub.status !== 'active' ? resume : null, refresh),
        stateStatus),
      sub.scraper ? section(t('feedpage.scraper'),
        h('p', { class: 'hint' }, t('feedpage.scraper_hint', { kind: kindNames[sub.scraper.kind] || sub.scraper.kind })),
        h('div', { class: 'button-row' }, editScraper)) : null,
      section(t('feedpage.unsubscribe'), unsubscribe)));
  root.setAttribute('aria-labelledby', 'page-title');
}
