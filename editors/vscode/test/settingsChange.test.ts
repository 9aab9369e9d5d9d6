// Unit tests of the reaction to settings changes: a change goes to the running
// server (workspace/didChangeConfiguration) for its next runs; only the binary
// and the store file restart it, and never during a run.
import assert from "node:assert/strict";
import { afterEach, beforeEach, test } from "node:test";
import { configureSettings, defaultSettings, restartSettings } from "../src/config";
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
let configures: number;
let mode: "apply" | "review";

beforeEach(() => {
  stub.reset();
  server = new SlowServer();
  restarts = 0;
  configures = 0;
  mode = "apply";
  const client: Client = {
    server: () => server,
    start: async () => {},
    restart: async () => {
      restarts++;
    },
    configure: async () => {
      configures++;
    },
    setApiKey: async () => {},
    about: async () => ({ extension: "0.2.0" }),
  };
  ctx = new Ctx(client, () => ({ ...defaultSettings, edits: mode }));
  watchSettings(ctx);
});

afterEach(() => ctx.dispose());

const run = (prompt: string) => launch(ctx, requests.run, { prompt }, { title: prompt, prompt });
const tick = () => new Promise((r) => setTimeout(r, 0));
const waitingNote = () => stub.statusMessages.filter((m) => m.includes("restarts with the new binary or store when the running agent ends"));

test("only the binary and the store file restart the server", () => {
  assert.deepEqual(restartSettings, ["path", "storePath"]);
});

test("with no run going, a change of agentLsp.path restarts the server at once", () => {
  stub.changeSettings("agentLsp.path");
  assert.deepEqual([restarts, configures], [1, 0]);
  assert.deepEqual(stub.messages, []);
});

test("every other server setting goes to the running server without a restart", () => {
  for (const key of configureSettings) {
    stub.changeSettings(`agentLsp.${key}`);
  }
  assert.equal(restarts, 0);
  assert.equal(configures, configureSettings.length);
  for (const key of ["baseURL", "model", "allow", "prices", "contextTokens", "window", "toolOutput", "readOnlySubagents"]) {
    assert.ok(configureSettings.includes(key as never), key);
  }
});

test("a change during a run goes to the server at once: it applies to the next runs, the running one keeps its settings", async () => {
  const running = run("slow work");
  await tick();
  stub.changeSettings("agentLsp.baseURL");
  assert.deepEqual([restarts, configures], [0, 1]);
  server.finish();
  await running;
});

test("a change of the binary during a run restarts the server only once the run has ended, without asking", async () => {
  const running = run("slow work");
  await tick();
  stub.changeSettings("agentLsp.path");
  stub.changeSettings("agentLsp.storePath");
  assert.equal(restarts, 0, "the running run goes on");
  assert.deepEqual(stub.messages, [], "no prompt offers to stop the run");
  assert.equal(waitingNote().length, 1, "the status bar says when the change applies, once");
  server.finish();
  await running;
  assert.equal(restarts, 1);
  assert.deepEqual(waitingNote(), []);
  stub.changeSettings("agentLsp.path");
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

test("the edit mode goes to the server and says how edits now arrive", () => {
  mode = "review";
  stub.changeSettings("agentLsp.edits");
  assert.deepEqual([restarts, configures], [0, 1]);
  assert.deepEqual(stub.statusMessages, ["agent: edits now open for your review first"]);
});

test("saving before commands and autoStart are the extension's own: the server hears nothing", () => {
  stub.changeSettings("agentLsp.saveBeforeCommands");
  stub.changeSettings("agentLsp.autoStart");
  assert.deepEqual([restarts, configures], [0, 0]);
});

test("other extensions' settings change nothing", () => {
  stub.changeSettings("editor.fontSize");
  assert.deepEqual([restarts, configures], [0, 0]);
  assert.deepEqual(stub.statusMessages, []);
});
