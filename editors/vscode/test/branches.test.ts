// Unit tests of the branches runs in worktrees report, against the stubbed
// vscode API and a real git repository: the notification's actions show the
// diff, merge and delete the branch.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, test } from "node:test";
import { actions, Branches } from "../src/branches";
import type { AgentEvent } from "../src/protocol";
import { EventEmitter, stub } from "./vscode-stub";

let dir = "";

function git(...args: string[]): string {
  return execFileSync("git", ["-C", dir, "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgSign=false", ...args], {
    encoding: "utf8",
    env: { ...process.env, GIT_CONFIG_NOSYSTEM: "1" },
  });
}

beforeEach(() => {
  stub.reset();
  dir = mkdtempSync(join(tmpdir(), "branches-"));
  git("init", "-q");
  writeFileSync(join(dir, "a.txt"), "one\n");
  git("add", "-A");
  git("commit", "-q", "-m", "one");
  git("checkout", "-q", "-b", "agent-lsp/abcd1234-1");
  writeFileSync(join(dir, "a.txt"), "two\n");
  git("commit", "-q", "-am", "two");
  git("checkout", "-q", "-");
});

afterEach(() => rmSync(dir, { recursive: true, force: true }));

const runEnd = (branch: string): AgentEvent => ({ type: "run.end", session: "s-1", seq: 3, status: "done", branch });

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !check(); i++) await new Promise((r) => setTimeout(r, 10));
  assert.ok(check(), "timed out");
}

test("a reported branch is offered once: Show Diff opens its diff, Merge merges it, Delete Branch deletes it", async () => {
  const events = new EventEmitter<AgentEvent>();
  const branches = new Branches(events.event, () => ["/nowhere", dir]);
  stub.buttons = [actions.diff];
  events.fire(runEnd("agent-lsp/abcd1234-1"));
  await until(() => stub.opened.length === 1);
  assert.deepEqual(stub.messages, [{ level: "info", text: "Agent: changes on branch agent-lsp/abcd1234-1" }]);
  assert.deepEqual(stub.buttonsShown[0], [actions.diff, actions.merge, actions.remove]);
  const [opened] = stub.opened;
  assert.ok(opened);
  assert.match(opened.content, /-one\n\+two/);
  events.fire(runEnd("agent-lsp/abcd1234-1"));
  events.fire(runEnd("agent-lsp/not-here"));
  await new Promise((r) => setTimeout(r, 200));
  assert.equal(stub.messages.length, 1, "told once, and never of a branch no folder has");
  const [b] = branches.reported;
  assert.ok(b);
  await branches.act(b, actions.merge);
  assert.equal(readFileSync(join(dir, "a.txt"), "utf8"), "two\n");
  assert.equal(branches.reported.length, 0);
  await branches.act(b, actions.remove);
  assert.equal(git("branch", "--list", "agent-lsp/*"), "");
  await branches.act(b, actions.remove);
  assert.match(stub.messages.at(-1)!.text, /Delete Branch agent-lsp\/abcd1234-1: .*not found/);
  branches.dispose();
});
