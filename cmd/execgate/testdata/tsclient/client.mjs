// The official TypeScript MCP SDK's client against "execgate serve" on
// stdio, for TestTSClient_Stdio. Usage: node client.mjs BINARY CONFIG.
//
// The client talks to the server through a transport made of the SDK's
// own line framing (ReadBuffer, serializeMessage) over the server's
// pipes, which also lets this script write lines that are not messages
// between the client's. It prints one JSON object: what the client saw,
// and the error answers to the bad lines as read off stdout.
import { spawn } from "node:child_process";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { ReadBuffer, serializeMessage } from "@modelcontextprotocol/sdk/shared/stdio.js";

const [binary, config] = process.argv.slice(2);
const child = spawn(binary, ["serve", "--config", config], { stdio: ["pipe", "pipe", "inherit"] });

const answers = []; // error answers with a null id, as JSON-RPC codes
const sdkErrors = []; // what the SDK could not take

// lineTransport is an SDK Transport over the child's pipes.
const transport = {
  buffer: new ReadBuffer(),
  async start() {
    let pending = "";
    child.stdout.on("data", (chunk) => {
      const lines = (pending + chunk.toString("utf8")).split("\n");
      pending = lines.pop();
      for (const line of lines) {
        const m = JSON.parse(line);
        if (m.id === null) {
          answers.push(m.error.code);
        }
      }
      this.buffer.append(chunk);
      for (;;) {
        let msg;
        try {
          msg = this.buffer.readMessage();
        } catch (err) {
          sdkErrors.push(String(err.message).slice(0, 200));
          continue;
        }
        if (msg === null) {
          break;
        }
        this.onmessage?.(msg);
      }
    });
    child.on("close", () => this.onclose?.());
  },
  async send(message) {
    child.stdin.write(serializeMessage(message));
  },
  async close() {
    child.stdin.end();
  },
};

// raw writes text to the server as it is and waits until it is written.
const raw = (text) => new Promise((resolve) => child.stdin.write(text, resolve));

const client = new Client({ name: "ts-sdk-e2e", version: "0" });
client.onerror = (err) => sdkErrors.push(String(err.message).slice(0, 200));
await client.connect(transport);

const out = { answers, sdkErrors };
out.before = await client.callTool({ name: "echo_run", arguments: { args: ["before"] } });

// Lines that are not messages, each answered with an error, and then a
// line over the bound carrying a call whose id the client waits for.
await raw("hello\n");
await raw("[]\n");
await raw("{\n");
await raw("\u0000\u0000\n");
const tooLong = client
  .callTool({ name: "echo_run", arguments: { args: ["x".repeat(5 * 1024 * 1024)] } })
  .then(
    (r) => ({ result: r }),
    (e) => ({ code: e.code, message: String(e.message).slice(0, 200) }),
  );
out.tooLong = await tooLong;

out.tools = (await client.listTools()).tools.map((t) => t.name).sort();
out.after = await client.callTool({ name: "echo_run", arguments: { args: ["after", "bad", "lines"] } });
out.unknown = await client.callTool({ name: "rm_run", arguments: {} });
// The command's own name is not a listed tool name.
out.logical = await client.callTool({ name: "echo.run", arguments: {} });

await client.close();
await new Promise((resolve) => (child.exitCode !== null ? resolve() : child.on("exit", resolve)));
out.exitCode = child.exitCode;
process.stdout.write(JSON.stringify(out) + "\n");
