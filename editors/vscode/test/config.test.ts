import assert from "node:assert/strict";
import { test } from "node:test";
import { defaultSettings, initializationOptions, readSettings, serverExecutable } from "../src/config";

test("settings fall back to the defaults and are trimmed", () => {
  const values: Record<string, unknown> = { path: "  ", model: " llama3 ", edits: "bogus", allow: ["go test *", "", 3] };
  const s = readSettings((k) => values[k] as any);
  assert.deepEqual(s, { ...defaultSettings, model: "llama3", allow: ["go test *"] });
});

test("initializationOptions carry model, store, edit mode and permissions, never a key", () => {
  const opts = initializationOptions({ ...defaultSettings, baseURL: "http://localhost:11434/v1", storePath: "/tmp/s.db", edits: "review", deny: ["rm *"] });
  assert.deepEqual(opts, {
    edits: "review",
    permissions: { allow: [], deny: ["rm *"] },
    model: { baseURL: "http://localhost:11434/v1" },
    store: { path: "/tmp/s.db" },
  });
  assert.deepEqual(initializationOptions(defaultSettings), { edits: "apply", permissions: { allow: [], deny: [] } });
});

test("the API key reaches the server only through its environment", () => {
  const env = { PATH: "/bin", OPENAI_API_KEY: "from-shell" };
  const withKey = serverExecutable(defaultSettings, "sk-stored", env);
  assert.equal(withKey.command, "agent-lsp");
  assert.equal(withKey.options.env.OPENAI_API_KEY, "sk-stored");
  assert.equal(env.OPENAI_API_KEY, "from-shell", "the extension host's environment is not changed");
  assert.equal(serverExecutable(defaultSettings, undefined, env).options.env.OPENAI_API_KEY, "from-shell");
  assert.ok(!serverExecutable({ ...defaultSettings, path: "~/bin/agent-lsp" }, undefined, env).command.startsWith("~"));
});
