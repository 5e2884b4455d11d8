// Settings pages (F53): preferences and theme, groups, OPML import/export, import from
// another reader; the account (password, two-step sign-in, API keys, sessions, deletion);
// notification channels; users for administrators; one feed's settings.

import { app } from './state.js';
import { api, query } from './api.js';
import { fullDate, h, icon, replace } from './dom.js';
import { confirmDialog, errorBlock, showError, toast } from './dialogs.js';
import { openScrape } from './scrape.js';
import { twoStepSettings } from './mfa.js';
import { identitiesSection, passwordSwitch } from './identities.js';
import { notificationSections } from './notifications.js';
import { readerImportSection } from './reader-import.js';
import { ruleSections } from './rules.js';

function pageHeader(title, ...extra) {
  return h('div', { class: 'list-header' },
    h('div', { class: 'list-title-row' },
      h('a', { class: 'icon-button only-phone', href: '#feeds', 'aria-label': 'Back to the feeds', onclick: (e) => { e.preventDefault(); app.showPane('feeds'); } }, icon('back')),
      h('h1', { class: 'list-title', id: 'page-title' }, title)),
    h('nav', { class: 'tabs', 'aria-label': 'Settings pages' },
      [['/settings', 'Reading'], ['/account', 'Account'], ['/notifications', 'Notifications'], ['/rules', 'Rules'], app.me && app.me.is_admin ? ['/admin', 'Users'] : null]
        .filter(Boolean)
        .map(([href, label]) => h('a', { class: 'tab', href, 'data-link': '', 'aria-current': location.pathname === href ? 'page' : false }, label))),
    ...extra);
}

function section(title, ...content) {
  const id = 'section-' + title.toLowerCase().replace(/[^a-z]+/g, '-');
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
    h('legend', null, 'Theme'),
    [['auto', 'Follow the system'], ['light', 'Light'], ['dark', 'Dark']].map(([value, label]) =>
      h('label', { class: 'choice' },
        h('input', { type: 'radio', name: 'theme', value, checked: prefs.theme === value, onchange: () => app.savePrefs({ theme: value }) }),
        label)));
  const markRead = h('input', { type: 'checkbox', id: 'pref-mark-read', checked: prefs.mark_read_on_open !== false, onchange: (e) => app.savePrefs({ mark_read_on_open: e.target.checked }) });
  const images = h('input', { type: 'checkbox', id: 'pref-images', checked: prefs.show_images !== false, onchange: (e) => app.savePrefs({ show_images: e.target.checked }) });
  const view = h('select', { id: 'pref-view', onchange: (e) => app.savePrefs({ default_view: e.target.value }) },
    [['unread', 'Unread'], ['all', 'All'], ['starred', 'Starred']].map(([value, label]) => h('option', { value, selected: prefs.default_view === value }, label)));
  const summarize = h('select', { id: 'pref-summarize', onchange: (e) => app.savePrefs({ summarize: e.target.value }) },
    [['on_demand', 'Only when I ask'], ['all', 'Every new item'], ['chosen', 'New items of the feeds I choose']].map(([value, label]) => h('option', { value, selected: (prefs.summarize || 'on_demand') === value }, label)));
  const pageSize = h('select', { id: 'pref-page-size', onchange: (e) => app.savePrefs({ page_size: Number(e.target.value) }) },
    [25, 50, 100, 200].map((n) => h('option', { value: n, selected: Number(prefs.page_size) === n }, String(n))));

  page(root, 'Settings',
    section('Appearance', themeChoices),
    section('Reading',
      h('div', { class: 'check-row' }, markRead, h('label', { for: 'pref-mark-read' }, 'Opening an item marks it read')),
      h('div', { class: 'check-row' }, images, h('label', { for: 'pref-images' }, 'Show images in items')),
      h('div', { class: 'field-row' }, h('label', { for: 'pref-view' }, 'Filter shown first'), view),
      h('div', { class: 'field-row' }, h('label', { for: 'pref-page-size' }, 'Items loaded at a time'), pageSize),
      h('div', { class: 'field-row' }, h('label', { for: 'pref-summarize' }, 'Summarize'), summarize),
      h('p', { class: 'hint' }, '“The feeds I choose” are those whose settings say so. Any item can be summarized with its Summarize button.')),
    groupsSection(),
    opmlSection(),
    readerImportSection(section, onSubmit));
}

