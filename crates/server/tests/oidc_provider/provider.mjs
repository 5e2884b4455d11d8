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
import { createServer } from 'node:http';
import { generateKeyPairSync } from 'node:crypto';
import Provider from 'oidc-provider';

const redirectUri = process.env.REDIRECT_URI;
if (!redirectUri) {
  console.error('REDIRECT_URI is not set');
  process.exit(2);
}
const secret = process.env.CLIENT_SECRET || 'test client secret';

// Keys made for this run only.
const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' });
const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'jwk' });

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
server.on('request', provider.callback());

console.log(JSON.stringify({ issuer }));
process.stdin.resume();
process.stdin.on('end', () => process.exit(0));
process.stdin.on('close', () => process.exit(0));
