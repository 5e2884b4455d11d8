// The sign-in page and the first-administrator setup page (reached through the one-time
// link that `tidings serve` prints).

import { api } from './api.js';
import { h, icon, replace } from './dom.js';
import { errorBlock } from './dialogs.js';
import { passkeyButton, secondStep } from './mfa.js';
import { signInMethods, ssoButton } from './identities.js';

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
  const submit = h('button', { type: 'submit', class: 'button primary wide' }, 'Sign in');
  const form = h('form', { class: 'form', id: 'sign-in-form' },
    field('username', 'User name', { type: 'text', autocomplete: 'username', required: true, autocapitalize: 'none', spellcheck: 'false' }),
    field('password', 'Password', { type: 'password', autocomplete: 'current-password', required: true }),
    status,
    submit);
  const setupNote = h('div', { class: 'setup-note' });
  const passkeyStatus = h('div', { class: 'form-status', 'aria-live': 'polite' });
  const sso = h('div', { class: 'sso' });
  page(root, 'Sign in', sso, form, passkeyButton(passkeyStatus, done), passkeyStatus, setupNote);
  form.querySelector('#username').focus();
  signInMethods().then((methods) => {
    replace(sso, ssoButton(methods, new URLSearchParams(location.search).get('next')));
    // Passwords turned off: the provider's button is the only way in.
    form.hidden = !methods.password;
  });
  api('GET', '/setup', null, { quiet401: true }).then((setup) => {
    if (setup && setup.required) {
      replace(setupNote, h('p', { class: 'note' },
        'No account exists yet. Open the setup link that ', h('code', null, 'tidings serve'),
        ' printed in its log (it looks like /setup?token=…) to create the first administrator.'));
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
        page(root, 'Two-step sign-in', secondStep(result.second_factor.methods, done, () => renderSignIn(root, done)));
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
    page(root, 'Setup is complete',
      h('p', null, 'The first administrator already exists.'),
      h('p', null, h('a', { class: 'button primary', href: '/login', 'data-link': '' }, 'Sign in')));
    return;
  }
  if (!token) {
    page(root, 'Set up tidings',
      h('p', null, 'Open the setup link printed by ', h('code', null, 'tidings serve'), ' when it started: it carries a one-time token.'),
      h('p', null, 'Lost it? Restart the server to print a new one, or run ', h('code', null, 'tidings user add NAME --admin'), '.'));
    return;
  }
  const status = h('div', { class: 'form-status', 'aria-live': 'polite' });
  const submit = h('button', { type: 'submit', class: 'button primary wide' }, 'Create the administrator');
  const form = h('form', { class: 'form', id: 'setup-form' },
    h('p', null, 'Create the first account. It is an administrator and can add other users later.'),
    field('username', 'User name', { type: 'text', autocomplete: 'username', required: true, autocapitalize: 'none', spellcheck: 'false' }),
    field('password', 'Password', { type: 'password', autocomplete: 'new-password', required: true, minlength: 12 },
      'At least 12 characters; common words and patterns are refused. A few unrelated words make a good one.'),
    field('password-again', 'Password again', { type: 'password', autocomplete: 'new-password', required: true }),
    status,
    submit);
  page(root, 'Set up tidings', form);
  form.querySelector('#username').focus();
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const password = form.querySelector('#password').value;
    if (password !== form.querySelector('#password-again').value) {
      replace(status, errorBlock({ category: 'validation', message: 'The two passwords differ.', action: 'Type the same password twice.' }));
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
