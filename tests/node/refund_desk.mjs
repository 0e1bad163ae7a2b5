// The refund-desk trajectory through the TypeScript MCP client (@modelcontextprotocol/client 2.x).
//
// Usage: node refund_desk.mjs TARGET MODE [ORDER_ID]
//   TARGET  an http(s) URL, or a stdio command line as a JSON array (["python", "server.py"])
//   MODE    "auto" (probe server/discover, 2026-07-28) or "legacy" (initialize handshake)
//
// The client's one `elicitation/create` handler answers the questions on both eras: mid-call
// requests on the handshake era, `input_required` rounds on 2026-07-28 (the client drives those
// rounds itself). Prints one JSON line: the negotiated era and version, the tools it saw, the
// questions it answered, and the tool result.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

const [target, mode, orderId = 'ORD-7002'] = process.argv.slice(2);

function transportFor(target) {
    if (/^https?:\/\//.test(target)) {
        return new StreamableHTTPClientTransport(new URL(target));
    }
    const [command, ...args] = JSON.parse(target);
    return new StdioClientTransport({ command, args, stderr: 'inherit' });
}

const client = new Client(
    { name: 'refund-desk-ts', version: '1.0.0' },
    { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode } }
);

const questions = [];
client.setRequestHandler('elicitation/create', async request => {
    const { message, requestedSchema } = request.params;
    questions.push({ message, fields: Object.keys(requestedSchema.properties) });
    if ('full' in requestedSchema.properties) {
        return { action: 'accept', content: { full: true } };
    }
    return { action: 'accept', content: { restock: true } };
});

await client.connect(transportFor(target));
const { tools } = await client.listTools();
const result = await client.callTool({ name: 'refund_order', arguments: { order_id: orderId, reason: 'too small' } });
console.log(
    JSON.stringify({
        era: client.getProtocolEra(),
        version: client.getNegotiatedProtocolVersion(),
        tools: tools.map(tool => ({ name: tool.name, properties: Object.keys(tool.inputSchema.properties ?? {}) })),
        questions,
        result
    })
);
await client.close();
