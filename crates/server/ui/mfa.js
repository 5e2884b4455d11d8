// Second factors (issue 19): the sign-in page's second step (a one-time code, a recovery code
// or a passkey), "Sign in with a passkey", and the account's two-step settings (one-time codes
// with their QR code, recovery codes, passkeys). WebAuthn's binary fields travel as base64url.

import { api } from './api.js';
import { fullDate, h, replace } from './dom.js';
import { confirmDialog, errorBlock, showError } from './dialogs.js';
import { t } from './i18n.js';

const bytes = (text) => Uint8Array.from(atob(text.replace(/-/g, '+').replace(/_/g, '/')), (c) => c.charCodeAt(0));
const text = (buffer) => btoa(String.fromCharCode(...new Uint8Array(buffer))).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
const withIds = (list) => list.map((c) => ({ ...c, id: bytes(c.id) }));

/** Whether this browser can use passkeys at all. */
export const passkeysSupported = () => typeof window.PublicKeyCredential === 'function';

/** A browser's own refusal (cancelled, timed out) as an error block can show it. */
function browserFailure(e) {
  if (e && e.category) return e;
  return { category: 'auth', message: t('mfa.passkey_not_used', { reason: (e && e.message) || e }), action: t('mfa.passkey_not_used_action') };
}

/** Signs in with a passkey (alone, or as the second factor of a pending password sign-in). */
export async function passkeySignIn() {
  const { public_key: options } = await api('POST', '/session/passkey/options', null, { quiet401: true });
  options.challenge = bytes(options.challenge);
  options.allowCredentials = withIds(options.allowCredentials);
  let credential;
  try {
    credential = await navigator.credentials.get({ publicKey: options });
  } catch (e) {
    throw browserFailure(e);
  }
  const r = credential.response;
  return api('POST', '/session/passkey', {
    credential: {
      id: credential.id,
      response: {
        clientDataJSON: text(r.clientDataJSON),
        authenticatorData: text(r.authenticatorData),
        signature: text(r.signature),
        userHandle: r.userHandle ? text(r.userHandle) : null,
      },
    },
  }, { quiet401: true });
}

/** The "Sign in with a passkey" button of the sign-in page; `status` shows failures. */
export function passkeyButton(status, done) {
  if (!passkeysSupported()) return null;
  return h('button', { type: 'button', class: 'button wide', id: 'passkey-sign-in', onclick: async (event) => {
    event.target.disabled = true;
    replace(status);
    try {
      done((await passkeySignIn()).user);
    } catch (e) {
      replace(status, errorBlock(browserFailure(e)));
    } finally {
      event.target.disabled = false;
    }
  } }, t('mfa.sign_in_passkey'));
}

/**
 * The second step after a right password: `methods` from the server's 202 answer. Calls
 * `done(user)` once signed in, `restart()` when the pending sign-in has ended.
 */
export function secondStep(methods, done, restart) {
  const status = h('div', { class: 'form-status', 'aria-live': 'polite' });
  const input = h('input', { id: 'second-factor-code', type: 'text', autocomplete: 'one-time-code', required: true, autocapitalize: 'none', spellcheck: 'false' });
  const codes = methods.includes('totp') || methods.includes('recovery_code');
  const form = h('form', { class: 'form', id: 'second-factor-form' },
    h('p', null, t('mfa.second_step')),
    codes ? [
      h('label', { for: 'second-factor-code' }, methods.includes('totp') ? t('mfa.app_code') : t('mfa.recovery_code')),
      input,
      h('p', { class: 'hint' }, t('mfa.recovery_too')),
      h('button', { type: 'submit', class: 'button primary wide' }, t('mfa.continue')),
    ] : null,
    methods.includes('passkey') && passkeysSupported()
      ? h('button', { type: 'button', class: 'button wide', id: 'use-passkey', onclick: () => finish(passkeySignIn) }, t('mfa.use_passkey'))
      : null,
    status);
  async function finish(send) {
    replace(status);
    try {
      done((await send()).user);
    } catch (e) {
      if (e.code === 'second_factor_expired') restart();
      replace(status, errorBlock(browserFailure(e)));
      input.select();
    }
  }
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const typed = input.value.trim();
    const body = /^\d{3} ?\d{3}$/.test(typed) ? { code: typed } : { recovery_code: typed };
    finish(() => api('POST', '/session/second-factor', body, { quiet401: true }));
  });
  setTimeout(() => (codes ? input : form.querySelector('#use-passkey'))?.focus());
  return form;
}

