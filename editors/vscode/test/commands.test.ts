// Unit tests of the commands against the stubbed vscode API and a fake server.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { afterEach, beforeEach, describe, test } from "node:test";
import { commands, registerCommands, type CommandId } from "../src/commands";
import { defaultSettings } from "../src/config";
import { Ctx, type AgentServer, type Client, type SendOptions } from "../src/ctx";
import type { ProgressValue, Request, RunStartEvent } from "../src/protocol";
import { Range, Selection, Uri, stub } from "./vscode-stub";

type Call = { command: string; args: any; workDoneToken?: string; token?: any };

/** A fake agent-lsp: answers commands from a table, records calls, reports progress. */
class FakeServer implements AgentServer {
  calls: Call[] = [];
  progress = new Map<string, (v: ProgressValue) => void>();
  handlers: Record<string, (c: Call) => unknown> = {};
  async send<A, R>(req: Request<A, R>, args: A, opts?: SendOptions): Promise<R> {
    const call = { command: req.command, args, ...opts };
    this.calls.push(call);
    const h = this.handlers[req.command];
    if (!h) throw Object.assign(new Error(`unknown command "${req.command}"`), { code: -32602 });
    return (await h(call)) as R;
  }
  onProgress(token: string, handler: (v: ProgressValue) => void) {
    this.progress.set(token, handler);
    return { dispose: () => this.progress.delete(token) };
  }
}

const sessions = [
  { session: "s-done", project: "sample", title: "Add Farewell", status: "done", created: "", updated: "2026-11-21T10:00:00Z", messages: 6 },
  { session: "s-cut", project: "sample", title: "Refactor", status: "cancelled", created: "", updated: "2026-11-21T09:00:00Z", messages: 3 },
];

/** A project as agent.projects sends it. */
const project = (name: string, path: string, language: string) => ({
  name,
  path,
  type: language,
  techStack: { language },
  context: { openFiles: [], pendingChanges: [], lastBuild: { status: "unknown" }, lastTest: { status: "unknown" }, recentErrors: [] },
  sandbox: { mode: "workspace-write", landlockABI: 6, enforced: ["network: TCP bind and connect denied"], writable: ["/tmp", path], network: false },
});

/** The run.start event that binds a run to its session. */
const runStart = (session: string): RunStartEvent => ({ session, seq: 1, type: "run.start", project: "sample" });

let server: FakeServer;
let ctx: Ctx;
let client: Client & { keys: string[]; restarts: number };
let mode: "apply" | "review";

beforeEach(() => {
  stub.reset();
  server = new FakeServer();
  server.handlers["agent.sessions"] = () => sessions;
  mode = "apply";
  client = {
    keys: [],
    restarts: 0,
    server: () => server,
    setApiKey: async (k) => void client.keys.push(k),
    restart: async () => void client.restarts++,
  };
  ctx = new Ctx(client, () => ({ ...defaultSettings, edits: mode }));
  registerCommands(ctx);
});

afterEach(() => ctx.dispose());

/** Runs a registered command as VS Code would. */
const exec = (id: CommandId, ...args: unknown[]) => stub.commands.get(id)!(...args);

/** The status bar item's text while it shows. */
const statusText = () => (stub.status.visible ? stub.status.text : undefined);

const tick = () => new Promise((r) => setTimeout(r, 0));