function groupsSection() {
  const list = h('ul', { class: 'plain-list' });
  const draw = () => replace(list, [...app.groups].sort((a, b) => (a.position || 0) - (b.position || 0)).map((g) => {
    const name = h('input', { type: 'text', value: g.name, 'aria-label': 'Name of group ' + g.name });
    const status = h('div', { 'aria-live': 'polite' });
    const form = h('form', { class: 'inline-form' }, name,
      h('button', { type: 'submit', class: 'button' }, 'Rename'),
      g.is_default ? h('span', { class: 'hint' }, 'default group') : h('button', {
        type: 'button', class: 'button danger', onclick: async () => {
          if (!(await confirmDialog('Delete the group “' + g.name + '”?', 'Its feeds move to the default group; nothing is unsubscribed.', 'Delete group'))) return;
          try {
            await api('DELETE', '/groups/' + g.id);
            await app.reloadFeeds();
            draw();
          } catch (e) {
            showError(e, 'The group was not deleted');
          }
        },
      }, 'Delete'), status);
    onSubmit(form, status, async () => {
      await api('PATCH', '/groups/' + g.id, { name: name.value.trim() });
      await app.reloadFeeds();
      toast({ title: 'Group renamed', message: name.value.trim() });
    });
    return h('li', null, form);
  }));
  draw();
  const newName = h('input', { type: 'text', id: 'new-group', required: true });
  const status = h('div', { 'aria-live': 'polite' });
  const form = h('form', { class: 'inline-form' }, h('label', { for: 'new-group' }, 'New group'), newName, h('button', { type: 'submit', class: 'button' }, 'Create'), status);
  onSubmit(form, status, async () => {
    await api('POST', '/groups', { name: newName.value.trim() });
    newName.value = '';
    await app.reloadFeeds();
    draw();
  });
  return section('Groups', list, form);
}

/** The per-URL report of a finished OPML import. */
function importReport(job) {
  const failedNote = job.refused ? ' (' + job.refused + ' refused)' : '';
  return [
    h('p', null, h('strong', null, job.added + ' added'), ', ' + job.skipped + ' skipped, ' + job.failed + ' failed' + failedNote + ', of ' + job.total + ' feeds.'),
    job.status === 'interrupted' ? h('p', { class: 'notice', role: 'alert' }, 'The import stopped with the server before it finished. What it did is kept: import the file again for the rest.') : null,
    job.status === 'failed' ? h('p', { class: 'notice', role: 'alert' }, 'The import failed: ' + (job.error || 'unknown error') + '. Import the file again.') : null,
    job.notice ? h('p', { class: 'notice', role: 'alert' }, job.notice) : null,
    job.entries.length ? h('table', { class: 'report' },
      h('caption', { class: 'visually-hidden' }, 'Import report'),
      h('thead', null, h('tr', null, h('th', { scope: 'col' }, 'Feed'), h('th', { scope: 'col' }, 'Result'), h('th', { scope: 'col' }, 'Reason'))),
      h('tbody', null, job.entries.map((e) => h('tr', { class: 'report-' + e.status },
        h('td', null, h('span', { class: 'report-title' }, e.title || ''), h('span', { class: 'report-url' }, e.url)),
        h('td', null, e.status),
        h('td', null, e.reason || '', e.what_to_do ? h('span', { class: 'report-what-to-do' }, ' ' + e.what_to_do) : null))))) : null,
  ];
}

/** How far a running import got: a progress bar and its counters. */
function importProgress(job, name) {
  return [
    h('p', null, h('span', { class: 'spinner', 'aria-hidden': 'true' }), 'Importing ' + (name || 'the file') + ': checked ' + job.checked + ' of ' + job.total + ' feeds, ' + job.added + ' added, ' + job.failed + ' failed.'),
    h('progress', { class: 'import-progress', max: String(Math.max(job.total, 1)), value: String(job.checked), 'aria-label': 'Feeds checked' }),
  ];
}

