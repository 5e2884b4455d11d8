// Single sign-on (F22): the "Sign in with …" button of the sign-in page, the linked
// identities of the account page, and the administrators' switch that turns passwords off.

import { api } from './api.js';
import { h, replace, fullDate } from './dom.js';
import { confirmDialog, errorBlock, showError } from './dialogs.js';
import { t } from './i18n.js';

/** The ways to sign in; a failure answers "password only", the server's default. */
export async function signInMethods() {
  try {
    return await api('GET', '/sign-in-methods', null, { quiet401: true });
  } catch (e) {
    return { password: true, oidc: null };
  }
}

/** The "Sign in with …" button, back to `next` once signed in; null without a provider. */
export function ssoButton(methods, next) {
  if (!methods.oidc) return null;
  const href = methods.oidc.start_url + (next && next !== '/' ? '?next=' + encodeURIComponent(next) : '');
  return h('a', { class: 'button wide', id: 'oidc-sign-in', href }, t('sso.sign_in_with', { provider: methods.oidc.name }));
}

/** The account page's section of linked identities, for `section(title, ...content)`. */
export function identitiesSection(section) {
  const list = h('ul', { class: 'plain-list', id: 'identities' });
  const actions = h('div', { class: 'button-row' });
  const status = h('div', { 'aria-live': 'polite' });
  const draw = async () => {
    try {
      const [methods, data] = await Promise.all([signInMethods(), api('GET', '/me/identities')]);
      replace(list, data.identities.length ? data.identities.map((i) => h('li', { class: 'row' },
        h('span', null, h('strong', null, i.email || i.subject),
          h('span', { class: 'hint' }, ' · ' + i.issuer + ' · ' + t('sso.linked', { date: fullDate(i.created_at) }))),
        h('button', { type: 'button', class: 'button', onclick: async () => {
          if (!(await confirmDialog(t('sso.unlink_title', { identity: i.email || i.subject }), t('sso.unlink_message'), t('sso.unlink')))) return;
          try {
            await api('DELETE', '/me/identities/' + i.id);
            draw();
          } catch (e) {
            showError(e, t('sso.unlink_failed'));
          }
        } }, t('sso.unlink')))) : h('li', { class: 'hint' }, t('sso.none')));
      replace(actions, methods.oidc ? h('button', { type: 'button', class: 'button', id: 'link-identity', onclick: async () => {
        replace(status);
        try {
          location.assign((await api('POST', '/me/identities')).authorization_url);
        } catch (e) {
          replace(status, errorBlock(e));
        }
      } }, t('sso.link', { provider: methods.oidc.name })) : null);
    } catch (e) {
      replace(list, h('li', null, errorBlock(e)));
    }
  };
  draw();
  return section(t('sso.title'), h('p', null, t('sso.intro')), list, actions, status);
}

/** The administrators' switch: passwords on, or single sign-on only. */
export function passwordSwitch(section) {
  const box = h('input', { type: 'checkbox', id: 'password-sign-in' });
  const status = h('div', { 'aria-live': 'polite' });
  api('GET', '/admin/sign-in').then((s) => { box.checked = s.password_sign_in; }).catch((e) => replace(status, errorBlock(e)));
  box.addEventListener('change', async () => {
    replace(status);
    try {
      box.checked = (await api('PUT', '/admin/sign-in', { password_sign_in: box.checked })).password_sign_in;
    } catch (e) {
      box.checked = !box.checked;
      replace(status, errorBlock(e));
    }
  });
  return section(t('sso.sign_in_section'),
    h('div', { class: 'check-row' }, box, h('label', { for: 'password-sign-in' }, t('sso.passwords'))),
    h('p', { class: 'hint' }, t('sso.passwords_hint')),
    status);
}
