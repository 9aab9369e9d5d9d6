// Unit tests of failing fast: a run refused for a reason (no key, a refused
// key, an unknown model, an endpoint out of reach) offers the action that
// fixes it, once, never Resume; the empty chat's line says what runs use.
import assert from "node:assert/strict";
import { afterEach, beforeEach, describe, test } from "node:test";
import { registerCommands } from "../src/commands";
import { defaultSettings } from "../src/config";
import { Ctx, type AgentServer, type Client } from "../src/ctx";
import type { ProgressValue, ReasonData, Request } from "../src/protocol";
import { endpointHtml, endpointLine, reasonFixes, reasonOf } from "../src/reasons";
import { stub } from "./vscode-stub";
import { nth } from "./nth";

const noKey: ReasonData = { reason: "no-api-key", setting: "model.apiKeyEnv", baseURL: "https://api.openai.com/v1", model: "gpt-4o-mini", apiKeyEnv: "OPENAI_API_KEY" };

/** A JSON-RPC error as vscode-languageclient rejects with it: code, message, data. */
const rpcError = (data: ReasonData) => Object.assign(new Error("agent.run: no API key"), { code: -32602, data });

let calls: string[];
let answer: (command: string) => unknown;
let ctx: Ctx;
let keys: string[];

beforeEach(() => {
  stub.reset();
  calls = [];
  keys = [];
  const server: AgentServer = {
    async send<A, R>(req: Request<A, R>): Promise<R> {
      calls.push(req.command);
      return (await answer(req.command)) as R;
    },
    onProgress: (_token: string, _h: (v: ProgressValue) => void) => ({ dispose() {} }),
  };
  const client: Client = {
    server: () => server,
    start: async () => {},
    configure: async () => {},
    setApiKey: async (k) => void keys.push(k),
    restart: async () => {},
    about: async () => ({ extension: "0.2.0" }),
  };
  ctx = new Ctx(client, () => ({ ...defaultSettings }));
  registerCommands(ctx);
});

afterEach(() => ctx.dispose());

const run = (prompt: string) => {
  stub.inputs.push(prompt);
  return stub.commands.get("agentLsp.run")!();
};

describe("reasons", () => {
  test("a run refused for no key offers Set API Key, once, and it sets the key", async () => {
    answer = () => {
      throw rpcError(noKey);
    };
    stub.buttons.push("Set API Key");
    stub.inputs.push("fix it", "sk-new-key-0123456789"); // the prompt, then Set API Key's input
    await stub.commands.get("agentLsp.run")!();
    await new Promise((r) => setTimeout(r, 10));
    assert.deepEqual(calls, ["agent.run"]);
    const errors = stub.messages.filter((m) => m.level === "error");
    assert.equal(errors.length, 1, `shown once: ${JSON.stringify(stub.messages)}`);
    assert.match(nth(errors, 0).text, /no API key for https:\/\/api\.openai\.com\/v1.*Set API Key/);
    assert.deepEqual(stub.buttonsShown[stub.messages.indexOf(nth(errors, 0))], ["Set API Key", "Open Settings"]);
    assert.deepEqual(keys, ["sk-new-key-0123456789"], "Set API Key ran");
  });

  test("a run whose key was refused offers Set API Key, never Resume", async () => {
    answer = () => ({ session: "s1", status: "failed", reply: "", edits: 0, steps: 0, error: "refused the API key (HTTP 401)", reason: "key-refused" });
    await run("fix it");
    await new Promise((r) => setTimeout(r, 10));
    const i = stub.messages.findIndex((m) => m.level === "error");
    assert.match(nth(stub.messages, i).text, /Agent failed.*refused the API key/);
    assert.deepEqual(stub.buttonsShown[i], ["Set API Key", "Open Settings"]);
    for (const fixes of Object.values(reasonFixes)) {
      assert.ok(!(fixes as string[]).includes("Resume"), "no reason offers Resume");
    }
  });

  test("Select Model without a key offers Set API Key, not a model name to type", async () => {
    answer = () => {
      throw rpcError(noKey);
    };
    await stub.commands.get("agentLsp.selectModel")!();
    assert.deepEqual(calls, ["agent.models"]);
    assert.equal(stub.inputBoxes.length, 0, "no input box");
    assert.deepEqual(stub.buttonsShown.at(-1), ["Set API Key", "Open Settings"]);
  });

  test("reasonOf reads a JSON-RPC error's data", () => {
    assert.deepEqual(reasonOf(rpcError(noKey)), noKey);
    assert.equal(reasonOf(new Error("x")), undefined);
    assert.equal(reasonOf({ data: { reason: "something-else" } }), undefined);
    assert.equal(reasonOf({ data: "text" }), undefined);
  });

  test("the empty chat's line: model, endpoint, key set or not, and Set API Key when one is needed", () => {
    const local = { baseURL: "http://localhost:11434/v1", model: "qwen", apiKeyEnv: "OPENAI_API_KEY", keySet: false, needsKey: false };
    assert.deepEqual(endpointLine(local), { text: "Model qwen at http://localhost:11434/v1 · no API key (OPENAI_API_KEY)" });
    const openai = { ...local, baseURL: "https://api.openai.com/v1", model: "gpt-4o", needsKey: true };
    assert.equal(endpointLine(openai).fix, "Set API Key");
    assert.match(endpointHtml(openai), /data-open="command:agentLsp\.setApiKey">Set API Key<\/a>/);
    assert.match(endpointHtml({ ...openai, model: "<b>" }), /&lt;b&gt;/, "escaped");
  });
});
