// Minimal, real OpenID Connect provider for Paddock's end-to-end tests.
//
// Built on the npm package `oidc-provider` (see package.json next to this
// file). Loopback only, in-memory storage, one confidential client, the
// built-in development login form, consent granted automatically.
//
// Usage (see docs/testing.md):
//   OIDC_PORT=... OIDC_CLIENT_ID=... OIDC_CLIENT_SECRET=... \
//   OIDC_REDIRECT_URI=... node provider.mjs
//
// Prints `oidc-provider listening on http://127.0.0.1:<port>` once ready and
// exits with status 0 on SIGTERM / SIGINT.

import { randomBytes, generateKeyPairSync } from 'node:crypto';
import { createServer } from 'node:http';
import process from 'node:process';

import Provider from 'oidc-provider';

const HOST = '127.0.0.1';

function requiredEnv(name) {
  const value = process.env[name];
  if (value === undefined || value === '') {
    console.error(`provider.mjs: environment variable ${name} is required`);
    process.exit(2);
  }
  return value;
}

const portText = requiredEnv('OIDC_PORT');
const port = Number(portText);
if (!Number.isInteger(port) || port <= 0 || port > 65535) {
  console.error(`provider.mjs: OIDC_PORT must be a TCP port number, got ${JSON.stringify(portText)}`);
  process.exit(2);
}
const clientId = requiredEnv('OIDC_CLIENT_ID');
const clientSecret = requiredEnv('OIDC_CLIENT_SECRET');
const redirectUri = requiredEnv('OIDC_REDIRECT_URI');

// Exactly this string, no trailing slash: it is the `iss` of every ID token.
const issuer = `http://${HOST}:${port}`;

// A fresh RS256 signing key for each start; published at the discovery
// document's jwks_uri (/jwks).
const signingKey = generateKeyPairSync('rsa', { modulusLength: 2048 })
  .privateKey.export({ format: 'jwk' });
signingKey.use = 'sig';
signingKey.alg = 'RS256';
signingKey.kid = `paddock-test-${randomBytes(6).toString('hex')}`;

function emailFor(login) {
  return login.includes('@') ? login : `${login}@example.test`;
}

// Any login name typed into the development login form is accepted (the
// password field is ignored); the login name becomes the `sub`.
async function findAccount(_ctx, sub) {
  return {
    accountId: sub,
    // The provider filters these by the granted scopes / requested claims.
    async claims() {
      return {
        sub,
        email: emailFor(sub),
        email_verified: true,
        name: `Driver ${sub}`,
        picture: `http://127.0.0.1/avatar/${sub}.png`,
      };
    },
  };
}

// Auto-consent: right after the login form, grant everything the client asked
// for (requested OIDC scopes, plus any claims from a `claims` parameter), so
// the consent page never shows and the browser goes straight to redirect_uri.
async function loadExistingGrant(ctx) {
  const { oidc } = ctx;
  const grantId = oidc.result?.consent?.grantId
    || oidc.session.grantIdFor(oidc.client.clientId);

  let grant;
  if (grantId) {
    grant = await oidc.provider.Grant.find(grantId);
  }
  if (!grant) {
    grant = new oidc.provider.Grant({
      clientId: oidc.client.clientId,
      accountId: oidc.session.accountId,
    });
  }

  const scopes = [...oidc.requestParamOIDCScopes];
  if (scopes.length > 0) {
    grant.addOIDCScope(scopes.join(' '));
  }
  const claims = [...oidc.requestParamClaims];
  if (claims.length > 0) {
    grant.addOIDCClaims(claims);
  }
  await grant.save();
  return grant;
}

const configuration = {
  clients: [
    {
      client_id: clientId,
      client_secret: clientSecret,
      redirect_uris: [redirectUri],
      grant_types: ['authorization_code'],
      response_types: ['code'],
      // client_secret_post is accepted as well: oidc-provider treats the two
      // secret-based methods as interchangeable for a client registered with
      // either one.
      token_endpoint_auth_method: 'client_secret_basic',
      id_token_signed_response_alg: 'RS256',
    },
  ],
  scopes: ['openid', 'email', 'profile'],
  claims: {
    openid: ['sub'],
    email: ['email', 'email_verified'],
    profile: ['name', 'picture'],
  },
  // Put the scope claims into the ID token too (not only into userinfo).
  conformIdTokenClaims: false,
  findAccount,
  loadExistingGrant,
  // PKCE: S256 is the only method oidc-provider supports; required for
  // public clients only, but always verified when a code_challenge is sent.
  pkce: {
    required: () => false,
  },
  features: {
    devInteractions: { enabled: true },
    userinfo: { enabled: true },
  },
  jwks: { keys: [signingKey] },
  cookies: {
    keys: [randomBytes(32).toString('base64url')],
    // Plain http on loopback: never mark the cookies Secure.
    long: { httpOnly: true, sameSite: 'lax', secure: false },
    short: { httpOnly: true, sameSite: 'lax', secure: false },
  },
};

const provider = new Provider(issuer, configuration);

for (const event of ['server_error', 'authorization.error', 'grant.error', 'userinfo.error']) {
  provider.on(event, (_ctx, err) => {
    console.error(`oidc-provider ${event}: ${err?.name ?? ''} ${err?.message ?? err}${err?.error_description ? ` (${err.error_description})` : ''}`);
  });
}

const server = createServer(provider.callback());

server.on('error', (err) => {
  console.error(`provider.mjs: cannot listen on ${HOST}:${port}: ${err.message}`);
  process.exit(1);
});

server.listen(port, HOST, () => {
  console.log(`oidc-provider listening on ${issuer}`);
});

let stopping = false;
function stop(signal) {
  if (stopping) return;
  stopping = true;
  console.error(`provider.mjs: ${signal} received, shutting down`);
  server.close(() => process.exit(0));
  server.closeAllConnections?.();
  // Never hang on a stuck connection.
  setTimeout(() => process.exit(0), 2000).unref();
}
process.on('SIGTERM', () => stop('SIGTERM'));
process.on('SIGINT', () => stop('SIGINT'));
