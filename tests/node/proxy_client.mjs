// The TypeScript SDK 1.x client (@modelcontextprotocol/sdk) signing in through an mcp-resolve OAuthProxy.
//
// Usage: node proxy_client.mjs MCP_URL PLAIN_TOOL SCOPED_TOOL
//
// It connects with the SDK's own OAuth (discovery, dynamic registration, PKCE, `resource`), calls
// PLAIN_TOOL, forces a refresh (the stored access token is spoiled, so the server answers 401 and the
// SDK refreshes with its refresh token), calls PLAIN_TOOL again, then steps up to call SCOPED_TOOL,
// which needs a scope the first login did not ask for. The person is scripted: `browse` follows the
// authorization URL with a cookie jar, presses Approve on the proxy's consent page, goes through the
// upstream's scripted login and captures the redirect back. Every request the SDK makes goes through
// `recorded` (the transport's `fetch`), which notes the token grants it posts and the last 403
// challenge. Prints one JSON line per step: {"step", ...}.
//
// Step-up: SDK 1.x answers a 403 insufficient_scope by refreshing first, and a refresh never widens a
// grant, so the same 403 comes back and the SDK gives up ("403 after trying upscoping"). The app then
// does what such an app must: it drops its tokens and authorizes again with the scope the server's
// challenge names (`auth(provider, {scope})`), then finishes the login as usual.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { auth, extractWWWAuthenticateParams, UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const [url, plainTool, scopedTool] = process.argv.slice(2);
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

// ---- what the SDK sends: the grant of every token request, the last 403 challenge ----
const grants = [];
let challenge;
async function recorded(at, init = {}) {
    if (new URL(at).pathname.endsWith('/token') && init.body) {
        grants.push(new URLSearchParams(init.body).get('grant_type'));
    }
    const response = await fetch(at, init);
    if (response.status === 403) {
        challenge = extractWWWAuthenticateParams(response);
    }
    return response;
}

// ---- the SDK's OAuthClientProvider, in memory ----
const store = { client: undefined, tokens: undefined, verifier: undefined, landed: undefined, asked: undefined, logins: 0 };
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
    redirectToAuthorization: async authorizationUrl => {
        store.logins += 1;
        store.asked = authorizationUrl.searchParams.get('scope');
        store.landed = await browse(authorizationUrl);
    },
};

function codeOf(landed) {
    if (landed.searchParams.get('error')) throw new Error(`authorization refused: ${landed.searchParams.get('error')}`);
    return landed.searchParams.get('code');
}

const connect = async () => {
    const transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider, fetch: recorded });
    const client = new Client({ name: 'ts-sdk-1x-proxy', version: '1.0.0' });
    return { transport, client, connected: client.connect(transport) };
};
let { transport, client, connected } = await connect();
try {
    await connected;
} catch (error) {
    if (!(error instanceof UnauthorizedError)) throw error;
    // The SDK's own way back from the redirect: the transport exchanges the code, then a new connection.
    await transport.finishAuth(codeOf(store.landed));
    ({ client, connected } = await connect());
    await connected;
}
say('login', {
    iss: store.landed.searchParams.get('iss'),
    registered: Boolean(store.client?.client_id),
    logins: store.logins,
    scope: store.tokens.scope,
    grants: grants.splice(0)
});

const text = result => result.content?.map(part => part.text ?? '').join('');
say('call', { text: text(await client.callTool({ name: plainTool, arguments: {} })) });

const before = store.tokens.refresh_token;
store.tokens = { ...store.tokens, access_token: 'spoiled' };
say('refresh', {
    text: text(await client.callTool({ name: plainTool, arguments: {} })),
    rotated: Boolean(store.tokens.refresh_token) && store.tokens.refresh_token !== before,
    logins: store.logins,
    grants: grants.splice(0)
});

let first;
try {
    await client.callTool({ name: scopedTool, arguments: {} });
} catch (error) {
    first = String(error.message ?? error).slice(0, 120);
}
if (first === undefined) {
    say('step-up', { error: 'the scoped tool answered without a wider scope' });
} else {
    // SDK 1.x: a refresh first (which cannot widen the grant), then this error; the app authorizes again.
    const refreshedFirst = grants.splice(0);
    provider.invalidateCredentials('tokens');
    const outcome = await auth(provider, { serverUrl: new URL(url), scope: challenge?.scope, fetchFn: recorded });
    if (outcome === 'REDIRECT') {
        await auth(provider, { serverUrl: new URL(url), authorizationCode: codeOf(store.landed), fetchFn: recorded });
    }
    say('step-up', {
        first,
        refreshedFirst,
        challenged: challenge?.scope,
        asked: store.asked,
        text: text(await client.callTool({ name: scopedTool, arguments: {} })),
        scope: store.tokens.scope,
        logins: store.logins,
        grants: grants.splice(0)
    });
}
await client.close();
