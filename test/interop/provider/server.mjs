// A Keycloak-shaped OpenID Connect provider for idp-proxy's end-to-end tests.
//
// It is the certified `oidc-provider` npm package (see README.md) configured to
// look like ONE Keycloak realm: issuer http://127.0.0.1:<port>/realms/<realm>,
// Keycloak's /protocol/openid-connect/* endpoint paths, RS256 JWT access tokens
// with Keycloak's claim shapes, the realm's clients and users, and a plain
// username/password login page with Keycloak's element ids.
//
// Start: node server.mjs [--port N] [--realm demo] [--keys FILE] [--redirect-uri URI[,URI]] ...
// Prints exactly one JSON line on stdout once it listens, e.g.
//   {"ready":true,"issuer":"http://127.0.0.1:PORT/realms/demo","port":PORT,...}
// Everything else goes to stderr.

import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as path from 'node:path';
import { parseArgs } from 'node:util';

import Provider from 'oidc-provider';

// ---------------------------------------------------------------------------
// configuration: flags override env vars override defaults

function usage(msg) {
  if (msg) process.stderr.write(`error: ${msg}\n`);
  process.stderr.write(`usage: node server.mjs [flags]
  --port N                       listen port on 127.0.0.1, 0 = pick a free one  (env PROVIDER_PORT, default 0)
  --realm NAME                   realm name in the issuer path                  (env PROVIDER_REALM, default demo)
  --keys FILE                    private JWKS file; generated when missing      (env PROVIDER_KEYS_FILE, default: in-memory keys)
  --redirect-uri URI[,URI]       shortener redirect URIs, repeatable            (env PROVIDER_REDIRECT_URIS, default http://127.0.0.1:4180/auth/callback)
  --post-logout-redirect-uri URI[,URI]  shortener post-logout redirect URIs      (env PROVIDER_POST_LOGOUT_REDIRECT_URIS, default: origin + "/" of each redirect URI)
  --access-token-ttl SECONDS     access token lifetime                           (env PROVIDER_ACCESS_TOKEN_TTL, default 300)
  --backchannel-logout-uri URI   shortener's back-channel logout URI             (env PROVIDER_BACKCHANNEL_LOGOUT_URI, default: none)
  --plain                        an issuer that is not a Keycloak realm: issuer http://127.0.0.1:PORT,
                                 endpoints under /oauth2                        (env PROVIDER_PLAIN=1)
  --shape keycloak|entra|auth0   the access tokens' claims: Keycloak's (default), Microsoft Entra ID's
                                 (roles, groups, scp, oid, tid) or Auth0's (namespaced roles, permissions;
                                 with --plain its issuer ends in "/", as Auth0's does)  (env PROVIDER_SHAPE)
  --verbose                      log requests to stderr                          (env PROVIDER_VERBOSE=1)
`);
  process.exit(2);
}

