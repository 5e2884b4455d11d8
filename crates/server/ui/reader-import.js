// Import from another reader (issue 32): the settings page's form beside OPML. The import runs
// on the server as a job (POST /imports, or /imports/file for a file); this follows it with
// GET /imports/{id}: what is being read, how far it got, then what it did per kind. The
// credentials go in the one request and are cleared from the form at once.

import { app } from './state.js';
import { api } from './api.js';
import { h, replace } from './dom.js';
import { errorBlock } from './dialogs.js';
import { t } from './i18n.js';

/** The sources, as the API names them, with the keys of their names. */
const SOURCES = [
  ['greader', 'import.greader'],
  ['miniflux', 'import.miniflux'],
  ['file', 'import.file_source'],
];

/** The keys of the address's hint for each source that has one. */
const URL_HINTS = { greader: 'import.greader_url', miniflux: 'import.miniflux_url' };

/** The report's rows, one per kind, in the order the command line prints them, with the keys of their names. */
const KINDS = [
  ['subscriptions', 'sidebar.subscriptions'],
  ['folders', 'import.folders'],
  ['starred', 'import.starred'],
  ['read_marks', 'import.read_marks'],
  ['labels', 'import.labels'],
  ['settings', 'page.feed_settings'],
  ['rules', 'import.rules'],
];

/** A labelled field whose label, input and hint are shown or hidden together. */
function field(id, label, input, hint) {
  return h('div', { class: 'form' },
    h('label', { for: id }, label), input,
    hint ? h('p', { class: 'hint', id: id + '-hint' }, hint) : null);
}

/** What an import did (or would do), per kind, with the reasons of what was not imported. */
function report(job) {
  const r = job.report;
  const would = job.dry_run;
  const empty = (k) => !(k.added + k.unchanged + k.kept_as_bookmark + k.failed + k.not_kept);
  const kinds = KINDS.filter(([key]) => r[key] && ((key !== 'settings' && key !== 'rules') || !empty(r[key])));
  const lines = (key) => r[key].reasons.map((reason) => h('li', { class: 'report-refused' }, reason));
  const notes = (key) => r[key].notes.map((note) => h('li', null, note));
  return [
    h('p', { class: job.complete ? 'success' : 'notice', role: job.complete ? null : 'alert' },
      would ? t('import.dry_done')
        : t(job.complete ? 'import.done' : 'import.done_except', { from: job.from || t('import.other_reader') })),
    h('div', { class: 'scroll-x' }, h('table', { class: 'report', id: 'reader-import-report' },
      h('caption', { class: 'visually-hidden' }, would ? t('import.caption_would') : t('import.caption_did')),
      h('thead', null, h('tr', null, ...[t('channels.kind'), would ? t('import.would_add') : t('import.added'), t('import.already'),
        would ? t('import.would_keep') : t('import.kept'), t('import.not_imported')]
        .map((title) => h('th', { scope: 'col' }, title)))),
      h('tbody', null, kinds.map(([key, name]) => h('tr', { 'data-kind': key },
        h('th', { scope: 'row' }, t(name)),
        ...[r[key].added, r[key].unchanged, r[key].kept_as_bookmark, r[key].failed].map((n) => h('td', null, String(n)))))))),
    r.rules?.names?.length ? [h('h3', null, would ? t('import.rules_would') : t('import.rules_added')), h('ul', null, r.rules.names.map((name) => h('li', null, name)))] : null,
    kinds.some(([key]) => r[key].failed) ? [h('h3', null, t('import.not_imported')), h('ul', null, kinds.map(([key]) => lines(key)))] : null,
    kinds.some(([key]) => r[key].not_kept) ? [h('h3', null, t('import.not_kept')), h('ul', null, kinds.map(([key]) => notes(key)))] : null,
  ];
}

/** Where a running import is: reading the other reader, then settling its feeds and items. */
function progress(job) {
  if (job.phase === 'reading') {
    return [h('p', null, h('span', { class: 'spinner', 'aria-hidden': 'true' }), t('import.reading', { from: job.from || t('import.other_reader') }))];
  }
  return [
    h('p', null, h('span', { class: 'spinner', 'aria-hidden': 'true' }), t(job.dry_run ? 'import.checking' : 'import.importing', { checked: job.checked, count: job.total })),
    h('progress', { class: 'import-progress', max: String(Math.max(job.total, 1)), value: String(job.checked), 'aria-label': t('import.progress_label') }),
  ];
}

/** The end of an import: its report, or why it stopped. */
function outcome(job) {
  if (job.status === 'done' && job.report) return report(job);
  if (job.status === 'interrupted') {
    return [h('p', { class: 'notice', role: 'alert' }, t('import.interrupted'))];
  }
  return [h('p', { class: 'notice', role: 'alert', id: 'reader-import-error' }, t('import.failed', { error: job.error || t('opml.unknown_error') }))];
}