function opmlSection() {
  const file = h('input', { type: 'file', id: 'opml-file', accept: '.opml,.xml,text/x-opml,text/xml,application/xml' });
  const status = h('div', { class: 'opml-report', 'aria-live': 'polite' });
  const history = h('div');
  const form = h('form', { class: 'inline-form' }, h('label', { for: 'opml-file' }, 'OPML file'), file, h('button', { type: 'submit', class: 'button primary' }, 'Import'));
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
      replace(status, errorBlock({ category: 'validation', message: 'No file chosen.', action: 'Choose the OPML file your old reader exported.' }));
      return;
    }
    replace(status, h('p', null, h('span', { class: 'spinner', 'aria-hidden': 'true' }), 'Uploading ' + chosen.name + '…'));
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
      replace(history, h('h3', null, 'Earlier imports'), h('ul', { class: 'plain-list' }, done.map((i) =>
        h('li', null, fullDate(i.created_at) + ' — ' + (i.file_name ? decodeURIComponent(i.file_name) + ': ' : '') + i.added + ' added, ' + i.skipped + ' skipped, ' + i.failed + ' refused or failed' + (i.status === 'done' ? '' : ' (' + i.status + ')')))));
    } catch (e) {
      replace(history);
    }
  };
  drawHistory();
  return section('Import and export (OPML)',
    h('p', null, 'Bring your subscriptions from another reader, or take them elsewhere. An import runs on the server: you may leave this page meanwhile.'),
    form, status,
    h('p', null, h('a', { class: 'button', href: '/api/v1/opml', download: 'tidings.opml' }, 'Export subscriptions as OPML')),
    history);
}

/** The account: password, API keys, sessions, sign out, deletion. */
export function renderAccount(root) {
  const me = app.me;
  page(root, 'Account',
    section('You',
      h('p', null, 'Signed in as ', h('strong', null, me.username), me.is_admin ? ' (administrator)' : '', '.'),
      h('button', { type: 'button', class: 'button', id: 'sign-out', onclick: () => app.signOut() }, 'Sign out')),
    passwordSection(),
    section('Two-step sign-in', ...twoStepSettings()),
    identitiesSection(section),
    keysSection(),
    sessionsSection(),
    deleteSection());
}

/** An account made by single sign-on has no password: setting one and deleting the account
 * then need a sign-in of the last 10 minutes (the server's rule), renewed by this link. */
const freshSignInHint = () => h('p', { class: 'hint' }, 'Your account has no password: this needs a sign-in within the last 10 minutes. ',
  h('a', { href: '/auth/oidc/start?next=/account', id: 'sign-in-again' }, 'Sign in again'), '.');

