import assert from "node:assert/strict";
import { test } from "node:test";
import { EventFormatter, projectItem, sessionItem, summary } from "../src/format";
import type { ProjectInfo } from "../src/protocol";

test("the transcript streams reply text and puts tools, edits and the end on their own lines", () => {
  const f = new EventFormatter();
  const ev = (type: string, rest: object = {}) => f.format({ session: "s1", seq: 0, type, ...rest });
  const out = [
    ev("run.start", { project: "sample" }),
    ev("message", { message: { role: "human", content: "Add Farewell" } }),
    ev("message.delta", { text: "I'll add " }),
    ev("message.delta", { text: "it." }),
    ev("message", { message: { role: "ai", content: "I'll add it." } }),
    ev("tool.start", { name: "edit_file", args: '{"path":"greet.go","old_text":"x"}', callId: "c1" }),
    ev("edit", { uri: "file:///w/greet.go", applied: true }),
    ev("tool.end", { name: "edit_file", callId: "c1", ok: true, summary: "edited greet.go" }),
    ev("tool.start", { name: "run_command", args: "not json" }),
    ev("tool.end", { name: "run_command", ok: false, summary: "denied" }),
    ev("subagent.start", { contextId: "subagent-1a2b3c4d", task: "look around" }),
    ev("subagent.end", { contextId: "subagent-1a2b3c4d", ok: true, status: "done" }),
    ev("message.delta", { text: "Done" }),
    ev("run.end", { status: "done" }),
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
      "[subagent-1a2b3c4d]   ⤶ subagent done",
      "Agent: Done",
      "── done",
      "",
    ].join("\n"),
  );
});

test("unknown event types add nothing", () => {
  assert.equal(new EventFormatter().format({ session: "s", seq: 1, type: "future.kind" }), "");
});

test("summaries count edits and steps and show the reply's first line", () => {
  assert.equal(summary({ session: "s", status: "done", reply: "One.\nTwo.", edits: 2, steps: 1 }), "Agent done (2 edits, 1 step): One.");
  assert.equal(summary({ session: "s", status: "failed", reply: "", edits: 0, steps: 0 }), "Agent failed (0 edits, 0 steps)");
  assert.ok(summary({ session: "s", status: "done", reply: "x".repeat(500), edits: 0, steps: 1 }).length < 200);
});

test("session items put the title first and the id in the detail", () => {
  const item = sessionItem({ session: "s-1", project: "api", title: "", status: "cancelled", created: "", updated: "bad date", messages: 4 });
  assert.equal(item.label, "s-1");
  assert.equal(item.description, "cancelled · api");
  assert.equal(item.detail, "s-1 · 4 messages · updated bad date");
});

test("project items show the tech stack agent.projects sends, branch, path and the build and test commands", () => {
  const context = { openFiles: [], pendingChanges: [], lastBuild: { status: "unknown" }, lastTest: { status: "unknown" }, recentErrors: [] };
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
  };
  assert.deepEqual(projectItem(api), {
    label: "api",
    description: "go 1.22 (also javascript) · go modules · main",
    detail: "/w/api · build: go build ./... · test: go test ./...",
  });
  const bare = projectItem({ name: "notes", path: "/w/notes", type: "unknown", techStack: { language: "unknown" }, context });
  assert.deepEqual(bare, { label: "notes", description: "unknown", detail: "/w/notes" });
});
