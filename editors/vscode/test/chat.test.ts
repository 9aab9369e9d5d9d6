// Unit tests of the chat's renderers (markdown.ts, toolRows.ts, chatModel.ts)
// and of the chat showing the commands' runs (chat.ts with a fake webview and
// a fake server): Markdown with tables, task lists and highlighted code; edit
// rows as per-line diffs; command rows with their exit code and last output;
// statuses that agree between a live run and its stored transcript; Agent:
// Run and Ask Agent About This Selection shown in the chat, with no toast
// while the chat shows them; the picker naming sessions by title.
import assert from "node:assert/strict";
import { afterEach, beforeEach, test } from "node:test";
import { ChatView, sessionLabel, type ChatWebviewView, type FromPage, type ToPage } from "../src/chat";
import { ChatTranscript } from "../src/chatModel";
import { registerCommands, type CommandId } from "../src/commands";
import { defaultSettings } from "../src/config";
import { Ctx, type AgentServer, type Client, type SendOptions } from "../src/ctx";
import { summary } from "../src/format";
import { plainLine, renderMarkdown } from "../src/markdown";
import type { AgentEvent, FinishedRun, ProgressValue, Request, SessionDetail } from "../src/protocol";
import { diffLimit, editDiff, status, toolHtml, type ToolRow } from "../src/toolRows";
import { Selection, Uri, stub } from "./vscode-stub";
import { nth } from "./nth";

test("Markdown: tables, task lists, strikethrough and highlighted code; raw HTML escaped, only web and file links", () => {
  const table = renderMarkdown("| Name | Kind |\n|---|:-:|\n| Greet | func |\n| `x` | var |");
  assert.match(table, /^<table>\n<thead>\n<tr>\n<th>Name<\/th>\n<th style="text-align:center">Kind<\/th>/);
  assert.match(table, /<td>Greet<\/td>[\s\S]*<td><code>x<\/code><\/td>/);
  const tasks = renderMarkdown("- [x] tests pass\n- [ ] docs");
  assert.equal((tasks.match(/<input [^>]*type="checkbox"[^>]*disabled/g) ?? []).length, 2, tasks);
  assert.match(tasks, /checked/);
  assert.doesNotMatch(tasks, /\[x\]|\[ \]/, "the boxes replace the brackets");
  const code = renderMarkdown('```go\nfunc A() string { return "<b>" }\n```');
  assert.match(code, /^<pre><code class="language-go"><span class="hljs-function"><span class="hljs-keyword">func<\/span>/);
  assert.match(code, /&quot;&lt;b&gt;&quot;/, "code stays escaped");
  assert.match(renderMarkdown("```nosuchlang\n<i>\n```"), /<pre><code class="language-nosuchlang">&lt;i&gt;\n<\/code><\/pre>/);
  assert.equal(renderMarkdown("~~old~~ new"), "<p><s>old</s> new</p>");
  assert.equal(renderMarkdown("<script>alert(1)</script>"), "<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>");
  assert.equal(renderMarkdown("![x](https://example.com/x.png)"), '<p><a href="https://example.com/x.png" title="https://example.com/x.png">x</a></p>', "an image is a link, not loaded");
  assert.equal(renderMarkdown("![x](javascript:alert(1))"), "<p>![x](javascript:alert(1))</p>");
  assert.equal(renderMarkdown("[x](data:text/html,hi) [y](vbscript:x)"), "<p>[x](data:text/html,hi) [y](vbscript:x)</p>");
  assert.equal(renderMarkdown("[docs](https://example.com/a)"), '<p><a href="https://example.com/a" title="https://example.com/a">docs</a></p>');
  assert.equal(renderMarkdown("[greet](file:///w/greet.go)"), '<p><a href="#" data-open="file:///w/greet.go">greet</a></p>', "a file link opens in the editor");
  assert.equal(renderMarkdown("one\ntwo"), "<p>one<br>\ntwo</p>", "a line break stays one");
});

test("a notification's text has no Markdown marks", () => {
  assert.equal(plainLine("## Done: `Greet` **works**, see [docs](https://x)\nmore"), "Done: Greet works, see docs");
  assert.equal(plainLine("- [x] *all* tests pass"), "all tests pass");
  assert.equal(plainLine("snake_case_name stays"), "snake_case_name stays");
  const r: FinishedRun = { session: "s", status: "done", reply: "# Summary\n\nDone.", edits: 0, steps: 1, usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 } };
  assert.equal(summary(r), "Agent done (0 edits, 1 step): Summary");
});