let flags;
try {
  ({ values: flags } = parseArgs({
    options: {
      port: { type: 'string' },
      realm: { type: 'string' },
      keys: { type: 'string' },
      'redirect-uri': { type: 'string', multiple: true },
      'post-logout-redirect-uri': { type: 'string', multiple: true },
      'access-token-ttl': { type: 'string' },
      'backchannel-logout-uri': { type: 'string' },
      verbose: { type: 'boolean' },
      plain: { type: 'boolean' },
      shape: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  }));
} catch (err) {
  usage(err.message);
}
if (flags.help) usage();

// stdout carries exactly one line, the readiness JSON: library notices go to stderr
console.log = console.error; // eslint-disable-line no-console
console.info = console.error; // eslint-disable-line no-console

const env = process.env;
const splitList = (values) => values.flatMap((v) => v.split(',')).map((v) => v.trim()).filter(Boolean);

const PORT = Number(flags.port ?? env.PROVIDER_PORT ?? 0);
if (!Number.isInteger(PORT) || PORT < 0 || PORT > 65535) usage(`invalid port ${flags.port ?? env.PROVIDER_PORT}`);
const REALM = flags.realm ?? env.PROVIDER_REALM ?? 'demo';
if (!/^[A-Za-z0-9._-]+$/.test(REALM)) usage(`invalid realm name ${REALM}`);
const KEYS_FILE = flags.keys ?? env.PROVIDER_KEYS_FILE ?? '';
let REDIRECT_URIS = splitList(flags['redirect-uri'] ?? (env.PROVIDER_REDIRECT_URIS ? [env.PROVIDER_REDIRECT_URIS] : []));
if (REDIRECT_URIS.length === 0) REDIRECT_URIS = ['http://127.0.0.1:4180/auth/callback'];
let POST_LOGOUT_REDIRECT_URIS = splitList(flags['post-logout-redirect-uri']
  ?? (env.PROVIDER_POST_LOGOUT_REDIRECT_URIS ? [env.PROVIDER_POST_LOGOUT_REDIRECT_URIS] : []));
if (POST_LOGOUT_REDIRECT_URIS.length === 0) {
  POST_LOGOUT_REDIRECT_URIS = [...new Set(REDIRECT_URIS.map((u) => `${new URL(u).origin}/`))];
}
const BACKCHANNEL_LOGOUT_URI = flags['backchannel-logout-uri'] ?? env.PROVIDER_BACKCHANNEL_LOGOUT_URI ?? '';
for (const u of [...REDIRECT_URIS, ...POST_LOGOUT_REDIRECT_URIS, ...(BACKCHANNEL_LOGOUT_URI ? [BACKCHANNEL_LOGOUT_URI] : [])]) {
  try { new URL(u); } catch { usage(`invalid URI ${u}`); } // eslint-disable-line no-new
}
const ACCESS_TOKEN_TTL = Number(flags['access-token-ttl'] ?? env.PROVIDER_ACCESS_TOKEN_TTL ?? 300);
if (!Number.isInteger(ACCESS_TOKEN_TTL) || ACCESS_TOKEN_TTL <= 0) usage('invalid access token ttl');
const REFRESH_TOKEN_TTL = 1800;
const VERBOSE = flags.verbose || env.PROVIDER_VERBOSE === '1';
const PLAIN = flags.plain || env.PROVIDER_PLAIN === '1';
const SHAPE = flags.shape ?? env.PROVIDER_SHAPE ?? 'keycloak';
if (!['keycloak', 'entra', 'auth0'].includes(SHAPE)) usage(`invalid shape ${SHAPE}: want keycloak, entra or auth0`);

const log = (...args) => process.stderr.write(`[provider] ${args.join(' ')}\n`);

// ---------------------------------------------------------------------------
// keys: one RS256 signing key plus, like Keycloak, one RSA-OAEP encryption key
// (the encryption key must never be used to verify tokens)

function newRsaJwk(use, alg) {
  const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  return {
    ...privateKey.export({ format: 'jwk' }),
    kid: crypto.randomBytes(32).toString('base64url'),
    use,
    alg,
  };
}

function loadOrCreateKeys(file) {
  if (file && fs.existsSync(file)) {
    const jwks = JSON.parse(fs.readFileSync(file, 'utf8'));
    if (!Array.isArray(jwks.keys) || !jwks.keys.some((k) => k.d && (k.use ?? 'sig') === 'sig')) {
      throw new Error(`${file}: not a private JWKS with a signing key`);
    }
    return { jwks, created: false };
  }
  const jwks = { keys: [newRsaJwk('sig', 'RS256'), newRsaJwk('enc', 'RSA-OAEP')] };
  if (file) {
    fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
    fs.writeFileSync(file, `${JSON.stringify(jwks, null, 2)}\n`, { mode: 0o600 });
  }
  return { jwks, created: true };
}

// ---------------------------------------------------------------------------
// the realm: users, service accounts, clients

const ACCOUNT_CLIENT_ROLES = ['manage-account', 'manage-account-links', 'view-profile'];

// Entra ID names groups by object ID; the tests use these two.
const GROUP_IDS = {
  auditors: '5b3c7e1a-9d2f-4c8b-a6e0-1f4d3b2a9c71',
  staff: 'c0d4e8f2-3a1b-4e7d-9c5f-8b2a6d1e0f34',
};
// Entra's tenant ID (tid) and Auth0's namespace for custom claims.
const TENANT_ID = '9e1f2d3c-4b5a-4968-8776-a5b4c3d2e1f0';
const AUTH0_NAMESPACE = 'https://idp-proxy.test/';

const USERS = {
  alice: {
    id: 'f3b5a9d2-4c1e-4f6a-9b7d-2e8c1a0d5a11',
    password: 'alice-password',
    email: 'alice@example.com',
    given_name: 'Alice',
    family_name: 'Liddell',
    realmRoles: ['offline_access', `default-roles-${REALM.toLowerCase()}`, 'creator'],
    clientRoles: { shortener: ['editor'], account: ACCOUNT_CLIENT_ROLES },
    // --shape entra and auth0: app roles, group object IDs, delegated scopes, permissions
    appRoles: ['creator'],
    groupIds: [GROUP_IDS.auditors, GROUP_IDS.staff],
    scp: ['links.read', 'links.create'],
    permissions: ['read:links', 'create:links'],
  },
  bob: {
    id: '0c9e7b14-8a3d-4e2f-b6c1-5d4a3f2e1b0b',
    password: 'bob-password',
    email: 'bob@example.com',
    given_name: 'Bob',
    family_name: 'Builder',
    realmRoles: ['offline_access', `default-roles-${REALM.toLowerCase()}`],
    clientRoles: { account: ACCOUNT_CLIENT_ROLES },
    appRoles: [],
    groupIds: [GROUP_IDS.staff],
    scp: ['links.read'],
    permissions: ['read:links'],
  },
};
const USERS_BY_ID = Object.fromEntries(Object.entries(USERS).map(([username, u]) => [u.id, { username, ...u }]));

const SERVICE_ACCOUNTS = {
  'svc-reporter': {
    id: '7d2e9c4a-1b3f-4a5e-8c6d-9e0f1a2b3c4d',
    realmRoles: ['creator'],
    clientRoles: {},
    appRoles: ['creator'],
    permissions: ['create:links'],
  },
  'svc-mtls': {
    id: '8c1e4a7f-2b9d-4f3e-a5c6-7d0b9e2f1a48',
    realmRoles: ['creator'],
    clientRoles: {},
    appRoles: ['creator'],
    permissions: ['create:links'],
  },
  'svc-dpop': {
    id: '2a6f8e1c-5d3b-4c7a-9e2f-0b1d4c6a8e35',
    realmRoles: ['creator'],
    clientRoles: {},
    appRoles: ['creator'],
    permissions: ['create:links'],
  },
};

const CLIENTS = [
  {
    client_id: 'shortener',
    client_secret: 'shortener-secret',
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    redirect_uris: REDIRECT_URIS,
    post_logout_redirect_uris: POST_LOGOUT_REDIRECT_URIS,
    require_auth_time: true, // Keycloak always puts auth_time in ID tokens
    // Keycloak's "Backchannel logout URL" with "Backchannel logout session required"
    ...(BACKCHANNEL_LOGOUT_URI ? {
      backchannel_logout_uri: BACKCHANNEL_LOGOUT_URI,
      backchannel_logout_session_required: true,
    } : {}),
    // client_secret_post is accepted as well, oidc-provider treats the two alike
    token_endpoint_auth_method: 'client_secret_basic',
  },
  {
    client_id: 'svc-reporter',
    client_secret: 'svc-reporter-secret',
    grant_types: ['client_credentials'],
    response_types: [],
    redirect_uris: [],
    token_endpoint_auth_method: 'client_secret_basic',
  },
  {
    // a machine client whose access tokens are always DPoP-bound (RFC 9449):
    // Keycloak's "OAuth 2.0 DPoP Bound Access Tokens Enabled"
    client_id: 'svc-dpop',
    client_secret: 'svc-dpop-secret',
    grant_types: ['client_credentials'],
    response_types: [],
    redirect_uris: [],
    token_endpoint_auth_method: 'client_secret_basic',
    dpop_bound_access_tokens: true,
  },
  {
    // a machine client whose access tokens are bound to its TLS client
    // certificate (RFC 8705 §3): Keycloak's "OAuth 2.0 Mutual TLS
    // Certificate Bound Access Tokens Enabled"
    client_id: 'svc-mtls',
    client_secret: 'svc-mtls-secret',
    grant_types: ['client_credentials'],
    response_types: [],
    redirect_uris: [],
    token_endpoint_auth_method: 'client_secret_basic',
    tls_client_certificate_bound_access_tokens: true,
  },
];

// ---------------------------------------------------------------------------
// resource indicators → audiences
//
// Without a `resource` parameter every access token is for Keycloak's default
// audience "account". A client may ask for another audience, like a Keycloak
// audience mapper would add it:
//   resource=urn:keycloak:audience:NAME   → aud ["NAME","account"]
//   resource=<any other absolute URI>     → aud "<that URI>"

const DEFAULT_RESOURCE = 'urn:keycloak:audience:account';
const AUDIENCE_PREFIX = 'urn:keycloak:audience:';
const TOKEN_SCOPES = 'openid email profile offline_access roles web-origins acr';

// oidc-provider allows one audience per resource server; the customizer below
// turns "urn:keycloak:audience:NAME" into Keycloak's ["NAME","account"].
function audienceFor(indicator) {
  if (indicator.startsWith(AUDIENCE_PREFIX)) return indicator.slice(AUDIENCE_PREFIX.length) || 'account';
  return indicator;
}

function keycloakAudience(token, aud) {
  const indicator = token.resourceServer?.identifier?.();
  if (indicator?.startsWith(AUDIENCE_PREFIX) && aud !== 'account') return [aud, 'account'];
  return aud;
}

// ---------------------------------------------------------------------------
// HTML (no external resources: the page must render offline in headless Chromium)

const esc = (s) => String(s ?? '').replace(/[&<>"']/g, (c) => ({
  '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;',
}[c]));