/**
 * The settings page's "Import from another reader" section, for `section(title, ...content)`;
 * `onSubmit(form, status, action)` runs the form's action with its errors shown in `status`.
 */
export function readerImportSection(section, onSubmit) {
  const source = h('select', { id: 'import-source' }, SOURCES.map(([value, label]) => h('option', { value }, t(label))));
  const url = h('input', { type: 'text', id: 'import-url', inputmode: 'url', autocomplete: 'off', spellcheck: 'false', placeholder: 'https://', 'aria-describedby': 'import-url-hint' });
  const login = h('input', { type: 'text', id: 'import-login', autocomplete: 'off', spellcheck: 'false' });
  const password = h('input', { type: 'password', id: 'import-password', autocomplete: 'off', 'aria-describedby': 'import-password-hint' });
  const key = h('input', { type: 'password', id: 'import-key', autocomplete: 'off', 'aria-describedby': 'import-key-hint' });
  const file = h('input', { type: 'file', id: 'import-file', accept: '.opml,.xml,.json,text/x-opml,text/xml,application/json' });
  const dryRun = h('input', { type: 'checkbox', id: 'import-dry-run' });
  const urlHint = h('p', { class: 'hint', id: 'import-url-hint' });
  const urlField = h('div', { class: 'form' }, h('label', { for: 'import-url' }, t('import.server')), url, urlHint);
  const greaderFields = h('div', { class: 'form' },
    field('import-login', t('auth.username'), login),
    field('import-password', t('auth.password'), password, t('import.password_hint')));
  const minifluxFields = field('import-key', t('import.api_key'), key, t('import.api_key_hint'));
  const fileField = field('import-file', t('import.file'), file, t('import.file_hint'));
  const show = () => {
    const chosen = source.value;
    urlField.hidden = chosen === 'file';
    greaderFields.hidden = chosen !== 'greader';
    minifluxFields.hidden = chosen !== 'miniflux';
    fileField.hidden = chosen !== 'file';
    urlHint.textContent = URL_HINTS[chosen] ? t(URL_HINTS[chosen]) : '';
  };
  source.addEventListener('change', show);
  show();
  const status = h('div', { id: 'reader-import-status', 'aria-live': 'polite' });
  const form = h('form', { class: 'form narrow', id: 'reader-import-form' },
    h('label', { for: 'import-source' }, t('import.from')), source,
    urlField, greaderFields, minifluxFields, fileField,
    h('div', { class: 'check-row' }, dryRun, h('label', { for: 'import-dry-run' }, t('import.dry_run'))),
    h('button', { type: 'submit', class: 'button primary' }, t('opml.import')));

  let following = null;
  const follow = async (id) => {
    following = id;
    for (;;) {
      const job = await api('GET', '/imports/' + id);
      if (following !== id || !status.isConnected) return;
      if (job.status !== 'running') {
        following = null;
        replace(status, ...outcome(job));
        if (!job.dry_run) await app.reloadFeeds();
        return;
      }
      replace(status, ...progress(job));
      // Every 1.5 s, as the OPML import: the reader's own requests keep most of the rate limit.
      await new Promise((resolve) => setTimeout(resolve, 1500));
    }
  };
  const invalid = (message, action) => replace(status, errorBlock({ category: 'validation', message, action }));
  onSubmit(form, status, async () => {
    let started;
    if (source.value === 'file') {
      const chosen = file.files && file.files[0];
      if (!chosen) return invalid(t('opml.no_file'), t('import.no_file_action'));
      started = await api('POST', '/imports/file' + (dryRun.checked ? '?dry_run=true' : ''), chosen,
        { contentType: 'application/octet-stream', headers: { 'X-File-Name': encodeURIComponent(chosen.name) } });
    } else {
      const body = { source: source.value, url: url.value.trim(), dry_run: dryRun.checked };
      if (source.value === 'greader') Object.assign(body, { login: login.value.trim(), password: password.value });
      else body.api_key = key.value.trim();
      try {
        started = await api('POST', '/imports', body);
      } finally {
        // The credentials are for this one import: not kept in the page.
        password.value = '';
        key.value = '';
      }
    }
    replace(status, ...progress({ phase: source.value === 'file' ? 'importing' : 'reading', from: url.value.trim(), checked: 0, total: 0, dry_run: dryRun.checked }));
    follow(started.import_id).catch((e) => replace(status, errorBlock(e)));
  });
  // An import still running when the page is opened again is followed again.
  api('GET', '/imports').then((data) => {
    const running = data.imports.find((i) => i.status === 'running');
    if (running && following === null) follow(running.import_id).catch(() => {});
  }, () => {});
  return section(t('import.title'),
    h('p', null, t('import.intro')),
    form, status);
}
