// A minimal MCP Apps host, in the browser: the TypeScript SDK's Streamable HTTP client talks to the
// server; the ext-apps `AppBridge` talks to the view through the sandbox proxy (sandbox.html, on
// another origin), which holds the view in an inner sandboxed iframe.
//
// Query: server (the MCP endpoint), sandbox (the proxy page's URL), tool, args (JSON), answers
// (JSON: the value this host's "person" gives each elicited field). It lists the tools (the model
// would see only those not app-only), calls the tool, reads the tool's ui:// resource and renders
// it with the tool's result, and reports each step in the page for the test to read.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import {
    AppBridge,
    PostMessageTransport,
    getToolUiResourceUri,
    isToolVisibilityAppOnly
} from '@modelcontextprotocol/ext-apps/app-bridge';

const APP_MIME_TYPE = 'text/html;profile=mcp-app';
const query = new URLSearchParams(location.search);
const show = (id, value) => {
    document.getElementById(id).textContent = typeof value === 'string' ? value : JSON.stringify(value);
};

async function main() {
    const client = new Client(
        { name: 'apps-test-host', version: '1.0.0' },
        {
            capabilities: {
                elicitation: { form: {} },
                extensions: { 'io.modelcontextprotocol/ui': { mimeTypes: [APP_MIME_TYPE] } }
            }
        }
    );
    const answers = JSON.parse(query.get('answers') ?? '{}');
    const questions = [];
    client.setRequestHandler('elicitation/create', async request => {
        const fields = Object.keys(request.params.requestedSchema.properties);
        questions.push(request.params.message);
        show('questions', questions);
        return { action: 'accept', content: Object.fromEntries(fields.filter(field => field in answers).map(field => [field, answers[field]])) };
    });
    await client.connect(new StreamableHTTPClientTransport(new URL(query.get('server'))));

    const { tools } = await client.listTools();
    show('model-tools', tools.filter(tool => !isToolVisibilityAppOnly(tool)).map(tool => tool.name));
    show('app-tools', tools.filter(tool => isToolVisibilityAppOnly(tool)).map(tool => tool.name));
    const tool = tools.find(candidate => candidate.name === query.get('tool'));
    const uri = getToolUiResourceUri(tool);
    const args = JSON.parse(query.get('args') ?? '{}');
    const result = await client.callTool({ name: tool.name, arguments: args });
    show('result', result);
    show('text', result.content.filter(item => item.type === 'text').map(item => item.text));

    // The view and its `_meta.ui`: from the read's content item (where the spec puts it), else the listing.
    const { contents } = await client.readResource({ uri });
    const content = contents.find(item => item.mimeType === APP_MIME_TYPE);
    if (!content) throw new Error(`${uri} has no ${APP_MIME_TYPE} content`);
    const { resources } = await client.listResources();
    const ui = content._meta?.ui ?? resources.find(item => item.uri === uri)?._meta?.ui ?? {};

    const bridge = new AppBridge(
        client,
        { name: 'apps-test-host', version: '1.0.0' },
        { openLinks: {}, serverTools: {}, serverResources: {}, logging: {} }
    );
    const frame = document.createElement('iframe');
    frame.id = 'sandbox';
    frame.style.cssText = 'width: 600px; height: 400px; border: 0';
    bridge.onsandboxready = () => bridge.sendSandboxResourceReady({ html: content.text, csp: ui.csp, permissions: ui.permissions });
    bridge.oninitialized = async () => {
        await bridge.sendToolInput({ arguments: args });
        await bridge.sendToolResult(result);
    };
    document.getElementById('view').append(frame);
    await bridge.connect(new PostMessageTransport(frame.contentWindow, frame.contentWindow));
    const sandbox = new URL(query.get('sandbox'));
    sandbox.searchParams.set('host', location.origin);
    frame.src = sandbox.href;
}

main().catch(error => show('error', String(error?.stack ?? error)));