const STYLE = 'body{font-family:sans-serif;background:#f0f0f0;margin:40px}'
  + '.card{background:#fff;max-width:360px;margin:0 auto;padding:24px;border-radius:4px;box-shadow:0 1px 3px rgba(0,0,0,.3)}'
  + 'label{display:block;margin-top:12px}input{width:100%;box-sizing:border-box;padding:6px}'
  + 'button{margin-top:16px;width:100%;padding:8px;background:#0066cc;color:#fff;border:0;cursor:pointer}'
  + '.error{color:#c9190b}';

function page(title, body) {
  return `<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><title>${esc(title)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1"><style>${STYLE}</style></head>
<body><div class="card" id="kc-content">
<h1 id="kc-page-title">${esc(title)}</h1>
${body}
</div></body>
</html>
`;
}

function loginPage({ action, username = '', error, clientId }) {
  return page(`Sign in to ${REALM}`, `${clientId ? `<p id="kc-client">Client: ${esc(clientId)}</p>` : ''}
${error ? `<div class="error" id="input-error" role="alert">${esc(error)}</div>` : ''}
<form id="kc-form-login" method="post" action="${esc(action)}">
  <label for="username">Username or email</label>
  <input id="username" name="username" type="text" autocomplete="username" autofocus value="${esc(username)}">
  <label for="password">Password</label>
  <input id="password" name="password" type="password" autocomplete="current-password">
  <button id="kc-login" name="login" type="submit" value="Sign In">Sign In</button>
</form>`);
}

// ---------------------------------------------------------------------------
// provider

// --plain: the issuer is the origin itself and the endpoints sit at paths
// only the discovery document names (the relying party must not guess).
const ISSUER_PATH = PLAIN ? '' : `/realms/${REALM}`;
// Auth0's issuer is its origin with a trailing slash; tokens carry it so.
const ISSUER_SLASH = PLAIN && SHAPE === 'auth0' ? '/' : '';
const OIDC = PLAIN ? '/oauth2' : '/protocol/openid-connect';
const LOGIN_ACTIONS = '/login-actions/authenticate';

