// Import from another reader (issue 32): the settings page's form beside OPML. The import runs
// on the server as a job (POST /imports, or /imports/file for a file); this follows it with
// GET /imports/{id}: what is being read, how far it got, then what it did per kind. The
// credentials go in the one request and are cleared from the form at once.

import { app } from './state.js';
import { api } from './api.js';
import { h, replace } from './dom.js';
import { errorBlock } from './dialogs.js';

/** The sources, as the API names them, with what the form asks for each. */
const SOURCES = [
  ['greader', 'FreshRSS, or another Google Reader API server'],
  ['miniflux', 'Miniflux'],
  ['file', 'A file: OPML or starred items (JSON)'],
];

const URL_HINTS = {
  greader: 'The Google Reader API address. FreshRSS: https://your.freshrss/api/greader.php; tidings: its own address followed by /api/greader.php.',
  miniflux: 'The address you open Miniflux at, such as https://miniflux.example.',
};

/** The report's rows, one per kind, in the order the command line prints them. */
const KINDS = [
  ['subscriptions', 'Subscriptions'],
  ['folders', 'Folders'],
  ['starred', 'Starred items'],
  ['read_marks', 'Read marks'],
  ['labels', 'Labels'],
  ['settings', 'Feed settings'],
  ['rules', 'Rules (filters)'],
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
      would ? 'Dry run: nothing was changed. This is what the import would do.'
        : job.complete ? 'Imported from ' + (job.from || 'the other reader') + '.'
          : 'Imported from ' + (job.from || 'the other reader') + ', except what is listed below.'),
    h('div', { class: 'scroll-x' }, h('table', { class: 'report', id: 'reader-import-report' },
      h('caption', { class: 'visually-hidden' }, 'What the import ' + (would ? 'would do' : 'did')),
      h('thead', null, h('tr', null, ...['Kind', would ? 'Would add' : 'Added', 'Already there', would ? 'Would keep as bookmarks' : 'Kept as bookmarks', 'Not imported']
        .map((title) => h('th', { scope: 'col' }, title)))),
      h('tbody', null, kinds.map(([key, name]) => h('tr', { 'data-kind': key },
        h('th', { scope: 'row' }, name),
        ...[r[key].added, r[key].unchanged, r[key].kept_as_bookmark, r[key].failed].map((n) => h('td', null, String(n)))))))),
    r.rules?.names?.length ? [h('h3', null, would ? 'Rules it would add' : 'Rules added'), h('ul', null, r.rules.names.map((name) => h('li', null, name)))] : null,
    kinds.some(([key]) => r[key].failed) ? [h('h3', null, 'Not imported'), h('ul', null, kinds.map(([key]) => lines(key)))] : null,
    kinds.some(([key]) => r[key].not_kept) ? [h('h3', null, 'Not kept (tidings has no place for it)'), h('ul', null, kinds.map(([key]) => notes(key)))] : null,
  ];
}

/** Where a running import is: reading the other reader, then settling its feeds and items. */
function progress(job) {
  if (job.phase === 'reading') {
    return [h('p', null, h('span', { class: 'spinner', 'aria-hidden': 'true' }), 'Reading your history from ' + (job.from || 'the other reader') + '…')];
  }
  return [
    h('p', null, h('span', { class: 'spinner', 'aria-hidden': 'true' }), (job.dry_run ? 'Checking' : 'Importing') + ': ' + job.checked + ' of ' + job.total + ' subscriptions and items.'),
    h('progress', { class: 'import-progress', max: String(Math.max(job.total, 1)), value: String(job.checked), 'aria-label': 'Subscriptions and items imported' }),
  ];
}

/** The end of an import: its report, or why it stopped. */
function outcome(job) {
  if (job.status === 'done' && job.report) return report(job);
  if (job.status === 'interrupted') {
    return [h('p', { class: 'notice', role: 'alert' }, 'The import stopped with the server before it finished. What it did is kept: import again for the rest.')];
  }
  return [h('p', { class: 'notice', role: 'alert', id: 'reader-import-error' }, 'The import failed: ' + (job.error || 'unknown error') + '.')];
}

/**
 * The settings page's "Import from another reader" section, for `section(title, ...content)`;
 * `onSubmit(form, status, action)` runs the form's action with its errors shown in `status`.
 */
export function readerImportSection(section, onSubmit) {
  const source = h('select', { id: 'import-source' }, SOURCES.map(([value, label]) => h('option', { value }, label)));
  const url = h('input', { type: 'text', id: 'import-url', inputmode: 'url', autocomplete: 'off', spellcheck: 'false', placeholder: 'https://', 'aria-describedby': 'import-url-hint' });
  const login = h('input', { type: 'text', id: 'import-login', autocomplete: 'off', spellcheck: 'false' });
  const password = h('input', { type: 'password', id: 'import-password', autocomplete: 'off', 'aria-describedby': 'import-password-hint' });
  const key = h('input', { type: 'password', id: 'import-key', autocomplete: 'off', 'aria-describedby': 'import-key-hint' });
  const file = h('input', { type: 'file', id: 'import-file', accept: '.opml,.xml,.json,text/x-opml,text/xml,application/json' });
  const dryRun = h('input', { type: 'checkbox', id: 'import-dry-run' });
  const urlHint = h('p', { class: 'hint', id: 'import-url-hint' });
  const urlField = h('div', { class: 'form' }, h('label', { for: 'import-url' }, 'Server address'), url, urlHint);
  const greaderFields = h('div', { class: 'form' },
    field('import-login', 'User name', login),
    field('import-password', 'Password', password, 'FreshRSS: the API password of Settings > Profile. tidings: an API key.'));
  const minifluxFields = field('import-key', 'API key', key, 'Miniflux: Settings > API Keys > Create a new API key.');
  const fileField = field('import-file', 'File', file, 'An OPML export, or a starred-items JSON (Google Takeout, FreshRSS, Inoreader).');
  const show = () => {
    const chosen = source.value;
    urlField.hidden = chosen === 'file';
    greaderFields.hidden = chosen !== 'greader';
    minifluxFields.hidden = chosen !== 'miniflux';
    fileField.hidden = chosen !== 'file';
    urlHint.textContent = URL_HINTS[chosen] || '';
  };
  source.addEventListener('change', show);
  show();
  const status = h('div', { id: 'reader-import-status', 'aria-live': 'polite' });
  const form = h('form', { class: 'form narrow', id: 'reader-import-form' },
    h('label', { for: 'import-source' }, 'Import from'), source,
    urlField, greaderFields, minifluxFields, fileField,
    h('div', { class: 'check-row' }, dryRun, h('label', { for: 'import-dry-run' }, 'Dry run: show what it would do, change nothing')),
    h('button', { type: 'submit', class: 'button primary' }, 'Import'));

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
      if (!chosen) return invalid('No file chosen.', 'Choose the OPML file or starred-items JSON your old reader exported.');
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
  return section('Import from another reader',
    h('p', null, 'Bring over your subscriptions with their folders, starred items, read marks and labels. Running it again changes nothing; starred items whose feed is gone are kept as bookmarks. Your password or key is used for this import only and is not stored.'),
    form, status);
}
