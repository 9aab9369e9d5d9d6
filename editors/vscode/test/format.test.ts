import assert from "node:assert/strict";
import { test } from "node:test";
import { EventFormatter, projectItem, projectsReport, sandboxSummary, sessionItem, summary } from "../src/format";
import type { AgentEvent, ProjectContext, ProjectInfo, SandboxReport } from "../src/protocol";

/** An event without its envelope's session and seq, kept a discriminated union. */
type Body<E = AgentEvent> = E extends AgentEvent ? Omit<E, "session" | "seq"> : never;

test("the transcript streams reply text and puts tools, edits and the end on their own lines", () => {
  const f = new EventFormatter();
  let seq = 0;
  const ev = (body: Body) => f.format({ session: "s1", seq: ++seq, ...body });
  const out = [
    ev({ type: "run.start", project: "sample" }),
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
      "── session s1 · project sample",
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

test("summaries count edits and steps and show what failed or the reply's first line", () => {
  const usage = { promptTokens: 10, completionTokens: 5, totalTokens: 15 };
  assert.equal(summary({ session: "s", status: "done", reply: "One.\nTwo.", edits: 2, steps: 1, usage }), "Agent done (2 edits, 1 step): One.");
  assert.equal(summary({ session: "s", status: "cancelled", reply: "", edits: 0, steps: 0, usage }), "Agent cancelled (0 edits, 0 steps)");
  assert.equal(summary({ session: "s", status: "failed", reply: "", edits: 0, steps: 0, usage, error: "model down" }), "Agent failed (0 edits, 0 steps): model down");
  assert.ok(summary({ session: "s", status: "done", reply: "x".repeat(500), edits: 0, steps: 1, usage }).length < 200);
});

test("session items put the title first and the id in the detail", () => {
  const item = sessionItem({ session: "s-1", project: "api", title: "", status: "cancelled", created: "", updated: "bad date", messages: 4 });
  assert.equal(item.label, "s-1");
  assert.equal(item.description, "cancelled · api");
  assert.equal(item.detail, "s-1 · 4 messages · updated bad date");
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
