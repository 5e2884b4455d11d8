// Rules (issue 33): what to hide, keep, mark read, star, label, be told about or summarize,
// decided once. The editor shows, as you type, which of your recent items the rule would
// catch (POST /rules/preview); saved rules act on arriving items; "Apply now" acts once on
// what is there, with an Undo. The settings page hands in its `section` and `onSubmit`
// helpers, so this page looks and behaves like the others.

import { app } from './state.js';
import { api } from './api.js';
import { h, replace } from './dom.js';
import { confirmDialog, errorBlock, showError, toast } from './dialogs.js';
import { t, tParts } from './i18n.js';

/** The simple actions, as the API names them, with the keys of their labels. */
const ACTIONS = [
  ['hide', 'rules.hide'],
  ['keep_only', 'rules.keep_only'],
  ['read', 'item.mark_read'],
  ['star', 'item.star'],
  ['summarize', 'item.summarize'],
];
const FIELDS = ['title', 'content', 'author', 'url', 'tag'];
/** How long the editor waits after the last key before it asks for a preview. */
const PREVIEW_DELAY_MS = 300;

/** A rule's scope in words. */
function scopeText(scope) {
  if (scope.feed_id) return t('rules.scope_feed', { feed: app.subscriptionByFeed(scope.feed_id)?.title || '#' + scope.feed_id });
  if (scope.group_id) return t('rules.scope_group', { group: app.groups.find((g) => g.id === scope.group_id)?.name || '#' + scope.group_id });
  return t('rules.scope_all');
}

/** A rule's conditions and actions in words. */
function ruleText(r) {
  const when = [
    r.query ? '“' + r.query + '”' : null,
    r.regex ? r.regex.field + ' ~ /' + r.regex.pattern + '/' : null,
    r.older_than_days ? t('rules.older_than', { count: r.older_than_days }) : null,
  ].filter(Boolean).join(t('rules.and'));
  return scopeText(r.scope) + ' · ' + when + ' → ' + r.actions.join(', ');
}

