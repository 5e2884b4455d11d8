// A real OpenID provider for tidings' tests: the `oidc-provider` package (a certified
// implementation) on 127.0.0.1, with its development sign-in pages (any login name and any
// password sign in; the login name is the subject). Started by the tests with:
//
//   REDIRECT_URI=http://127.0.0.1:PORT/auth/oidc/callback node provider.mjs
//
// It prints one JSON line, {"issuer": "http://127.0.0.1:PORT"}, once it listens, and stops
// when its standard input closes (when the test that started it ends).
//
// Two clients: `tidings-rs` gets ID tokens signed with RS256, `tidings-es` with ES256. Both
// must use PKCE (S256) and authenticate with client_secret_basic.
//
// Test-only controls, on the provider's own server beside its real endpoints:
// - `POST /__test/tamper` with {"mode": M} makes the token endpoint's answer carry a spoilt
//   ID token until the mode is set back to `none`: `audience` (meant for the other client)
//   and `expired` (`exp` and `iat` an hour and more in the past) are re-signed with the
//   provider's own key, so only that claim is wrong; `signature` flips a byte of the
//   signature. Discovery, the keys and everything else stay the real provider's.
// - `GET /__test/last-callback` answers {"url": U}: the last redirect to REDIRECT_URI the
//   provider sent a browser (with its code and state), for a test that replays it.
import { createServer } from 'node:http';
import { generateKeyPairSync, sign } from 'node:crypto';
import Provider from 'oidc-provider';

const redirectUri = process.env.REDIRECT_URI;
if (!redirectUri) {
  console.error('REDIRECT_URI is not set');
  process.exit(2);
}
const secret = process.env.CLIENT_SECRET || 'test client secret';

// Keys made for this run only; the private ones also re-sign tampered tokens.
const rsaKey = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
const ecKey = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
const rsa = rsaKey.export({ format: 'jwk' });
const ec = ecKey.export({ format: 'jwk' });

const server = createServer();
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const issuer = `http://127.0.0.1:${server.address().port}`;

const client = (id, alg) => ({
  client_id: id,
  client_secret: secret,
  redirect_uris: [redirectUri],
  response_types: ['code'],
  grant_types: ['authorization_code'],
  token_endpoint_auth_method: 'client_secret_basic',
  id_token_signed_response_alg: alg,
});

const provider = new Provider(issuer, {
  clients: [client('tidings-rs', 'RS256'), client('tidings-es', 'ES256')],
  jwks: {
    keys: [
      { ...rsa, kid: 'rsa-test', use: 'sig', alg: 'RS256' },
      { ...ec, kid: 'ec-test', use: 'sig', alg: 'ES256' },
    ],
  },
  pkce: { required: () => true },
  // Every login name is an account whose subject it is.
  findAccount: async (ctx, sub) => ({
    accountId: sub,
    claims: async () => ({
      sub,
      email: `${sub}@example.com`,
      email_verified: true,
      preferred_username: sub,
      name: sub,
    }),
  }),
  claims: {
    openid: ['sub'],
    email: ['email', 'email_verified'],
    profile: ['name', 'preferred_username'],
  },
  // The e-mail and name in the ID token itself, as Google and Keycloak put them.
  conformIdTokenClaims: false,
  features: { devInteractions: { enabled: true } },
  cookies: { keys: ['test-only cookie key'] },
});
// The development pages are meant for this; the warning would only clutter the test log.
provider.on('server_error', (ctx, error) => console.error('server_error', error));

const MODES = ['none', 'audience', 'expired', 'signature'];
let tamper = 'none';
let lastCallback = null;

const base64url = (bytes) => Buffer.from(bytes).toString('base64url');
const decode = (part) => JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));

// Signs `header.payload` as the provider would: RS256 is PKCS#1 v1.5 with SHA-256, ES256 the
// raw r||s that JWS uses (not DER).
function signJws(header, payload) {
  const input = `${base64url(JSON.stringify(header))}.${base64url(JSON.stringify(payload))}`;
  const data = Buffer.from(input);
  const signature = header.alg === 'ES256'
    ? sign('sha256', data, { key: ecKey, dsaEncoding: 'ieee-p1363' })
    : sign('sha256', data, rsaKey);
  return `${input}.${base64url(signature)}`;
}

function spoil(idToken, mode) {
  const [h, p, s] = idToken.split('.');
  const header = decode(h);
  const payload = decode(p);
  if (mode === 'audience') {
    const other = payload.aud === 'tidings-rs' ? 'tidings-es' : 'tidings-rs';
    return signJws(header, { ...payload, aud: other });
  }
  if (mode === 'expired') {
    const now = Math.floor(Date.now() / 1000);
    return signJws(header, { ...payload, iat: now - 7200, exp: now - 3600 });
  }
  // The last byte: flipping it keeps the signature's length and, for ES256, its s below the
  // curve order, so the token is refused for its signature, not as malformed.
  const signature = Buffer.from(s, 'base64url');
  signature[signature.length - 1] ^= 0x01;
  return `${h}.${p}.${base64url(signature)}`;
}

provider.use(async (ctx, next) => {
  await next();
  if (ctx.path === provider.pathFor('token') && tamper !== 'none'
      && typeof ctx.body?.id_token === 'string') {
    ctx.body = { ...ctx.body, id_token: spoil(ctx.body.id_token, tamper) };
  }
  const location = ctx.response.get('location');
  if (location && location.startsWith(`${redirectUri}?`)) lastCallback = location;
});

function control(req, res) {
  const answer = (status, body) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  if (req.method === 'GET' && req.url === '/__test/last-callback') {
    answer(200, { url: lastCallback });
    return;
  }
  if (req.method !== 'POST' || req.url !== '/__test/tamper') {
    answer(404, { error: 'no such control' });
    return;
  }
  let body = '';
  req.on('data', (chunk) => { body += chunk; });
  req.on('end', () => {
    let mode;
    try {
      ({ mode } = JSON.parse(body));
    } catch {
      mode = undefined;
    }
    // An unknown mode is an error, so a typo in a test cannot leave the tokens untouched.
    if (!MODES.includes(mode)) {
      answer(400, { error: `mode must be one of ${MODES.join(', ')}` });
      return;
    }
    tamper = mode;
    answer(200, { mode });
  });
}

const handle = provider.callback();
server.on('request', (req, res) => {
  if (req.url.startsWith('/__test/')) control(req, res);
  else handle(req, res);
});

console.log(JSON.stringify({ issuer }));
process.stdin.resume();
process.stdin.on('end', () => process.exit(0));
process.stdin.on('close', () => process.exit(0));
