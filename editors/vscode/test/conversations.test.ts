// Unit tests of "Conversations 3" against the stubbed vscode API and a fake
// server: the model picker, failed runs with their reason, summaries, usage
// in the status bar, and the chat view (follow-ups, stop, #file/#selection,
// the end line).
import assert from "node:assert/strict";
import { afterEach, beforeEach, test } from "node:test";
import { ChatView, type ChatWebviewView, type FromPage, type ToPage } from "../src/chat";
import { ChatTranscript, endLine, parseRefs } from "../src/chatModel";
import { registerCommands, type CommandId } from "../src/commands";
import { defaultSettings } from "../src/config";
import { Ctx, type AgentServer, type Client, type SendOptions } from "../src/ctx";
import { renderMarkdown } from "../src/markdown";
import { modelKey } from "../src/models";
import type { AgentEvent, FinishedRun, MessageQueuedEvent, ModelsResult, ProgressValue, Request, RunStartEvent, UsageEvent } from "../src/protocol";
import { Selection, Uri, stub } from "./vscode-stub";
import { nth } from "./nth";

type Call = { command: string; args: any; workDoneToken?: string };

class FakeServer implements AgentServer {
  calls: Call[] = [];
  handlers: Record<string, (c: Call) => unknown> = {};
  async send<A, R>(req: Request<A, R>, args: A, opts?: SendOptions): Promise<R> {
    const call = { command: req.command, args, ...opts };
    this.calls.push(call);
    const h = this.handlers[req.command];
    if (!h) throw Object.assign(new Error(`unknown command "${req.command}"`), { code: -32602 });
    return (await h(call)) as R;
  }
  onProgress(_token: string, _handler: (v: ProgressValue) => void) {
    return { dispose() {} };
  }
  runs(): Call[] {
    return this.calls.filter((c) => c.command === "agent.run");
  }
}

const usage = { promptTokens: 1000, completionTokens: 11, totalTokens: 1011, cost: 0.00261 };
const runStart = (session: string): RunStartEvent => ({ session, seq: 1, type: "run.start", project: "sample", contextTokens: 8192 });
const finished = (r: Partial<FinishedRun>): FinishedRun => ({ session: "s1", status: "done", reply: "", edits: 0, steps: 1, usage, ...r });
const tick = () => new Promise((r) => setTimeout(r, 0));
/** Delivers ev as the server's agent/event notification. */
const emit = (ev: AgentEvent) => ctx.onEvent(ev);

let server: FakeServer;
let ctx: Ctx;
let restarts: number;
let state: Map<string, unknown>;

beforeEach(() => {
  stub.reset();
  server = new FakeServer();
  restarts = 0;
  state = new Map();
  const client: Client = {
    server: () => server,
    start: async () => {},
    configure: async () => {},
    restart: async () => {
      restarts++;
    },
    setApiKey: async () => {},
    about: async () => ({ extension: "0.2.0" }),
  };
  const memento = {
    keys: () => [...state.keys()],
    get: (k: string) => state.get(k),
    update: async (k: string, v: unknown) => {
      if (v === undefined) state.delete(k);
      else state.set(k, v);
    },
  } as any;
  ctx = new Ctx(client, () => ({ ...defaultSettings, model: "gpt-4o-mini" }), memento);
  registerCommands(ctx);
});

afterEach(() => ctx.dispose());

const exec = (id: CommandId, ...args: unknown[]) => stub.commands.get(id)!(...args);

const models: ModelsResult = { baseURL: "http://localhost:11434/v1", current: "scripted", models: [{ id: "scripted", ownedBy: "test" }, { id: "scripted-large" }] };

