import assert from "node:assert/strict";
import { test } from "node:test";
import { EventFormatter, parseSessionDocPath, projectItem, projectsReport, sandboxSummary, sessionDocLink, sessionDocPath, sessionItem, summary, transcript, unread } from "../src/format";
import type { AgentEvent, ProjectContext, ProjectInfo, SandboxReport } from "../src/protocol";

/** An event without its envelope's session and seq, kept a discriminated union. */
type Body<E = AgentEvent> = E extends AgentEvent ? Omit<E, "session" | "seq"> : never;

test("the transcript streams reply text and puts tools, edits and the end on their own lines", () => {
  const f = new EventFormatter();
  let seq = 0;
  const ev = (body: Body) => f.format({ session: "s1", seq: ++seq, ...body });
  const out = [
    ev({ type: "run.start", project: "sample", contextTokens: 8192 }),
    ev({ type: "message", message: { id: "m1", role: "human", content: "Add Farewell" } }),
    ev({ type: "message.delta", text: "I'll add " }),
    ev({ type: "message.delta", text: "it." }),
    ev({ type: "message", message: { id: "m2", role: "ai", content: "I'll add it." } }),
    ev({ type: "tool.start", name: "edit_file", args: '{"path":"greet.go","old_text":"x"}', callId: "c1" }),
    ev({ type: "edit", uri: "file:///w/greet.go", applied: true }),
    ev({ type: "tool.end", name: "edit_file", callId: "c1", ok: true, summary: "edited greet.go" }),
    ev({ type: "tool.start", name: "run_command", args: "not json", callId: "c2" }),
    ev({ type: "tool.end", name: "run_command", callId: "c2", ok: false, summary: "denied" }),
    ev({ type: "subagent.start", contextId: "subagent-1a2b3c4d", parentId: "s1", task: "look around" }),
    ev({ type: "message", contextId: "subagent-1a2b3c4d", parentId: "s1", message: { id: "m3", role: "ai", content: "Found it." } }),
    ev({ type: "subagent.end", contextId: "subagent-1a2b3c4d", parentId: "s1", ok: true, status: "done" }),
    ev({ type: "message.delta", text: "Done" }),
    ev({ type: "run.end", status: "done" }),
  ].join("");
  assert.equal(
    out,
    [
      "── session s1 · project sample · context 8192 tokens",
      "You: Add Farewell",
      "Agent: I'll add it.",
      "  → edit_file greet.go",
      "  edited file:///w/greet.go",
      "  ✓ edit_file: edited greet.go",
      "  → run_command",
      "  ✗ run_command: denied",
      "[subagent-1a2b3c4d]   ⤷ subagent: look around",
      "[subagent-1a2b3c4d] Agent: Found it.",
      "[subagent-1a2b3c4d]   ⤶ subagent done",
      "Agent: Done",
      "── done",
      "",
    ].join("\n"),
  );
});

test("a run's header shows its token budget and the tools left out to fit it", () => {
  const f = new EventFormatter();
  const start = (contextTokens: number, withheld?: string[]) => f.format({ session: "s1", seq: 1, type: "run.start", project: "sample", contextTokens, ...(withheld && { withheld }) });
  assert.equal(start(32768), "── session s1 · project sample · context 32768 tokens\n");
  assert.equal(start(2048, ["call_subagent", "search"]), "── session s1 · project sample · context 2048 tokens (tools left out to fit it: call_subagent, search)\n");
  assert.equal(start(8192, []), "── session s1 · project sample · context 8192 tokens\n", "an empty list says nothing");
});

