// Rewind in the chat (rewind.ts) with a fake webview and a fake server: a
// prompt's buttons are matched to their checkpoints; Rewind… asks the scope
// (listing the files that prompt and later changed), sends agent.rewind and
// shows the session again after a conversation rewind; Fork From Here shows
// the new session; Retry sends agent.run with retry; a running session and a
// prompt without a checkpoint are refused with what to do; Changes Since Here
// opens the editor's diff of the content before the prompt and now.
import assert from "node:assert/strict";
import { afterEach, beforeEach, test } from "node:test";
import { ChatView, type ChatWebviewView, type FromPage, type ToPage } from "../src/chat";
import { registerCommands } from "../src/commands";
import { defaultSettings } from "../src/config";
import { Ctx, type AgentServer, type Client, type SendOptions } from "../src/ctx";
import type { Checkpoint, FinishedRun, Message, ProgressValue, Request, RewindResult } from "../src/protocol";
import { checkpointScheme, filesSince, matchCheckpoint, notesSince, registerCheckpointContents, rewindSummary, scopeItems } from "../src/rewind";
import { Uri, stub } from "./vscode-stub";

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
  args(command: string): any[] {
    return this.calls.filter((c) => c.command === command).map((c) => c.args);
  }
}

class FakeView implements ChatWebviewView {
  received: ToPage[] = [];
  listener: ((m: FromPage) => unknown) | undefined;
  visible = true;
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
  html(): string {
    const items = new Map<string, string>();
    for (const m of this.received) {
      if (m.type === "reset") items.clear();
      if (m.type === "reset" || m.type === "items") for (const i of m.items) items.set(i.id, i.html);
    }
    return [...items.values()].join("\n");
  }
}

const file = (path: string, added = 1, removed = 0, restorable = true, reason?: string) => ({ path, uri: `file:///w/${path}`, added, removed, restorable, ...(reason && { reason }) });
const checkpoints: Checkpoint[] = [
  { checkpoint: 1, prompt: "Add Farewell", time: "2026-01-01T00:00:00Z", model: "scripted", files: [file("greet.go", 3, 0)] },
  { checkpoint: 2, prompt: "Add Sub and test it", time: "2026-01-01T00:01:00Z", model: "scripted", files: [file("greet.go", 2, 1), file("sub_test.go", 9), file("out.txt", 1, 0, false, "changed by a command, not restorable")] },
];
const usage = { promptTokens: 10, completionTokens: 2, totalTokens: 12 };

let server: FakeServer;
let ctx: Ctx;
let view: FakeView;
let chat: ChatView;
let stored: Message[];
const tick = () => new Promise((r) => setTimeout(r, 0));
const press = async (action: "rewind" | "changes" | "fork" | "retry", prompt: number) => {
  await view.listener!({ type: "rewind", action, prompt });
};

beforeEach(async () => {
  stub.reset();
  server = new FakeServer();
  const client: Client = { server: () => server, start: async () => {}, configure: async () => {}, restart: async () => {}, setApiKey: async () => {}, about: async () => ({ extension: "0.2.0" }) };
  ctx = new Ctx(client, () => defaultSettings);
  registerCommands(ctx);
  chat = new ChatView(ctx, Uri.file("/ext") as any);
  ctx.pushCleanup(chat);
  view = new FakeView();
  chat.resolve(view);
  stored = [
    { id: "1", role: "human", content: "Add Farewell" },
    { id: "2", role: "ai", content: "Added Farewell." },
    { id: "3", role: "human", content: "Add Sub and test it" },
    { id: "4", role: "ai", content: "Added Sub; the tests pass." },
  ];
  server.handlers["agent.session"] = ({ session }) => ({ session, project: "sample", status: "done", title: "Add Farewell", subagents: [], messages: stored });
  server.handlers["agent.sessions"] = () => [];
  server.handlers["agent.checkpoints"] = () => ({ checkpoints });
  await chat.pick("s-1");
});

afterEach(() => ctx.dispose());