/** Recovery codes shown once, with the advice to keep them. */
function recoveryList(codes) {
  return h('div', { class: 'banner banner-active', role: 'note', id: 'recovery-codes' },
    h('div', null,
      h('strong', null, t('mfa.save_codes')), ' ',
      t('mfa.save_codes_why'),
      h('ul', { class: 'recovery-codes' }, codes.map((c) => h('li', null, h('code', null, c))))));
}

/** Proof for turning things off: a current code (6 digits) or the password. */
const proof = (value) => (/^\d{6}$/.test(value.trim()) ? { code: value.trim() } : { password: value });

/** The account page's "Two-step sign-in" content. */
export function twoStepSettings() {
  const box = h('div', { id: 'two-step' });
  const shown = h('div', { 'aria-live': 'polite' });
  const fail = (what) => (e) => showError(browserFailure(e), what);
  async function draw() {
    let factors;
    try {
      factors = await api('GET', '/me/second-factors');
    } catch (e) {
      replace(box, errorBlock(e));
      return;
    }
    const proofInput = h('input', { type: 'password', id: 'two-step-proof', autocomplete: 'current-password', placeholder: t('mfa.proof_placeholder') });
    const needsProof = (path, method, then) => async () => {
      try {
        const answer = await api(method, path, proof(proofInput.value));
        proofInput.value = '';
        then(answer);
      } catch (e) {
        fail(t('mfa.not_changed'))(e);
      }
    };
    const on = factors.totp || factors.passkeys.length > 0;
    replace(box,
      h('p', { id: 'two-step-status' }, on
        ? t(factors.totp ? (factors.passkeys.length ? 'mfa.on_code_or_passkey' : 'mfa.on_code') : 'mfa.on_passkey', { count: factors.recovery_codes_left })
        : t('mfa.off')),
      h('p', { class: 'hint' }, t('mfa.apps_unaffected')),
      h('h3', null, t('mfa.codes')),
      factors.totp
        ? h('p', null, t('mfa.codes_on'), ' ', h('button', { type: 'button', class: 'button danger', id: 'totp-off', onclick: needsProof('/me/totp', 'DELETE', draw) }, t('mfa.turn_off')))
        : h('p', null, h('button', { type: 'button', class: 'button', id: 'totp-setup', onclick: () => enrol().catch(fail(t('mfa.setup_failed'))) }, t('mfa.setup'))),
      h('h3', null, t('mfa.passkeys')),
      h('ul', { class: 'plain-list', id: 'passkey-list' }, factors.passkeys.map((p) => h('li', { class: 'row' },
        h('span', null, h('strong', null, p.name), h('span', { class: 'hint' }, ' · ' + t('mfa.added', { date: fullDate(p.created_at) })
          + (p.last_used_at ? ' · ' + t('keys_api.last_used', { date: fullDate(p.last_used_at) }) : ''))),
        h('button', { type: 'button', class: 'button', 'data-action': 'rename', onclick: (event) => renameForm(p, event.target.closest('li')) }, t('groups.rename')),
        h('button', { type: 'button', class: 'button danger', onclick: async () => {
          if (!(await confirmDialog(t('mfa.remove_title', { passkey: p.name }), t('mfa.remove_message'), t('mfa.remove_passkey')))) return;
          api('DELETE', '/me/passkeys/' + p.id).then(draw, fail(t('mfa.remove_failed')));
        } }, t('mfa.remove'))))),
      passkeysSupported() ? addPasskeyForm() : h('p', { class: 'hint' }, t('mfa.no_passkeys_here')),
      on ? h('div', { class: 'inline-form wrap' },
        h('label', { for: 'two-step-proof' }, t('mfa.confirm_with')), proofInput,
        h('button', { type: 'button', class: 'button', id: 'new-recovery-codes', onclick: needsProof('/me/recovery-codes', 'POST', (a) => { replace(shown, recoveryList(a.recovery_codes)); draw(); }) }, t('mfa.new_codes'))) : null);
  }
  async function enrol() {
    const setup = await api('POST', '/me/totp');
    const code = h('input', { type: 'text', id: 'totp-confirm-code', inputmode: 'numeric', autocomplete: 'one-time-code', required: true });
    const status = h('div', { 'aria-live': 'polite' });
    const form = h('form', { class: 'form narrow', id: 'totp-enrol' },
      h('p', null, t('mfa.scan')),
      h('img', { class: 'qr', alt: t('mfa.qr'), width: 200, height: 200, src: 'data:image/svg+xml;charset=utf-8,' + encodeURIComponent(setup.qr_svg) }),
      h('p', null, t('mfa.key'), ' ', h('code', { class: 'secret', id: 'totp-secret' }, setup.secret.replace(/(.{4})/g, '$1 ').trim())),
      h('label', { for: 'totp-confirm-code' }, t('mfa.code_now')), code,
      status,
      h('button', { type: 'submit', class: 'button primary' }, t('mfa.turn_on')));
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      try {
        const done = await api('POST', '/me/totp/confirm', { code: code.value });
        replace(shown, done.recovery_codes ? recoveryList(done.recovery_codes) : h('p', { class: 'success' }, t('mfa.codes_now_on')));
        draw();
      } catch (e) {
        replace(status, errorBlock(e));
      }
    });
    replace(shown, form);
    code.focus();
  }
  /** Replaces a passkey's row by a form for its new name (1–64 characters, as the server checks). */
  function renameForm(p, row) {
    const name = h('input', { type: 'text', id: 'passkey-rename', required: true, maxlength: 64, value: p.name, 'aria-label': t('mfa.new_name') });
    const form = h('form', { class: 'inline-form wrap', id: 'passkey-rename-form' }, name,
      h('button', { type: 'submit', class: 'button primary' }, t('common.save')),
      h('button', { type: 'button', class: 'button', onclick: draw }, t('common.cancel')));
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      api('PATCH', '/me/passkeys/' + p.id, { name: name.value }).then(draw, fail(t('mfa.rename_failed')));
    });
    replace(row, form);
    name.select();
  }
  function addPasskeyForm() {
    const name = h('input', { type: 'text', id: 'passkey-name', required: true, maxlength: 64, placeholder: t('mfa.name_example') });
    const form = h('form', { class: 'inline-form wrap', id: 'passkey-add' },
      h('label', { for: 'passkey-name' }, t('keys_api.name')), name,
      h('button', { type: 'submit', class: 'button primary' }, t('mfa.add')));
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      try {
        const { public_key: o } = await api('POST', '/me/passkeys/options');
        o.challenge = bytes(o.challenge);
        o.user.id = bytes(o.user.id);
        o.excludeCredentials = withIds(o.excludeCredentials);
        let credential;
        try {
          credential = await navigator.credentials.create({ publicKey: o });
        } catch (e) {
          throw browserFailure(e);
        }
        const added = await api('POST', '/me/passkeys', { name: name.value.trim(), credential: { id: credential.id, response: {
          clientDataJSON: text(credential.response.clientDataJSON),
          attestationObject: text(credential.response.attestationObject),
        } } });
        replace(shown, added.recovery_codes ? recoveryList(added.recovery_codes) : h('p', { class: 'success' }, t('mfa.added_done')));
        draw();
      } catch (e) {
        fail(t('mfa.add_failed'))(e);
      }
    });
    return form;
  }
  draw();
  return [box, shown];
}
