// Unit tests of the review of edits that need confirmation: the answer built
// from the user's decisions (the edit as sent, only the kept hunks with the
// version check, or a refusal in Neovim's words), Accept All's reach (the
// edit calls of the agent's current step, never a protected file), and the
// workspace/applyEdit middleware with VS Code stubbed: the diff opens, Accept
// and Reject per hunk decide it, Accept All decides the edits that follow.
import assert from "node:assert/strict";
import { beforeEach, test } from "node:test";
import type { ApplyWorkspaceEditParams, ApplyWorkspaceEditResult } from "vscode-languageclient";
import { reviewItem } from "../src/chatModel";
import type { AgentEvent } from "../src/protocol";
import { originalScheme, proposalScheme, Reviews } from "../src/review";
import { Bulk, samePath } from "../src/reviewBulk";
import { decision, hunksOf, isProtected, queuePlace, reviewFiles, why } from "../src/reviewModel";
import { EventEmitter, stub, TabInputTextDiff, workspace } from "./vscode-stub";
import { nth } from "./nth";

beforeEach(() => stub.reset());

const file = "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\n";
const proposal = "one\nTWO\nthree\nfour\nfive\nsix\nSEVEN\neight\n";

/** An edit of uri as the server sends it: lines 2-7 replaced (one region), with a confirmation annotation of description. */
function edit(uri = "file:///w/notes.txt", description = "proposed by agent-lsp; accept or reject", version: number | null = 4): ApplyWorkspaceEditParams {
  return {
    label: `agent: edit ${uri.split("/").pop()}`,
    edit: {
      documentChanges: [
        {
          textDocument: { uri, version },
          edits: [{ range: { start: { line: 1, character: 0 }, end: { line: 7, character: 0 } }, newText: "TWO\nthree\nfour\nfive\nsix\nSEVEN\n", annotationId: "agent-lsp.review" }],
        },
      ],
      changeAnnotations: { "agent-lsp.review": { label: "agent: edit", needsConfirmation: true, description } },
    },
  };
}

test("why, the queue place and protection come from the annotation's description", () => {
  const p = edit(undefined, "protected file: coding agents follow it; accept or reject (1 of 3)");
  assert.equal(why(p), "protected file: coding agents follow it; accept or reject");
  assert.equal(queuePlace(p), "1 of 3");
  assert.ok(isProtected(p));
  assert.deepEqual([queuePlace(edit()), isProtected(edit())], ["", false]);
});

test("the answer: the edit as sent, the hunks kept with the version, or a refusal in Neovim's words", async () => {
  const p = edit();
  const files = await reviewFiles(p, async () => file);
  assert.equal(nth(files, 0).proposed, proposal);
  assert.deepEqual(
    hunksOf(nth(files, 0)).map((h) => h.lines),
    [["TWO\n"], ["SEVEN\n"]],
    "two hunks, not one region",
  );

  const asSent = decision(p, files, true);
  assert.ok("apply" in asSent);
  assert.deepEqual(asSent.apply.edit.documentChanges, [
    { textDocument: { uri: "file:///w/notes.txt", version: 4 }, edits: [{ range: { start: { line: 1, character: 0 }, end: { line: 7, character: 0 } }, newText: "TWO\nthree\nfour\nfive\nsix\nSEVEN\n" }] },
  ]);
  assert.equal(asSent.apply.edit.changeAnnotations, undefined, "no annotation: VS Code must not ask again");

  nth(files, 0).current = "one\nTWO\nthree\nfour\nfive\nsix\nseven\neight\n"; // the second hunk rejected
  const partial = decision(p, files, true);
  assert.ok("apply" in partial);
  assert.deepEqual(partial.apply.edit.documentChanges, [{ textDocument: { uri: "file:///w/notes.txt", version: 4 }, edits: [{ range: { start: { line: 1, character: 0 }, end: { line: 2, character: 0 } }, newText: "TWO\n" }] }]);

  nth(files, 0).current = file;
  assert.deepEqual(decision(p, files, true), { refuse: { applied: false, failureReason: "every hunk was dropped in the review" } });
  assert.deepEqual(decision(p, files, false), { refuse: { applied: false, failureReason: "rejected by the user in review" } });
});