test("each prompt has Rewind…, Changes since here, Fork from here and Retry, naming its place among the prompts", () => {
  const html = view.html();
  for (const [i, prompt] of ["Add Farewell", "Add Sub and test it"].entries()) {
    const block = new RegExp(`<p>${prompt}</p><div class="prompt-actions">(.*?)</div>`).exec(html)?.[1] ?? "";
    assert.deepEqual(
      [...block.matchAll(/data-rewind="(\w+)" data-prompt="(\d+)"[^>]*>([^<]*)</g)].map((m) => `${m[1]} ${m[2]} ${m[3]}`),
      [`rewind ${i} Rewind…`, `changes ${i} Changes since here`, `fork ${i} Fork from here`, `retry ${i} Retry`],
    );
  }
});

test("a prompt matches its checkpoint by its place from the end and its first line; a missing one matches none", () => {
  assert.equal(matchCheckpoint(checkpoints, ["Add Farewell", "Add Sub and test it"], 1)?.checkpoint, 2);
  // The chat shows only the later prompts (an older part of the session is not shown): counted from the end.
  assert.equal(matchCheckpoint(checkpoints, ["Add Sub and test it"], 0)?.checkpoint, 2);
  // A prompt shown that never became a checkpoint (a built-in slash command's): the first line decides.
  assert.equal(matchCheckpoint(checkpoints, ["Add Farewell", "/help", "Add Sub and test it"], 0)?.checkpoint, 1);
  assert.equal(matchCheckpoint(checkpoints, ["Add Farewell", "/help", "Add Sub and test it"], 1), undefined);
  // The server lists the first line only.
  assert.equal(matchCheckpoint(checkpoints, ["Add Farewell\nand a test"], 0)?.checkpoint, 1);
});

test("the files since a checkpoint: each once, counts summed, not restorable with its reason", () => {
  assert.deepEqual(filesSince(checkpoints, 1), [file("greet.go", 5, 1), file("out.txt", 1, 0, false, "changed by a command, not restorable"), file("sub_test.go", 9)]);
  assert.deepEqual(
    filesSince(checkpoints, 2).map((f) => f.path),
    ["greet.go", "out.txt", "sub_test.go"],
  );
  const [both, conv, files] = scopeItems(2, filesSince(checkpoints, 2));
  assert.equal(both?.detail, "greet.go +2 −1, out.txt +1 −0 (changed by a command, not restorable), sub_test.go +9 −0");
  assert.equal(conv?.detail, undefined, "the conversation only: no file listed");
  assert.match(files?.description ?? "", /3 files go back to before prompt 2; the conversation stays/);
});

test("what a checkpoint could not record shows with the files of the scopes that restore them, each note once", () => {
  const note = "the files of `make` were not looked for: 25000 files, over rewind.scanLimit (20000)";
  const list = [
    { ...checkpoints[0]!, checkpoint: 1, notes: ["an older note"] },
    { ...checkpoints[0]!, checkpoint: 2, files: [], notes: [note] },
    { ...checkpoints[0]!, checkpoint: 3, files: [], notes: [note] },
  ];
  assert.deepEqual(notesSince(list, 2), [note]);
  const [both, conv, files] = scopeItems(2, [], notesSince(list, 2));
  assert.equal(both?.detail, `no file changed since; ${note}`);
  assert.equal(files?.detail, `no file changed since; ${note}`);
  assert.equal(conv?.detail, undefined);
});

test("a rewind's summary: what went back, the conflicts kept or overwritten, what could not be restored", () => {
  const r: RewindResult = {
    checkpoint: 2,
    rewind: "01R",
    conversation: true,
    restored: [{ path: "greet.go", uri: "file:///w/greet.go" }],
    conflicts: [{ path: "notes.md", uri: "file:///w/notes.md", kept: true }],
    notRestorable: [{ path: "out.txt", uri: "file:///w/out.txt", reason: "changed by a command, not restorable" }],
  };
  assert.deepEqual(rewindSummary(r, "both"), {
    text: "Rewound to before prompt 2: prompt 2 and later left the conversation (kept as a branch). restored greet.go. Kept your changes: notes.md. Not restorable: out.txt (changed by a command, not restorable).",
    warn: true,
  });
  assert.deepEqual(rewindSummary({ ...r, conflicts: [], notRestorable: [], restored: [] }, "conversation"), { text: "Rewound to before prompt 2: prompt 2 and later left the conversation (kept as a branch).", warn: false });
});

