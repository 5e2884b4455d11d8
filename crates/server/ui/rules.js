// Rules (issue 33): what to hide, keep, mark read, star, label, be told about or summarize,
// decided once. The editor shows, as you type, which of your recent items the rule would
// catch (POST /rules/preview); saved rules act on arriving items; "Apply now" acts once on
// what is there, with an Undo. The settings page hands in its `section` and `onSubmit`
// helpers, so this page looks and behaves like the others.

import { app } from './state.js';
import { api } from './api.js';
import { h, replace } from './dom.js';
import { confirmDialog, errorBlock, showError, toast } from './dialogs.js';

/** The simple actions, as the API names them, with their labels. */
const ACTIONS = [
  ['hide', 'Hide'],
  ['keep_only', 'Keep only these (hide the rest of the scope)'],
  ['read', 'Mark read'],
  ['star', 'Star'],
  ['summarize', 'Summarize'],
];
const FIELDS = ['title', 'content', 'author', 'url', 'tag'];
/** How long the editor waits after the last key before it asks for a preview. */
const PREVIEW_DELAY_MS = 300;

/** A rule's scope in words. */
function scopeText(scope) {
  if (scope.feed_id) return 'feed: ' + (app.subscriptionByFeed(scope.feed_id)?.title || '#' + scope.feed_id);
  if (scope.group_id) return 'group: ' + (app.groups.find((g) => g.id === scope.group_id)?.name || '#' + scope.group_id);
  return 'all feeds';
}

/** A rule's conditions and actions in words. */
function ruleText(r) {
  const when = [
    r.query ? '“' + r.query + '”' : null,
    r.regex ? r.regex.field + ' ~ /' + r.regex.pattern + '/' : null,
    r.older_than_days ? 'older than ' + r.older_than_days + ' days' : null,
  ].filter(Boolean).join(' and ');
  return scopeText(r.scope) + ' · ' + when + ' → ' + r.actions.join(', ');
}