const row = (r: Partial<ToolRow>): ToolRow => ({ id: "t-1", name: "read_file", args: "{}", ...r });
const edit = JSON.stringify({ path: "greet.go", old_text: 'func Greet() {\n\treturn "Hello"\n}\n', new_text: 'func Greet() {\n\treturn "Hi"\n}\n' });

test("an edit row is a unified diff, one element per line, marked added or removed", () => {
  const html = toolHtml(row({ name: "edit_file", args: edit, end: { ok: true, summary: "edited greet.go", output: "edited greet.go" }, uri: "file:///w/greet.go" }));
  const lines = [...html.matchAll(/<div class="ln (\w+)">([^<]*)<\/div>/g)].map((m) => `${m[1]} ${m[2]}`);
  assert.deepEqual(lines, ["ctx  func Greet() {", "del -\treturn &quot;Hello&quot;", "add +\treturn &quot;Hi&quot;", "ctx  }"]);
  assert.match(html, /<details class="tool ok" open><summary><span class="mark">✓<\/span> <b>edit<\/b> <a href="#" data-open="file:\/\/\/w\/greet\.go">greet\.go<\/a> <span class="status">edited greet\.go<\/span>/);
  const created = editDiff("create_file", JSON.stringify({ path: "a.go", content: "package a\n\nfunc A() {}\n" }))!;
  assert.deepEqual(created, {
    lines: [
      { kind: "add", text: "package a" },
      { kind: "add", text: "" },
      { kind: "add", text: "func A() {}" },
    ],
    note: "new file",
  });
  assert.equal(editDiff("edit_file", JSON.stringify({ path: "a", start_line: 3, end_line: 5, new_text: "x\n" }))!.note, "replaces lines 3–5");
  const big = toolHtml(row({ name: "create_file", args: JSON.stringify({ path: "big.txt", content: "x\n".repeat(diffLimit + 5) }) }));
  assert.match(big, /⋯ 5 more lines/);
  assert.doesNotMatch(big, /<details[^>]* open/, "a long diff starts folded");
});

test("command rows: the command, its exit code and its output's tail; a non-zero exit is not a failed tool", () => {
  const args = JSON.stringify({ command: "go test ./..." });
  const failing = row({ name: "run_command", args, end: { ok: false, summary: "go test ./...: exit status 1", output: "exit status 1\n$ go test ./...\n--- FAIL: TestGreet\nFAIL" } });
  assert.deepEqual(status(failing), { mark: "●", words: "exit 1", kind: "exit" });
  const html = toolHtml(failing);
  assert.match(html, /<details class="tool exit" open><summary><span class="mark">●<\/span> <b>\$<\/b> <code>go test \.\/\.\.\.<\/code> <span class="status">exit 1<\/span><\/summary><pre class="output">--- FAIL: TestGreet\nFAIL<\/pre>/);
  assert.deepEqual(status({ ...failing, end: { ok: true, summary: "go vet: exit status 0", output: "exit status 0\n$ go vet" } }), { mark: "✓", words: "exit 0", kind: "ok" });
  // A long output's tail has no header: the summary has the code.
  const long = { ok: false, summary: "make: exit status 2", output: "line 1\nexit status 9 in the output\n$ not the command" };
  assert.equal(status(row({ name: "run_command", args, end: long })).words, "exit 2");
  assert.deepEqual(status(row({ name: "run_command", args, end: { ok: false, summary: "sleep 9: timed out after 1s", output: "timed out after 1s\n$ sleep 9" } })), {
    mark: "✗",
    words: "sleep 9: timed out after 1s",
    kind: "failed",
  });
  assert.equal(status(row({ name: "run_command", args, end: { ok: false, summary: "not allowed: rm -rf /", output: 'error: running "rm -rf /" was not allowed: denied' } })).kind, "failed");
});

test("edit rows say an edit was rejected by you, or applied with your changes, or why it failed", () => {
  const refused = (reason: string) => ({ ok: false, summary: "edit of greet.go refused", output: `error: the editor did not apply the edit of greet.go (${reason}); the file is unchanged. Read it again before editing it.` });
  assert.deepEqual(status(row({ name: "edit_file", args: edit, end: refused("rejected by the user in review") })), { mark: "⊘", words: "rejected by you", kind: "rejected" });
  assert.equal(status(row({ name: "edit_file", args: edit, end: refused("every hunk was dropped in the review") })).words, "rejected by you");
  const stale = toolHtml(row({ name: "edit_file", args: edit, end: refused("greet.go changed during the review") }));
  assert.match(stale, /class="tool failed"[\s\S]*edit of greet\.go refused[\s\S]*<div class="why">the editor did not apply the edit of greet\.go \(greet\.go changed during the review\)/);
  const changed = { ok: false, summary: "edit of greet.go changed", output: "error: the edit of greet.go was applied with changes by the user at lines 2-2 (changed or kept in part in the review, or typed meanwhile): ..." };
  assert.deepEqual(status(row({ name: "edit_file", args: edit, end: changed })), { mark: "✓", words: "applied with your changes", kind: "changed" });
});

