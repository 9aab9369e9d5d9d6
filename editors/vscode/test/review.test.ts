// Unit tests of the applyEdit middleware that shows an edit waiting for the
// user's confirmation in the refactor preview: its label, why it needs
// confirmation and its place in the queue reach the status bar while it
// waits, and the transcript.
import assert from "node:assert/strict";
import { beforeEach, test } from "node:test";
import type { ApplyWorkspaceEditParams, ApplyWorkspaceEditResult } from "vscode-languageclient";
import { showReviews } from "../src/review";
import { stub } from "./vscode-stub";

beforeEach(() => stub.reset());

/** An edit of greet.go as the server sends it, with the change annotation given. */
function edit(annotation?: { label: string; needsConfirmation?: boolean; description?: string }): ApplyWorkspaceEditParams {
  const id = annotation ? { annotationId: "agent-lsp.review" } : {};
  return {
    label: "agent: edit greet.go",
    edit: {
      documentChanges: [
        { textDocument: { uri: "file:///w/greet.go", version: 3 }, edits: [{ range: { start: { line: 0, character: 0 }, end: { line: 0, character: 0 } }, newText: "x", ...id }] },
      ],
      ...(annotation && { changeAnnotations: { "agent-lsp.review": annotation } }),
    },
  };
}

/** Runs the middleware on params; the edit is answered when the returned answer is called. */
function apply(params: ApplyWorkspaceEditParams, lines: string[]) {
  let answer!: (r: ApplyWorkspaceEditResult) => void;
  const passed: ApplyWorkspaceEditParams[] = [];
  const next = (p: ApplyWorkspaceEditParams) => {
    passed.push(p);
    return new Promise<ApplyWorkspaceEditResult>((r) => (answer = r));
  };
  const result = Promise.resolve(showReviews((l) => lines.push(l))(params, next));
  return { result, passed, answer: (r: ApplyWorkspaceEditResult) => answer(r) };
}

const tick = () => new Promise((r) => setTimeout(r, 0));

test("an edit waiting for confirmation shows its label, why and its place in the queue until it is answered", async () => {
  const lines: string[] = [];
  const params = edit({ label: "agent: edit greet.go", needsConfirmation: true, description: "proposed by agent-lsp; accept or reject (1 of 3)" });
  const { result, passed, answer } = apply(params, lines);
  await tick();
  assert.deepEqual(passed, [params], "the edit goes to VS Code as the server sent it");
  assert.deepEqual(stub.statusMessages, ["$(eye) agent: edit greet.go: proposed by agent-lsp; accept or reject (1 of 3)"]);
  assert.deepEqual(lines, ["  ⧗ in the Refactor Preview: agent: edit greet.go: proposed by agent-lsp; accept or reject (1 of 3)"]);
  answer({ applied: false });
  assert.deepEqual(await result, { applied: false }, "VS Code's answer goes back to the server");
  assert.deepEqual(stub.statusMessages, [], "the status bar message goes with the answer");
});

test("an edit that needs no confirmation passes through without a word", async () => {
  for (const params of [edit(), edit({ label: "agent: edit greet.go", description: "for the record" })]) {
    const lines: string[] = [];
    const { result, passed, answer } = apply(params, lines);
    await tick();
    assert.deepEqual([passed, stub.statusMessages, lines], [[params], [], []]);
    answer({ applied: true });
    assert.deepEqual(await result, { applied: true });
  }
});