/** The editor of a new rule (`rule` null, or prefilled from `start`) or of a saved one. */
function ruleForm(rule, start, onSubmit, done, cancel) {
  const n = rule ? 'rule-' + rule.id : 'new-rule';
  const r = rule || { name: '', enabled: true, scope: {}, actions: ['hide'], ...start };
  const field = (id, label, input, hint) => [h('label', { for: n + '-' + id }, label), input, hint ? h('p', { class: 'hint' }, hint) : null];
  const name = h('input', { type: 'text', id: n + '-name', value: r.name || '', placeholder: 'The query when empty' });
  const scopeValue = r.scope.feed_id ? 'feed:' + r.scope.feed_id : r.scope.group_id ? 'group:' + r.scope.group_id : '';
  const scope = h('select', { id: n + '-scope' },
    h('option', { value: '' }, 'All feeds'),
    h('optgroup', { label: 'Groups' }, app.groups.map((g) => h('option', { value: 'group:' + g.id, selected: scopeValue === 'group:' + g.id }, g.name))),
    h('optgroup', { label: 'Feeds' }, app.subscriptions.map((s) => h('option', { value: 'feed:' + s.feed_id, selected: scopeValue === 'feed:' + s.feed_id }, s.title))));
  const query = h('input', { type: 'text', id: n + '-query', value: r.query || '', autocomplete: 'off', spellcheck: 'false', placeholder: 'sponsored -podcast, title:"breaking news", 東京' });
  const regexField = h('select', { id: n + '-regex-field', 'aria-label': 'Field of the regular expression' },
    // A field list the form does not offer (an import's `url,title,author,tag`) stays one.
    [...new Set([...FIELDS, r.regex?.field || FIELDS[0]])].map((f) => h('option', { value: f, selected: r.regex?.field === f }, f)));
  const regex = h('input', { type: 'text', id: n + '-regex', value: r.regex?.pattern || '', autocomplete: 'off', spellcheck: 'false', placeholder: '(?i)^sponsored' });
  const age = h('input', { type: 'number', id: n + '-age', min: 1, max: 36500, value: r.older_than_days || '', inputmode: 'numeric' });
  const checks = h('fieldset', { class: 'picks' }, h('legend', null, 'Actions'),
    ACTIONS.map(([value, label]) => h('label', { class: 'choice' },
      h('input', { type: 'checkbox', name: 'action', value, checked: r.actions.includes(value) }), label)));
  const label = h('input', { type: 'text', id: n + '-label', value: r.actions.filter((a) => a.startsWith('label:')).map((a) => a.slice(6)).join(', ') });
  const notify = h('select', { id: n + '-notify' }, h('option', { value: '' }, 'No one'));
  const notifyNow = r.actions.find((a) => a.startsWith('notify:'));
  api('GET', '/webhooks').then(({ webhooks }) => webhooks.forEach((c) =>
    notify.append(h('option', { value: 'notify:' + c.id, selected: notifyNow === 'notify:' + c.id }, c.name))), () => {});
  const enabled = h('input', { type: 'checkbox', id: n + '-on', checked: r.enabled !== false });
  const status = h('div', { 'aria-live': 'polite' });
  const preview = h('div', { class: 'rule-preview', id: n + '-preview', 'aria-live': 'polite' });
  const body = () => {
    const [kind, id] = scope.value.split(':');
    const actions = [...checks.querySelectorAll('input:checked')].map((i) => i.value);
    label.value.split(/[,，、]/).map((l) => l.trim()).filter(Boolean).forEach((l) => actions.push('label:' + l));
    if (notify.value) actions.push(notify.value);
    return {
      name: name.value.trim() || null,
      enabled: enabled.checked,
      scope: kind ? { [kind + '_id']: Number(id) } : {},
      query: query.value.trim() || null,
      regex: regex.value ? { field: regexField.value, pattern: regex.value } : null,
      older_than_days: age.value ? Number(age.value) : null,
      actions,
    };
  };
  const refresh = livePreview(preview, body);
  const form = h('form', { class: 'form narrow rule-form' },
    ...field('name', 'Name', name),
    ...field('scope', 'Looks at', scope),
    ...field('query', 'Words', query, 'As in search: every word must appear; "quoted phrases"; -word excludes. Fields: title:, content:, author:, url:, tag:, category:, enclosure:audio, popularity:>=100.'),
    ...field('regex', 'Regular expression', h('span', { class: 'inline-fields' }, regexField, regex), 'Optional; (?i) ignores case.'),
    ...field('age', 'Older than (days)', age, 'Optional: items published longer ago than this.'),
    checks,
    ...field('label', 'Add labels', label, 'Separate labels with commas.'),
    ...field('notify', 'Tell a notification channel', notify),
    h('div', { class: 'check-row' }, enabled, h('label', { for: n + '-on' }, 'On for arriving items')),
    preview,
    status,
    h('div', { class: 'button-row' },
      h('button', { type: 'submit', class: 'button primary' }, rule ? 'Save' : 'Save rule'),
      cancel ? h('button', { type: 'button', class: 'button', onclick: cancel }, 'Cancel') : null));
  form.addEventListener('input', refresh);
  form.addEventListener('change', refresh);
  onSubmit(form, status, async () => {
    if (rule) await api('PATCH', '/rules/' + rule.id, body());
    else await api('POST', '/rules', body());
    done();
  });
  if (r.query || r.regex || r.older_than_days) refresh();
  return form;
}

/** A preview drawn in `box` from the form's `body`, a moment after the last change; a newer
 * change makes an older answer moot. */