function configuration(jwks) {
  return {
    clients: CLIENTS,
    jwks,
    cookies: {
      keys: [crypto.randomBytes(32).toString('base64url')],
      // sameSite=none cookies need https; everything runs on plain-http loopback here
      long: { httpOnly: true, sameSite: 'lax' },
      short: { httpOnly: true, sameSite: 'lax' },
    },
    routes: {
      authorization: `${OIDC}/auth`,
      token: `${OIDC}/token`,
      jwks: `${OIDC}/certs`,
      userinfo: `${OIDC}/userinfo`,
      end_session: `${OIDC}/logout`,
      revocation: `${OIDC}/revoke`,
      introspection: `${OIDC}/token/introspect`,
      // unused by Keycloak's shape, kept out of the way
      pushed_authorization_request: `${OIDC}/ext/par/request`,
      code_verification: `${OIDC}/device`,
      device_authorization: `${OIDC}/auth/device`,
      backchannel_authentication: `${OIDC}/ext/ciba/auth`,
      registration: '/clients-registrations/openid-connect',
    },
    scopes: ['openid', 'offline_access', 'email', 'profile'],
    claims: {
      openid: ['sub'],
      email: ['email', 'email_verified'],
      profile: ['preferred_username', 'name', 'given_name', 'family_name'],
    },
    // Keycloak puts the scope claims into the ID token of the code flow too
    conformIdTokenClaims: false,
    pkce: { required: () => true, methods: ['S256'] },
    features: {
      devInteractions: { enabled: false },
      // lets the keystore hold Keycloak's second key (use "enc", alg RSA-OAEP)
      encryption: { enabled: true },
      clientCredentials: { enabled: true },
      // like Keycloak: any authenticated confidential client may introspect
      introspection: { enabled: true, allowedPolicy: async () => true },
      revocation: { enabled: true },
      userinfo: { enabled: true },
      pushedAuthorizationRequests: { enabled: false },
      // RFC 9449: a client that sends a DPoP proof to the token endpoint gets
      // a token bound to its key (cnf.jkt), as from Keycloak 26.4; server
      // nonces (§8) are required, so that clients must answer use_dpop_nonce
      dPoP: { enabled: true, nonceSecret: crypto.randomBytes(32), requireNonce: () => true },
      // RFC 8705 §3: certificate-bound tokens. The server listens on plain
      // http: the client certificate comes, as from a TLS-terminating
      // ingress (nginx's $ssl_client_escaped_cert), URL-encoded in the
      // ssl-client-cert header. Only loopback tests reach this server.
      mTLS: {
        enabled: true,
        certificateBoundAccessTokens: true,
        getCertificate(ctx) {
          const h = ctx.get('ssl-client-cert');
          return h ? decodeURIComponent(h.replace(/\+/g, ' ')) : undefined; // %2B is a '+'
        },
      },
      // OpenID Connect Back-Channel Logout 1.0: ending the session here (the
      // end_session confirmation) POSTs a logout token to the client's
      // backchannel_logout_uri before the browser is redirected
      backchannelLogout: { enabled: true },
      rpInitiatedLogout: {
        enabled: true,
        async logoutSource(ctx, form) {
          ctx.type = 'html';
          if (ctx.oidc.entities.IdTokenHint) {
            // Keycloak logs out without asking when a valid id_token_hint is given
            ctx.body = page('Logging out', `${form.replace('</form>', '<input type="hidden" name="logout" value="yes"/></form>')}
<noscript><button type="submit" form="op.logoutForm" id="kc-logout">Logout</button></noscript>
<script>document.getElementById('op.logoutForm').submit()</script>`);
            return;
          }
          ctx.body = page('Logging out', `<p>Do you want to log out?</p>
${form}
<button id="kc-logout" type="submit" form="op.logoutForm" name="logout" value="yes">Logout</button>`);
        },
        async postLogoutSuccessSource(ctx) {
          ctx.type = 'html';
          ctx.body = page('You are logged out', '<p id="kc-logged-out">You are logged out.</p>');
        },
      },
      resourceIndicators: {
        enabled: true,
        async defaultResource(ctx, client, oneOf) {
          if (oneOf) return oneOf.includes(DEFAULT_RESOURCE) ? DEFAULT_RESOURCE : oneOf[0];
          return DEFAULT_RESOURCE;
        },
        // use the resource resolved at the authorization endpoint at the token endpoint
        async useGrantedResource() {
          return true;
        },
        async getResourceServerInfo(ctx, indicator) {
          return {
            audience: audienceFor(indicator),
            scope: TOKEN_SCOPES,
            accessTokenTTL: ACCESS_TOKEN_TTL,
            accessTokenFormat: 'jwt',
            jwt: { sign: { alg: 'RS256' } },
          };
        },
      },
    },
    // first-party clients: consent is implied, grant whatever was asked for
    async loadExistingGrant(ctx) {
      const { oidc } = ctx;
      const grantId = oidc.result?.consent?.grantId || oidc.session.grantIdFor(oidc.client.clientId);
      let grant = grantId ? await oidc.provider.Grant.find(grantId) : undefined;
      if (!grant) {
        grant = new oidc.provider.Grant({ clientId: oidc.client.clientId, accountId: oidc.account.accountId });
      }
      grant.addOIDCScope([...oidc.requestParamOIDCScopes].join(' ') || 'openid');
      if (oidc.requestParamClaims.size) grant.addOIDCClaims([...oidc.requestParamClaims]);
      for (const [indicator, rs] of Object.entries(oidc.resourceServers)) {
        grant.addResourceScope(indicator, [...oidc.requestParamScopes].filter((s) => rs.scopes.has(s)).join(' '));
      }
      await grant.save();
      return grant;
    },
    async findAccount(ctx, id) {
      const user = USERS_BY_ID[id];
      if (!user) return undefined;
      return {
        accountId: id,
        async claims() {
          return {
            sub: id,
            email: user.email,
            email_verified: true,
            preferred_username: user.username,
            name: `${user.given_name} ${user.family_name}`,
            given_name: user.given_name,
            family_name: user.family_name,
          };
        },
      };
    },
    // Keycloak issues a refresh token on every code exchange, offline_access or not
    async issueRefreshToken(ctx, client) {
      return client.grantTypeAllowed('refresh_token');
    },
    // Keycloak's default: no refresh-token rotation ("Revoke Refresh Token" off)
    rotateRefreshToken: false,
    async extraTokenClaims(ctx, token) {
      return keycloakClaims(ctx, token);
    },
    formats: {
      customizers: {
        async jwt(ctx, token, jwt) {
          jwt.header = { typ: 'JWT' };
          jwt.payload = SHAPES[SHAPE](token, jwt.payload);
        },
      },
    },
    interactions: {
      url(ctx, interaction) {
        return `${ISSUER_PATH}${LOGIN_ACTIONS}/${interaction.uid}`;
      },
    },
    ttl: {
      AccessToken: ACCESS_TOKEN_TTL,
      ClientCredentials: ACCESS_TOKEN_TTL,
      IdToken: ACCESS_TOKEN_TTL,
      AuthorizationCode: 60,
      RefreshToken: REFRESH_TOKEN_TTL,
      Interaction: 1800,
      Session: 36000,
      Grant: 36000,
    },
    // outgoing calls (back-channel logout): more than the default 2.5 s, for
    // a client built with the race detector on a loaded machine
    httpOptions() {
      return { signal: AbortSignal.timeout(10000) };
    },
    async renderError(ctx, out) {
      ctx.type = 'html';
      ctx.body = page('We are sorry...', `<p id="kc-error-message">${esc(out.error)}: ${esc(out.error_description)}</p>`);
    },
  };
}

