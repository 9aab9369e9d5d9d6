// Unit tests of the extension's UI logic against the stubbed vscode API and a fake server.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { beforeEach, describe, test } from "node:test";
import { Command, Controller, type AgentServer, type Host, type ProgressValue } from "../src/controller";
import { Range, Selection, Uri, stub, window } from "./vscode-stub";

type Call = { command: string; args: any; workDoneToken?: string; token?: any };

/** A fake agent-lsp: answers commands from a table, records calls, reports progress. */
class FakeServer implements AgentServer {
  calls: Call[] = [];
  progress = new Map<string, (v: ProgressValue) => void>();
  handlers: Record<string, (c: Call) => unknown> = {};
  async execute<T>(command: string, args: object, opts?: { token?: any; workDoneToken?: string }): Promise<T> {
    const call = { command, args, ...opts };
    this.calls.push(call);
    const h = this.handlers[command];
    if (!h) throw Object.assign(new Error(`unknown command "${command}"`), { code: -32602 });
    return (await h(call)) as T;
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

let server: FakeServer;
let controller: Controller;
let host: Host & { keys: string[]; restarts: number; mode: "apply" | "review" };

beforeEach(() => {
  for (const id of [...stub.commands.keys()]) stub.commands.delete(id);
  stub.reset();
  server = new FakeServer();
  server.handlers["agent.sessions"] = () => sessions;
  host = {
    keys: [],
    restarts: 0,
    mode: "apply",
    server: () => server,
    edits: () => host.mode,
    setApiKey: async (k) => void host.keys.push(k),
    restart: async () => void host.restarts++,
  };
  controller = new Controller(host, window.createOutputChannel() as any);
  controller.register();
});

const tick = () => new Promise((r) => setTimeout(r, 0));

describe("commands", () => {
  test("package.json contributes exactly the commands the extension registers", () => {
    const pkg = JSON.parse(readFileSync("package.json", "utf8"));
    const contributed = pkg.contributes.commands.map((c: { command: string }) => c.command).sort();
    assert.deepEqual([...stub.commands.keys()].sort(), contributed);
    assert.deepEqual(Object.values(Command).sort(), contributed);
    for (const c of pkg.contributes.commands) assert.equal(c.category, "Agent", `${c.command} is in the Agent category`);
    for (const menu of Object.values(pkg.contributes.menus) as { command: string }[][]) {
      for (const m of menu) assert.ok(contributed.includes(m.command), `menu entry ${m.command} is a contributed command`);
    }
  });

  test("Agent: Run sends prompt, selection and edit mode, shows progress, status and the summary", async () => {
    const doc = { uri: Uri.file("/w/sample/greet.go") };
    stub.activeTextEditor = { document: doc, selection: new Selection(2, 0, 4, 1) };
    stub.inputs.push("  Add a Farewell function  ");
    host.mode = "review";
    let statusDuring = "";
    server.handlers["agent.run"] = async (c) => {
      const report = server.progress.get(c.workDoneToken!)!;
      controller.onEvent({ session: "s-new", seq: 1, type: "run.start", project: "sample" });
      report({ kind: "begin", title: "agent: Add a Farewell function" });
      report({ kind: "report", message: "edit_file greet.go" });
      statusDuring = controller.statusText() ?? "";
      return { session: "s-new", status: "done", reply: "Added Farewell.\nMore detail.", edits: 1, steps: 3 };
    };
    await stub.commands.get(Command.run)!();
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
    assert.equal(controller.statusText(), undefined, "the status bar item is hidden after the run");
    assert.deepEqual(stub.messages, [{ level: "info", text: "Agent done (1 edit, 3 steps): Added Farewell." }]);
    assert.match(stub.output.join(""), /── session s-new · project sample/);
  });

  test("an empty prompt runs nothing", async () => {
    stub.inputs.push("   ");
    await stub.commands.get(Command.run)!();
    assert.equal(server.calls.length, 0);
  });

  test("a failed run warns and offers Resume", async () => {
    stub.inputs.push("do it");
    server.handlers["agent.run"] = () => ({ session: "s1", status: "limit", reply: "", edits: 0, steps: 40 });
    await stub.commands.get(Command.run)!();
    assert.deepEqual(stub.messages, [{ level: "warning", text: "Agent limit (0 edits, 40 steps)" }]);
  });

  for (const via of ["Agent: Cancel", "the progress notification's cancel button"]) {
    test(`${via} cancels the running session with agent.cancel`, async () => {
      stub.inputs.push("slow work");
      let finish!: () => void;
      server.handlers["agent.run"] = () => {
        controller.onEvent({ session: "s-slow", seq: 1, type: "run.start" });
        return new Promise((resolve) => (finish = () => resolve({ session: "s-slow", status: "cancelled", reply: "", edits: 0, steps: 1 })));
      };
      server.handlers["agent.cancel"] = () => {
        finish();
        return { cancelled: true };
      };
      const running = stub.commands.get(Command.run)!();
      await tick();
      if (via === "Agent: Cancel") await stub.commands.get(Command.cancel)!();
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
    const running = stub.commands.get(Command.run)!();
    await tick();
    await stub.commands.get(Command.cancel)!();
    await running;
    assert.equal(server.calls.filter((c) => c.command === "agent.cancel").length, 0);
    assert.deepEqual(stub.messages, [{ level: "info", text: "Agent cancelled." }]);
  });

  test("Agent: Cancel with nothing running says so", async () => {
    await stub.commands.get(Command.cancel)!();
    assert.deepEqual(stub.messages, [{ level: "info", text: "No agent run is going in this window." }]);
  });

  test("Agent: Resume offers only unfinished sessions", async () => {
    let offered: string[] = [];
    stub.picks.push((items) => {
      offered = items.map((i: { session: string }) => i.session);
      return items[0];
    });
    server.handlers["agent.resume"] = () => ({ session: "s-cut", status: "done", reply: "ok", edits: 0, steps: 1 });
    await stub.commands.get(Command.resume)!();
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
    await stub.commands.get(Command.showSession)!();
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
    await stub.commands.get(Command.deleteSession)!();
    assert.deepEqual(stub.messages.at(-1), { level: "error", text: "agent-lsp: agent.deleteSession: session s-done is running; cancel it first" });
  });

  test("Agent: Delete Session asks first and deletes only on confirmation", async () => {
    server.handlers["agent.deleteSession"] = () => ({ deleted: true });
    stub.picks.push((items) => items[1]);
    stub.buttons.push(undefined); // dismissed
    await stub.commands.get(Command.deleteSession)!();
    assert.equal(server.calls.filter((c) => c.command === "agent.deleteSession").length, 0);
    stub.picks.push((items) => items[1]);
    stub.buttons.push("Delete");
    await stub.commands.get(Command.deleteSession)!();
    assert.deepEqual(server.calls.at(-1)?.args, { session: "s-cut" });
    assert.equal(stub.messages.at(-1)?.text, "Deleted session s-cut.");
  });

  test("Agent: Switch Project switches the last session", async () => {
    server.handlers["agent.projects"] = () => [
      { name: "api", path: "/w/api", type: "go" },
      { name: "web", path: "/w/web", type: "typescript" },
    ];
    server.handlers["agent.switchProject"] = (c) => c.args;
    controller.onEvent({ session: "s9", seq: 1, type: "run.start" });
    stub.picks.push((items) => items.find((i: { name: string }) => i.name === "web"));
    await stub.commands.get(Command.switchProject)!();
    assert.deepEqual(server.calls.at(-1)?.args, { session: "s9", project: "web" });
  });

  test("Agent: Set API Key goes to the host (secret storage), never to the output", async () => {
    stub.inputs.push(" sk-secret-123 ");
    await stub.commands.get(Command.setApiKey)!();
    assert.deepEqual(host.keys, ["sk-secret-123"]);
    const shown = JSON.stringify([stub.output, stub.messages]);
    assert.ok(!shown.includes("sk-secret"), shown);
  });

  test("the code action appears for a selection only and carries uri and range", async () => {
    const provider = stub.codeActionProviders[0];
    const doc = { uri: Uri.file("/w/a.go") };
    assert.deepEqual(provider.provideCodeActions(doc, new Range(1, 2, 1, 2)), []);
    const [action] = provider.provideCodeActions(doc, new Range(1, 0, 3, 0));
    assert.equal(action.title, "Ask agent about this selection");
    assert.equal(action.command.command, Command.askAboutSelection);
    stub.inputs.push("why?");
    server.handlers["agent.run"] = () => ({ session: "s", status: "done", reply: "", edits: 0, steps: 1 });
    await stub.commands.get(Command.askAboutSelection)!(...action.command.arguments);
    assert.deepEqual(server.calls.at(-1)?.args.range, { start: { line: 1, character: 0 }, end: { line: 3, character: 0 } });
    assert.equal(server.calls.at(-1)?.args.uri, "file:///w/a.go");
  });

  test("in a multi-root window a run goes to the project of the active file", async () => {
    stub.workspaceFolders = [{}, {}];
    stub.activeTextEditor = { document: { uri: Uri.file("/w/web/src/app.ts") }, selection: new Selection(0, 0, 0, 0) };
    server.handlers["agent.projects"] = () => [
      { name: "w", path: "/w", type: "unknown" },
      { name: "web", path: "/w/web", type: "typescript" },
      { name: "webapp", path: "/w/webapp", type: "typescript" },
    ];
    server.handlers["agent.run"] = () => ({ session: "s", status: "done", reply: "", edits: 0, steps: 1 });
    stub.inputs.push("fix it");
    await stub.commands.get(Command.run)!();
    assert.equal(server.calls.at(-1)?.args.project, "web");
  });
});