/** The summary lines of a transcript's tool rows: mark and status words. */
function statuses(html: string): string[] {
  return [...html.matchAll(/<span class="mark">([^<]*)<\/span>.*?<span class="status">([^<]*)<\/span>/g)].map((m) => `${m[1]} ${m[2]}`);
}

test("a plan run with a budget: the chat shows its mode and what is left, updated by usage, and the end line names the limit", () => {
  const t = new ChatTranscript("s");
  const start = t.event({ session: "s", seq: 1, type: "run.start", project: "p", contextTokens: 8192, mode: "plan", budget: { maxTokens: 50000, maxCost: 0.5, tokens: 0 } });
  assert.equal(start.length, 1);
  assert.match(nth(start, 0).html, /plan mode: the agent only reads · 50\.0k of 50\.0k tokens left · \$0\.5 of \$0\.5 left/);
  const run = { prompt: 40000, completion: 2000, total: 42000 };
  const used = t.event({ session: "s", seq: 2, type: "usage", model: "m", prompt: 40000, completion: 2000, total: 42000, contextTokens: 8192, run, budget: { maxTokens: 50000, tokens: 42000 } });
  assert.equal(used.length, 1);
  assert.equal(nth(used, 0).id, nth(start, 0).id, "the budget line is updated in place");
  assert.match(nth(used, 0).html, /8\.0k of 50\.0k tokens left/);
  const end = t.event({ session: "s", seq: 3, type: "run.end", status: "limit", limit: "tokens" });
  assert.match(nth(end, 0).html, /limit \(tokens\)/);
  assert.equal(new ChatTranscript("s").event({ session: "s", seq: 1, type: "run.start", project: "p", contextTokens: 8192 }).length, 0, "an agent run without limits adds no line");
});

test("a live run's tool rows and its stored transcript's agree", () => {
  const calls = [
    { id: "c1", name: "run_command", args: JSON.stringify({ command: "go test ./..." }) },
    { id: "c2", name: "edit_file", args: edit },
  ];
  const results = ["exit status 1\n$ go test ./...\nFAIL", "error: the editor did not apply the edit of greet.go (rejected by the user in review); the file is unchanged."];
  const live = new ChatTranscript("s");
  const evs: AgentEvent[] = [
    { session: "s", seq: 1, type: "run.start", project: "p", contextTokens: 8192 },
    { session: "s", seq: 2, type: "tool.start", name: "run_command", args: nth(calls, 0).args, callId: "c1" },
    { session: "s", seq: 3, type: "tool.end", name: "run_command", callId: "c1", ok: false, summary: "go test ./...: exit status 1", output: nth(results, 0) },
    { session: "s", seq: 4, type: "tool.start", name: "edit_file", args: nth(calls, 1).args, callId: "c2" },
    { session: "s", seq: 5, type: "edit", uri: "file:///w/greet.go", applied: false },
    { session: "s", seq: 6, type: "tool.end", name: "edit_file", callId: "c2", ok: false, summary: "edit of greet.go refused", output: nth(results, 1) },
  ];
  evs.forEach((ev) => live.event(ev));
  const detail: SessionDetail = {
    session: "s",
    project: "p",
    status: "done",
    title: "t",
    subagents: [],
    messages: [
      { id: "1", role: "human", content: "test it" },
      { id: "2", role: "ai", content: "", toolCalls: calls },
      { id: "3", role: "tool", content: nth(results, 0), toolCallId: "c1" },
      { id: "4", role: "tool", content: nth(results, 1), toolCallId: "c2" },
    ],
  };
  const html = (t: ChatTranscript) =>
    t
      .all()
      .map((i) => i.html)
      .join("\n");
  assert.deepEqual(statuses(html(live)), ["● exit 1", "⊘ rejected by you"]);
  assert.deepEqual(statuses(html(ChatTranscript.fromSession(detail))), ["● exit 1", "⊘ rejected by you"]);
  assert.doesNotMatch(html(live), /edit refused/, "the edit event marks the edit's row, no line of its own");
});

