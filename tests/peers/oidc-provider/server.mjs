// A real OpenID Connect provider (panva's oidc-provider) for Postern's
// sign-in tests; tests/src/oidc.rs starts it once per test binary.
//
//   node server.mjs <port>        (or PORT=<port> node server.mjs)
//
// Listens on 127.0.0.1 with the issuer http://localhost:<port>, so that the
// browser keeps its cookies apart from Postern's on 127.0.0.1. Each test
// registers a client of its own (RFC 7591 dynamic registration, POST /reg)
// with its own redirect URI (and, if it asks, its own ID token algorithm:
// HS256 too). Any login and password sign in (the library's
// development interactions); an account's claims are made up from its login
// and can be changed by a test:
//
//   PUT /_test/accounts/<login>   {"groups": ["admins"]}   merges claims
//                                 {"email_verified": null}  leaves one out
//
// The bench measures the provider's own token endpoint against Postern's;
// it takes its authorization codes without the sign-in pages:
//
//   POST /_test/codes  {"client_id", "redirect_uri", "login", "scope",
//                       "nonce", "code_challenge" (S256), "count"}
//                      → ["<code>", …]   (at most 500, one grant: the
//                      development store keeps 1 000 objects and drops the
//                      oldest, so more codes would lose the first ones)
//
// Prints "oidc-provider listening on <issuer>" on stdout once it listens.
// With EXIT_WITH_STDIN=1 it exits when its standard input closes.

import { Provider } from 'oidc-provider';

const port = Number(process.argv[2] ?? process.env.PORT);
if (!Number.isInteger(port) || port <= 0 || port > 65535) {
  console.error('usage: node server.mjs <port>');
  process.exit(2);
}
const issuer = `http://localhost:${port}`;

// Claims set by the tests, per login; merged over the made-up ones.
const overrides = new Map();

function claimsOf(login) {
  const claims = {
    sub: login,
    preferred_username: login,
    email: `${login}@example.com`,
    email_verified: true,
    name: login.charAt(0).toUpperCase() + login.slice(1),
    groups: [],
    ...overrides.get(login),
    // The subject is the account's id: a test cannot move it.
  };
  // A claim set to null is left out, as a provider that never sends it
  // (Entra ID's email_verified) leaves it out.
  for (const [name, value] of Object.entries(claims)) {
    if (value === null) delete claims[name];
  }
  return claims;
}

const provider = new Provider(issuer, {
  // Throwaway keys: nothing outlives the process.
  cookies: { keys: ['postern-test-cookie-key-1', 'postern-test-cookie-key-2'] },
  claims: {
    openid: ['sub'],
    email: ['email', 'email_verified'],
    profile: ['name', 'preferred_username', 'nickname'],
    groups: ['groups'],
  },
  // Put the scopes' claims into the ID token too, not only behind
  // /userinfo: Postern reads either.
  conformIdTokenClaims: false,
  // The library's ID token algorithms, and HS256 as Keycloak's discovery
  // lists it: a client registered with id_token_signed_response_alg HS256
  // gets ID tokens keyed with its client secret.
  enabledJWA: {
    idTokenSigningAlgValues: ['RS256', 'PS256', 'ES256', 'Ed25519', 'EdDSA', 'HS256'],
  },
  features: {
    devInteractions: { enabled: true },
    // Open registration: no initial access token.
    registration: { enabled: true },
  },
  async findAccount(_ctx, id) {
    return {
      accountId: id,
      async claims() {
        return { ...claimsOf(id), sub: id };
      },
    };
  },
  // The library's defaults, spelled out to keep its start-up quiet.
  ttl: {
    AccessToken: 3600,
    AuthorizationCode: 60,
    ClientCredentials: 600,
    DeviceCode: 600,
    Grant: 3600,
    IdToken: 3600,
    Interaction: 3600,
    RefreshToken: 86400,
    Session: 3600,
  },
});

async function readJson(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  return JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
}

// The test-only endpoint, in front of the provider's own routes.
provider.use(async (ctx, next) => {
  const match = /^\/_test\/accounts\/([^/]+)$/.exec(ctx.path);
  if (!match) {
    await next();
    return;
  }
  if (ctx.method !== 'PUT') {
    ctx.status = 405;
    return;
  }
  const login = decodeURIComponent(match[1]);
  let body;
  try {
    body = await readJson(ctx.req);
  } catch (err) {
    ctx.status = 400;
    ctx.body = { error: `the body is not JSON: ${err.message}` };
    return;
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    ctx.status = 400;
    ctx.body = { error: 'the body must be a JSON object' };
    return;
  }
  overrides.set(login, { ...overrides.get(login), ...body });
  ctx.body = claimsOf(login);
});

// Codes minted as the authorization endpoint would after a sign-in and
// consent: one grant of the scope, then `count` codes of it.
async function mintCodes(body) {
  const client = await provider.Client.find(String(body.client_id ?? ''));
  if (!client) throw new Error('no such client');
  const count = Number(body.count ?? 1);
  if (!Number.isInteger(count) || count < 1 || count > 500) {
    throw new Error('count must be a whole number from 1 to 500');
  }
  const accountId = String(body.login ?? 'bench');
  const scope = String(body.scope ?? 'openid');
  const grant = new provider.Grant({ accountId, clientId: client.clientId });
  grant.addOIDCScope(scope);
  const grantId = await grant.save();
  const codes = [];
  for (let i = 0; i < count; i += 1) {
    const code = new provider.AuthorizationCode({
      client,
      grantId,
      accountId,
      scope,
      redirectUri: String(body.redirect_uri ?? ''),
      nonce: body.nonce === undefined ? undefined : String(body.nonce),
      codeChallenge: String(body.code_challenge ?? ''),
      codeChallengeMethod: 'S256',
      authTime: Math.floor(Date.now() / 1000),
    });
    codes.push(await code.save());
  }
  return codes;
}

provider.use(async (ctx, next) => {
  if (ctx.path !== '/_test/codes') {
    await next();
    return;
  }
  if (ctx.method !== 'POST') {
    ctx.status = 405;
    return;
  }
  try {
    ctx.body = await mintCodes(await readJson(ctx.req));
  } catch (err) {
    ctx.status = 400;
    ctx.body = { error: err.message };
  }
});

// The development pages import a web font; the tests have no network, and a
// browser would wait on the import before the page counts as loaded.
provider.use(async (ctx, next) => {
  await next();
  if (typeof ctx.body === 'string' && ctx.body.includes('fonts.googleapis.com')) {
    ctx.body = ctx.body.replace(/@import url\(https:\/\/fonts\.googleapis\.com[^)]*\);?/g, '');
  }
});

provider.on('server_error', (_ctx, err) => console.error('server_error', err));

const server = provider.listen(port, '127.0.0.1', () => {
  console.log(`oidc-provider listening on ${issuer}`);
});
server.on('error', (err) => {
  console.error(err);
  process.exit(1);
});
for (const signal of ['SIGTERM', 'SIGINT']) {
  process.on(signal, () => process.exit(0));
}
// Started by a test binary, which holds our stdin: when it exits, however
// it exits, the pipe closes and so do we.
if (process.env.EXIT_WITH_STDIN === '1') {
  process.stdin.on('end', () => process.exit(0));
  process.stdin.on('error', () => process.exit(0));
  process.stdin.resume();
}