test("a new file: its CreateFile goes along, without the annotation", async () => {
  const uri = "file:///w/new.txt";
  const p: ApplyWorkspaceEditParams = {
    label: "agent: create new.txt",
    edit: {
      documentChanges: [
        { kind: "create", uri, options: { overwrite: false, ignoreIfExists: false }, annotationId: "agent-lsp.review" },
        { textDocument: { uri, version: null }, edits: [{ range: { start: { line: 0, character: 0 }, end: { line: 0, character: 0 } }, newText: "a\nb\n", annotationId: "agent-lsp.review" }] },
      ],
      changeAnnotations: { "agent-lsp.review": { label: "x", needsConfirmation: true } },
    },
  };
  const files = await reviewFiles(p, async (_, create) => (create ? "" : "never read"));
  nth(files, 0).current = "a\nB\n";
  const d = decision(p, files, true);
  assert.ok("apply" in d);
  assert.deepEqual(d.apply.edit.documentChanges, [
    { kind: "create", uri, options: { overwrite: false, ignoreIfExists: false } },
    { textDocument: { uri, version: null }, edits: [{ range: { start: { line: 0, character: 0 }, end: { line: 0, character: 0 } }, newText: "a\nB\n" }] },
  ]);
});

/** The events of a step whose AI message asks for calls (name, path), in session s. */
function step(s: string, calls: [string, string, string][]): AgentEvent {
  return { type: "message", session: s, seq: 1, message: { id: "m", role: "ai", content: "", toolCalls: calls.map(([id, name, path]) => ({ id, name, args: JSON.stringify({ path }) })) } };
}
const end = (s: string, callId: string): AgentEvent => ({ type: "tool.end", session: s, seq: 2, callId, name: "edit_file", ok: true, summary: "" });

test("Accept All reaches the edit calls of the current step until each ends, and never a protected file", () => {
  const b = new Bulk();
  b.event(
    step("s-1", [
      ["c1", "edit_file", "a.txt"],
      ["c2", "edit_file", "./sub/b.txt"],
      ["c3", "read_file", "c.txt"],
      ["c4", "edit_file", "AGENTS.md"],
    ]),
  );
  assert.equal(b.decide(["/w/a.txt"], false), undefined, "nothing before Accept All");
  assert.equal(b.arm("accept"), 3, "the three edit calls");
  assert.equal(b.decide(["/w/sub/b.txt"], false), "accept");
  assert.equal(b.decide(["/w/c.txt"], false), undefined, "not an edit call");
  assert.equal(b.decide(["/w/AGENTS.md"], true), undefined, "a protected file keeps its confirmation");
  b.event(end("s-1", "c2"));
  assert.equal(b.decide(["/w/sub/b.txt"], false), undefined, "the call ended");
  b.event(step("s-1", [["c5", "edit_file", "a2.txt"]]));
  assert.equal(b.decide(["/w/a2.txt"], false), undefined, "a later step's edit is asked for again");
  b.arm("reject");
  assert.equal(b.decide(["/w/AGENTS.md"], true), "reject", "Reject All rejects a protected file's edit too");
  b.event({ type: "run.end", session: "s-1", seq: 9, status: "cancelled" });
  assert.equal(b.armed(), 0, "the run's end forgets its calls");
  assert.ok(samePath("/w/x/y.go", "x/y.go") && samePath("/w/y.go", "/w/y.go") && !samePath("/w/y.go", "../w/y.go") && !samePath("/w/xy.go", "y.go"));
});

/** The middleware of a Reviews under test, the diffs it opened, and next's calls. */
function setup() {
  const events = new EventEmitter<AgentEvent>();
  const idle = new EventEmitter<void>();
  const notes: string[] = [];
  const reviews = new Reviews((l) => notes.push(l), events.event, idle.event);
  const registered = reviews.register();
  const passed: ApplyWorkspaceEditParams[] = [];
  const next = async (p: ApplyWorkspaceEditParams): Promise<ApplyWorkspaceEditResult> => {
    passed.push(p);
    return { applied: true };
  };
  const diffs = () => stub.executed.filter((e) => e.id === "vscode.diff");
  const dispose = () => {
    reviews.dispose();
    registered.forEach((d) => d.dispose());
  };
  return { reviews, events, idle, notes, passed, next, diffs, dispose };
}

const tick = () => new Promise((r) => setTimeout(r, 0));