test("Agent: Select Model picks from agent.models, keeps it for the workspace, shows it, and every run names it; no restart", async () => {
  assert.equal(stub.items.get("agentLsp.model")?.text, "$(sparkle) gpt-4o-mini", "the settings' model before a pick");
  server.handlers["agent.models"] = () => models;
  let offered: string[] = [];
  stub.picks.push((items) => {
    offered = items.map((i: { label: string }) => i.label);
    return items.find((i: { label: string }) => i.label === "scripted-large");
  });
  await exec("agentLsp.selectModel");
  assert.deepEqual(offered.slice(0, 2), ["scripted", "scripted-large"]);
  assert.equal(state.get(modelKey), "scripted-large", "kept in the workspace's state");
  assert.equal(stub.items.get("agentLsp.model")?.text, "$(sparkle) scripted-large");
  assert.equal(restarts, 0, "switching never restarts the server");
  stub.inputs.push("hello");
  server.handlers["agent.run"] = () => finished({ reply: "Hi." });
  await exec("agentLsp.run");
  assert.equal(server.runs().at(-1)?.args.model, "scripted-large");
  // Back to the settings' model: runs name none.
  server.handlers["agent.models"] = () => models;
  stub.picks.push((items) => items.at(-1));
  await exec("agentLsp.selectModel");
  assert.equal(state.has(modelKey), false);
  stub.inputs.push("again");
  await exec("agentLsp.run");
  assert.equal("model" in server.runs().at(-1)!.args, false);
});

test("Agent: Select Model on an endpoint without a model list asks for the name", async () => {
  server.handlers["agent.models"] = () => {
    throw new Error("agent.models: http://x/v1 has no model list (GET /models: 404)");
  };
  stub.inputs.push(" my-model ");
  await exec("agentLsp.selectModel");
  assert.match(stub.inputBoxes.at(-1)?.prompt ?? "", /lists no models \(agent\.models: http:\/\/x\/v1 has no model list/);
  assert.equal(state.get(modelKey), "my-model");
});

test("a failed run shows its reason as an error, offering Resume", async () => {
  stub.inputs.push("Fail please");
  const error = "http://localhost:11434/v1 refused the request (HTTP 400): the model refused the request";
  server.handlers["agent.run"] = () => finished({ status: "failed", error, steps: 0, usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 } });
  await exec("agentLsp.run");
  assert.deepEqual(stub.messages.at(-1), { level: "error", text: `Agent failed (0 edits, 0 steps): ${error}` });
  assert.deepEqual(stub.buttonsShown.at(-1), ["Resume", "Open in Chat"]);
});

test("a run's summary shows tokens and cost, and the reply's first line without its Markdown", async () => {
  stub.inputs.push("explain");
  server.handlers["agent.run"] = () => finished({ reply: "# Why `Greet`\n\nIt **greets**." });
  await exec("agentLsp.run");
  assert.deepEqual(stub.messages, [{ level: "info", text: "Agent done (0 edits, 1 step, 1.0k tokens · $0.00261): Why Greet" }]);
});

test("usage events show the run's tokens and cost in the status bar", () => {
  const ev: UsageEvent = { session: "s1", seq: 4, type: "usage", model: "scripted", prompt: 1000, completion: 11, total: 1011, contextTokens: 8192, cost: 0.00261, run: { prompt: 4000, completion: 11, total: 4011, cost: 0.01011 } };
  ctx.onEvent(ev);
  const item = stub.items.get("agentLsp.usage")!;
  assert.equal(item.visible, true);
  assert.equal(item.text, "$(pulse) 4.0k tokens · $0.0101");
  assert.match(item.tooltip, /Last call \(scripted\): 1000 \+ 11 tokens in a 8\.2k context/);
});

// The chat view, driven through a fake webview: what the page would post, and what it receives.
class FakeView implements ChatWebviewView {
  received: ToPage[] = [];
  listener: ((m: FromPage) => unknown) | undefined;
  visible = true;
  webview = {
    options: {},
    html: "",
    cspSource: "vscode-resource:",
    asWebviewUri: (uri: any) => uri,
    postMessage: async (m: ToPage) => {
      this.received.push(m);
      return true;
    },
    onDidReceiveMessage: (l: (m: FromPage) => unknown) => {
      this.listener = l;
      return { dispose() {} };
    },
  };
  onDidDispose() {
    return { dispose() {} };
  }
  /** The transcript's HTML as the page shows it. */
  html(): string {
    const items = new Map<string, string>();
    for (const m of this.received) {
      if (m.type === "reset") items.clear();
      if (m.type === "reset" || m.type === "items") for (const i of m.items) items.set(i.id, i.html);
    }
    return [...items.values()].join("\n");
  }
  state(): Extract<ToPage, { type: "state" }> | undefined {
    return this.received.filter((m): m is Extract<ToPage, { type: "state" }> => m.type === "state").at(-1);
  }
}