function passwordSection() {
  const status = h('div', { 'aria-live': 'polite' });
  const has = app.me.has_password;
  const current = has ? h('input', { type: 'password', id: 'current-password', autocomplete: 'current-password', required: true }) : null;
  const next = h('input', { type: 'password', id: 'new-password', autocomplete: 'new-password', required: true, minlength: 12, 'aria-describedby': 'new-password-hint' });
  const keep = h('input', { type: 'checkbox', id: 'keep-access' });
  const form = h('form', { class: 'form narrow', id: 'password-form' },
    has ? [h('label', { for: 'current-password' }, 'Current password'), current] : freshSignInHint(),
    h('label', { for: 'new-password' }, 'New password'), next,
    h('p', { class: 'hint', id: 'new-password-hint' }, 'At least 12 characters. Your other sessions are signed out and your API keys stop working, unless you keep them.'),
    h('div', { class: 'check-row' }, keep, h('label', { for: 'keep-access' }, 'Keep my other sessions and API keys')),
    status,
    h('button', { type: 'submit', class: 'button primary' }, has ? 'Change password' : 'Set password'));
  onSubmit(form, status, async () => {
    await api('PUT', '/me/password', { ...(has ? { current_password: current.value } : {}), new_password: next.value, keep_other_sessions: keep.checked, keep_api_keys: keep.checked });
    next.value = '';
    const done = h('p', { class: 'success' }, (has ? 'Password changed.' : 'Password set.') + (keep.checked ? '' : ' Other sessions were signed out and API keys revoked.'));
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
  return section('Password', form);
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
        h('span', null, h('strong', null, k.name), ' ', h('code', null, k.prefix + '…'), ' · ', k.scope === 'read_write' ? 'read and write' : 'read only',
          h('span', { class: 'hint' }, ' · created ' + fullDate(k.created_at) + (k.last_used_at ? ' · last used ' + fullDate(k.last_used_at) : ' · never used') + (k.expires_at ? ' · expires ' + fullDate(k.expires_at) : ''))),
        h('button', { type: 'button', class: 'button danger', onclick: async () => {
          if (!(await confirmDialog('Revoke the key “' + k.name + '”?', 'Scripts and apps using it stop working at once.', 'Revoke key'))) return;
          try {
            await api('DELETE', '/api-keys/' + k.id);
            draw();
          } catch (e) {
            showError(e, 'The key was not revoked');
          }
        } }, 'Revoke'))) : h('li', { class: 'hint' }, 'No API keys.'));
    } catch (e) {
      replace(list, h('li', null, errorBlock(e)));
    }
  };
  draw();
  const name = h('input', { type: 'text', id: 'key-name', required: true, placeholder: 'e.g. phone app' });
  const scope = h('select', { id: 'key-scope' }, h('option', { value: 'read' }, 'Read only'), h('option', { value: 'read_write' }, 'Read and write'));
  // A key that is forgotten should not work for ever: 90 days are proposed, and clearing the
  // date makes a key that never expires.
  const expiry = h('input', { type: 'date', id: 'key-expiry', value: new Date(Date.now() + KEY_DAYS * 86400000).toISOString().slice(0, 10), 'aria-describedby': 'key-expiry-hint' });
  const status = h('div', { 'aria-live': 'polite' });
  const form = h('form', { class: 'inline-form wrap' },
    h('label', { for: 'key-name' }, 'Name'), name,
    h('label', { for: 'key-scope' }, 'Access'), scope,
    h('label', { for: 'key-expiry' }, 'Expires'), expiry,
    h('button', { type: 'submit', class: 'button primary' }, 'Create key'), status,
    h('p', { class: 'hint', id: 'key-expiry-hint' }, 'Proposed: in ' + KEY_DAYS + ' days. Clear the date for a key that never expires.'));
  onSubmit(form, status, async () => {
    const body = { name: name.value.trim(), scope: scope.value };
    if (expiry.value) body.expires_at = expiry.value + 'T00:00:00Z';
    const created = await api('POST', '/api-keys', body);
    name.value = '';
    const keyText = h('code', { class: 'secret', id: 'new-api-key' }, created.key);
    replace(shown, h('div', { class: 'banner banner-active', role: 'note' },
      h('div', null,
        h('strong', null, 'Copy this key now: it is shown only once. '),
        keyText, ' ',
        h('button', { type: 'button', class: 'button', onclick: async () => {
          try {
            await navigator.clipboard.writeText(created.key);
            toast({ title: 'Copied', message: 'The key is on the clipboard.' });
          } catch (e) {
            const range = document.createRange();
            range.selectNodeContents(keyText);
            getSelection().removeAllRanges();
            getSelection().addRange(range);
          }
        } }, 'Copy'),
        h('p', { class: 'hint' }, 'Send it as Authorization: Bearer … to /api/v1.'))));
    draw();
  });
  return section('API keys', h('p', null, 'Keys let scripts and apps use your account through the API.'), form, shown, list);
}

function sessionsSection() {
  const list = h('ul', { class: 'plain-list' });
  const draw = async () => {
    try {
      const data = await api('GET', '/me/sessions');
      replace(list, data.sessions.map((s) => h('li', { class: 'row' },
        h('span', null, h('strong', null, browserName(s.user_agent)), s.current ? ' (this browser)' : '',
          h('span', { class: 'hint' }, ' · ' + (s.ip || 'unknown address') + ' · last used ' + fullDate(s.last_seen_at))),
        s.current ? null : h('button', { type: 'button', class: 'button', onclick: async () => {
          try {
            await api('DELETE', '/me/sessions/' + s.id);
            draw();
          } catch (e) {
            showError(e, 'The session was not ended');
          }
        } }, 'Sign out'))));
    } catch (e) {
      replace(list, h('li', null, errorBlock(e)));
    }
  };
  draw();
  return section('Sessions', h('p', null, 'Where you are signed in.'), list);
}

function browserName(agent) {
  if (!agent) return 'Unknown browser';
  for (const name of ['Firefox', 'Edg', 'Chrome', 'Safari']) {
    if (agent.includes(name)) return (name === 'Edg' ? 'Edge' : name) + (/Mobile|Android|iPhone/.test(agent) ? ' on a phone' : '');
  }
  return agent.slice(0, 40);
}

