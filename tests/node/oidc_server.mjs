// A certified OpenID provider (oidc-provider 9.x) set up as an MCP server's authorization server.
//
// Usage: node oidc_server.mjs RESOURCE [ISSUER]
//   RESOURCE  the MCP server's URL (its RFC 8707 resource indicator), e.g. http://127.0.0.1:PORT/mcp
//   ISSUER    the issuer to announce when the provider is reached through a proxy (the proxy's URL);
//             default: this server's own http://127.0.0.1:PORT
//
// RESOURCE_SCOPES (environment) the scopes the provider grants for RESOURCE (default "mcp:read mcp:write"):
// scopes outside it are left out of a grant, as a provider's policy would.
// DPOP_NONCES=1 (environment): DPoP (on by default in oidc-provider 9) also demands a nonce of its
// own in every proof at the token endpoint (use_dpop_nonce, RFC 9449 §8).
//
// Listens on a free loopback port and prints one JSON line, {"issuer", "port"}, once it is ready.
// What it does for MCP: dynamic client registration (open), PKCE S256 (required for public clients),
// resource indicators with JWT access tokens for RESOURCE (by default with scopes mcp:read, mcp:write),
// `offline_access` refresh tokens, and the RFC 9207 `iss` in the redirect back. Its login and
// consent are scripted: the interaction page signs "alice" in and consents to what was asked, through
// oidc-provider's own interaction API, so an HTTP client that follows redirects (and keeps cookies)
// plays the person. It stops on SIGTERM or when its standard input closes.
import { randomBytes } from 'node:crypto';
import http from 'node:http';

import { exportJWK, generateKeyPair } from 'jose';
import Provider from 'oidc-provider';

const [resource, announced] = process.argv.slice(2);
if (!resource) {
    console.error('usage: node oidc_server.mjs RESOURCE [ISSUER]');
    process.exit(2);
}
const RESOURCE_SCOPES = process.env.RESOURCE_SCOPES || 'mcp:read mcp:write';

const { privateKey } = await generateKeyPair('RS256', { extractable: true });
const signing = { ...(await exportJWK(privateKey)), kid: 'oidc-1', alg: 'RS256', use: 'sig' };

const server = http.createServer();
await new Promise(resolve => server.listen(0, '127.0.0.1', resolve));
const { port } = server.address();
const issuer = announced || `http://127.0.0.1:${port}`;

const provider = new Provider(issuer, {
    jwks: { keys: [signing] },
    findAccount: async (_ctx, sub) => ({ accountId: sub, claims: async () => ({ sub }) }),
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    clientAuthMethods: ['none', 'client_secret_basic', 'client_secret_post'],
    scopes: ['openid', 'offline_access'],
    pkce: { required: () => true },
    features: {
        devInteractions: { enabled: false },
        dPoP: process.env.DPOP_NONCES === '1'
            ? { enabled: true, nonceSecret: randomBytes(32), requireNonce: () => true }
            : { enabled: true },
        registration: { enabled: true },
        resourceIndicators: {
            enabled: true,
            defaultResource: async (_ctx, _client, oneOf) => oneOf ?? resource,
            useGrantedResource: async () => true,
            getResourceServerInfo: async (_ctx, indicator) => {
                if (indicator !== resource) {
                    throw new Provider.errors.InvalidTarget(`unknown resource ${indicator}`);
                }
                return {
                    scope: RESOURCE_SCOPES,
                    audience: resource,
                    accessTokenTTL: 3600,
                    accessTokenFormat: 'jwt',
                    jwt: { sign: { alg: 'RS256' } },
                };
            },
        },
    },
    ttl: { Interaction: 600, Session: 3600, Grant: 3600, AuthorizationCode: 60, RefreshToken: 86400 },
});

// The scripted person: sign alice in, then consent to every scope asked for.
provider.use(async (ctx, next) => {
    const match = /^\/interaction\/([\w-]+)$/.exec(ctx.path);
    if (!match || ctx.method !== 'GET') {
        return next();
    }
    const details = await provider.interactionDetails(ctx.req, ctx.res);
    const { prompt, params, session, grantId } = details;
    let result;
    if (prompt.name === 'login') {
        result = { login: { accountId: 'alice' } };
    } else {
        const grant = grantId
            ? await provider.Grant.find(grantId)
            : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
        const { missingOIDCScope, missingOIDCClaims, missingResourceScopes } = prompt.details;
        if (missingOIDCScope) grant.addOIDCScope(missingOIDCScope.join(' '));
        if (missingOIDCClaims) grant.addOIDCClaims(missingOIDCClaims);
        for (const [indicator, scopes] of Object.entries(missingResourceScopes ?? {})) {
            grant.addResourceScope(indicator, scopes.join(' '));
        }
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