// Claims Keycloak adds to access tokens (stored as the token's "extra" claims,
// so token introspection shows them as well).
function keycloakClaims(ctx, token) {
  if (token.kind === 'ClientCredentials') {
    const sa = SERVICE_ACCOUNTS[token.clientId];
    const ip = ctx?.ip?.replace(/^::ffff:/, '') || '127.0.0.1';
    return {
      typ: 'Bearer',
      azp: token.clientId,
      acr: '1',
      'allowed-origins': [],
      realm_access: { roles: sa?.realmRoles ?? [] },
      ...(sa && Object.keys(sa.clientRoles).length
        ? { resource_access: Object.fromEntries(Object.entries(sa.clientRoles).map(([c, roles]) => [c, { roles }])) }
        : {}),
      clientHost: ip,
      email_verified: false,
      preferred_username: `service-account-${token.clientId}`,
      clientAddress: ip,
      clientId: token.clientId,
    };
  }
  const user = USERS_BY_ID[token.accountId];
  if (!user) return undefined;
  const origins = REDIRECT_URIS.map((u) => new URL(u).origin);
  return {
    typ: 'Bearer',
    azp: token.clientId,
    sid: token.sid,
    session_state: token.sid,
    acr: '1',
    'allowed-origins': [...new Set(origins)],
    realm_access: { roles: user.realmRoles },
    resource_access: Object.fromEntries(Object.entries(user.clientRoles).map(([c, roles]) => [c, { roles }])),
    email_verified: true,
    name: `${user.given_name} ${user.family_name}`,
    preferred_username: user.username,
    given_name: user.given_name,
    family_name: user.family_name,
    email: user.email,
  };
}

function keycloakScope(token, scope) {
  const granted = (scope || '').split(' ').filter(Boolean);
  // Keycloak's default client scopes "email" and "profile" are always in the token
  return [...new Set([...granted.filter((s) => s === 'openid'), 'email', 'profile', ...granted])].join(' ');
}

// Rewrites oidc-provider's RFC 9068 payload into Keycloak's shape and order.
function keycloakShape(token, p) {
  const {
    exp, iat, jti, iss, aud, sub, scope, client_id: clientId, cnf,
    typ, azp, sid, session_state: sessionState, acr, 'allowed-origins': origins,
    realm_access: realmAccess, resource_access: resourceAccess, ...rest
  } = p;
  const out = {
    exp,
    iat,
    jti,
    iss,
    aud: keycloakAudience(token, aud),
    sub: token.kind === 'ClientCredentials' ? (SERVICE_ACCOUNTS[clientId]?.id ?? sub) : sub,
    // Keycloak (26.4+) marks its DPoP-bound access tokens typ "DPoP"
    typ: cnf?.jkt ? 'DPoP' : (typ ?? 'Bearer'),
    azp: azp ?? clientId,
    sid,
    session_state: sessionState,
    acr,
    'allowed-origins': origins,
    realm_access: realmAccess,
    resource_access: resourceAccess,
    scope: keycloakScope(token, scope),
    ...rest,
    cnf,
  };
  return Object.fromEntries(Object.entries(out).filter(([, v]) => v !== undefined));
}