test("a prompt queued for the running session shows with its place, then as read; compaction shows how many messages left, why and how", () => {
  const f = new EventFormatter();
  let seq = 0;
  const ev = (body: Body) => f.format({ session: "s1", seq: ++seq, ...body });
  const human = { id: "m9", role: "human" as const, content: "Also cover the error case" };
  const out = [
    ev({ type: "message.delta", text: "Working" }),
    ev({ type: "message.queued", message: human, position: 1 }),
    ev({ type: "context.compacted", before: 9000, after: 2500, messages: 12, summarized: true, reason: "budget" }),
    ev({ type: "context.compacted", before: 4000, after: 1000, messages: 1, summarized: true, reason: "overflow" }),
    ev({ type: "context.compacted", before: 9000, after: 2000, messages: 12, summarized: false, reason: "budget", error: "summary call failed: timeout" }),
    ev({ type: "context.compacted", contextId: "subagent-c1", parentId: "s1", before: 5000, after: 900, messages: 3, summarized: true, reason: "budget" }),
    ev({ type: "message", message: human }),
    ev({ type: "run.end", status: "done" }),
  ].join("");
  assert.equal(
    out,
    [
      "Agent: Working",
      "queued (position 1): Also cover the error case",
      "  ⋯ 12 older messages summarized to fit the context (9000 → 2500 tokens)",
      "  ⋯ 1 older message summarized after the model's context overflowed (4000 → 1000 tokens)",
      "  ⋯ 12 older messages dropped to fit the context, without a summary (9000 → 2000 tokens): summary call failed: timeout",
      "[subagent-c1]   ⋯ 3 older messages summarized to fit the context (5000 → 900 tokens)",
      "You: Also cover the error case",
      "── done",
      "",
    ].join("\n"),
  );
});

test("summaries count edits and steps and show what failed or the reply's first line", () => {
  const usage = { promptTokens: 10, completionTokens: 5, totalTokens: 15 };
  assert.equal(summary({ session: "s", status: "done", reply: "One.\nTwo.", edits: 2, steps: 1, usage }), "Agent done (2 edits, 1 step, 15 tokens): One.");
  assert.equal(summary({ session: "s", status: "cancelled", reply: "", edits: 0, steps: 0, usage }), "Agent cancelled (0 edits, 0 steps, 15 tokens)");
  assert.equal(summary({ session: "s", status: "failed", reply: "", edits: 0, steps: 0, usage, error: "model down" }), "Agent failed (0 edits, 0 steps, 15 tokens): model down");
  assert.ok(summary({ session: "s", status: "done", reply: "x".repeat(500), edits: 0, steps: 1, usage }).length < 200);
  const priced = { promptTokens: 4000, completionTokens: 11, totalTokens: 4011, cost: 0.01011 };
  assert.equal(summary({ session: "s", status: "done", reply: "Hi.", edits: 0, steps: 1, usage: priced }), "Agent done (0 edits, 1 step, 4.0k tokens · $0.0101): Hi.");
});

test("a run's summary counts the queued prompts it never read, and the output lists each", () => {
  const usage = { promptTokens: 10, completionTokens: 5, totalTokens: 15 };
  const cut = { session: "s", status: "cancelled" as const, reply: "", edits: 0, steps: 1, usage, queued: ["Also say hi", "And bye"] };
  assert.equal(summary(cut), "Agent cancelled (0 edits, 1 step, 15 tokens) · 2 queued prompts not read");
  assert.equal(unread(cut), "  not read by the cancelled run: Also say hi\n  not read by the cancelled run: And bye\n");
  const { queued: _, ...none } = cut;
  assert.equal(unread(none), "");
  const queued = { session: "s", status: "queued" as const, position: 2, reply: "", edits: 0, steps: 0, usage };
  assert.equal(summary(queued), "Agent: queued as #2 for the running session s; the agent reads it at its next step");
  assert.equal(unread(queued), "");
});

