// Unit tests of the commands against the stubbed vscode API and a fake server.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { afterEach, beforeEach, describe, test } from "node:test";
import type { AboutInfo } from "../src/about";
import { commands, registerCommands, type CommandId } from "../src/commands";
import { defaultSettings } from "../src/config";
import { Ctx, type AgentServer, type Client, type SendOptions } from "../src/ctx";
import type { FinishedRun, MessageQueuedEvent, ProgressValue, Request, RunStartEvent, SessionDetail } from "../src/protocol";
import { Range, Selection, Uri, stub } from "./vscode-stub";
import { nth } from "./nth";

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
const runStart = (session: string): RunStartEvent => ({ session, seq: 1, type: "run.start", project: "sample", contextTokens: 8192 });

let server: FakeServer;
let ctx: Ctx;
let client: Client & { keys: string[]; restarts: number; info: AboutInfo };
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
    start: async () => {},
    configure: async () => {},
    setApiKey: async (k) => void client.keys.push(k),
    restart: async () => {
      client.restarts++;
    },
    info: { extension: "0.2.0", server: { command: "/opt/agent-lsp", version: "0.2.0", running: true } },
    about: async () => client.info,
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
    for (const menu of Object.values<{ command: string }[]>(pkg.contributes.menus)) {
      for (const m of menu) assert.ok(contributed.includes(m.command), `menu entry ${m.command} is a contributed command`);
    }
  });

  test("Agent: About shows the extension's and the server's versions, and warns when they differ or the server is missing", async () => {
    await exec("agentLsp.about");
    assert.deepEqual(stub.messages, [{ level: "info", text: "agent-lsp: extension 0.2.0, server 0.2.0 (/opt/agent-lsp, running)" }]);
    assert.match(stub.output.join(""), /extension 0\.2\.0, server 0\.2\.0/);
    stub.messages = [];
    client.info = { extension: "0.2.0", server: { command: "/usr/bin/agent-lsp", version: "0.1.0", running: false } };
    await exec("agentLsp.about");
    assert.equal(nth(stub.messages, 0).level, "warning");
    assert.match(nth(stub.messages, 0).text, /extension 0\.2\.0, server 0\.1\.0 \(\/usr\/bin\/agent-lsp\)\. The server is not the extension's version 0\.2\.0/);
    stub.messages = [];
    client.info = { extension: "0.2.0" };
    await exec("agentLsp.about");
    assert.deepEqual(stub.messages, [{ level: "warning", text: "agent-lsp: extension 0.2.0; the server binary was not found. Install agent-lsp or set agentLsp.path." }]);
  });

  test("Agent: Select Mode: the status item shows the mode, the picker switches it, and every run from then on names it", async () => {
    const item = stub.items.get("agentLsp.mode")!;
    assert.equal(item.visible, true);
    assert.match(item.text, /agent$/);
    assert.equal(item.command, "agentLsp.selectMode");
    stub.picks.push((items: { mode: string }[]) => items.find((i) => i.mode === "plan"));
    await exec("agentLsp.selectMode");
    assert.match(item.text, /plan$/);
    assert.match(item.tooltip, /only reads, and answers with a plan/);
    stub.inputs.push("How would you split it?");
    server.handlers["agent.run"] = async () => ({ session: "s-plan", status: "done", reply: "1. split", plan: "1. split", edits: 0, steps: 1 });
    await exec("agentLsp.run");
    assert.equal(server.calls.find((c) => c.command === "agent.run")!.args.mode, "plan");
    stub.picks.push((items: { mode: string }[]) => items.find((i) => i.mode === "agent"));
    await exec("agentLsp.selectMode");
    assert.match(item.text, /agent$/);
  });

  test("Agent: Run sends prompt, selection and edit mode, shows progress in the status bar (no progress toast) and one summary", async () => {
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
      mode: "agent",
      project: undefined,
    });
    assert.match(call.workDoneToken!, /^agent-lsp-vscode:\d+$/);
    assert.equal(stub.progress.length, 0, "no progress notification: the status bar and the chat show it");
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

  test("the summary's Open in Chat shows that session in the chat", async () => {
    stub.inputs.push("do it");
    stub.buttons.push("Open in Chat");
    const shown: (string | undefined)[] = [];
    ctx.runs.onShowInChat((s) => shown.push(s));
    server.handlers["agent.run"] = () => ({ session: "s1", status: "done", reply: "## Done\n\nAll **good**.", edits: 0, steps: 1 });
    await exec("agentLsp.run");
    await tick();
    assert.deepEqual(stub.messages, [{ level: "info", text: "Agent done (0 edits, 1 step): Done" }], "one toast, its text without Markdown marks");
    assert.deepEqual(stub.buttonsShown, [["Open in Chat", "Follow Up"]]);
    assert.deepEqual(shown, ["s1"]);
  });

  for (const via of ["Agent: Cancel"]) {
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
      await exec("agentLsp.cancel");
      await running;
      assert.deepEqual(server.calls.find((c) => c.command === "agent.cancel")?.args, { session: "s-slow" });
      assert.equal(stub.messages.at(-1)?.text, "Agent cancelled (0 edits, 1 step)");
    });
  }

  test("cancelling before the session is known cancels the request itself", async () => {
    stub.inputs.push("slow work");
    server.handlers["agent.run"] = (c) => new Promise((_, reject) => c.token.onCancellationRequested(() => reject(Object.assign(new Error("cancelled"), { code: -32800 }))));
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
    assert.deepEqual(server.calls.at(-1)?.args, { session: "s-cut", edits: "apply", mode: "agent" });
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
    assert.equal(nth(stub.opened, 0).uri.scheme, "agent-session");
    assert.match(nth(stub.opened, 0).content, /## You\n\nAdd Farewell/);
    assert.match(nth(stub.opened, 0).content, /#### edit_file result\n\n```\nedited greet.go\n```/);
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
    server.handlers["agent.projects"] = () => [project("api", "/w/api", "go"), project("web", "/w/web", "typescript")];
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

  test("Agent: MCP Servers opens each project's servers, their status, tools and what was left out, as a read-only Markdown document", async () => {
    server.handlers["agent.mcp"] = () => [
      {
        project: "api",
        root: "/w/api",
        servers: [
          { name: "docs", source: "editor", origin: "initializationOptions.mcpServers", transport: "stdio", status: "running", tools: 12, withheld: ["mcp__docs__search_all"] },
          { name: "db", source: "project", origin: "/w/api/.mcp.json", transport: "stdio", status: "waiting for approval", reason: "a repository's server starts once approved", tools: -1 },
        ],
      },
      { project: "web", root: "/w/web", servers: [] },
    ];
    await exec("agentLsp.showMcp");
    assert.equal(stub.opened[0]?.uri.scheme, "agent-mcp");
    const md = stub.opened[0].content;
    assert.match(md, /## api\n\n`\/w\/api`\n\n- `docs` · running · 12 tools · stdio · from the agentLsp.mcpServers setting/);
    assert.match(md, / {2}- left out to fit the context: `mcp__docs__search_all`/);
    assert.match(md, /- `db` · waiting for approval · tools not listed yet · stdio · from the repository's .mcp.json \(`\/w\/api\/.mcp.json`\)\n {2}- a repository's server starts once approved/);
    assert.match(md, /## web\n\n`\/w\/web`\n\nNo MCP servers: add them/);
  });

  test("agent/event kinds the extension does not know are ignored", () => {
    ctx.onEvent({ session: "s1", seq: 1, type: "future.kind" });
    assert.deepEqual(stub.output, []);
    ctx.onEvent(runStart("s1"));
    assert.deepEqual(stub.output, ["── session s1 · project sample · context 8192 tokens\n"]);
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

  describe("follow-ups and queued prompts", () => {
    const usage = { promptTokens: 0, completionTokens: 0, totalTokens: 0 };
    /** Ends the slow run going, as the server would: with the prompts queued for it that it never read. */
    let finishSlow: ((r: Partial<FinishedRun>) => void) | undefined;
    let queue: string[];

    beforeEach(() => {
      queue = [];
      // A server with one slow run of s-slow: agent.run with that session queues while it goes.
      server.handlers["agent.run"] = (c) => {
        if (c.args.session === "s-slow" && finishSlow) {
          queue.push(c.args.prompt);
          const queued: MessageQueuedEvent = {
            session: "s-slow",
            seq: 10 + queue.length,
            type: "message.queued",
            message: { id: `q${queue.length}`, role: "human", content: c.args.prompt },
            position: queue.length,
          };
          ctx.onEvent(queued);
          return { session: "s-slow", status: "queued", position: queue.length, reply: "", edits: 0, steps: 0, usage };
        }
        if (c.args.session) {
          return { session: c.args.session, status: "done", reply: "Continued.", edits: 0, steps: 2, usage };
        }
        ctx.onEvent(runStart("s-slow"));
        return new Promise((resolve) => {
          finishSlow = (r) => resolve({ session: "s-slow", status: "cancelled", reply: "", edits: 0, steps: 1, usage, ...r });
        });
      };
    });
    afterEach(() => (finishSlow = undefined));

    test("Agent: Follow Up during a run queues the prompt in that session: no second run, no error, a queued line", async () => {
      stub.inputs.push("slow work");
      const running = exec("agentLsp.run");
      await tick();
      stub.inputs.push("  Also cover the error case ");
      const result = await exec("agentLsp.followUp");
      const call = server.calls.at(-1)!;
      assert.deepEqual(call.args, { prompt: "Also cover the error case", session: "s-slow", edits: "apply", mode: "agent" }, "the running session, without a project");
      assert.match(stub.inputBoxes.at(-1)?.prompt ?? "", /Add to the running session s-slow \(agent: slow work\)/);
      assert.equal(result.status, "queued");
      assert.ok(stub.output.join("").includes("queued (position 1): Also cover the error case\n"), stub.output.join(""));
      assert.deepEqual(stub.messages, [{ level: "info", text: "Agent: queued as #1 for the running session s-slow; the agent reads it at its next step" }], "where it waits; no summary, no error");
      assert.deepEqual(
        ctx.runs.list().map((r) => r.session),
        ["s-slow"],
        "only the running run goes on",
      );
      assert.equal(server.calls.filter((c) => c.command === "agent.cancel").length, 0);
      // A second follow-up waits behind the first.
      stub.inputs.push("And the docs");
      assert.equal((await exec("agentLsp.followUp")).position, 2);
      assert.match(stub.messages.at(-1)?.text ?? "", /^Agent: queued as #2 for the running session s-slow/);
      // The run reads both: its own result covers them.
      finishSlow!({ status: "done", reply: "Did all three.", steps: 5 });
      await running;
      assert.deepEqual(stub.messages.at(-1), { level: "info", text: "Agent done (0 edits, 5 steps): Did all three." });
      assert.equal(stub.messages.length, 3, "one summary, for the run");
    });

    test("a run that ends without reading its queued prompts lists them and offers them back: Send Again sends them to the session", async () => {
      stub.inputs.push("slow work");
      const running = exec("agentLsp.run");
      await tick();
      stub.inputs.push("Also say hi");
      await exec("agentLsp.followUp");
      stub.inputs.push("And bye");
      await exec("agentLsp.followUp");
      stub.buttons.push("Send Again");
      server.handlers["agent.cancel"] = () => {
        finishSlow!({ queued: [...queue] });
        finishSlow = undefined;
        return { cancelled: true };
      };
      await exec("agentLsp.cancel");
      await running;
      await tick();
      assert.deepEqual(stub.messages[2], { level: "warning", text: "Agent cancelled (0 edits, 1 step) · 2 queued prompts not read" });
      assert.deepEqual(stub.buttonsShown[2], ["Send Again", "Open in Chat"]);
      const out = stub.output.join("");
      assert.ok(out.includes("  not read by the cancelled run: Also say hi\n  not read by the cancelled run: And bye\n"), out);
      const again = server.calls.at(-1)!;
      assert.equal(again.command, "agent.run");
      assert.deepEqual(again.args, { prompt: "Also say hi\n\nAnd bye", session: "s-slow", edits: "apply", mode: "agent" }, "sent again, in order, without asking");
      assert.equal(stub.inputs.length, 0);
      assert.equal(stub.messages.at(-1)?.text, "Agent done (0 edits, 2 steps): Continued.");
    });

    test("Agent: Follow Up with no run going continues the last session as a run of its own", async () => {
      server.handlers["agent.run"] = () => ({ session: "s1", status: "done", reply: "First.", edits: 0, steps: 1, usage });
      stub.inputs.push("first");
      await exec("agentLsp.run");
      server.handlers["agent.run"] = (c) => ({ session: c.args.session, status: "done", reply: "Second.", edits: 1, steps: 2, usage });
      stub.inputs.push("and then");
      await exec("agentLsp.followUp");
      assert.deepEqual(server.calls.at(-1)?.args, { prompt: "and then", session: "s1", edits: "apply", mode: "agent" });
      assert.match(stub.inputBoxes.at(-1)?.prompt ?? "", /Continue session s1/);
      assert.equal(stub.messages.at(-1)?.text, "Agent done (1 edit, 2 steps): Second.");
    });

    test("Agent: Follow Up before any run asks for the session; the summary's Follow Up button follows up on its session", async () => {
      stub.picks.push((items) => items.find((i: { session: string }) => i.session === "s-cut"));
      stub.inputs.push("go on");
      stub.buttons.push("Follow Up");
      stub.inputs.push("one more thing");
      await exec("agentLsp.followUp");
      await tick();
      await tick();
      const runs = server.calls.filter((c) => c.command === "agent.run").map((c) => c.args);
      assert.deepEqual(runs, [
        { prompt: "go on", session: "s-cut", edits: "apply", mode: "agent" },
        { prompt: "one more thing", session: "s-cut", edits: "apply", mode: "agent" },
      ]);
    });

    test("Agent: Run during a run starts a new session and says that Follow Up adds to the running one", async () => {
      stub.inputs.push("slow work");
      const running = exec("agentLsp.run");
      await tick();
      assert.doesNotMatch(nth(stub.inputBoxes, 0).prompt ?? "", /Follow Up/, "no hint with nothing running");
      const finish = finishSlow!;
      server.handlers["agent.run"] = () => ({ session: "s-other", status: "done", reply: "", edits: 0, steps: 1, usage });
      stub.inputs.push("something else");
      await exec("agentLsp.run");
      assert.equal(server.calls.at(-1)?.args.session, undefined);
      assert.match(stub.inputBoxes.at(-1)?.prompt ?? "", /A new session; Agent: Follow Up adds to the running one/);
      finish({ status: "done" });
      await running;
    });
  });

  describe("subagent transcripts", () => {
    const detail = (context?: string): SessionDetail =>
      context
        ? {
            session: "s1",
            context,
            project: "sample",
            status: "done",
            title: "List the Go files",
            messages: [
              { id: "t", role: "human", content: "List the Go files" },
              { id: "a", role: "ai", content: "greet.go" },
            ],
            subagents: [],
          }
        : {
            session: "s1",
            project: "sample",
            status: "done",
            title: "Tidy",
            messages: [{ id: "1", role: "human", content: "Tidy" }],
            subagents: [
              { contextId: "subagent-c1", task: "List the Go files", status: "done" },
              { contextId: "subagent-c2", task: "Read the tests", status: "cancelled" },
            ],
          };

    beforeEach(() => {
      server.handlers["agent.session"] = (c) => detail(c.args.context);
    });

    test("a session's transcript lists its subagents with task and status, each a link to its transcript", async () => {
      await exec("agentLsp.showSession", "s1");
      const md = nth(stub.opened, 0).content;
      assert.match(md, /## Subagents\n\n- \[List the Go files\]\(agent-session:\/s1\/subagent-c1\.md\) · done · `subagent-c1`\n- \[Read the tests\]\(agent-session:\/s1\/subagent-c2\.md\) · cancelled/);
      // The links, also without a Markdown extension.
      const { selector, provider } = nth(stub.linkProviders, 0);
      assert.deepEqual(selector, { scheme: "agent-session" });
      const doc = await (await import("./vscode-stub")).workspace.openTextDocument(nth(stub.opened, 0).uri);
      const links = provider.provideDocumentLinks(doc);
      assert.deepEqual(
        links.map((l: any) => l.target.toString()),
        ["agent-session:///s1/subagent-c1.md", "agent-session:///s1/subagent-c2.md"],
      );
      const line = md.split("\n").findIndex((l) => l.includes("subagent-c1.md"));
      assert.equal(links[0].range.start.line, line);
      assert.equal(nth(md.split("\n"), line).slice(links[0].range.start.character, links[0].range.end.character), "agent-session:/s1/subagent-c1.md");
    });

    test("a subagent's transcript is agent.session with its context, opened from its link or with Show Session", async () => {
      const provider = stub.contentProviders.get("agent-session");
      const { Uri } = await import("./vscode-stub");
      const md: string = await provider.provideTextDocumentContent(Uri.parse("agent-session:/s1/subagent-c1.md"));
      assert.deepEqual(server.calls.at(-1)?.args, { session: "s1", context: "subagent-c1" });
      assert.match(md, /^# Subagent: List the Go files\n\nSubagent `subagent-c1` of session \[`s1`\]\(agent-session:\/s1\.md\) · project \*\*sample\*\* · done/);
      await exec("agentLsp.showSession", "s1", "subagent-c2");
      assert.equal(stub.opened.at(-1)?.uri.path, "/s1/subagent-c2.md");
      assert.deepEqual(server.calls.at(-1)?.args, { session: "s1", context: "subagent-c2" });
      assert.equal((await provider.provideTextDocumentContent(Uri.parse("agent-session:/s1.md"))).includes("## Subagents"), true);
      assert.deepEqual(server.calls.at(-1)?.args, { session: "s1" }, "a session's own transcript sends no context");
    });

    test("a subagent that cannot be loaded says so in its document", async () => {
      server.handlers["agent.session"] = () => {
        throw new Error('agent.session: session s1 has no subagent context "subagent-x"');
      };
      await exec("agentLsp.showSession", "s1", "subagent-x");
      assert.match(nth(stub.opened, 0).content, /^# Subagent subagent-x of session s1\n\nCould not load it: agent.session: session s1 has no subagent context/);
    });
  });

  test("in a multi-root window a run goes to the project of the active file", async () => {
    stub.workspaceFolders = [{}, {}];
    stub.activeTextEditor = { document: { uri: Uri.file("/w/web/src/app.ts") }, selection: new Selection(0, 0, 0, 0) };
    server.handlers["agent.projects"] = () => [project("w", "/w", "unknown"), project("web", "/w/web", "typescript"), project("webapp", "/w/webapp", "typescript")];
    server.handlers["agent.run"] = () => ({ session: "s", status: "done", reply: "", edits: 0, steps: 1 });
    stub.inputs.push("fix it");
    await exec("agentLsp.run");
    assert.equal(server.calls.at(-1)?.args.project, "web");
  });
});
