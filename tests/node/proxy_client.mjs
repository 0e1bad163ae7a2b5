// The TypeScript SDK 1.x client (@modelcontextprotocol/sdk) signing in through an mcp-resolve OAuthProxy.
//
// Usage: node proxy_client.mjs MCP_URL PLAIN_TOOL SCOPED_TOOL WIDER_SCOPE
//
// It connects with the SDK's own OAuth (discovery, dynamic registration, PKCE, `resource`), calls
// PLAIN_TOOL, forces a refresh (the stored access token is spoiled, so the server answers 401 and the
// SDK refreshes with its refresh token), calls PLAIN_TOOL again, then steps up to call SCOPED_TOOL,
// which needs WIDER_SCOPE. The person is scripted: `browse` follows the authorization URL with a cookie
// jar, presses Approve on the proxy's consent page, goes through the upstream's scripted login and
// captures the redirect back. Prints one JSON line per step: {"step", ...}.
//
// Step-up: SDK 1.x answers a 403 insufficient_scope by refreshing first, and a refresh never widens a
// grant, so the app does what such an app must: it drops its tokens and authorizes again with the
// wider scope (`auth(provider, {scope})`), then finishes the login as usual.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { auth, UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const [url, plainTool, scopedTool, widerScope] = process.argv.slice(2);
const REDIRECT = 'http://127.0.0.1:47999/callback';

function say(step, details = {}) {
    console.log(JSON.stringify({ step, ...details }));
}

// ---- the person: a cookie jar, redirects followed by hand, the consent form approved ----
const jar = new Map();
function remember(response, at) {
    for (const cookie of response.headers.getSetCookie?.() ?? []) {
        const [pair] = cookie.split(';');
        const index = pair.indexOf('=');
        jar.set(`${new URL(at).host}|${pair.slice(0, index).trim()}`, pair.slice(index + 1).trim());
    }
}
function cookiesFor(at) {
    const host = new URL(at).host;
    return [...jar].filter(([key]) => key.startsWith(`${host}|`)).map(([key, value]) => `${key.split('|')[1]}=${value}`).join('; ');
}
async function go(at, init = {}) {
    const response = await fetch(at, { ...init, redirect: 'manual', headers: { ...(init.headers ?? {}), cookie: cookiesFor(at) } });
    remember(response, at);
    return response;
}
async function browse(start) {
    let at = start.toString();
    let response = await go(at);
    for (let hop = 0; hop < 20; hop++) {
        if (response.status >= 300 && response.status < 400) {
            at = new URL(response.headers.get('location'), at).toString();
            if (at.startsWith(REDIRECT)) {
                return new URL(at);
            }
            response = await go(at);
            continue;
        }
        const html = await response.text();
        const form = /<form[^>]*action="([^"]*)"/i.exec(html);
        if (response.status !== 200 || !form) {
            throw new Error(`the sign-in stopped at HTTP ${response.status}`);
        }
        const fields = new URLSearchParams();
        for (const input of html.matchAll(/<input[^>]*type="hidden"[^>]*>/gi)) {
            const name = /name="([^"]*)"/.exec(input[0]);
            const value = /value="([^"]*)"/.exec(input[0]);
            if (name) fields.set(name[1], value ? value[1].replaceAll('&amp;', '&').replaceAll('&quot;', '"') : '');
        }
        fields.set('decision', 'approve');
        at = new URL(form[1].replaceAll('&amp;', '&'), at).toString();
        response = await go(at, { method: 'POST', body: fields, headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    }
    throw new Error('too many redirects');
}

// ---- the SDK's OAuthClientProvider, in memory ----
const store = { client: undefined, tokens: undefined, verifier: undefined, landed: undefined };
const provider = {
    get redirectUrl() { return REDIRECT; },
    get clientMetadata() {
        return { client_name: 'TypeScript SDK 1.x', redirect_uris: [REDIRECT], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none' };
    },
    clientInformation: () => store.client,
    saveClientInformation: info => { store.client = info; },
    tokens: () => store.tokens,
    saveTokens: tokens => { store.tokens = tokens; },
    saveCodeVerifier: verifier => { store.verifier = verifier; },
    codeVerifier: () => store.verifier,
    invalidateCredentials: scope => {
        if (scope === 'all' || scope === 'tokens') store.tokens = undefined;
        if (scope === 'all' || scope === 'client') store.client = undefined;
    },
    redirectToAuthorization: async authorizationUrl => { store.landed = await browse(authorizationUrl); },
};

function codeOf(landed) {
    if (landed.searchParams.get('error')) throw new Error(`authorization refused: ${landed.searchParams.get('error')}`);
    return landed.searchParams.get('code');
}

let transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider });
let client = new Client({ name: 'ts-sdk-1x-proxy', version: '1.0.0' });
try {
    await client.connect(transport);
} catch (error) {
    if (!(error instanceof UnauthorizedError)) throw error;
    await transport.finishAuth(codeOf(store.landed));
    transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider });
    client = new Client({ name: 'ts-sdk-1x-proxy', version: '1.0.0' });
    await client.connect(transport);
}
say('login', { iss: store.landed.searchParams.get('iss'), registered: Boolean(store.client?.client_id) });

const text = result => result.content?.map(part => part.text ?? '').join('');
say('call', { text: text(await client.callTool({ name: plainTool, arguments: {} })) });

const before = store.tokens.refresh_token;
store.tokens = { ...store.tokens, access_token: 'spoiled' };
say('refresh', { text: text(await client.callTool({ name: plainTool, arguments: {} })), rotated: store.tokens.refresh_token !== before });

try {
    await client.callTool({ name: scopedTool, arguments: {} });
    say('step-up', { error: 'the scoped tool answered without a wider scope' });
} catch (error) {
    // SDK 1.x: a refresh first (which cannot widen the grant), then this error; the app authorizes again.
    provider.invalidateCredentials('tokens');
    const outcome = await auth(provider, { serverUrl: new URL(url), scope: widerScope });
    if (outcome === 'REDIRECT') {
        await auth(provider, { serverUrl: new URL(url), scope: widerScope, authorizationCode: codeOf(store.landed) });
    }
    say('step-up', { first: String(error.message ?? error).slice(0, 120), text: text(await client.callTool({ name: scopedTool, arguments: {} })), scope: store.tokens.scope });
}
await client.close();