test("a stored session's call without a result was interrupted, not running", () => {
  const t = ChatTranscript.fromSession({
    session: "s",
    project: "p",
    status: "interrupted",
    title: "",
    subagents: [],
    messages: [{ id: "2", role: "ai", content: "", toolCalls: [{ id: "c1", name: "run_command", args: '{"command":"make"}' }] }],
  });
  assert.deepEqual(
    statuses(
      t
        .all()
        .map((i) => i.html)
        .join(""),
    ),
    ["✗ interrupted: no result"],
  );
});

test("a session's label in the picker is its title, never its id", () => {
  assert.equal(sessionLabel({ title: "Add Farewell", status: "done", updated: "" }), "Add Farewell · done");
  assert.match(sessionLabel({ title: " ", status: "failed", updated: "2026-01-02T03:04:05Z" }), /^Untitled session of .+ · failed$/);
});

// The chat and the commands' runs, with a fake webview and a fake server.

class FakeServer implements AgentServer {
  calls: { command: string; args: any }[] = [];
  handlers: Record<string, (args: any) => unknown> = {};
  async send<A, R>(req: Request<A, R>, args: A, _opts?: SendOptions): Promise<R> {
    this.calls.push({ command: req.command, args });
    const h = this.handlers[req.command];
    if (!h) throw Object.assign(new Error(`unknown command "${req.command}"`), { code: -32602 });
    return (await h(args)) as R;
  }
  onProgress(_token: string, _handler: (v: ProgressValue) => void) {
    return { dispose() {} };
  }
}

class FakeView implements ChatWebviewView {
  received: ToPage[] = [];
  listener: ((m: FromPage) => unknown) | undefined;
  visible = true;
  shown = 0;
  webview = {
    options: {},
    html: "",
    cspSource: "vscode-resource:",
    asWebviewUri: (uri: any) => uri,
    postMessage: async (m: ToPage) => (this.received.push(m), true),
    onDidReceiveMessage: (l: (m: FromPage) => unknown) => ((this.listener = l), { dispose() {} }),
  };
  onDidDispose() {
    return { dispose() {} };
  }
  show() {
    this.shown++;
  }
  html(): string {
    const items = new Map<string, string>();
    for (const m of this.received) {
      if (m.type === "reset") items.clear();
      if (m.type === "reset" || m.type === "items") for (const i of m.items) items.set(i.id, i.html);
    }
    return [...items.values()].join("\n");
  }
  last<T extends ToPage["type"]>(type: T): Extract<ToPage, { type: T }> | undefined {
    return this.received.filter((m): m is Extract<ToPage, { type: T }> => m.type === type).at(-1);
  }
}

let server: FakeServer;
let ctx: Ctx;
let view: FakeView;
let chat: ChatView;
const tick = () => new Promise((r) => setTimeout(r, 0));
const exec = (id: CommandId, ...args: unknown[]) => stub.commands.get(id)!(...args);
const usage = { promptTokens: 10, completionTokens: 2, totalTokens: 12 };

beforeEach(() => {
  stub.reset();
  server = new FakeServer();
  const client: Client = { server: () => server, start: async () => {}, configure: async () => {}, restart: async () => {}, setApiKey: async () => {}, about: async () => ({ extension: "0.2.0" }) };
  ctx = new Ctx(client, () => defaultSettings);
  registerCommands(ctx);
  chat = new ChatView(ctx, Uri.file("/ext") as any);
  ctx.pushCleanup(chat);
  view = new FakeView();
  chat.resolve(view);
  server.handlers["agent.sessions"] = () => [{ session: "s-sel", project: "sample", title: "Why can Greet return empty?", status: "done", created: "", updated: "", messages: 2 }];
});

afterEach(() => ctx.dispose());

/** A run answered by the fake server: its run.start, a reply, its run.end, its result. */
function answer(session: string, reply: string): (args: any) => Promise<FinishedRun> {
  return async (args) => {
    const s = args.session ?? session;
    const evs: AgentEvent[] = [
      { session: s, seq: 1, type: "run.start", project: "sample", contextTokens: 8192 },
      { session: s, seq: 2, type: "message.delta", text: reply },
      { session: s, seq: 3, type: "run.end", status: "done" },
    ];
    evs.forEach((ev) => ctx.onEvent(ev));
    return { session: s, status: "done", reply, edits: 0, steps: 2, usage };
  };
}

test("an empty chat shows how to start, with a slot for the setup's status", () => {
  view.listener!({ type: "ready" });
  const reset = view.last("reset")!;
  assert.deepEqual(
    reset.items.map((i) => i.id),
    ["empty-status", "empty-help"],
  );
});