// Microsoft Entra ID's v2.0 access token for an API: aud is the API's client
// ID, sub a pairwise ID (oid is the user's object ID), app roles in roles,
// group object IDs in groups, delegated scopes in scp, tenant in tid, no
// e-mail verification claim. Entra writes scp as a space-separated string;
// here it is an array, as Okta writes it, so that the tests cover that form
// too (the generic claim mapping reads both).
function entraShape(token, p) {
  const app = token.kind === 'ClientCredentials';
  const sa = app ? SERVICE_ACCOUNTS[p.client_id] : undefined;
  const user = app ? undefined : USERS_BY_ID[p.sub];
  const oid = app ? sa?.id : user?.id;
  const out = {
    aud: 'shortener',
    iss: p.iss,
    iat: p.iat,
    nbf: p.iat,
    exp: p.exp,
    ...(app ? { idtyp: 'app' } : {
      name: `${user.given_name} ${user.family_name}`,
      preferred_username: user.email,
      email: user.email,
      groups: user.groupIds,
      scp: user.scp,
    }),
    roles: (app ? sa?.appRoles : user?.appRoles)?.length ? (app ? sa.appRoles : user.appRoles) : undefined,
    azp: p.client_id,
    azpacr: '1',
    oid,
    sub: crypto.createHash('sha256').update(`${oid}:${p.client_id}`).digest('base64url').slice(0, 43),
    tid: TENANT_ID,
    uti: p.jti,
    ver: '2.0',
  };
  return Object.fromEntries(Object.entries(out).filter(([, v]) => v !== undefined));
}

// Auth0's access token for an API: iss ends in "/", sub is
// "auth0|<id>" (or "<client>@clients" for a machine), aud the API plus the
// userinfo URL, RBAC permissions, and roles only as a namespaced custom
// claim written by an Action.
function auth0Shape(token, p) {
  const app = token.kind === 'ClientCredentials';
  const sa = app ? SERVICE_ACCOUNTS[p.client_id] : undefined;
  const user = app ? undefined : USERS_BY_ID[p.sub];
  const out = {
    [`${AUTH0_NAMESPACE}roles`]: app ? sa?.appRoles ?? [] : user.appRoles,
    iss: p.iss,
    sub: app ? `${p.client_id}@clients` : `auth0|${p.sub}`,
    aud: app ? 'shortener' : ['shortener', `${p.iss}userinfo`],
    iat: p.iat,
    exp: p.exp,
    scope: app ? undefined : (p.scope || 'openid profile email'),
    gty: app ? 'client-credentials' : undefined,
    azp: p.client_id,
    permissions: app ? sa?.permissions ?? [] : user.permissions,
  };
  return Object.fromEntries(Object.entries(out).filter(([, v]) => v !== undefined));
}

const SHAPES = { keycloak: keycloakShape, entra: entraShape, auth0: auth0Shape };

// ---------------------------------------------------------------------------
// HTTP plumbing