function deleteSection() {
  const has = app.me.has_password;
  const confirmName = h('input', { type: 'text', id: 'delete-confirm', autocomplete: 'off', 'aria-describedby': 'delete-hint' });
  const password = has ? h('input', { type: 'password', id: 'delete-password', autocomplete: 'current-password', required: true }) : null;
  const status = h('div', { 'aria-live': 'polite' });
  const form = h('form', { class: 'form narrow', id: 'delete-form' },
    h('p', { id: 'delete-hint' }, 'Deletes your subscriptions, read states, stars, bookmarks, keys and sessions. Type your user name' + (has ? ' and password' : '') + ' to confirm.'),
    has ? null : freshSignInHint(),
    h('label', { for: 'delete-confirm' }, 'User name'), confirmName,
    has ? [h('label', { for: 'delete-password' }, 'Password'), password] : null, status,
    h('button', { type: 'submit', class: 'button danger' }, 'Delete my account'));
  onSubmit(form, status, async () => {
    if (confirmName.value.trim() !== app.me.username) {
      replace(status, errorBlock({ category: 'validation', message: 'The name does not match.', action: 'Type your user name exactly: ' + app.me.username }));
      return;
    }
    await api('DELETE', '/me', has ? { password: password.value } : { confirm_username: confirmName.value.trim() });
    app.me = null;
    app.layoutReady = false;
    app.navigate('/login', { replace: true });
  });
  return section('Delete account', form);
}

/** Notification channels (F43): Discord, Slack and generic webhooks for new items. */
export function renderNotifications(root) {
  page(root, 'Notifications', ...notificationSections(section, onSubmit));
}

/** Rules; `start` prefills a new rule (an item's "Hide items like this"). */
export function renderRules(root, start) {
  page(root, 'Rules', ...ruleSections(section, onSubmit, start));
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
          h('span', null, h('strong', null, u.username), u.is_admin ? ' · administrator' : '', u.is_disabled ? ' · disabled' : '',
            h('span', { class: 'hint' }, ' · last sign-in ' + (u.last_login_at ? fullDate(u.last_login_at) : 'never'))),
          h('span', { class: 'row-buttons' },
            h('button', { type: 'button', class: 'button', onclick: () => patch({ is_admin: !u.is_admin }, 'The role was not changed') }, u.is_admin ? 'Make user' : 'Make admin'),
            h('button', { type: 'button', class: 'button', onclick: () => patch({ is_disabled: !u.is_disabled }, 'The account was not changed') }, u.is_disabled ? 'Enable' : 'Disable'),
            u.id === app.me.id ? null : h('button', { type: 'button', class: 'button danger', onclick: async () => {
              if (!(await confirmDialog('Delete ' + u.username + '?', 'Their subscriptions, states and bookmarks are deleted. Shared feeds stay.', 'Delete user'))) return;
              try {
                await api('DELETE', '/users/' + u.id);
                draw();
              } catch (e) {
                showError(e, 'The user was not deleted');
              }
            } }, 'Delete')));
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
    h('label', { for: 'user-name' }, 'User name'), name,
    h('label', { for: 'user-password' }, 'Password (at least 12 characters)'), password,
    h('div', { class: 'check-row' }, admin, h('label', { for: 'user-admin' }, 'Administrator')),
    status, h('button', { type: 'submit', class: 'button primary' }, 'Create user'));
  onSubmit(form, status, async () => {
    await api('POST', '/users', { username: name.value.trim(), password: password.value, is_admin: admin.checked });
    name.value = '';
    password.value = '';
    admin.checked = false;
    replace(status, h('p', { class: 'success' }, 'User created.'));
    draw();
  });
  const resumeStatus = h('div', { 'aria-live': 'polite' });
  const resumeAll = h('button', { type: 'button', class: 'button', id: 'resume-all-feeds' }, 'Resume every stopped feed');
  resumeAll.addEventListener('click', async () => {
    resumeAll.disabled = true;
    replace(resumeStatus);
    try {
      const result = await api('POST', '/feeds/resume-stopped');
      replace(resumeStatus, h('p', { class: 'success' }, (result.resumed === 1 ? '1 feed' : result.resumed + ' feeds') + ' resumed: they are fetched again within a minute.'));
      app.reloadFeeds().catch(() => {});
    } catch (e) {
      replace(resumeStatus, errorBlock(e));
    } finally {
      resumeAll.disabled = false;
    }
  });
  page(root, 'Users', section('Users', list), section('Add a user', form),
    section('Stopped feeds',
      h('p', { class: 'hint' }, 'Feeds stop after a 404, 410, 401 or 403, after ten parse failures in a row, or when the address guard refuses them. Once the cause is fixed (a setting such as TIDINGS_ALLOW_PRIVATE_NETWORKS, say), put every stopped feed of every user back on schedule:'),
      h('div', { class: 'button-row' }, resumeAll), resumeStatus),
    passwordSwitch(section),
    usageSection());
}

