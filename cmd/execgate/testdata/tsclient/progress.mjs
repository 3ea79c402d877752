// The official TypeScript MCP SDK's client watching and cancelling
// long calls of "execgate serve", for cmd/execgate's TestTSClient_Progress
// tests. Usage:
//
//	node progress.mjs stdio BINARY CONFIG AUDIT   serve on stdio, started by the SDK
//	node progress.mjs http URL TOKEN              serve --mcp-http, already running
//
// It calls ticks_run with an onprogress callback and keeps every progress
// notification it gets; then it calls hang_run with an onprogress callback
// and an AbortSignal, and aborts the call when the first notification
// comes. It prints one JSON line with what it saw, waits for its stdin to
// end (the test checks the processes and the audit trail meanwhile), makes
// one more call in the same session, prints a second JSON line and closes.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [mode, ...rest] = process.argv.slice(2);
let transport;
if (mode === "stdio") {
  const [binary, config, audit] = rest;
  transport = new StdioClientTransport({
    command: binary,
    args: ["serve", "--config", config, "--audit", audit],
    stderr: "inherit",
  });
} else if (mode === "http") {
  const [url, token] = rest;
  transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
} else {
  throw new Error(`unknown mode ${mode}`);
}

const client = new Client({ name: "ts-sdk-progress-e2e", version: "0" });
await client.connect(transport);
const out = { tasks: client.getServerCapabilities()?.tasks ?? null };

// A call that runs a few seconds, watched.
const ticks = [];
out.ticks = await client.callTool({ name: "ticks_run", arguments: {} }, undefined, {
  onprogress: (p) => ticks.push(p),
});
out.ticksProgress = ticks;

// A call that would run until its timeout, aborted at its first progress.
const abort = new AbortController();
let heard = 0;
out.hang = await client
  .callTool({ name: "hang_run", arguments: {} }, undefined, {
    signal: abort.signal,
    onprogress: () => {
      heard++;
      abort.abort();
    },
  })
  .then(
    (r) => ({ result: r }),
    (e) => ({ code: e.code ?? 0, message: String(e.message).slice(0, 300) }),
  );
out.hangProgress = heard;
out.aborted = abort.signal.aborted;
process.stdout.write(JSON.stringify(out) + "\n");

await new Promise((resolve) => {
  process.stdin.on("end", resolve);
  process.stdin.resume();
});

const after = await client.callTool({ name: "echo_run", arguments: { args: ["still", "here"] } });
if (mode === "http") {
  await transport.terminateSession();
}
await client.close();
process.stdout.write(JSON.stringify({ after }) + "\n");
