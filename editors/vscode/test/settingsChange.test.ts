// Unit tests of the reaction to settings changes: a change applies to the next
// run and never stops a running one.
import assert from "node:assert/strict";
import { afterEach, beforeEach, test } from "node:test";
import { defaultSettings } from "../src/config";
import { Ctx, type AgentServer, type Client } from "../src/ctx";
import { launch } from "../src/launch";
import { requests, type RunResult } from "../src/protocol";
import { watchSettings } from "../src/settingsChange";
import { stub } from "./vscode-stub";

/** A server whose agent.run calls go on until finished. */
class SlowServer implements AgentServer {
  private pending: ((r: RunResult) => void)[] = [];
  async send(): Promise<any> {
    return new Promise<RunResult>((resolve) => this.pending.push(resolve));
  }
  onProgress() {
    return { dispose() {} };
  }
  /** Ends the oldest run going. */
  finish(): void {
    this.pending.shift()!({ session: "s", status: "done", reply: "", edits: 0, steps: 1, usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 } });
  }
}

let server: SlowServer;
let ctx: Ctx;
let restarts: number;
let mode: "apply" | "review";

beforeEach(() => {
  stub.reset();
  server = new SlowServer();
  restarts = 0;
  mode = "apply";
  const client: Client = { server: () => server, restart: async () => void restarts++, setApiKey: async () => {} };
  ctx = new Ctx(client, () => ({ ...defaultSettings, edits: mode }));
  watchSettings(ctx);
});

afterEach(() => ctx.dispose());

const run = (prompt: string) => launch(ctx, requests.run, { prompt }, prompt);
const tick = () => new Promise((r) => setTimeout(r, 0));
const waitingNote = () => stub.statusMessages.filter((m) => m.includes("restarts with them when the running agent ends"));

test("with no run going, a settings change restarts the server at once", () => {
  stub.changeSettings("agentLsp.baseURL");
  assert.equal(restarts, 1);
  assert.deepEqual(stub.messages, []);
});

test("a settings change during a run restarts the server only once the run has ended, without asking", async () => {
  const running = run("slow work");
  await tick();
  stub.changeSettings("agentLsp.baseURL");
  stub.changeSettings("agentLsp.allow", "agentLsp.scrubEnv");
  assert.equal(restarts, 0, "the running run goes on");
  assert.deepEqual(stub.messages, [], "no prompt offers to stop the run");
  assert.equal(waitingNote().length, 1, "the status bar says when the change applies, once");
  server.finish();
  await running;
  assert.equal(restarts, 1);
  assert.deepEqual(waitingNote(), []);
  stub.changeSettings("agentLsp.model");
  assert.equal(restarts, 2, "with nothing running again, a change restarts at once");
});

test("with several runs going, the restart waits for the last one", async () => {
  const first = run("one");
  const second = run("two");
  await tick();
  stub.changeSettings("agentLsp.path");
  server.finish();
  await first;
  assert.equal(restarts, 0);
  server.finish();
  await second;
  assert.equal(restarts, 1);
});

test("the context settings restart the server, as every setting the server reads at start does", () => {
  for (const key of ["contextTokens", "window", "toolOutput", "readOnlySubagents"]) {
    stub.changeSettings(`agentLsp.${key}`);
  }
  assert.equal(restarts, 4);
});

test("the edit mode applies to the next run without a restart", () => {
  mode = "review";
  stub.changeSettings("agentLsp.edits");
  assert.equal(restarts, 0);
  assert.deepEqual(stub.statusMessages, ["agent: edits now open in the refactor preview first"]);
});

test("saving before commands applies to the next command without a restart", () => {
  stub.changeSettings("agentLsp.saveBeforeCommands");
  assert.equal(restarts, 0);
});

test("other extensions' settings change nothing", () => {
  stub.changeSettings("editor.fontSize");
  assert.equal(restarts, 0);
  assert.deepEqual(stub.statusMessages, []);
});