/** Usage counts (F45): the top items, tags and searches of a day or of the days up to it. */
function usageSection() {
  const today = new Date().toISOString().slice(0, 10);
  const day = h('input', { type: 'date', id: 'usage-day', value: today, max: today });
  const days = h('select', { id: 'usage-days' },
    [[1, 'That day'], [7, '7 days to it'], [30, '30 days to it']].map(([n, label]) => h('option', { value: n }, label)));
  const report = h('div', { id: 'usage-report', 'aria-live': 'polite' });
  const top = (title, rows, row) => h('div', { class: 'usage-list' }, h('h3', null, title),
    rows.length ? h('ol', null, rows.map(row)) : h('p', { class: 'hint' }, 'None.'));
  const draw = async () => {
    try {
      const r = await api('GET', '/admin/usage' + query({ day: day.value, days: days.value, limit: 10 }));
      const span = r.first_day === r.last_day ? 'on ' + r.last_day : 'from ' + r.first_day + ' to ' + r.last_day;
      replace(report,
        r.enabled ? null : h('p', { class: 'hint' }, 'Counting is off (TIDINGS_USAGE_COUNTS=false): these are earlier counts.'),
        h('p', null, r.totals.clicks + ' links opened, ' + r.totals.tag_views + ' tag pages viewed, ' + r.totals.searches + ' searches ' + span + ' (UTC). Counts are kept ' + r.retention_days + ' days.'),
        top('Items opened most', r.items, (i) => h('li', { 'data-item': i.item_id },
          i.url ? h('a', { href: i.url, target: '_blank', rel: 'noopener noreferrer' }, i.title || i.url) : (i.title || 'An item deleted since'),
          h('span', { class: 'usage-count' }, ' · ' + i.clicks))),
        top('Tags viewed most', r.tags, (t) => h('li', null, t.tag, h('span', { class: 'usage-count' }, ' · ' + t.views))),
        top('Searched most', r.searches, (s) => h('li', null, s.query, h('span', { class: 'usage-count' }, ' · ' + s.searches))));
    } catch (e) {
      replace(report, errorBlock(e));
    }
  };
  day.addEventListener('change', draw);
  days.addEventListener('change', draw);
  draw();
  return section('Usage',
    h('p', { class: 'hint' }, 'How often, per day, the items\' links were opened, tag pages viewed and searches made. Nothing says who.'),
    h('div', { class: 'usage-controls' }, h('label', { for: 'usage-day' }, 'Day'), day, days),
    report);
}

/** The full-text modes of a subscription (F6), as the API spells them, with their labels. */
const FULL_TEXT_MODES = [
  ['auto', 'When the feed gives only a short text'],
  ['always', 'Always'],
  ['never', 'Never'],
];

const INTERVALS = Array.from({ length: 24 }, (_, i) => (i + 1) * 30);

function intervalLabel(minutes) {
  if (minutes < 60) return minutes + ' minutes';
  const hours = minutes / 60;
  return (Number.isInteger(hours) ? hours : hours.toFixed(1)) + (hours === 1 ? ' hour' : ' hours');
}

