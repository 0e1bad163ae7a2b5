// A certified OpenID provider (oidc-provider 9.x) set up the way GitHub or Google are: the upstream
// identity provider an OAuth proxy in front of an MCP server sends people to.
//
// Usage: node upstream_server.mjs MODE CLIENT_ID CLIENT_SECRET [REDIRECT_URI[,REDIRECT_URI...]]
//   MODE          `oidc`: Google-like. OpenID discovery, an ID token (sub, email, name, groups)
//                 next to an opaque access token.
//                 `oauth`: GitHub-like. The proxy asks for no `openid` scope, so there is no ID token;
//                 GET /user answers GitHub-shaped JSON {id, login, name, email} for a valid bearer
//                 access token (looked up through oidc-provider's own AccessToken model).
//   CLIENT_ID, CLIENT_SECRET   the one static confidential client (the proxy), registered in advance
//                 as on a provider's console. Dynamic client registration is off.
//   REDIRECT_URI  its callback(s); default http://127.0.0.1/auth/callback. When every one is a
//                 loopback http URI the client is `native`, so any port matches (RFC 8252 §7.3):
//                 the proxy's port need not be known before this server starts.
//
// Environment:
//   UPSTREAM_ACCOUNT       the person who signs in when the request carries no login_hint (default alice)
//   UPSTREAM_AUTH_METHOD   the client's token endpoint auth method (default client_secret_post)
//   UPSTREAM_ACCESS_TTL    access token lifetime in seconds (default 3600)
//   UPSTREAM_REFRESH       "0": issue no refresh tokens (like a GitHub app without expiring tokens)
//   UPSTREAM_CLIENTS       JSON list of more static clients [{client_id, client_secret, redirect_uris}]
//   UPSTREAM_FAULTS        JSON, the initial faults (see POST /__faults below)
//
// Listens on a free loopback port and prints one JSON line, {"issuer", "port"}, once it is ready.
// No resource indicators: access tokens are opaque, as GitHub's and Google's are. Refresh tokens are
// issued to a client allowed the refresh_token grant without `offline_access` (Google's
// access_type=offline, GitHub's expiring user tokens). PKCE S256 is required.
//
// The scripted person: the interaction page signs in the account named by the request's
// `login_hint` (else UPSTREAM_ACCOUNT) and consents to what was asked, through oidc-provider's own
// interaction API, so an HTTP client that follows redirects and keeps cookies plays the person.
// Accounts: any name; "alice" is in group "staff" and has GitHub id 1001, "bob" 1002 in "sales";
// another name gets id 5000 + its length and no group. Its e-mail is NAME@example.com.
//
// Faults, for tests of a slow or failing upstream: POST /__faults with a JSON object mapping a path
// ("/token", "/user", "/jwks", "/.well-known/openid-configuration", ...) to
// {"delay_ms": N} (answer after N ms), {"status": S} (answer HTTP S, a JSON error) or
// {"drip_ms": N} (answer 200 with a JSON body sent one byte every N ms) or {"redirect": URL} (a 302 to
// URL). `{}` clears them.
// It stops on SIGTERM or when its standard input closes.
import http from 'node:http';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';

import { exportJWK, generateKeyPair } from 'jose';
import Provider from 'oidc-provider';

const [mode, clientId, clientSecret, redirects] = process.argv.slice(2);
if (!['oidc', 'oauth'].includes(mode) || !clientId || !clientSecret) {
    console.error('usage: node upstream_server.mjs oidc|oauth CLIENT_ID CLIENT_SECRET [REDIRECT_URI,...]');
    process.exit(2);
}
const DEFAULT_ACCOUNT = process.env.UPSTREAM_ACCOUNT || 'alice';
const AUTH_METHOD = process.env.UPSTREAM_AUTH_METHOD || 'client_secret_post';
const ACCESS_TTL = Number(process.env.UPSTREAM_ACCESS_TTL || 3600);
const REFRESH = process.env.UPSTREAM_REFRESH !== '0';
let faults = JSON.parse(process.env.UPSTREAM_FAULTS || '{}');

const KNOWN = {
    alice: { id: 1001, name: 'Alice Liddell', groups: ['staff'] },
    bob: { id: 1002, name: 'Bob Builder', groups: ['sales'] },
};

function person(login) {
    const known = KNOWN[login];
    return {
        id: known?.id ?? 5000 + login.length,
        login,
        name: known?.name ?? login,
        email: `${login}@example.com`,
        groups: known?.groups ?? [],
    };
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);

function staticClient({ client_id, client_secret, redirect_uris }) {
    const native = redirect_uris.every(uri => {
        const url = URL.parse(uri);
        return url?.protocol === 'http:' && LOOPBACK.has(url.hostname);
    });
    return {
        client_id,
        client_secret,
        redirect_uris,
        application_type: native ? 'native' : 'web',
        grant_types: REFRESH ? ['authorization_code', 'refresh_token'] : ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: AUTH_METHOD,
    };
}