test("an undo's summary: what came back, a file kept because it changed since the rewind", () => {
  const r: RewindResult = { checkpoint: 2, rewind: "01R", undone: true, conversation: true, restored: [{ path: "greet.go", uri: "file:///w/greet.go" }], conflicts: [], notRestorable: [] };
  assert.deepEqual(rewindSummary(r, "both"), { text: "Undid the rewind to before prompt 2: prompt 2 and later are back in the conversation. put back greet.go.", warn: false });
  assert.deepEqual(rewindSummary({ ...r, conversation: false, restored: [], conflicts: [{ path: "a.txt", uri: "file:///w/a.txt", kept: true }] }, "both"), {
    text: "Undid the rewind to before prompt 2: no file needed putting back. Kept your changes: a.txt.",
    warn: true,
  });
});

test("Rewind… on the second prompt: the scope asked with the files, agent.rewind sent, the chat shows the session again with one prompt", async () => {
  let offered: any[] = [];
  stub.picks.push((items) => ((offered = items), items.find((i: any) => i.scope === "both")));
  server.handlers["agent.rewind"] = (args): RewindResult => {
    stored = stored.slice(0, 2);
    return { checkpoint: args.checkpoint, rewind: "01R", conversation: true, restored: [{ path: "greet.go", uri: "file:///w/greet.go" }], conflicts: [], notRestorable: [] };
  };
  await press("rewind", 1);
  assert.deepEqual(
    offered.map((i) => i.label),
    ["Conversation and files", "Conversation only", "Files only"],
  );
  assert.match(offered[0].detail, /^greet\.go \+2 −1, out\.txt/);
  assert.deepEqual(server.args("agent.rewind"), [{ session: "s-1", checkpoint: 2, restore: "both" }]);
  const html = view.html();
  assert.match(html, /Add Farewell/);
  assert.doesNotMatch(html, /Add Sub and test it/, "the rewound prompt left the chat");
  assert.deepEqual(stub.messages, [{ level: "info", text: "Rewound to before prompt 2: prompt 2 and later left the conversation (kept as a branch). restored greet.go." }]);
});

test("Undo Rewind on a rewind's notification sends agent.rewind with undo; the chat shows the session again with both prompts", async () => {
  stub.picks.push((items) => items.find((i: any) => i.scope === "both"));
  stub.buttons.push("Undo Rewind");
  const all = stored;
  server.handlers["agent.rewind"] = (args): RewindResult => {
    if (args.undo) {
      stored = all;
      return { checkpoint: 2, rewind: "01R", undone: true, conversation: true, restored: [{ path: "greet.go", uri: "file:///w/greet.go" }], conflicts: [], notRestorable: [] };
    }
    stored = stored.slice(0, 2);
    return { checkpoint: args.checkpoint, rewind: "01R", conversation: true, restored: [{ path: "greet.go", uri: "file:///w/greet.go" }], conflicts: [], notRestorable: [] };
  };
  await press("rewind", 1);
  for (let i = 0; i < 100 && stub.messages.length < 2; i++) await new Promise((r) => setTimeout(r, 10));
  assert.deepEqual(stub.buttonsShown[0], ["Undo Rewind"], "the rewind's notification offers the undo");
  assert.deepEqual(server.args("agent.rewind"), [
    { session: "s-1", checkpoint: 2, restore: "both" },
    { session: "s-1", undo: true },
  ]);
  assert.deepEqual(stub.messages[1], { level: "info", text: "Undid the rewind to before prompt 2: prompt 2 and later are back in the conversation. put back greet.go." });
  assert.match(view.html(), /Add Sub and test it/, "the prompt the rewind took out is back in the chat");
});