/** One feed's settings: title, group, interval, status with resume, refresh, unsubscribe. */
export async function renderFeedSettings(root, feedId) {
  let sub = app.subscriptionByFeed(feedId);
  if (!sub) {
    await app.reloadFeeds();
    sub = app.subscriptionByFeed(feedId);
  }
  if (!sub) {
    page(root, 'Feed not found', h('p', null, 'You do not follow this feed (any more).'));
    return;
  }
  const title = h('input', { type: 'text', id: 'feed-title', value: sub.custom_title || '', placeholder: sub.feed_title || sub.feed_url });
  const group = h('select', { id: 'feed-group' }, app.groups.map((g) => h('option', { value: g.id, selected: g.id === sub.group_id }, g.name)));
  const interval = h('select', { id: 'feed-interval' }, INTERVALS.map((m) => h('option', { value: m, selected: m === sub.interval_minutes }, 'Every ' + intervalLabel(m))));
  const fullText = h('select', { id: 'feed-full-text' }, FULL_TEXT_MODES.map(([mode, label]) => h('option', { value: mode, selected: mode === sub.full_text }, label)));
  const summarize = h('input', { type: 'checkbox', id: 'feed-summarize', checked: !!sub.summarize });
  const status = h('div', { 'aria-live': 'polite' });
  const form = h('form', { class: 'form narrow' },
    h('label', { for: 'feed-title' }, 'Title'), title,
    h('p', { class: 'hint' }, 'Leave empty to use the feed’s own title.'),
    app.groups.length ? [h('label', { for: 'feed-group' }, 'Group'), group] : null,
    h('label', { for: 'feed-interval' }, 'Check for new items'), interval,
    h('label', { for: 'feed-full-text' }, 'Full articles'), fullText,
    h('p', { class: 'hint' }, 'tidings can fetch each new item’s web page and keep its article, for feeds that give only a teaser. “Load full article” on an item does it for one item whatever this says.'),
    h('div', { class: 'check-row' }, summarize, h('label', { for: 'feed-summarize' }, 'Summarize new items')),
    h('p', { class: 'hint' }, 'When Settings say to summarize “new items of the feeds I choose”.'),
    status,
    h('button', { type: 'submit', class: 'button primary' }, 'Save'));
  onSubmit(form, status, async () => {
    const changes = { title: title.value.trim() || null, interval_minutes: Number(interval.value), full_text: fullText.value, summarize: summarize.checked };
    if (app.groups.length) changes.group_id = Number(group.value);
    await api('PATCH', '/subscriptions/' + sub.id, changes);
    await app.reloadFeeds();
    replace(status, h('p', { class: 'success' }, 'Saved.'));
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
        ? { title: 'Paused', message: 'This feed is no longer fetched for you.' }
        : { title: 'Resumed', message: 'The feed is fetched for you again; your apps get what arrived meanwhile.' });
    } catch (e) {
      pause.checked = !pause.checked;
      replace(stateStatus, errorBlock(e));
    } finally {
      pause.disabled = false;
    }
  });
  const pauseRow = [
    h('div', { class: 'check-row' }, pause, h('label', { for: 'feed-paused' }, 'Pause fetching')),
    h('p', { class: 'hint' }, 'While paused, tidings does not fetch this feed for you and your apps get no new items of it; others who follow it still get theirs. When you resume, what arrived meanwhile comes to your apps as new.'),
  ];
  const resume = h('button', { type: 'button', class: 'button primary', id: 'resume-feed' }, 'Resume');
  const refresh = h('button', { type: 'button', class: 'button', id: 'refresh-feed' }, icon('refresh'), 'Refresh now');
  resume.addEventListener('click', async () => {
    resume.disabled = true;
    try {
      await api('POST', '/subscriptions/' + sub.id + '/resume');
      await app.reloadFeeds();
      renderFeedSettings(root, feedId);
      toast({ title: 'Resumed', message: 'The feed is fetched again at the next round.' });
    } catch (e) {
      resume.disabled = false;
      replace(stateStatus, errorBlock(e));
    }
  });
  refresh.addEventListener('click', async () => {
    refresh.disabled = true;
    replace(stateStatus, h('p', null, h('span', { class: 'spinner', 'aria-hidden': 'true' }), 'Fetching…'));
    try {
      const outcome = await api('POST', '/subscriptions/' + sub.id + '/refresh');
      replace(stateStatus, h('p', { class: 'success' }, outcome.result === 'busy'
        ? 'The feed is being fetched already.'
        : 'Fetched: ' + outcome.items_inserted + ' new, ' + outcome.items_updated + ' updated.'));
      await app.reloadFeeds();
    } catch (e) {
      replace(stateStatus, errorBlock(e));
    } finally {
      refresh.disabled = false;
    }
  });
  const unsubscribe = h('button', { type: 'button', class: 'button danger', id: 'unsubscribe' }, 'Unsubscribe');
  unsubscribe.addEventListener('click', async () => {
    if (!(await confirmDialog('Unsubscribe from “' + sub.title + '”?', 'Its items leave your lists, with your read and starred marks. Bookmarks stay.', 'Unsubscribe'))) return;
    try {
      await api('DELETE', '/subscriptions/' + sub.id);
      await app.reloadFeeds();
      toast({ title: 'Unsubscribed', message: sub.title });
      app.navigate('/all');
    } catch (e) {
      showError(e, 'You are still subscribed');
    }
  });
  const kindNames = { html: 'plain HTML, CSS selectors', nextjs: 'Next.js, __NEXT_DATA__', remix: 'Remix, __remixContext' };
  const editScraper = sub.scraper
    ? h('button', { type: 'button', class: 'button', id: 'edit-scraper', onclick: () => openScrape({ subscription: sub }).addEventListener('close', () => renderFeedSettings(root, feedId)) }, 'Edit scraper…')
    : null;
  const statusWords = { active: 'Working', backoff: 'Failing — retried later and later', stopped: 'Stopped until you resume it' };
  // Push (F18): only the single subscription carries it; a failure to load it hides the row.
  const push = await api('GET', '/subscriptions/' + sub.id).then((r) => r.subscription.push, () => null);
  const pushWords = {
    active: () => 'Pushed by its hub — active until ' + fullDate(push.active_until),
    pending: () => 'Asked the hub; waiting for it to confirm',
    denied: () => 'Refused by the hub' + (push.denied_reason ? ': ' + push.denied_reason : ''),
    inactive: () => push.enabled ? 'Not subscribed yet' : 'Off on this server (TIDINGS_WEBSUB)',
  };
  root.removeAttribute('aria-labelledby');
  replace(root,
    h('div', { class: 'list-header' },
      h('div', { class: 'list-title-row' },
        h('a', { class: 'icon-button', href: '/feeds/' + feedId, 'data-link': '', 'aria-label': 'Back to the feed' }, icon('back')),
        h('h1', { class: 'list-title', id: 'page-title' }, sub.title))),
    h('div', { class: 'settings' },
      section('Feed', form),
      section('Status',
        h('dl', { class: 'facts' },
          h('dt', null, 'State'), h('dd', { class: 'feed-state state-' + sub.status }, statusWords[sub.status] || sub.status),
          sub.last_error ? [h('dt', null, 'Last error'), h('dd', { class: 'feed-error' }, sub.last_error)] : null,
          sub.status_reason && sub.status_reason !== sub.last_error ? [h('dt', null, 'Reason'), h('dd', null, sub.status_reason)] : null,
          h('dt', null, 'Feed address'), h('dd', null, h('code', null, sub.feed_url)),
          sub.site_url ? [h('dt', null, 'Site'), h('dd', null, h('a', { href: sub.site_url, target: '_blank', rel: 'noopener noreferrer' }, sub.site_url))] : null,
          sub.last_success_at ? [h('dt', null, 'Last fetched'), h('dd', null, fullDate(sub.last_success_at))] : null,
          h('dt', null, 'Next check'), h('dd', null, fullDate(sub.next_check_at)),
          push ? [h('dt', null, 'Push'), h('dd', { id: 'feed-push', class: 'push-' + push.state }, (pushWords[push.state] || (() => push.state))())] : null,
          push && push.last_error ? [h('dt', null, 'Push error'), h('dd', { class: 'feed-error' }, push.last_error)] : null,
          push && push.pushes ? [h('dt', null, 'Last push'), h('dd', null, fullDate(push.last_push_at) + ' (' + push.pushes + ' in all)')] : null),
        pauseRow,
        h('div', { class: 'button-row' }, sub.status !== 'active' ? resume : null, refresh),
        stateStatus),
      sub.scraper ? section('Scraper',
        h('p', { class: 'hint' }, 'This page has no feed: its items are read as a ' + (kindNames[sub.scraper.kind] || sub.scraper.kind) + ' page.'),
        h('div', { class: 'button-row' }, editScraper)) : null,
      section('Unsubscribe', unsubscribe)));
  root.setAttribute('aria-labelledby', 'page-title');
}
