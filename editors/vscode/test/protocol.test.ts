// The request table: each server command is bound to its argument and result
// types, so a mismatch fails the typecheck (tsc runs over the tests too).
import assert from "node:assert/strict";
import { test } from "node:test";
import type { AgentServer } from "../src/ctx";
import { requests, type ProjectInfo, type SessionInfo } from "../src/protocol";

test("the request table names each server command once", () => {
  const names = Object.values(requests).map((r) => r.command);
  assert.equal(new Set(names).size, names.length);
  for (const n of names) assert.match(n, /^agent\.[a-zA-Z]+$/);
});

// Never called: tsc checks that each line under @ts-expect-error is an error.
export async function typeErrors(s: AgentServer): Promise<void> {
  // @ts-expect-error agent.cancel takes a session, not a prompt
  await s.send(requests.cancel, { prompt: "x" });
  // @ts-expect-error agent.run needs a prompt
  await s.send(requests.run, { project: "api" });
  // @ts-expect-error agent.projects takes no arguments
  await s.send(requests.projects, { project: "api" });
  // @ts-expect-error agent.projects answers projects, not sessions
  const sessions: SessionInfo[] = await s.send(requests.projects, {});
  const projects: ProjectInfo[] = await s.send(requests.projects, {});
  // @ts-expect-error techStack is an object, not a list
  projects[0].techStack.join(", ");
  void sessions; // eslint-disable-line @typescript-eslint/no-meaningless-void-operator -- the type check above is the point
}