test("a session's transcript lists its subagents with task and status, each linked to its own transcript", () => {
  const md = transcript({
    session: "s1",
    project: "sample",
    status: "done",
    title: "Tidy up",
    messages: [{ id: "1", role: "human", content: "Tidy up" }],
    subagents: [
      { contextId: "subagent-c1", task: "List the [Go] files\nand report", status: "done" },
      { contextId: "subagent-c2", task: "Never ran", status: "" },
    ],
  });
  assert.match(md, /^# Tidy up\n\nSession `s1` · project \*\*sample\*\* · done\n\n## Subagents\n\n/);
  assert.ok(md.includes("- [List the \\[Go\\] files and report](agent-session:/s1/subagent-c1.md) · done · `subagent-c1`\n"), md);
  assert.ok(md.includes("- [Never ran](agent-session:/s1/subagent-c2.md) · not started · `subagent-c2`\n"), md);
  const sub = transcript({
    session: "s1",
    context: "subagent-c1",
    project: "sample",
    status: "",
    title: "List the Go files",
    messages: [{ id: "2", role: "human", content: "List the Go files" }],
    subagents: [],
  });
  assert.match(sub, /^# Subagent: List the Go files\n\nSubagent `subagent-c1` of session \[`s1`\]\(agent-session:\/s1\.md\) · project \*\*sample\*\* · not started\n/);
  assert.ok(!sub.includes("## Subagents"));
});

test("transcript documents are addressed by session and subagent context", () => {
  assert.equal(sessionDocPath("s1"), "/s1.md");
  assert.equal(sessionDocPath("s1", "subagent-c1"), "/s1/subagent-c1.md");
  assert.deepEqual(parseSessionDocPath("/s1.md"), { session: "s1" });
  assert.deepEqual(parseSessionDocPath("/s1/subagent-c1.md"), { session: "s1", context: "subagent-c1" });
  assert.equal(sessionDocLink("s 1", "subagent-c1"), "agent-session:/s%201/subagent-c1.md");
});

test("session items put the title first and the id in the detail", () => {
  const item = sessionItem({ session: "s-1", project: "api", title: "", status: "cancelled", created: "", updated: "bad date", messages: 4 });
  assert.equal(item.label, "s-1");
  assert.equal(item.description, "cancelled · api");
  assert.equal(item.detail, "s-1 · 4 messages · updated bad date");
  const memory = sessionItem({ session: "s-2", project: "api", title: "t", status: "done", created: "", updated: "", messages: 1, notStored: true });
  assert.equal(memory.description, "done · api · not stored", "a session kept in memory only says so");
});

const context: ProjectContext = { openFiles: [], pendingChanges: [], lastBuild: { status: "unknown" }, lastTest: { status: "unknown" }, recentErrors: [] };

/** A sandbox report as agent.projects sends it on a kernel with Landlock ABI 6. */
const enforced: SandboxReport = {
  mode: "workspace-write",
  landlockABI: 6,
  enforced: [
    "files: read everywhere, write only in /tmp, /w/api, /home/u/.cache/go-build",
    "files: no linking or renaming into another directory",
    "files: no truncating outside the writable directories",
    "network: TCP bind and connect denied",
    "devices: ioctl only on /dev/null, /dev/zero and terminals",
    "IPC: abstract Unix sockets and signals scoped to the sandbox",
  ],
  notEnforced: ["UDP (needs Landlock ABI 10)", "Multipath TCP sockets", "pathname Unix sockets"],
  writable: ["/tmp", "/w/api", "/home/u/.cache/go-build"],
  network: false,
};

/** The report on a kernel without Landlock. */
const noLandlock: SandboxReport = {
  mode: "workspace-write",
  landlockABI: 0,
  enforced: [],
  notEnforced: ["this kernel has no Landlock (or it is turned off): commands run with the user's full rights"],
  network: true,
};

test("project items show the tech stack agent.projects sends, branch, path, the build and test commands and the sandbox", () => {
  const api: ProjectInfo = {
    name: "api",
    path: "/w/api",
    type: "go",
    techStack: {
      language: "go",
      languageVersion: "1.22",
      packageManager: "go modules",
      buildCommand: "go build ./...",
      testCommand: "go test ./...",
      manifests: ["go.mod"],
      others: ["javascript"],
    },
    gitBranch: "main",
    context,
    sandbox: enforced,
  };
  assert.deepEqual(projectItem(api), {
    label: "api",
    description: "go 1.22 (also javascript) · go modules · main",
    detail: "/w/api · build: go build ./... · test: go test ./... · sandbox workspace-write · no network",
  });
  const bare = projectItem({ name: "notes", path: "/w/notes", type: "unknown", techStack: { language: "unknown" }, context, sandbox: noLandlock });
  assert.deepEqual(bare, {
    label: "notes",
    description: "unknown",
    detail: "/w/notes · not sandboxed: this kernel has no Landlock (or it is turned off): commands run with the user's full rights",
  });
});

test("the sandbox summary names the mode and the network, or why nothing is enforced", () => {
  assert.equal(sandboxSummary({ ...enforced, mode: "read-only", network: true }), "sandbox read-only · network allowed");
  assert.equal(sandboxSummary({ mode: "off", landlockABI: 6, enforced: [], network: true }), "not sandboxed");
});

test("the projects report says which isolation is in force", () => {
  const api: ProjectInfo = { name: "api", path: "/w/api", type: "go", techStack: { language: "go" }, context, sandbox: { ...enforced, isolation: "snapshot" } };
  assert.match(projectsReport([api]), /^mode workspace-write · isolation snapshot · Landlock ABI 6 · no network$/m);
});

test("the projects report lists what the sandbox enforces, what it does not, and where commands may write", () => {
  const api: ProjectInfo = { name: "api", path: "/w/api", type: "go", techStack: { language: "go", buildCommand: "go build ./..." }, context, sandbox: enforced };
  const notes: ProjectInfo = { name: "notes", path: "/w/notes", type: "unknown", techStack: { language: "unknown" }, context, sandbox: noLandlock };
  assert.equal(
    projectsReport([api, notes]),
    [
      "# Projects",
      "",
      "## api",
      "",
      "go",
      "",
      "/w/api · build: go build ./... · sandbox workspace-write · no network",
      "",
      "### Sandbox",
      "",
      "mode workspace-write · Landlock ABI 6 · no network",
      "",
      "Enforced:",
      "",
      "- files: read everywhere, write only in /tmp, /w/api, /home/u/.cache/go-build",
      "- files: no linking or renaming into another directory",
      "- files: no truncating outside the writable directories",
      "- network: TCP bind and connect denied",
      "- devices: ioctl only on /dev/null, /dev/zero and terminals",
      "- IPC: abstract Unix sockets and signals scoped to the sandbox",
      "",
      "Not enforced:",
      "",
      "- UDP (needs Landlock ABI 10)",
      "- Multipath TCP sockets",
      "- pathname Unix sockets",
      "",
      "Writable:",
      "",
      "- `/tmp`",
      "- `/w/api`",
      "- `/home/u/.cache/go-build`",
      "",
      "## notes",
      "",
      "unknown",
      "",
      "/w/notes · not sandboxed: this kernel has no Landlock (or it is turned off): commands run with the user's full rights",
      "",
      "### Sandbox",
      "",
      "mode workspace-write · no Landlock · network allowed",
      "",
      "Not enforced:",
      "",
      "- this kernel has no Landlock (or it is turned off): commands run with the user's full rights",
      "",
    ].join("\n"),
  );
});

test("the projects report says what answers each project's language questions, and its latest diagnostics", () => {
  const base = { path: "/w/x", type: "go", techStack: { language: "go" }, sandbox: enforced };
  const diagnostics = { server: "gopls", errors: 2, warnings: 1, files: 1 };
  const report = projectsReport([
    { ...base, name: "ed", context: { ...context, diagnostics }, language: { by: "editor" } },
    { ...base, name: "own", context, language: { by: "agent-lsp", server: "gopls", command: "gopls", state: "ready" } },
    { ...base, name: "none", context, language: { by: "none", note: "no language server for go projects: gopls not found on PATH" } },
  ]);
  for (const want of [
    "### Language intelligence\n\nVS Code's language features answer the agent",
    "Latest diagnostics (gopls): 2 errors, 1 warnings in 1 files",
    "agent-lsp's own `gopls`: ready",
    "No language server: no language server for go projects: gopls not found on PATH.",
  ]) {
    assert.ok(report.includes(want), `lacks ${JSON.stringify(want)}:\n${report}`);
  }
});