/** The editor of a new rule (`rule` null, or prefilled from `start`) or of a saved one. */
function ruleForm(rule, start, onSubmit, done, cancel) {
  const n = rule ? 'rule-' + rule.id : 'new-rule';
  const r = rule || { name: '', enabled: true, scope: {}, actions: ['hide'], ...start };
  const field = (id, label, input, hint) => [h('label', { for: n + '-' + id }, label), input, hint ? h('p', { class: 'hint' }, hint) : null];
  const name = h('input', { type: 'text', id: n + '-name', value: r.name || '', placeholder: t('rules.name_placeholder') });
  const scopeValue = r.scope.feed_id ? 'feed:' + r.scope.feed_id : r.scope.group_id ? 'group:' + r.scope.group_id : '';
  const scope = h('select', { id: n + '-scope' },
    h('option', { value: '' }, t('rules.all_feeds')),
    h('optgroup', { label: t('sidebar.groups') }, app.groups.map((g) => h('option', { value: 'group:' + g.id, selected: scopeValue === 'group:' + g.id }, g.name))),
    h('optgroup', { label: t('nav.feeds') }, app.subscriptions.map((s) => h('option', { value: 'feed:' + s.feed_id, selected: scopeValue === 'feed:' + s.feed_id }, s.title))));
  const query = h('input', { type: 'text', id: n + '-query', value: r.query || '', autocomplete: 'off', spellcheck: 'false', placeholder: 'sponsored -podcast, title:"breaking news", 東京' });
  const regexField = h('select', { id: n + '-regex-field', 'aria-label': t('rules.regex_field') },
    // A field list the form does not offer (an import's `url,title,author,tag`) stays one.
    [...new Set([...FIELDS, r.regex?.field || FIELDS[0]])].map((f) => h('option', { value: f, selected: r.regex?.field === f }, f)));
  const regex = h('input', { type: 'text', id: n + '-regex', value: r.regex?.pattern || '', autocomplete: 'off', spellcheck: 'false', placeholder: '(?i)^sponsored' });
  const age = h('input', { type: 'number', id: n + '-age', min: 1, max: 36500, value: r.older_than_days || '', inputmode: 'numeric' });
  const checks = h('fieldset', { class: 'picks' }, h('legend', null, t('rules.actions')),
    ACTIONS.map(([value, label]) => h('label', { class: 'choice' },
      h('input', { type: 'checkbox', name: 'action', value, checked: r.actions.includes(value) }), t(label))));
  const label = h('input', { type: 'text', id: n + '-label', value: r.actions.filter((a) => a.startsWith('label:')).map((a) => a.slice(6)).join(', ') });
  const notify = h('select', { id: n + '-notify' }, h('option', { value: '' }, t('rules.no_one')));
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
    ...field('name', t('keys_api.name'), name),
    ...field('scope', t('rules.looks_at'), scope),
    ...field('query', t('channels.words'), query, t('rules.query_hint')),
    ...field('regex', t('rules.regex'), h('span', { class: 'inline-fields' }, regexField, regex), t('rules.regex_hint')),
    ...field('age', t('rules.age'), age, t('rules.age_hint')),
    checks,
    ...field('label', t('rules.labels'), label, t('rules.labels_hint')),
    ...field('notify', t('rules.notify'), notify),
    h('div', { class: 'check-row' }, enabled, h('label', { for: n + '-on' }, t('rules.on'))),
    preview,
    status,
    h('div', { class: 'button-row' },
      h('button', { type: 'submit', class: 'button primary' }, rule ? t('common.save') : t('rules.save')),
      cancel ? h('button', { type: 'button', class: 'button', onclick: cancel }, t('common.cancel')) : null));
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
        replace(box, h('p', { class: 'preview-count' }, tParts('rules.preview', { matched: h('strong', null, String(answer.matched)), count: answer.looked_at })),
        h('ul', { class: 'plain-list preview-items' }, answer.items.slice(0, 10).map((i) =>
          h('li', null, i.title || t('item.untitled'), h('span', { class: 'hint' }, ' · ' + i.feed_title)))));
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
  const apply = button(t('rules.apply'), 'apply', async () => {
    apply.disabled = true;
    try {
      const { changed, undo } = await api('POST', '/rules/' + r.id + '/apply');
      app.reloadCounts();
      toast({
        title: t('rules.applied'),
        message: t('rules.changed', { count: changed }),
        duration: 15000,
        button: changed ? { text: t('common.undo'), onclick: () => undoApply(undo) } : null,
      });
    } catch (e) {
      showError(e, t('rules.apply_failed'));
    } finally {
      apply.disabled = false;
    }
  });
  const edit = button(t('channels.edit'), 'edit', () => replace(row, ruleForm(r, null, onSubmit, redraw, redraw)));
  const remove = button(t('common.delete'), 'delete', async () => {
    if (!(await confirmDialog(t('rules.delete_title', { rule: r.name }), t('rules.delete_message'), t('rules.delete')))) return;
    try {
      await api('DELETE', '/rules/' + r.id);
      redraw();
    } catch (e) {
      showError(e, t('rules.delete_failed'));
    }
  }, { class: 'button danger' });
  return replace(row,
    h('span', { class: 'rule-facts' }, h('strong', null, r.name), r.enabled ? null : h('span', { class: 'hint' }, ' · ' + t('channels.off')),
      h('span', { class: 'hint' }, ' · ' + ruleText(r))),
    h('span', { class: 'row-buttons' }, apply, edit, remove));
}

async function undoApply(undo) {
  try {
    const { restored } = await api('POST', '/rules/apply/undo', { undo });
    app.reloadCounts();
    toast({ title: t('mark_all.undone_title'), message: t('rules.restored', { count: restored }) });
  } catch (e) {
    showError(e, t('rules.undo_failed'));
  }
}

/** The Rules page's sections, for `section(title, ...content)` and `onSubmit`. A `start`
 * (from an item's "Hide items like this") prefills the new rule. */
export function ruleSections(section, onSubmit, start) {
  const list = h('ul', { class: 'plain-list', id: 'rules' });
  const draw = async () => {
    try {
      const { rules } = await api('GET', '/rules');
      replace(list, rules.length ? rules.map((r) => ruleRow(r, onSubmit, draw)) : h('li', { class: 'hint' }, t('rules.none')));
    } catch (e) {
      replace(list, h('li', null, errorBlock(e)));
    }
  };
  const add = h('div');
  const drawForm = (prefill) => replace(add, ruleForm(null, prefill, onSubmit, async () => {
    toast({ title: t('rules.saved'), message: t('rules.saved_message') });
    drawForm();
    await draw();
  }));
  draw();
  drawForm(start);
  return [
    section(t('page.rules'), h('p', null, t('rules.intro')), list),
    section(t('rules.add'), add),
  ];
}