const clients = [
    { client_id: clientId, client_secret: clientSecret,
      redirect_uris: (redirects || 'http://127.0.0.1/auth/callback').split(',') },
    ...JSON.parse(process.env.UPSTREAM_CLIENTS || '[]'),
].map(staticClient);

const { privateKey } = await generateKeyPair('RS256', { extractable: true });
const signing = { ...(await exportJWK(privateKey)), kid: 'upstream-1', alg: 'RS256', use: 'sig' };

const server = http.createServer();
await new Promise(resolve => server.listen(0, '127.0.0.1', resolve));
const { port } = server.address();
const issuer = `http://127.0.0.1:${port}`;

const provider = new Provider(issuer, {
    clients,
    jwks: { keys: [signing] },
    findAccount: async (_ctx, sub) => ({
        accountId: sub,
        claims: async () => {
            const p = person(sub);
            return { sub, email: p.email, email_verified: true, name: p.name, preferred_username: sub, groups: p.groups };
        },
    }),
    claims: {
        openid: ['sub', 'groups'],
        email: ['email', 'email_verified'],
        profile: ['name', 'preferred_username'],
    },
    // Google puts the profile and e-mail claims in the ID token itself.
    conformIdTokenClaims: false,
    scopes: ['openid', 'offline_access', 'email', 'profile', 'read:user', 'user:email'],
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    clientAuthMethods: ['client_secret_basic', 'client_secret_post'],
    pkce: { required: () => true },
    issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    features: {
        devInteractions: { enabled: false },
        registration: { enabled: false },
        resourceIndicators: { enabled: false },
        revocation: { enabled: true },
        userinfo: { enabled: mode === 'oidc' },
    },
    ttl: { AccessToken: ACCESS_TTL, Interaction: 600, Session: 3600, Grant: 86400, AuthorizationCode: 60, RefreshToken: 86400, IdToken: 3600 },
});

// Faults first: they stand in for a slow or broken provider, whatever the path.
provider.use(async (ctx, next) => {
    if (ctx.path === '/__faults' && ctx.method === 'POST') {
        let body = '';
        for await (const chunk of ctx.req) body += chunk;
        faults = JSON.parse(body || '{}');
        ctx.status = 204;
        return;
    }
    const fault = faults[ctx.path];
    if (!fault) return next();
    if (fault.delay_ms) await sleep(fault.delay_ms);
    if (fault.redirect) {
        ctx.redirect(fault.redirect);
    } else if (fault.status) {
        ctx.status = fault.status;
        ctx.body = { error: 'temporarily_unavailable', error_description: 'injected fault' };
    } else if (fault.drip_ms) {
        ctx.status = 200;
        ctx.type = 'application/json';
        ctx.body = Readable.from((async function* drip() {
            for (const byte of '{"drip": "' + 'x'.repeat(200) + '"}') {
                yield byte;
                await sleep(fault.drip_ms);
            }
        })());
    } else {
        return next();
    }
});

// GitHub's GET /user: the account behind a valid opaque access token, GitHub-shaped.
provider.use(async (ctx, next) => {
    if (ctx.path !== '/user' || mode !== 'oauth') return next();
    const match = /^(?:bearer|token) (\S+)$/i.exec(ctx.get('authorization'));
    const token = match ? await provider.AccessToken.find(match[1]) : undefined;
    if (!token || token.isExpired) {
        ctx.status = 401;
        ctx.body = { message: 'Bad credentials', documentation_url: 'https://docs.github.com/rest' };
        return;
    }
    const { id, login, name, email } = person(token.accountId);
    ctx.body = { id, login, name, email, type: 'User' };
});

// The scripted person: sign in the hinted account (or the default), then consent to every scope asked for.
provider.use(async (ctx, next) => {
    const match = /^\/interaction\/([\w-]+)$/.exec(ctx.path);
    if (!match || ctx.method !== 'GET') {
        return next();
    }
    const details = await provider.interactionDetails(ctx.req, ctx.res);
    const { prompt, params, session, grantId } = details;
    let result;
    if (prompt.name === 'login') {
        result = { login: { accountId: params.login_hint || DEFAULT_ACCOUNT } };
    } else {
        const grant = grantId
            ? await provider.Grant.find(grantId)
            : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
        const { missingOIDCScope, missingOIDCClaims } = prompt.details;
        if (missingOIDCScope) grant.addOIDCScope(missingOIDCScope.join(' '));
        if (missingOIDCClaims) grant.addOIDCClaims(missingOIDCClaims);
        result = { consent: { grantId: await grant.save() } };
    }
    ctx.redirect(await provider.interactionResult(ctx.req, ctx.res, result, { mergeWithLastSubmission: true }));
});

server.on('request', provider.callback());
console.log(JSON.stringify({ issuer, port }));

function stop() {
    server.closeAllConnections();
    server.close(() => process.exit(0));
}
process.on('SIGTERM', stop);
process.stdin.on('end', stop);
process.stdin.resume();