test("an edit that needs no confirmation passes as it is", async () => {
  const t = setup();
  const p = { label: "agent: edit", edit: { documentChanges: [] } };
  assert.deepEqual(await t.reviews.handle(p, t.next), { applied: true });
  assert.deepEqual([t.passed, t.diffs()], [[p], []]);
  t.dispose();
});

test("a review: the diff opens, Accept on one hunk and Reject on the other apply exactly the accepted hunk", async () => {
  const t = setup();
  stub.fileTexts.set("/w/notes.txt", file);
  const result = t.reviews.handle(edit(undefined, "proposed by agent-lsp; accept or reject (1 of 2)"), t.next);
  await tick();
  const [review] = t.reviews.list();
  assert.ok(review, "the review is open");
  const [diff] = t.diffs();
  assert.ok(diff, "a diff shows");
  assert.deepEqual(diff.args.slice(0, 3).map(String), [nth(review.originals, 0).toString(), nth(review.proposals, 0).toString(), "notes.txt: agent's proposal (1 of 2)"]);
  stub.tabs.push({ input: new TabInputTextDiff(nth(review.originals, 0), nth(review.proposals, 0)) });
  assert.equal(await stub.contentProviders.get(originalScheme).provideTextDocumentContent(review.originals[0]), file, "the left side: the file");
  assert.equal(new TextDecoder().decode(stub.fsProviders.get(proposalScheme).readFile(review.proposals[0])), proposal, "the right side: the proposal");
  assert.equal(stub.items.get("agentLsp.review")?.text, "$(git-compare) Review notes.txt (1 of 2)");
  assert.ok(stub.items.get("agentLsp.acceptAll")?.visible && stub.items.get("agentLsp.rejectAll")?.visible);
  assert.deepEqual(t.notes, ["  ⧗ waiting for your review: agent: edit notes.txt: proposed by agent-lsp; accept or reject (1 of 2)"]);

  // The CodeLens: the edit's actions at the top, Accept and Reject over lines 2 and 7.
  const lenses = (await stub.codeLensProviders[0].provideCodeLenses({ uri: review.proposals[0] })) as { range: { start: { line: number } }; command: { title: string; arguments: unknown[] } }[];
  assert.deepEqual(
    lenses.map((l) => `${l.range.start.line}:${l.command.title}`),
    ["0:$(check-all) Accept Edit", "0:$(close-all) Reject Edit", "1:$(check) Accept", "1:$(close) Reject", "6:$(check) Accept", "6:$(close) Reject"],
  );
  const card = reviewItem(t.reviews.card(review)).html;
  assert.match(card, /<span class="del">-two<\/span>\n<span class="add">\+TWO<\/span>/);
  assert.match(card, /data-review="acceptAll"/);

  const [first, second] = t.reviews.hunks(review, 0);
  assert.ok(first && second, "two hunks");
  t.reviews.acceptHunk(review, 0, first.key);
  assert.equal(t.passed.length, 0, "one hunk still waits");
  await t.reviews.rejectHunk(review, 0, second.key);
  assert.deepEqual(await result, { applied: true });
  assert.deepEqual(nth(t.passed, 0).edit.documentChanges, [{ textDocument: { uri: "file:///w/notes.txt", version: 4 }, edits: [{ range: { start: { line: 1, character: 0 }, end: { line: 2, character: 0 } }, newText: "TWO\n" }] }]);
  assert.equal(review.outcome, "accepted in part");
  assert.equal(stub.closedTabs.length, 1, "the diff closed");
  assert.ok(!stub.items.get("agentLsp.review")?.visible, "the status bar items go with the review");
  assert.match(reviewItem(t.reviews.card(review)).html, /✓ agent: edit notes\.txt: accepted in part/);
  t.dispose();
});

test("the proposal edited before it is accepted is what lands; a file changed meanwhile is refused", async () => {
  const t = setup();
  stub.fileTexts.set("/w/notes.txt", file);
  const result = t.reviews.handle(edit(), t.next);
  await tick();
  const review = nth(t.reviews.list(), 0);
  const doc = (await workspace.openTextDocument(nth(review.proposals, 0))) as { text: string };
  doc.text = proposal.replace("SEVEN", "SEVEN!");
  stub.docChanges.fire({ document: doc });
  t.reviews.decide(review, true);
  await result;
  assert.deepEqual(nth(t.passed, 0).edit.documentChanges?.[0], {
    textDocument: { uri: "file:///w/notes.txt", version: 4 },
    edits: [
      { range: { start: { line: 1, character: 0 }, end: { line: 2, character: 0 } }, newText: "TWO\n" },
      { range: { start: { line: 6, character: 0 }, end: { line: 7, character: 0 } }, newText: "SEVEN!\n" },
    ],
  });

  const again = t.reviews.handle(edit(), t.next);
  await tick();
  stub.fileTexts.set("/w/notes.txt", "typed meanwhile\n" + file);
  t.reviews.decide(nth(t.reviews.list(), 0), true);
  assert.deepEqual(await again, { applied: false, failureReason: "notes.txt changed during the review" });
  assert.equal(t.passed.length, 1);
  t.dispose();
});

