// The sign-in page and the first-administrator setup page (reached through the one-time
// link that `tidings serve` prints).

import { api } from './api.js';
import { h, icon, replace } from './dom.js';
import { errorBlock } from './dialogs.js';
import { passkeyButton, secondStep } from './mfa.js';
import { signInMethods, ssoButton } from './identities.js';
import { t, tParts } from './i18n.js';

function field(id, label, attrs, hint) {
  const hintId = hint ? id + '-hint' : null;
  return [
    h('label', { for: id }, label),
    h('input', { id, name: id, 'aria-describedby': hintId, ...attrs }),
    hint ? h('p', { class: 'hint', id: hintId }, hint) : null,
  ];
}

function page(root, title, ...content) {
  document.title = title + ' · tidings';
  replace(root, h('main', { class: 'auth-page', id: 'main' },
    h('div', { class: 'auth-card' },
      h('p', { class: 'brand brand-large' }, icon('feed', 'brand-mark'), 'tidings'),
      h('h1', null, title),
      ...content)));
}

/** The sign-in form; calls `done(user)` once signed in. */
export function renderSignIn(root, done) {
  const status = h('div', { class: 'form-status', 'aria-live': 'polite' });
  const submit = h('button', { type: 'submit', class: 'button primary wide' }, t('auth.sign_in'));
  const form = h('form', { class: 'form', id: 'sign-in-form' },
    field('username', t('auth.username'), { type: 'text', autocomplete: 'username', required: true, autocapitalize: 'none', spellcheck: 'false' }),
    field('password', t('auth.password'), { type: 'password', autocomplete: 'current-password', required: true }),
    status,
    submit);
  const setupNote = h('div', { class: 'setup-note' });
  const passkeyStatus = h('div', { class: 'form-status', 'aria-live': 'polite' });
  const sso = h('div', { class: 'sso' });
  page(root, t('auth.sign_in'), sso, form, passkeyButton(passkeyStatus, done), passkeyStatus, setupNote);
  form.querySelector('#username').focus();
  signInMethods().then((methods) => {
    replace(sso, ssoButton(methods, new URLSearchParams(location.search).get('next')));
    // Passwords turned off: the provider's button is the only way in.
    form.hidden = !methods.password;
  });
  api('GET', '/setup', null, { quiet401: true }).then((setup) => {
    if (setup && setup.required) {
      replace(setupNote, h('p', { class: 'note' }, tParts('auth.no_account', { command: h('code', null, 'tidings serve') })));
    }
  }).catch(() => {});
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    submit.disabled = true;
    replace(status);
    try {
      const result = await api('POST', '/session', {
        username: form.querySelector('#username').value.trim(),
        password: form.querySelector('#password').value,
      }, { quiet401: true });
      // 202: the password was right and a second factor is on (issue 19).
      if (result.second_factor) {
        page(root, t('auth.two_step'), secondStep(result.second_factor.methods, done, () => renderSignIn(root, done)));
        return;
      }
      done(result.user);
    } catch (e) {
      submit.disabled = false;
      replace(status, errorBlock(e));
      form.querySelector('#password').select();
    }
  });
}

/** The first-administrator form, with the token from the setup link. */
export async function renderSetup(root, token, done) {
  let required = true;
  try {
    const setup = await api('GET', '/setup', null, { quiet401: true });
    required = Boolean(setup && setup.required);
  } catch (e) {
    // Show the form anyway; the server will say what is wrong.
  }
  if (!required) {
    page(root, t('setup.complete'),
      h('p', null, t('setup.admin_exists')),
      h('p', null, h('a', { class: 'button primary', href: '/login', 'data-link': '' }, t('auth.sign_in'))));
    return;
  }
  if (!token) {
    page(root, t('setup.title'),
      h('p', null, tParts('setup.open_link', { command: h('code', null, 'tidings serve') })),
      h('p', null, tParts('setup.lost_link', { command: h('code', null, 'tidings user add NAME --admin') })));
    return;
  }
  const status = h('div', { class: 'form-status', 'aria-live': 'polite' });
  const submit = h('button', { type: 'submit', class: 'button primary wide' }, t('setup.create'));
  const form = h('form', { class: 'form', id: 'setup-form' },
    h('p', null, t('setup.intro')),
    field('username', t('auth.username'), { type: 'text', autocomplete: 'username', required: true, autocapitalize: 'none', spellcheck: 'false' }),
    field('password', t('auth.password'), { type: 'password', autocomplete: 'new-password', required: true, minlength: 12 },
      t('auth.password_hint')),
    field('password-again', t('auth.password_again'), { type: 'password', autocomplete: 'new-password', required: true }),
    status,
    submit);
  page(root, t('setup.title'), form);
  form.querySelector('#username').focus();
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const password = form.querySelector('#password').value;
    if (password !== form.querySelector('#password-again').value) {
      replace(status, errorBlock({ category: 'validation', message: t('auth.passwords_differ'), action: t('auth.passwords_differ_action') }));
      return;
    }
    submit.disabled = true;
    replace(status);
    try {
      const result = await api('POST', '/setup', { token, username: form.querySelector('#username').value.trim(), password }, { quiet401: true });
      history.replaceState(null, '', '/');
      done(result.user);
    } catch (e) {
      submit.disabled = false;
      replace(status, errorBlock(e));
    }
  });
}
