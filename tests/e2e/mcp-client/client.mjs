// A scripted MCP client built on the official TypeScript SDK (Client + StdioClientTransport),
// for tests/e2e/test_mcp.py. argv[2] names a file holding a JSON scenario:
//   {"server": {"command": ..., "args": [...], "cwd": ...}, "steps": [STEP...]}
// Each step's outcome is printed as one JSON line on stdout as soon as it is known:
//   {"op": "list"}                                  -> {"tools": [...]}
//   {"op": "ping"}                                  -> {"ok": true}
//   {"op": "call", "name", "arguments"}             -> {"result": ..., "progress": [...]}
//                                                      or {"error": {"code", "message"}}
//   {"op": "call", ..., "abort_on_progress": TEXT}  -> prints {"event": "progress_seen"},
//       waits for a line on stdin (the test looks at the host meanwhile), then aborts the
//       request (the SDK sends notifications/cancelled) -> {"aborted": true, "message"}
//   {"op": "poll", "name", "arguments", "until_status", "tries", "interval_ms"}
//       calls a tool until structuredContent.runs[0].status is until_status -> {"result"}
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { readFileSync } from "node:fs";
import readline from "node:readline";

const scenario = JSON.parse(readFileSync(process.argv[2], "utf8"));
const out = (o) => process.stdout.write(JSON.stringify(o) + "\n");
const stdinLines = readline.createInterface({ input: process.stdin });
const nextLine = () => new Promise((resolve) => stdinLines.once("line", resolve));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const transport = new StdioClientTransport({
  command: scenario.server.command,
  args: scenario.server.args || [],
  cwd: scenario.server.cwd,
  env: process.env,
  stderr: "inherit",
});
const client = new Client({ name: "labbox-test-client", version: "1.0.0" });
await client.connect(transport);
out({ event: "connected", server: client.getServerVersion(),
      capabilities: client.getServerCapabilities() });

const opts = { timeout: 600000, resetTimeoutOnProgress: true, maxTotalTimeout: 1800000 };
for (const step of scenario.steps) {
  try {
    if (step.op === "list") {
      out({ tools: (await client.listTools()).tools });
    } else if (step.op === "ping") {
      await client.ping();
      out({ ok: true });
    } else if (step.op === "call") {
      const progress = [];
      const ac = new AbortController();
      let seen = false;
      const p = client.callTool({ name: step.name, arguments: step.arguments }, undefined, {
        ...opts,
        signal: ac.signal,
        onprogress: (pr) => {
          progress.push(pr);
          if (step.abort_on_progress && !seen && String(pr.message || "").includes(step.abort_on_progress)) {
            seen = true;
            out({ event: "progress_seen", progress: pr });
            nextLine().then(() => ac.abort("the test cancels it"));
          }
        },
      });
      try {
        const result = await p;
        out({ result, progress });
      } catch (e) {
        if (ac.signal.aborted) out({ aborted: true, message: String(e && e.message || e) });
        else throw e;
      }
    } else if (step.op === "poll") {
      let result;
      for (let i = 0; i < (step.tries || 300); i++) {
        result = await client.callTool({ name: step.name, arguments: step.arguments || {} }, undefined, opts);
        const runs = result.structuredContent && result.structuredContent.runs;
        if (runs && runs.length && runs[0].status === step.until_status) break;
        await sleep(step.interval_ms || 200);
      }
      out({ result });
    } else {
      out({ error: { message: "unknown step " + step.op } });
    }
  } catch (e) {
    out({ error: { code: e.code, message: String(e.message || e) } });
  }
}
await client.close();
stdinLines.close();
out({ event: "closed" });