function openChat(): { chat: ChatView; view: FakeView } {
  const chat = new ChatView(ctx, Uri.file("/ext") as any);
  ctx.pushCleanup(chat);
  const view = new FakeView();
  chat.resolve(view);
  return { chat, view };
}

test("the chat page loads only its own script and style, and every reply is escaped", () => {
  const { view } = openChat();
  const html = view.webview.html;
  const nonce = /content="default-src 'none'; style-src vscode-resource:; script-src 'nonce-(\w+)';"/.exec(html)?.[1];
  assert.ok(nonce, html);
  assert.deepEqual(
    [...html.matchAll(/<script[^>]*>/g)].map((m) => m[0]),
    [`<script nonce="${nonce}" src="file:///ext/media/chat.js">`, `<script nonce="${nonce}" src="file:///ext/media/slash.js">`],
    "two scripts, the page's own files",
  );
  assert.doesNotMatch(html, /<script[^>]*>[^<]/, "no inline script");
  assert.match(html, /<link rel="stylesheet" href="file:\/\/\/ext\/media\/chat\.css">/);
  assert.doesNotMatch(html, /<style/, "no inline style");
  assert.equal(renderMarkdown("<img src=x onerror=alert(1)> **b** `<i>`"), "<p>&lt;img src=x onerror=alert(1)&gt; <strong>b</strong> <code>&lt;i&gt;</code></p>");
  assert.equal(renderMarkdown("[x](javascript:alert(1))"), "<p>[x](javascript:alert(1))</p>");
});