test("Reject Edit refuses it; a run that ends under a review closes it", async () => {
  const t = setup();
  stub.fileTexts.set("/w/notes.txt", file);
  const rejected = t.reviews.handle(edit(), t.next);
  await tick();
  t.reviews.decide(nth(t.reviews.list(), 0), false);
  assert.deepEqual(await rejected, { applied: false, failureReason: "rejected by the user in review" });
  const orphan = t.reviews.handle(edit(), t.next);
  await tick();
  t.idle.fire();
  assert.equal(((await orphan) as ApplyWorkspaceEditResult).applied, false);
  assert.deepEqual([t.passed.length, t.reviews.list().length], [0, 0]);
  t.dispose();
});

test("Accept All: the edit on screen and those the step still sends are accepted, a protected file's stays for its own answer", async () => {
  const t = setup();
  for (const f of ["a.txt", "b.txt", "AGENTS.md"]) stub.fileTexts.set(`/w/${f}`, file);
  t.events.fire(
    step("s-1", [
      ["ca", "edit_file", "a.txt"],
      ["cb", "edit_file", "b.txt"],
      ["cg", "edit_file", "AGENTS.md"],
    ]),
  );
  const a = t.reviews.handle(edit("file:///w/a.txt"), t.next);
  await tick();
  const all = t.reviews.all("accept");
  assert.deepEqual([all.decided, all.kept.length, all.armed], [1, 0, 3]);
  assert.deepEqual(await a, { applied: true });
  t.events.fire(end("s-1", "ca"));

  const g = t.reviews.handle(edit("file:///w/AGENTS.md", "protected file: coding agents follow it; accept or reject (1 of 2)"), t.next);
  await tick();
  assert.equal(t.reviews.list().length, 1, "the protected file's edit waits for its own answer");
  const b = t.reviews.handle(edit("file:///w/b.txt"), t.next);
  assert.deepEqual(await b, { applied: true }, "the other edit of the step is accepted without asking");
  assert.deepEqual(
    t.passed.map((p) => p.label),
    ["agent: edit a.txt", "agent: edit b.txt"],
  );
  assert.deepEqual(t.diffs().length, 2, "no diff opened for the edit accepted in bulk");
  assert.ok(t.notes.includes("  ✓ accepted with Accept All: agent: edit b.txt: proposed by agent-lsp; accept or reject"), t.notes.join("\n"));
  t.reviews.decide(nth(t.reviews.list(), 0), false);
  assert.deepEqual(await g, { applied: false, failureReason: "rejected by the user in review" });
  t.dispose();
});

test("the chat's card of a protected file's edit says Accept All leaves it", async () => {
  const t = setup();
  stub.fileTexts.set("/w/AGENTS.md", file);
  const g = t.reviews.handle(edit("file:///w/AGENTS.md", "protected file: coding agents follow it; accept or reject"), t.next);
  await tick();
  const html = reviewItem(t.reviews.card(nth(t.reviews.list(), 0))).html;
  assert.match(html, /Accept All leaves it to you/);
  assert.match(html, /protected file: coding agents follow it/);
  t.reviews.decide(nth(t.reviews.list(), 0), false);
  await g;
  t.dispose();
});

test("an edit of a file that cannot be read is refused with the reason, and nothing opens", async () => {
  const t = setup();
  const r = (await t.reviews.handle(edit("file:///nonexistent-agent-lsp/gone.txt"), t.next)) as ApplyWorkspaceEditResult;
  assert.equal(r.applied, false);
  assert.match(r.failureReason ?? "", /^the edit could not be shown for review: .*ENOENT/);
  assert.deepEqual([t.passed.length, t.diffs().length, t.reviews.list().length], [0, 0, 0]);
  t.dispose();
});
