// The official TypeScript MCP SDK's Streamable HTTP client against
// "execgate serve --mcp-http", for TestTSClient_StreamableHTTP. Usage:
//
//	node httpclient.mjs URL TOKEN OTHER_TOKEN   the whole tour
//	node httpclient.mjs URL TOKEN --held        only the held call
//
// Every client answers an elicitation with accept, as an agent that
// answers its own questions would. It prints one JSON object: what the
// clients saw.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const [url, token, other] = process.argv.slice(2);
let asked = 0;

// connect connects a client that presents token (none when empty), to
// the session sessionId when given.
async function connect(token, sessionId) {
  const headers = token ? { Authorization: `Bearer ${token}` } : {};
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers }, sessionId });
  const client = new Client({ name: "ts-sdk-http-e2e", version: "0" }, { capabilities: { elicitation: {} } });
  client.setRequestHandler(ElicitRequestSchema, async () => {
    asked++;
    return { action: "accept", content: {} };
  });
  await client.connect(transport);
  return { client, transport };
}

// failure runs f and returns how it failed: the HTTP status the SDK
// reports, and the start of its message.
async function failure(f) {
  try {
    await f();
    return { code: 0 };
  } catch (err) {
    return { code: err.code ?? -1, message: String(err.message).slice(0, 300) };
  }
}

const out = {};
const a = await connect(token);

if (other === "--held") {
  out.held = await a.client.callTool({ name: "deploy", arguments: { subcommand: "prod" } });
} else {
  out.protocolVersion = a.transport.protocolVersion;
  out.session = Boolean(a.transport.sessionId);
  out.tools = (await a.client.listTools()).tools.map((t) => t.name).sort();
  out.call = await a.client.callTool({ name: "echo_run", arguments: { args: ["over", "http"] } });
  out.bad = await a.client.callTool({ name: "echo_run", arguments: { args: ["no;shell"] } });
  out.held = await a.client.callTool({ name: "deploy", arguments: { subcommand: "prod" } });

  const b = await connect(other);
  out.otherTools = (await b.client.listTools()).tools.map((t) => t.name).sort();
  out.denied = await b.client.callTool({ name: "echo_run", arguments: { args: ["denied"] } });
  await b.client.close();

  out.noToken = await failure(() => connect(""));
  out.wrongToken = await failure(() => connect("not-a-token"));
  // The other token, in the first client's session.
  out.hijack = await failure(async () => {
    const h = await connect(other, a.transport.sessionId);
    await h.client.listTools();
  });
  // The first client's session still works.
  out.after = await a.client.callTool({ name: "echo_run", arguments: { args: ["still", "here"] } });
}
out.asked = asked;
await a.transport.terminateSession();
await a.client.close();
process.stdout.write(JSON.stringify(out) + "\n");