function livePreview(box, body) {
  let timer = null;
  let asked = 0;
  return () => {
    clearTimeout(timer);
    timer = setTimeout(async () => {
      const question = body();
      if (!question.query && !question.regex && !question.older_than_days) return replace(box);
      if (!question.actions.length) question.actions = ['read'];
      const mine = ++asked;
      try {
        const answer = await api('POST', '/rules/preview', question);
        if (mine !== asked) return;
        replace(box, h('p', { class: 'preview-count' }, h('strong', null, String(answer.matched)),
          ' of your ' + answer.looked_at + ' most recent items match'),
        h('ul', { class: 'plain-list preview-items' }, answer.items.slice(0, 10).map((i) =>
          h('li', null, i.title || '(untitled)', h('span', { class: 'hint' }, ' · ' + i.feed_title)))));
      } catch (e) {
        if (mine === asked) replace(box, errorBlock(e));
      }
    }, PREVIEW_DELAY_MS);
  };
}

/** One rule's row: its facts, On/Off, Apply now, Edit, Delete. */
function ruleRow(r, onSubmit, redraw) {
  const row = h('li', { class: 'row rule', dataset: { id: r.id } });
  const button = (label, action, onclick, extra) => h('button', { type: 'button', class: 'button', dataset: { action }, onclick, ...extra }, label);
  const apply = button('Apply now', 'apply', async () => {
    apply.disabled = true;
    try {
      const { changed, undo } = await api('POST', '/rules/' + r.id + '/apply');
      app.reloadCounts();
      toast({
        title: 'Rule applied',
        message: changed === 1 ? '1 item changed.' : changed + ' items changed.',
        duration: 15000,
        button: changed ? { text: 'Undo', onclick: () => undoApply(undo) } : null,
      });
    } catch (e) {
      showError(e, 'The rule was not applied');
    } finally {
      apply.disabled = false;
    }
  });
  const edit = button('Edit', 'edit', () => replace(row, ruleForm(r, null, onSubmit, redraw, redraw)));
  const remove = button('Delete', 'delete', async () => {
    if (!(await confirmDialog('Delete the rule “' + r.name + '”?', 'What it already did stays done.', 'Delete rule'))) return;
    try {
      await api('DELETE', '/rules/' + r.id);
      redraw();
    } catch (e) {
      showError(e, 'The rule was not deleted');
    }
  }, { class: 'button danger' });
  return replace(row,
    h('span', { class: 'rule-facts' }, h('strong', null, r.name), r.enabled ? null : h('span', { class: 'hint' }, ' · off'),
      h('span', { class: 'hint' }, ' · ' + ruleText(r))),
    h('span', { class: 'row-buttons' }, apply, edit, remove));
}

async function undoApply(undo) {
  try {
    const { restored } = await api('POST', '/rules/apply/undo', { undo });
    app.reloadCounts();
    toast({ title: 'Undone', message: restored === 1 ? '1 item is as it was.' : restored + ' items are as they were.' });
  } catch (e) {
    showError(e, 'The rule was not undone');
  }
}

/** The Rules page's sections, for `section(title, ...content)` and `onSubmit`. A `start`
 * (from an item's "Hide items like this") prefills the new rule. */
export function ruleSections(section, onSubmit, start) {
  const list = h('ul', { class: 'plain-list', id: 'rules' });
  const draw = async () => {
    try {
      const { rules } = await api('GET', '/rules');
      replace(list, rules.length ? rules.map((r) => ruleRow(r, onSubmit, draw)) : h('li', { class: 'hint' }, 'No rules yet.'));
    } catch (e) {
      replace(list, h('li', null, errorBlock(e)));
    }
  };
  const add = h('div');
  const drawForm = (prefill) => replace(add, ruleForm(null, prefill, onSubmit, async () => {
    toast({ title: 'Rule saved', message: 'It acts on items that arrive from now on; Apply now changes those already here.' });
    drawForm();
    await draw();
  }));
  draw();
  drawForm(start);
  return [
    section('Rules', h('p', null, 'Rules act on each item as it arrives, in this order, for you alone: other readers of the same feeds are not affected. The apps you sync with see what they did.'), list),
    section('Add a rule', add),
  ];
}