describe("commands", () => {
  test("package.json contributes exactly the commands the extension registers", () => {
    const pkg = JSON.parse(readFileSync("package.json", "utf8"));
    const contributed = pkg.contributes.commands.map((c: { command: string }) => c.command).sort();
    assert.deepEqual([...stub.commands.keys()].sort(), contributed);
    assert.deepEqual(Object.keys(commands).sort(), contributed);
    for (const c of pkg.contributes.commands) assert.equal(c.category, "Agent", `${c.command} is in the Agent category`);
    for (const menu of Object.values(pkg.contributes.menus) as { command: string }[][]) {
      for (const m of menu) assert.ok(contributed.includes(m.command), `menu entry ${m.command} is a contributed command`);
    }
  });

  test("Agent: Run sends prompt, selection and edit mode, shows progress, status and the summary", async () => {
    const doc = { uri: Uri.file("/w/sample/greet.go") };
    stub.activeTextEditor = { document: doc, selection: new Selection(2, 0, 4, 1) };
    stub.inputs.push("  Add a Farewell function  ");
    mode = "review";
    let statusDuring = "";
    server.handlers["agent.run"] = async (c) => {
      const report = server.progress.get(c.workDoneToken!)!;
      ctx.onEvent(runStart("s-new"));
      report({ kind: "begin", title: "agent: Add a Farewell function" });
      report({ kind: "report", message: "edit_file greet.go" });
      statusDuring = statusText() ?? "";
      return { session: "s-new", status: "done", reply: "Added Farewell.\nMore detail.", edits: 1, steps: 3 };
    };
    await exec("agentLsp.run");
    const call = server.calls.find((c) => c.command === "agent.run")!;
    assert.deepEqual(call.args, {
      prompt: "Add a Farewell function",
      uri: "file:///w/sample/greet.go",
      range: { start: { line: 2, character: 0 }, end: { line: 4, character: 1 } },
      edits: "review",
      project: undefined,
    });
    assert.match(call.workDoneToken!, /^agent-lsp-vscode:\d+$/);
    assert.equal(stub.progress[0].title, "agent: Add a Farewell function");
    assert.deepEqual(stub.progress[0].reports, ["edit_file greet.go"]);
    assert.match(statusDuring, /agent: edit_file greet\.go/);
    assert.equal(statusText(), undefined, "the status bar item is hidden after the run");
    assert.deepEqual(stub.messages, [{ level: "info", text: "Agent done (1 edit, 3 steps): Added Farewell." }]);
    assert.match(stub.output.join(""), /── session s-new · project sample/);
  });

  test("an empty prompt runs nothing", async () => {
    stub.inputs.push("   ");
    await exec("agentLsp.run");
    assert.equal(server.calls.length, 0);
  });

  test("a failed run warns and offers Resume", async () => {
    stub.inputs.push("do it");
    server.handlers["agent.run"] = () => ({ session: "s1", status: "limit", reply: "", edits: 0, steps: 40 });
    await exec("agentLsp.run");
    assert.deepEqual(stub.messages, [{ level: "warning", text: "Agent limit (0 edits, 40 steps)" }]);
  });

  test("the summary's Show Session opens that session's transcript", async () => {
    stub.inputs.push("do it");
    stub.buttons.push("Show Session");
    server.handlers["agent.run"] = () => ({ session: "s1", status: "done", reply: "", edits: 0, steps: 1 });
    server.handlers["agent.session"] = () => ({ session: "s1", project: "sample", status: "done", messages: [] });
    await exec("agentLsp.run");
    await tick();
    assert.equal(stub.opened[0]?.uri.path, "/s1.md");
    assert.match(stub.opened[0].content, /Session `s1` · project \*\*sample\*\*/);
  });

  for (const via of ["Agent: Cancel", "the progress notification's cancel button"]) {
    test(`${via} cancels the running session with agent.cancel`, async () => {
      stub.inputs.push("slow work");
      let finish!: () => void;
      server.handlers["agent.run"] = () => {
        ctx.onEvent(runStart("s-slow"));
        return new Promise((resolve) => (finish = () => resolve({ session: "s-slow", status: "cancelled", reply: "", edits: 0, steps: 1 })));
      };
      server.handlers["agent.cancel"] = () => {
        finish();
        return { cancelled: true };
      };
      const running = exec("agentLsp.run");
      await tick();
      if (via === "Agent: Cancel") await exec("agentLsp.cancel");
      else stub.progress[0].cancel();
      await running;
      assert.deepEqual(server.calls.find((c) => c.command === "agent.cancel")?.args, { session: "s-slow" });
      assert.equal(stub.messages.at(-1)?.text, "Agent cancelled (0 edits, 1 step)");
    });
  }

  test("cancelling before the session is known cancels the request itself", async () => {
    stub.inputs.push("slow work");
    server.handlers["agent.run"] = (c) =>
      new Promise((_, reject) => c.token.onCancellationRequested(() => reject(Object.assign(new Error("cancelled"), { code: -32800 }))));
    const running = exec("agentLsp.run");
    await tick();
    await exec("agentLsp.cancel");
    await running;
    assert.equal(server.calls.filter((c) => c.command === "agent.cancel").length, 0);
    assert.deepEqual(stub.messages, [{ level: "info", text: "Agent cancelled." }]);
  });

  test("Agent: Cancel with nothing running says so", async () => {
    await exec("agentLsp.cancel");
    assert.deepEqual(stub.messages, [{ level: "info", text: "No agent run is going in this window." }]);
  });

  test("Agent: Resume offers only unfinished sessions", async () => {
    let offered: string[] = [];
    stub.picks.push((items) => {
      offered = items.map((i: { session: string }) => i.session);
      return items[0];
    });
    server.handlers["agent.resume"] = () => ({ session: "s-cut", status: "done", reply: "ok", edits: 0, steps: 1 });
    await exec("agentLsp.resume");
    assert.deepEqual(offered, ["s-cut"]);
    assert.deepEqual(server.calls.at(-1)?.args, { session: "s-cut", edits: "apply" });
  });

  test("Agent: Show Session opens the transcript as a read-only Markdown document", async () => {
    stub.picks.push((items) => items[0]);
    server.handlers["agent.session"] = () => ({
      session: "s-done",
      project: "sample",
      status: "done",
      title: "Add Farewell",
      messages: [
        { id: "1", role: "human", content: "Add Farewell" },
        { id: "2", role: "ai", content: "On it.", toolCalls: [{ id: "c1", name: "edit_file", args: '{"path":"greet.go"}' }] },
        { id: "3", role: "tool", content: "edited greet.go", toolCallId: "c1" },
      ],
    });
    await exec("agentLsp.showSession");
    assert.equal(stub.opened.length, 1);
    assert.equal(stub.opened[0].uri.scheme, "agent-session");
    assert.match(stub.opened[0].content, /## You\n\nAdd Farewell/);
    assert.match(stub.opened[0].content, /#### edit_file result\n\n```\nedited greet.go\n```/);
  });

  test("a server error is shown with the server's message", async () => {
    stub.picks.push((items) => items[0]);
    server.handlers["agent.deleteSession"] = () => {
      throw new Error("agent.deleteSession: session s-done is running; cancel it first");
    };
    stub.buttons.push("Delete");
    await exec("agentLsp.deleteSession");
    assert.deepEqual(stub.messages.at(-1), { level: "error", text: "agent-lsp: agent.deleteSession: session s-done is running; cancel it first" });
  });

  test("Agent: Delete Session asks first and deletes only on confirmation", async () => {
    server.handlers["agent.deleteSession"] = () => ({ deleted: true });
    stub.picks.push((items) => items[1]);
    stub.buttons.push(undefined); // dismissed
    await exec("agentLsp.deleteSession");
    assert.equal(server.calls.filter((c) => c.command === "agent.deleteSession").length, 0);
    stub.picks.push((items) => items[1]);
    stub.buttons.push("Delete");
    await exec("agentLsp.deleteSession");
    assert.deepEqual(server.calls.at(-1)?.args, { session: "s-cut" });
    assert.equal(stub.messages.at(-1)?.text, "Deleted session s-cut.");
  });

  test("Agent: Switch Project switches the last session", async () => {
    server.handlers["agent.projects"] = () => [
      project("api", "/w/api", "go"),
      project("web", "/w/web", "typescript"),
    ];
    server.handlers["agent.switchProject"] = (c) => c.args;
    ctx.onEvent(runStart("s9"));
    stub.picks.push((items) => items.find((i: { name: string }) => i.name === "web"));
    await exec("agentLsp.switchProject");
    assert.deepEqual(server.calls.at(-1)?.args, { session: "s9", project: "web" });
  });

  test("Agent: Show Projects opens each project's sandbox report as a read-only Markdown document", async () => {
    server.handlers["agent.projects"] = () => [project("api", "/w/api", "go")];
    await exec("agentLsp.showProjects");
    assert.equal(stub.opened[0]?.uri.scheme, "agent-projects");
    assert.match(stub.opened[0].content, /## api\n\ngo\n\n\/w\/api · sandbox workspace-write · no network\n/);
    assert.match(stub.opened[0].content, /Enforced:\n\n- network: TCP bind and connect denied\n\nWritable:\n\n- `\/tmp`\n- `\/w\/api`\n/);
  });

  test("agent/event kinds the extension does not know are ignored", () => {
    ctx.onEvent({ session: "s1", seq: 1, type: "future.kind" });
    assert.deepEqual(stub.output, []);
    ctx.onEvent(runStart("s1"));
    assert.deepEqual(stub.output, ["── session s1 · project sample\n"]);
  });

  test("in Restricted Mode a command says the agent starts once the workspace is trusted", async () => {
    stub.trusted = false;
    client.server = () => undefined;
    await exec("agentLsp.resume");
    assert.match(stub.messages.at(-1)?.text ?? "", /the agent starts once you trust this workspace/);
  });

  test("Agent: Set API Key goes to the client (secret storage), never to the output", async () => {
    stub.inputs.push(" sk-secret-123 ");
    await exec("agentLsp.setApiKey");
    assert.deepEqual(client.keys, ["sk-secret-123"]);
    const shown = JSON.stringify([stub.output, stub.messages]);
    assert.ok(!shown.includes("sk-secret"), shown);
  });

  test("the code action appears for a selection only and carries uri and range", async () => {
    const provider = stub.codeActionProviders[0];
    const doc = { uri: Uri.file("/w/a.go") };
    assert.deepEqual(provider.provideCodeActions(doc, new Range(1, 2, 1, 2)), []);
    const [action] = provider.provideCodeActions(doc, new Range(1, 0, 3, 0));
    assert.equal(action.title, "Ask agent about this selection");
    assert.equal(action.command.command, "agentLsp.askAboutSelection");
    stub.inputs.push("why?");
    server.handlers["agent.run"] = () => ({ session: "s", status: "done", reply: "", edits: 0, steps: 1 });
    await exec("agentLsp.askAboutSelection", ...action.command.arguments);
    assert.deepEqual(server.calls.at(-1)?.args.range, { start: { line: 1, character: 0 }, end: { line: 3, character: 0 } });
    assert.equal(server.calls.at(-1)?.args.uri, "file:///w/a.go");
  });

  test("in a multi-root window a run goes to the project of the active file", async () => {
    stub.workspaceFolders = [{}, {}];
    stub.activeTextEditor = { document: { uri: Uri.file("/w/web/src/app.ts") }, selection: new Selection(0, 0, 0, 0) };
    server.handlers["agent.projects"] = () => [
      project("w", "/w", "unknown"),
      project("web", "/w/web", "typescript"),
      project("webapp", "/w/webapp", "typescript"),
    ];
    server.handlers["agent.run"] = () => ({ session: "s", status: "done", reply: "", edits: 0, steps: 1 });
    stub.inputs.push("fix it");
    await exec("agentLsp.run");
    assert.equal(server.calls.at(-1)?.args.project, "web");
  });
});