test("Rewind… files only: the conversation stays, the chat is not read again; cancelling the pick sends nothing", async () => {
  stub.picks.push(() => undefined);
  await press("rewind", 0);
  assert.equal(server.args("agent.rewind").length, 0, "nothing sent when the pick is cancelled");
  stub.picks.push((items) => items.find((i: any) => i.scope === "files"));
  server.handlers["agent.rewind"] = (args): RewindResult => ({
    checkpoint: args.checkpoint,
    rewind: "01R",
    conversation: false,
    restored: [],
    conflicts: [],
    notRestorable: [{ path: "out.txt", uri: "file:///w/out.txt", reason: "changed by a command, not restorable" }],
  });
  const reads = server.args("agent.session").length;
  await press("rewind", 0);
  assert.deepEqual(server.args("agent.rewind"), [{ session: "s-1", checkpoint: 1, restore: "files" }]);
  assert.equal(server.args("agent.session").length, reads, "the conversation did not change: no reload");
  assert.equal(stub.messages.at(-1)?.level, "warning", "a file not restored is a warning");
  assert.match(stub.messages.at(-1)?.text ?? "", /Not restorable: out\.txt \(changed by a command, not restorable\)/);
});

test("the server's refusal shows in the chat as it is worded; a running session is refused before asking", async () => {
  stub.picks.push((items) => items[0]);
  server.handlers["agent.rewind"] = () => {
    throw Object.assign(new Error('checkpoint 2 of session s-1: the contents of "big.bin" were pruned; nothing changed'), { code: -32602 });
  };
  await press("rewind", 1);
  assert.match(view.html(), /class="line error">checkpoint 2 of session s-1: the contents of &quot;big\.bin&quot; were pruned; nothing changed/);
  server.handlers["agent.checkpoints"] = () => ({ checkpoints: [] });
  await press("fork", 0);
  assert.match(view.html(), /This prompt has no checkpoint/);
  ctx.runs.begin("agent: go on", { session: "s-1" });
  const sent = server.calls.length;
  await press("rewind", 0);
  assert.equal(server.calls.length, sent, "nothing asked of the server");
  assert.match(view.html(), /The session is running: Stop it first, then rewind\./);
});

test("Fork from here: agent.fork at the prompt's checkpoint, and the chat shows the new session", async () => {
  server.handlers["agent.fork"] = () => ({ session: "s-2" });
  await press("fork", 1);
  assert.deepEqual(server.args("agent.fork"), [{ session: "s-1", checkpoint: 2 }]);
  assert.equal(chat.session, "s-2");
  assert.ok(stub.output.join("").includes("⑂ forked s-1 before prompt 2: s-2"));
});

test("Retry: agent.run with retry in the session, then the chat reads the session again", async () => {
  server.handlers["agent.run"] = (args): FinishedRun => {
    stored = [...stored.slice(0, 3), { id: "5", role: "ai", content: "Added Sub again." }];
    return { session: args.session, status: "done", reply: "Added Sub again.", edits: 1, steps: 2, usage };
  };
  await press("retry", 1);
  await tick();
  const run = server.args("agent.run")[0];
  assert.equal(run.session, "s-1");
  assert.equal(run.retry, true);
  assert.equal(run.prompt, undefined, "no prompt: the server sends the last one again");
  const html = view.html();
  assert.match(html, /Added Sub again\./);
  assert.doesNotMatch(html, /the tests pass/, "the earlier answer left the chat");
});

test("Changes since here: one file changed opens the diff of its content before the prompt and now; a server without it opens the file", async () => {
  server.handlers["agent.checkpoints"] = () => ({ checkpoints: checkpoints.map((c) => (c.checkpoint === 2 ? { ...c, files: [] } : c)) });
  server.handlers["agent.checkpointFile"] = ({ uri }) => ({ exists: true, content: `before of ${uri}` });
  await press("changes", 0);
  const diff = stub.executed.find((e) => e.id === "vscode.diff");
  assert.ok(diff, "vscode.diff ran");
  assert.equal(diff.args[1].toString(), "file:///w/greet.go");
  assert.equal(diff.args[2], "greet.go (before prompt 1 ↔ now)");
  const contents = registerCheckpointContents();
  assert.equal(stub.contentProviders.get(checkpointScheme).provideTextDocumentContent(diff.args[0]), "before of file:///w/greet.go", "the left side: the content before the prompt");
  contents.dispose();
  delete server.handlers["agent.checkpointFile"];
  await press("changes", 0);
  assert.equal(stub.shown.length, 1, "the file opens as it is now");
  assert.match(stub.messages.at(-1)?.text ?? "", /greet\.go as it is now: its content before prompt 1 cannot be shown/);
});
