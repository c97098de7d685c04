// The TypeScript MCP SDK v1 client (the SDK Claude Code is built on) against studiolo, over
// streamable HTTP or stdio. Run by tests/faces/mcp/test_ts_client.py with one JSON argument:
//   {"transport": "http", "url": ..., "token": ..., "task_id": ..., "workdir": null}
//   {"transport": "stdio", "command": ..., "args": [...], "env": {...}, "task_id": ..., "workdir": ...}
// It lists the tools (so callTool validates every structuredContent against its outputSchema,
// and throws if one does not match), calls them including refusals, and prints one JSON line.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const cfg = JSON.parse(process.argv[2]);

function transport() {
  if (cfg.transport === "http") {
    const headers = { Authorization: `Bearer ${cfg.token}` };
    return new StreamableHTTPClientTransport(new URL(`${cfg.url}/mcp`), { requestInit: { headers } });
  }
  return new StdioClientTransport({
    command: cfg.command, args: cfg.args, env: cfg.env, cwd: cfg.workdir, stderr: "inherit",
  });
}

const client = new Client({ name: "studiolo-ts-test", version: "1.0.0" });
await client.connect(transport());

async function call(name, args) {
  const r = await client.callTool({ name, arguments: args });
  const text = r.content.filter((c) => c.type === "text").map((c) => c.text).join("\n");
  return { isError: r.isError ?? false, structured: r.structuredContent ?? null, text, meta: r._meta ?? null };
}

const out = { tools: (await client.listTools()).tools.map((t) => t.name) };
const task = cfg.task_id;
out.orient = await call("orient", {});
out.page = await call("list_tasks", { limit: 1 });
out.claim = await call("claim_task", { task_id: task });
out.again = await call("claim_task", { task_id: task });
out.missing = await call("get_task", { task_id: "tsk_missing000" });
out.handoff = await call("read_handoff", { task_id: task });
const attempt = out.claim.structured.attempt.id;
let candidate;
if (cfg.workdir) {
  out.checkout = await call("checkout", { directory: "w", prefix: "src/" });
  writeFileSync(join(cfg.workdir, "w", "src", "answer.txt"), "42\n");
  out.submit = await call("submit_workspace", { attempt_id: attempt, directory: "w" });
  candidate = out.submit.structured.candidate.id;
} else {
  out.submit = await call("submit_candidate", {
    attempt_id: attempt, files: { "src/answer.txt": "42\n" }, bases: { "src/answer.txt": 1 },
    file_deps: { "src/input.txt": 1 },
  });
  candidate = out.submit.structured.id;
}
const contract_hash = out.claim.structured.contract_hash;
out.refused = await call("complete_task", { task_id: task, candidate_id: candidate, contract_hash });
await client.close();
console.log(JSON.stringify(out));