test("a chat: the first prompt starts a session with #selection attached, a follow-up while it runs is queued in it, Stop cancels it", async () => {
  const { chat, view } = openChat();
  stub.activeTextEditor = { document: { uri: Uri.file("/w/sample/greet.go") }, selection: new Selection(2, 0, 4, 1) };
  let finish!: (r: FinishedRun) => void;
  const queue: string[] = [];
  server.handlers["agent.run"] = (c) => {
    if (c.args.session === "s-chat") {
      queue.push(c.args.prompt);
      const ev: MessageQueuedEvent = { session: "s-chat", seq: 5, type: "message.queued", message: { id: "q1", role: "human", content: c.args.prompt }, position: queue.length };
      ctx.onEvent(ev);
      return { session: "s-chat", status: "queued", position: queue.length, reply: "", edits: 0, steps: 0, usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 } };
    }
    ctx.onEvent(runStart("s-chat"));
    emit({ session: "s-chat", seq: 2, type: "message.delta", text: "Looking at **Greet**" });
    emit({ session: "s-chat", seq: 3, type: "tool.start", name: "read_file", args: '{"path":"greet.go"}', callId: "c1" });
    emit({ session: "s-chat", seq: 4, type: "tool.end", name: "read_file", callId: "c1", ok: true, summary: "5 lines" });
    return new Promise<FinishedRun>((resolve) => (finish = resolve));
  };
  server.handlers["agent.cancel"] = () => {
    emit({ session: "s-chat", seq: 9, type: "run.end", status: "cancelled" });
    finish(finished({ session: "s-chat", status: "cancelled", steps: 2, queued: queue }));
    return { cancelled: true };
  };
  const first = view.listener!({ type: "send", text: "Explain #selection please" });
  await tick();
  await tick();
  const run = nth(server.runs(), 0);
  assert.deepEqual(run.args.context, [{ uri: "file:///w/sample/greet.go", range: { start: { line: 2, character: 0 }, end: { line: 4, character: 1 } } }]);
  assert.equal(run.args.session, undefined, "a new chat starts a new session");
  assert.equal(chat.session, "s-chat", "the chat follows the session its run started");
  assert.deepEqual(view.state(), { type: "state", running: true, session: "s-chat", title: "Explain #selection please", mode: "agent" }, "Stop shows while it runs");
  let html = view.html();
  assert.match(html, /You<\/div><p>Explain #selection please<\/p><div class="refs"><span class="ref">#selection greet\.go:3-5<\/span>/);
  assert.match(html, /Looking at <strong>Greet<\/strong>/, "the reply streams as Markdown");
  assert.match(html, /<details class="tool ok"><summary><span class="mark">✓<\/span> <b>read_file<\/b> greet\.go <span class="status">5 lines<\/span>/);

  await view.listener!({ type: "send", text: "Also cover errors" });
  assert.equal(nth(server.runs(), 1).args.session, "s-chat", "the follow-up goes to the chat's session");
  assert.match(view.html(), /queued #1: the agent reads it at its next step<\/span><\/div><p>Also cover errors<\/p>/);

  await view.listener!({ type: "stop" });
  await first;
  assert.deepEqual(server.calls.find((c) => c.command === "agent.cancel")?.args, { session: "s-chat" });
  html = view.html();
  assert.match(html, /── cancelled · 0 edits · 2 steps · 1\.0k tokens · \$0\.00261/, "the end line has the result's counts");
  assert.equal(view.state()?.running, false, "Stop hides once the run ended");
});

test("images pasted or dropped in the chat go with the prompt as agent.run's images", async () => {
  const { view } = openChat();
  server.handlers["agent.run"] = () => finished({ session: "s-img", reply: "A gray square.", steps: 1 });
  const images = [{ data: "iVBORw0KGgo=", mimeType: "image/png" }];
  await view.listener!({ type: "send", text: "What is wrong here?", images });
  assert.deepEqual(server.runs().at(-1)?.args.images, images);
  await view.listener!({ type: "send", text: "And without one?" });
  assert.equal(server.runs().at(-1)?.args.images, undefined, "a prompt without images sends none");
  assert.match(view.webview.html, /<div id="attached" hidden><\/div>/, "the box says what is attached");
});

test("a chat follow-up after the run ended continues the session; a failed run's reason shows in the end line", async () => {
  const { chat, view } = openChat();
  server.handlers["agent.run"] = (c) => {
    const session = c.args.session ?? "s2";
    ctx.onEvent(runStart(session));
    if (c.args.session) {
      emit({ session, seq: 3, type: "run.end", status: "failed", error: "the endpoint is unreachable: resume the session when it is back" });
      return finished({ session, status: "failed", error: "the endpoint is unreachable: resume the session when it is back", steps: 0 });
    }
    emit({ session, seq: 2, type: "edit", uri: "file:///w/sample/greet.go", applied: true });
    emit({ session, seq: 3, type: "run.end", status: "done" });
    return finished({ session, reply: "Done.", edits: 1, steps: 3 });
  };
  await view.listener!({ type: "send", text: "Add Farewell" });
  assert.equal(chat.session, "s2");
  assert.match(view.html(), /edited <a href="#" data-open="file:\/\/\/w\/sample\/greet\.go">greet\.go<\/a>/, "the edit links its file");
  assert.match(view.html(), /── done · 1 edit · 3 steps/);
  await view.listener!({ type: "open", uri: "file:///w/sample/greet.go" });
  assert.equal(stub.shown.at(-1)?.path, "/w/sample/greet.go", "the link opens the file");
  await view.listener!({ type: "send", text: "And now?" });
  assert.equal(nth(server.runs(), 1).args.session, "s2");
  assert.match(view.html(), /<div class="end error">── failed · 0 edits · 0 steps · 1\.0k tokens · \$0\.00261: the endpoint is unreachable: resume the session when it is back/);
  assert.equal(stub.messages.length, 0, "no notification: the chat shows the run");
  view.visible = false;
  await view.listener!({ type: "send", text: "And once more?" });
  assert.equal(stub.messages.length, 1, "one notification when the chat is hidden");
  assert.match(nth(stub.messages, 0).text, /^Agent failed/);
});

test("the chat's session picker loads a stored transcript; #file:PATH attaches a workspace file; an unknown one is refused in the chat", async () => {
  const { chat, view } = openChat();
  server.handlers["agent.sessions"] = () => [{ session: "s-old", project: "sample", title: "Add Farewell", status: "done", created: "", updated: "", messages: 3 }];
  await view.listener!({ type: "sessions" });
  assert.deepEqual(view.received.at(-1), { type: "sessions", list: [{ session: "s-old", label: "Add Farewell · done" }], current: "", title: "" });
  server.handlers["agent.session"] = () => ({
    session: "s-old",
    project: "sample",
    status: "done",
    title: "Add Farewell",
    subagents: [],
    messages: [
      { id: "1", role: "human", content: "Add Farewell" },
      { id: "2", role: "ai", content: "On it.", toolCalls: [{ id: "c1", name: "edit_file", args: '{"path":"greet.go"}' }] },
      { id: "3", role: "tool", content: "edited greet.go", toolCallId: "c1" },
      { id: "4", role: "ai", content: "Added it." },
    ],
  });
  await view.listener!({ type: "pick", session: "s-old" });
  assert.equal(chat.session, "s-old");
  assert.match(view.html(), /Add Farewell[\s\S]*On it\.[\s\S]*✓<\/span> <b>edit<\/b> <a href="#" data-path="greet\.go">greet\.go<\/a> <span class="status">edited greet\.go<\/span>[\s\S]*Added it\.[\s\S]*── done/);
  stub.workspaceFolders = [{ uri: Uri.file("/w/sample"), name: "sample" }];
  stub.files.add("/w/sample/greet_test.go");
  server.handlers["agent.run"] = (c) => finished({ session: c.args.session });
  await view.listener!({ type: "send", text: "Check #file:greet_test.go" });
  assert.deepEqual(server.runs().at(-1)?.args.context, [{ uri: "file:///w/sample/greet_test.go" }]);
  await view.listener!({ type: "send", text: "Check #file:nope.go" });
  assert.match(view.html(), /<div class="line error">#file:nope\.go: no such file in the workspace folders<\/div>/);
  assert.equal(server.runs().length, 1, "nothing sent with a reference that does not resolve");
});

test("references parse once each; the end line reads as a sentence", () => {
  assert.deepEqual(parseRefs("fix #selection, see #file and #file:a/b.go; #selection again #filex"), [{ kind: "selection" }, { kind: "file" }, { kind: "file", path: "a/b.go" }]);
  assert.equal(endLine({ status: "failed", error: "no key", edits: 0, steps: 0 }), "failed · 0 edits · 0 steps: no key");
  assert.equal(endLine({ status: "done", edits: 1, steps: 3, usage: { total: 4011, cost: 0.01011 }, model: "scripted-large" }), "done · 1 edit · 3 steps · 4.0k tokens · $0.0101 · scripted-large");
  assert.equal(new ChatTranscript().event({ session: "s", seq: 1, type: "message.delta", text: "", contextId: "subagent-x" }).length, 0);
});

test("an edit under review shows in the chat with its diff; the page's buttons decide it; an unknown action is refused", async () => {
  const { chat, view } = openChat();
  stub.fileTexts.set("/w/notes.txt", "one\ntwo\n");
  const passed: unknown[] = [];
  const params = {
    label: "agent: edit notes.txt",
    edit: {
      documentChanges: [{ textDocument: { uri: "file:///w/notes.txt", version: null }, edits: [{ range: { start: { line: 1, character: 0 }, end: { line: 2, character: 0 } }, newText: "TWO\n" }] }],
      changeAnnotations: { r: { label: "x", needsConfirmation: true, description: "proposed by agent-lsp; accept or reject" } },
    },
  };
  const answer = ctx.reviews.handle(params, async (p) => (passed.push(p), { applied: true }));
  await tick();
  await tick();
  assert.match(view.html(), /Review: agent: edit notes\.txt/);
  assert.match(view.html(), /<span class="del">-two<\/span>\n<span class="add">\+TWO<\/span>/);
  await chat.onMessage({ type: "review", action: "nope" as never, id: 1 });
  assert.match(view.html(), /unknown review action &quot;nope&quot;/);
  const review = nth(ctx.reviews.list(), 0);
  const hunk = nth(ctx.reviews.hunks(review, 0), 0);
  await chat.onMessage({ type: "review", action: "acceptChange", id: review.id, file: 0, key: hunk.key });
  assert.deepEqual(await answer, { applied: true }, "the last hunk accepted answers the edit");
  assert.equal(passed.length, 1);
  await tick();
  assert.match(view.html(), /✓ agent: edit notes\.txt: accepted/);
  assert.doesNotMatch(view.html(), /data-review=/, "no buttons once decided");
});
