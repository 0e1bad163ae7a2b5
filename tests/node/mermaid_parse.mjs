// Parse a Mermaid flowchart (read from stdin) with Mermaid itself, headless, and print what it
// understood as one JSON line: {diagramType, vertices, edges, subgraphs}. A syntax error exits 1
// with Mermaid's message on stderr. Mermaid sanitizes labels with DOMPurify, which needs a DOM:
// jsdom provides one (no browser).
import { JSDOM } from "jsdom";

const dom = new JSDOM("<!doctype html><html><body></body></html>");
globalThis.window = dom.window;
globalThis.document = dom.window.document;
const { default: mermaid } = await import("mermaid");

let text = "";
for await (const chunk of process.stdin) text += chunk;

try {
  const { diagramType } = await mermaid.parse(text);
  const { db } = await mermaid.mermaidAPI.getDiagramFromText(text);
  const vertices = [...db.getVertices().values()].map((v) => ({
    id: v.id,
    text: v.text,
    type: v.type,
    classes: v.classes,
  }));
  const edges = db.getEdges().map((e) => ({ start: e.start, end: e.end, text: e.text }));
  const subgraphs = db.getSubGraphs().map((s) => ({ id: s.id, title: s.title, nodes: s.nodes }));
  process.stdout.write(JSON.stringify({ diagramType, vertices, edges, subgraphs }) + "\n");
} catch (error) {
  process.stderr.write(`${error.message}\n`);
  process.exit(1);
}