test("Ask Agent About This Selection opens its run in the chat: the prompt with its selection, the reply, the end line; no toast while the chat shows it", async () => {
  const doc = { uri: Uri.file("/w/sample/greet.go") };
  stub.activeTextEditor = { document: doc, selection: new Selection(2, 0, 4, 1) };
  stub.workspaceFolders = [{ uri: Uri.file("/w/sample"), name: "sample" }];
  stub.inputs.push("Why can it return empty?");
  server.handlers["agent.run"] = answer("s-sel", "It **never** does.");
  await exec("agentLsp.askAboutSelection");
  await tick();
  assert.equal(view.shown, 1, "the chat is revealed");
  assert.equal(chat.session, "s-sel", "the chat follows the run's session");
  const html = view.html();
  assert.match(html, /You<\/div><p>Why can it return empty\?<\/p><div class="refs"><span class="ref">#selection greet\.go:3-5<\/span>/);
  assert.match(html, /It <strong>never<\/strong> does\./);
  assert.match(html, /── done · 0 edits · 2 steps · 12 tokens/, "the end line has the result's counts");
  assert.doesNotMatch(html, /empty-help|Ask the agent below/, "the empty chat's help is gone");
  assert.equal(stub.messages.length, 0, "no toast: the chat shows the run");
  const sessions = view.last("sessions")!;
  assert.equal(sessions.current, "s-sel");
  assert.equal(sessions.title, "Why can Greet return empty?", "the picker names the session by the server's title");
  assert.deepEqual(sessions.list, [{ session: "s-sel", label: "Why can Greet return empty? · done" }]);
});

test("Agent: Run while the chat is hidden: the run still shows there, and one plain-text toast tells its end", async () => {
  view.visible = false;
  stub.inputs.push("Summarize greet.go");
  server.handlers["agent.run"] = answer("s-run", "## Summary\n\nIt greets.");
  await exec("agentLsp.run");
  await tick();
  assert.equal(chat.session, "s-run");
  assert.match(view.html(), /<p>Summarize greet\.go<\/p>[\s\S]*<h2>Summary<\/h2>/);
  assert.deepEqual(stub.messages, [{ level: "info", text: "Agent done (0 edits, 2 steps, 12 tokens): Summary" }]);
});

test("Agent: Resume Session shows the session's transcript, then a resumed line and the run", async () => {
  server.handlers["agent.session"] = () => ({
    session: "s-cut",
    project: "sample",
    status: "interrupted",
    title: "Add Farewell",
    subagents: [],
    messages: [{ id: "1", role: "human", content: "Add Farewell" }],
  });
  server.handlers["agent.resume"] = answer("s-cut", "Resumed and done.");
  await exec("agentLsp.resume", "s-cut");
  await tick();
  await tick();
  const html = view.html();
  assert.match(html, /<p>Add Farewell<\/p>[\s\S]*↻ resumed[\s\S]*Resumed and done\.[\s\S]*── done · 0 edits · 2 steps/, html);
  assert.equal(view.last("state")?.title, "Add Farewell");
  assert.equal(stub.messages.length, 0);
});

test("events.dropped for the session shown: the chat reads the session again (agent.session), and the events after it follow", async () => {
  let stored = [{ id: "1", role: "human", content: "Count to three" }];
  server.handlers["agent.session"] = () => ({ session: "s-drop", project: "sample", status: "running", title: "Count to three", subagents: [], messages: stored });
  await chat.pick("s-drop");
  assert.match(view.html(), /<p>Count to three<\/p>/);
  assert.doesNotMatch(view.html(), /One, two/);
  // The window missed #2 to #5, the reply among them; the server stored it.
  stored = [...stored, { id: "2", role: "ai", content: "One, two." }];
  const reads = server.calls.filter((c) => c.command === "agent.session").length;
  ctx.onEvent({ session: "s-drop", seq: 5, type: "events.dropped", count: 4, fromSeq: 2, toSeq: 5 } as AgentEvent);
  ctx.onEvent({ session: "s-drop", seq: 6, type: "message.delta", text: "Three." } as AgentEvent);
  await tick();
  await tick();
  assert.equal(server.calls.filter((c) => c.command === "agent.session").length, reads + 1, "the session is read again");
  const html = view.html();
  assert.match(html, /<p>Count to three<\/p>[\s\S]*One, two\.[\s\S]*Three\./, html);
  // Another session's drop does not touch the chat.
  ctx.onEvent({ session: "s-other", seq: 9, type: "events.dropped", count: 1, fromSeq: 9, toSeq: 9 } as AgentEvent);
  await tick();
  assert.equal(server.calls.filter((c) => c.command === "agent.session").length, reads + 1);
});