function readBody(req, limit = 64 * 1024) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let size = 0;
    req.on('data', (c) => {
      size += c.length;
      if (size > limit) {
        reject(new Error('request body too large'));
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function sendJSON(res, status, body, headers = {}) {
  const data = body === undefined ? '' : JSON.stringify(body);
  res.writeHead(status, {
    ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    'cache-control': 'no-store',
    'content-length': Buffer.byteLength(data),
    ...headers,
  });
  res.end(data);
}

function sendHTML(res, status, html) {
  res.writeHead(status, {
    'content-type': 'text/html; charset=utf-8',
    'cache-control': 'no-store',
    'content-length': Buffer.byteLength(html),
  });
  res.end(html);
}

// client authentication for the endpoints served outside oidc-provider
async function authenticateClient(provider, req, params) {
  let id = params.get('client_id');
  let secret = params.get('client_secret');
  const authz = req.headers.authorization;
  if (authz && /^basic /i.test(authz)) {
    const decoded = Buffer.from(authz.slice(6), 'base64').toString('utf8');
    const i = decoded.indexOf(':');
    if (i > 0) {
      id = decodeURIComponent(decoded.slice(0, i).replace(/\+/g, '%20'));
      secret = decodeURIComponent(decoded.slice(i + 1).replace(/\+/g, '%20'));
    }
  }
  if (!id || !secret) return undefined;
  const client = await provider.Client.find(id);
  if (!client || !(await client.compareClientSecret(secret))) return undefined;
  return client;
}

// Keycloak's back-channel logout: POST {issuer}/protocol/openid-connect/logout with
// client credentials and refresh_token ends the session the token belongs to → 204.
async function keycloakRefreshTokenLogout(provider, req, res, params) {
  const client = await authenticateClient(provider, req, params);
  if (!client) {
    sendJSON(res, 401, { error: 'unauthorized_client', error_description: 'Invalid client or Invalid client credentials' });
    return;
  }
  const rt = await provider.RefreshToken.find(params.get('refresh_token'));
  if (!rt || rt.clientId !== client.clientId) {
    sendJSON(res, 400, { error: 'invalid_grant', error_description: 'Invalid refresh token' });
    return;
  }
  if (rt.sessionUid) {
    const session = await provider.Session.findByUid(rt.sessionUid);
    if (session) await session.destroy();
  }
  if (rt.grantId) {
    const grant = await provider.Grant.find(rt.grantId);
    if (grant) await grant.destroy();
    // revoke everything stored under that grant (refresh tokens, codes, opaque tokens)
    await Promise.all(['RefreshToken', 'AuthorizationCode', 'AccessToken']
      .map((model) => provider[model].adapter.revokeByGrantId(rt.grantId)));
  }
  await rt.destroy();
  sendJSON(res, 204);
}

// Verifies one of our own JWT access tokens (RS256, our signing keys, not expired,
// typ "Bearer"); returns its payload or undefined.
function verifyOwnAccessToken(token, jwks, issuer) {
  const parts = String(token).split('.');
  if (parts.length !== 3) return undefined;
  try {
    const header = JSON.parse(Buffer.from(parts[0], 'base64url').toString('utf8'));
    const jwk = jwks.keys.find((k) => k.kid === header.kid && (k.use ?? 'sig') === 'sig');
    if (!jwk || header.alg !== 'RS256') return undefined;
    const key = crypto.createPublicKey({ key: { kty: jwk.kty, n: jwk.n, e: jwk.e }, format: 'jwk' });
    const ok = crypto.verify('sha256', Buffer.from(`${parts[0]}.${parts[1]}`), key, Buffer.from(parts[2], 'base64url'));
    if (!ok) return undefined;
    const payload = JSON.parse(Buffer.from(parts[1], 'base64url').toString('utf8'));
    if (payload.iss !== issuer || payload.typ !== 'Bearer' || !(payload.exp > Date.now() / 1000)) return undefined;
    return payload;
  } catch {
    return undefined;
  }
}

// Keycloak's userinfo accepts the (JWT) access token; oidc-provider's only accepts
// audience-less opaque tokens, so JWT access tokens are answered here.
function keycloakUserinfo(res, payload) {
  const user = USERS_BY_ID[payload.sub];
  const body = user
    ? {
      sub: payload.sub,
      email_verified: true,
      name: `${user.given_name} ${user.family_name}`,
      preferred_username: user.username,
      given_name: user.given_name,
      family_name: user.family_name,
      email: user.email,
    }
    : { sub: payload.sub, email_verified: false, preferred_username: payload.preferred_username };
  sendJSON(res, 200, body);
}

async function handleLoginActions(provider, req, res, rest) {
  const [uid, action] = rest.split('/').filter(Boolean);
  let details;
  try {
    details = await provider.interactionDetails(req, res);
  } catch (err) {
    sendHTML(res, 400, page('We are sorry...', `<p id="kc-error-message">${esc(err.error_description || err.message)}</p>`));
    return;
  }
  if (details.uid !== uid) {
    sendHTML(res, 400, page('We are sorry...', '<p id="kc-error-message">interaction mismatch</p>'));
    return;
  }
  const action_ = `${ISSUER_PATH}${LOGIN_ACTIONS}/${uid}/login`;
  const { prompt, params } = details;

  if (prompt.name === 'consent') {
    // not expected (loadExistingGrant grants everything), but never show a consent page
    const grant = details.grantId
      ? await provider.Grant.find(details.grantId)
      : new provider.Grant({ accountId: details.session.accountId, clientId: params.client_id });
    const d = prompt.details;
    if (d.missingOIDCScope) grant.addOIDCScope(d.missingOIDCScope.join(' '));
    if (d.missingOIDCClaims) grant.addOIDCClaims(d.missingOIDCClaims);
    for (const [indicator, scopes] of Object.entries(d.missingResourceScopes || {})) {
      grant.addResourceScope(indicator, scopes.join(' '));
    }
    const grantId = await grant.save();
    await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
    return;
  }

  if (req.method === 'GET' && !action) {
    sendHTML(res, 200, loginPage({ action: action_, clientId: params.client_id }));
    return;
  }
  if (req.method === 'POST' && action === 'login') {
    const form = new URLSearchParams(await readBody(req));
    const login = (form.get('username') ?? form.get('login') ?? '').trim();
    const password = form.get('password') ?? '';
    const user = Object.entries(USERS)
      .find(([name, u]) => name === login.toLowerCase() || u.email === login.toLowerCase());
    if (!user || !crypto.timingSafeEqual(
      crypto.createHash('sha256').update(user[1].password).digest(),
      crypto.createHash('sha256').update(password).digest(),
    )) {
      sendHTML(res, 200, loginPage({
        action: action_, username: login, error: 'Invalid username or password.', clientId: params.client_id,
      }));
      return;
    }
    await provider.interactionFinished(req, res, {
      login: { accountId: user[1].id, acr: '1', amr: ['pwd'] },
    }, { mergeWithLastSubmission: false });
    return;
  }
  sendJSON(res, 405, { error: 'method not allowed' });
}

async function main() {
  const { jwks, created } = loadOrCreateKeys(KEYS_FILE);
  if (created && KEYS_FILE) log(`generated new keys in ${KEYS_FILE}`);

  // the issuer needs the port, so bind first, then build the provider
  const server = http.createServer();
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(PORT, '127.0.0.1', resolve);
  });
  const { port } = server.address();
  const issuer = `http://127.0.0.1:${port}${ISSUER_PATH}${ISSUER_SLASH}`;

  const provider = new Provider(issuer, configuration(jwks));
  // Keycloak puts "sid" into every code-flow ID token and access token; oidc-provider
  // only does so for clients with back-channel logout, unless told otherwise here.
  provider.Client.prototype.includeSid = () => true;
  if (VERBOSE) {
    provider.on('server_error', (ctx, err) => log('server_error', err.stack));
  }
  provider.on('server_error', (ctx, err) => log('server_error', err.message));
  provider.on('backchannel.success', (ctx, client) => {
    log(`backchannel logout delivered: client ${client.clientId} ${client.backchannelLogoutUri}`);
  });
  provider.on('backchannel.error', (ctx, err, client) => {
    log(`backchannel logout failed: client ${client.clientId} ${client.backchannelLogoutUri}: ${err.message}`);
  });
  // Keycloak's token response carries scope, refresh_expires_in, not-before-policy, session_state
  provider.use(async (ctx, next) => {
    await next();
    if (ctx.path === `${OIDC}/token` && ctx.status === 200 && typeof ctx.body?.access_token === 'string') {
      let claims = {};
      try {
        claims = JSON.parse(Buffer.from(ctx.body.access_token.split('.')[1], 'base64url').toString('utf8'));
      } catch { /* opaque token: leave the response alone */ }
      const { refresh_token: rt, id_token: idt, ...rest } = ctx.body;
      ctx.body = {
        ...rest,
        refresh_expires_in: rt ? REFRESH_TOKEN_TTL : 0,
        ...(rt ? { refresh_token: rt } : {}),
        ...(idt ? { id_token: idt } : {}),
        'not-before-policy': 0,
        ...(claims.sid ? { session_state: claims.sid } : {}),
        scope: claims.scope ?? rest.scope,
      };
    }
  });
  const callback = provider.callback();

  server.on('request', async (req, res) => {
    const started = Date.now();
    if (VERBOSE) res.on('finish', () => log(req.method, req.url, res.statusCode, `${Date.now() - started}ms`));
    try {
      const { pathname } = new URL(req.url, 'http://127.0.0.1');
      if (pathname !== ISSUER_PATH && !pathname.startsWith(`${ISSUER_PATH}/`)) {
        sendJSON(res, 404, { error: 'Realm does not exist' });
        return;
      }
      const rest = pathname.slice(ISSUER_PATH.length) || '/';

      if (!PLAIN && (rest === '/' || rest === '')) {
        // Keycloak's realm info document
        sendJSON(res, 200, {
          realm: REALM,
          'token-service': `${issuer}${OIDC}`,
          'account-service': `${issuer}/account`,
          'tokens-not-before': 0,
        });
        return;
      }
      if (rest.startsWith(`${LOGIN_ACTIONS}/`)) {
        await handleLoginActions(provider, req, res, rest.slice(LOGIN_ACTIONS.length));
        return;
      }
      if (rest === `${OIDC}/userinfo`) {
        const m = /^bearer\s+(\S+)$/i.exec(req.headers.authorization || '');
        if (m && m[1].split('.').length === 3) {
          const payload = verifyOwnAccessToken(m[1], jwks, issuer);
          if (!payload) {
            sendJSON(res, 401, { error: 'invalid_token', error_description: 'Token verification failed' }, {
              'www-authenticate': 'Bearer realm="' + REALM + '", error="invalid_token", error_description="Token verification failed"',
            });
            return;
          }
          keycloakUserinfo(res, payload);
          return;
        }
      }
      if (req.method === 'POST' && rest === `${OIDC}/token/introspect`
        && /^application\/x-www-form-urlencoded/i.test(req.headers['content-type'] || '')) {
        // JWT access tokens are not stored by oidc-provider: introspect them here
        const body = await readBody(req);
        const params = new URLSearchParams(body);
        if ((params.get('token') || '').split('.').length === 3) {
          const client = await authenticateClient(provider, req, params);
          if (!client) {
            sendJSON(res, 401, { error: 'invalid_client', error_description: 'Authentication failed.' });
            return;
          }
          const payload = verifyOwnAccessToken(params.get('token'), jwks, issuer);
          sendJSON(res, 200, payload ? {
            ...payload, client_id: payload.azp, username: payload.preferred_username, token_type: 'Bearer', active: true,
          } : { active: false });
          return;
        }
        req.body = body;
      }
      if (req.method === 'POST' && rest === `${OIDC}/logout`
        && /^application\/x-www-form-urlencoded/i.test(req.headers['content-type'] || '')) {
        const body = await readBody(req);
        const params = new URLSearchParams(body);
        if (params.has('refresh_token')) {
          await keycloakRefreshTokenLogout(provider, req, res, params);
          return;
        }
        req.body = body; // oidc-provider falls back to req.body once the stream is consumed
      }

      // mount oidc-provider under /realms/<realm>
      req.originalUrl = req.url;
      req.url = req.url.slice(ISSUER_PATH.length);
      callback(req, res);
    } catch (err) {
      log('error', err.stack);
      if (!res.headersSent) sendJSON(res, 500, { error: 'server_error' });
      else res.destroy();
    }
  });

  const sig = jwks.keys.filter((k) => (k.use ?? 'sig') === 'sig').map((k) => k.kid);
  process.stdout.write(`${JSON.stringify({
    ready: true,
    issuer,
    port,
    realm: REALM,
    discovery: `${issuer.replace(/\/$/, '')}/.well-known/openid-configuration`,
    keys_file: KEYS_FILE || null,
    signing_kids: sig,
  })}\n`);

  const stop = (signal) => {
    log(`${signal}: shutting down`);
    server.close(() => process.exit(0));
    server.closeAllConnections?.();
    setTimeout(() => process.exit(0), 2000).unref();
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

main().catch((err) => {
  log('fatal', err.stack || err.message);
  process.exit(1);
});
