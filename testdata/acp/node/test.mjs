// End to end test of `agent-lsp acp` with the official TypeScript ACP client
// (@agentclientprotocol/sdk): an independent implementation of the protocol
// checks that ours speaks it. run.sh builds the binaries, starts the scripted
// model and runs this with:
//
//   ACP_AGENT_LSP    the agent-lsp binary
//   ACP_MODEL_URL    the scripted model's base URL (OPENAI_BASE_URL)
//   ACP_WORKSPACE    a copy of testdata/workspaces/sample (edited by the test)
//   ACP_STORE        the session store file (AGENT_LSP_STORE), not yet existing
//   ACP_CONFIG_HOME  an empty directory for XDG_CONFIG_HOME
//
// Besides the steps' checks, every message the SDK parses (session/update
// notifications, the agent's requests to the client) must come through its
// schema (stable ACP v1) whole, and so must the agent's responses, which the
// SDK passes on unparsed and this test parses with the same schemas. What the
// stable schema skips, replaces by a default or strips fails the test unless
// the SDK's unstable v1 schema takes it whole: such a value (a field the
// protocol has as unstable, which a stable client ignores) is only listed as
// a note at the end.

import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { Readable, Writable } from "node:stream";
import { fileURLToPath, pathToFileURL } from "node:url";
import assert from "node:assert/strict";
import { client, methods, ndJsonStream, PROTOCOL_VERSION, RequestError } from "@agentclientprotocol/sdk";

const here = dirname(fileURLToPath(import.meta.url));
// The SDK's zod schemas of ACP v1: stable (the ones it parses incoming
// messages with) and unstable. The package does not export them, so they
// are imported by path; package.json pins the version these paths are from.
const sdkFile = (rel) => pathToFileURL(join(here, "node_modules/@agentclientprotocol/sdk/dist/v1", rel)).href;
const zod = await import(sdkFile("schema/zod.gen.js"));
const zodUnstable = await import(sdkFile("unstable/schema/zod.gen.js"));
// The schemas of the agent's messages the client parses, by method.
const paramsSchema = {
	"session/update": "zSessionNotification",
	"fs/read_text_file": "zReadTextFileRequest",
	"fs/write_text_file": "zWriteTextFileRequest",
	"session/request_permission": "zRequestPermissionRequest",
};

const env = (name) => {
	const v = process.env[name];
	if (!v) throw new Error(`${name} is not set: run this through run.sh`);
	return v;
};
const binary = env("ACP_AGENT_LSP");
const workspace = env("ACP_WORKSPACE");
const greet = join(workspace, "greet.go");
const PROMPT = "Greet with Hi instead of Hello, over ACP.";
const TIMEOUT_MS = 60_000; // only to catch hangs

const log = (...a) => console.error("acp-node:", ...a);

// Problems the SDK reports on its own (a notification it could not parse is
// dropped with a console.error) and disagreements with the stable schema:
// each one fails the test. Notes are values only the unstable schema has.
const sdkErrors = [];
const notes = new Set();
const consoleError = console.error.bind(console);
console.error = (...a) => {
	if (typeof a[0] === "string" && /^(Error handling notification|Invalid message|Got response to unknown request)/.test(a[0])) {
		sdkErrors.push(a.map((x) => (typeof x === "string" ? x : JSON.stringify(x))).join(" "));
	}
	consoleError(...a);
};

// The agent's environment: the scripted model, a store of the test's own,
// in-process (no daemon), and nothing inherited that could change settings.
function agentEnv() {
	const e = {};
	for (const [k, v] of Object.entries(process.env)) {
		if (!/^(AGENT_LSP_|OPENAI_|ACP_)/.test(k)) e[k] = v;
	}
	return {
		...e,
		OPENAI_BASE_URL: env("ACP_MODEL_URL"),
		OPENAI_API_KEY: "sk-test",
		AGENT_LSP_MODEL: "scripted",
		AGENT_LSP_STORE: env("ACP_STORE"),
		AGENT_LSP_DAEMON: "off",
		XDG_CONFIG_HOME: env("ACP_CONFIG_HOME"),
	};
}

function withTimeout(promise, what, ms = TIMEOUT_MS) {
	let timer;
	return Promise.race([
		promise,
		new Promise((_, reject) => {
			timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms / 1000} s`)), ms);
		}),
	]).finally(() => clearTimeout(timer));
}

// disagreements lists where got (what the schema made of a value) differs
// from raw (the value on the wire): a key or item dropped, a value changed.
// Keys the schema adds (defaults of absent optional fields) are fine.
function disagreements(raw, got, path = "") {
	if (raw === null || typeof raw !== "object") {
		return Object.is(raw, got) ? [] : [`${path || "."}: ${JSON.stringify(raw)} became ${JSON.stringify(got)}`];
	}
	if (Array.isArray(raw)) {
		if (!Array.isArray(got) || got.length !== raw.length) {
			return [`${path || "."}: ${JSON.stringify(raw)} became ${JSON.stringify(got)}`];
		}
		return raw.flatMap((v, i) => disagreements(v, got[i], `${path}[${i}]`));
	}
	if (got === null || typeof got !== "object" || Array.isArray(got)) {
		return [`${path || "."}: ${JSON.stringify(raw)} became ${JSON.stringify(got)}`];
	}
	return Object.entries(raw).flatMap(([k, v]) =>
		k in got ? disagreements(v, got[k], `${path}.${k}`) : [`${path}.${k}: ${JSON.stringify(v)} was dropped by the schema`],
	);
}

// schemaProblems checks raw, a value of the agent's, against one of the
// SDK's schemas; got is what the stable schema made of it (the SDK's parse,
// or the test's). It returns the disagreements, and adds notes.
function schemaProblems(schemaName, raw, what, got) {
	if (got === undefined) {
		const res = zod[schemaName].safeParse(raw);
		if (!res.success) return [`${what} does not parse as the stable ${schemaName}: ${res.error} in ${JSON.stringify(raw)}`];
		got = res.data;
	}
	const diff = disagreements(raw, got);
	if (diff.length === 0) return [];
	const unstable = zodUnstable[schemaName].safeParse(raw);
	const udiff = unstable.success ? disagreements(raw, unstable.data) : [String(unstable.error)];
	if (udiff.length) return [`${what}: the SDK's ${schemaName} does not take it whole:\n  ${diff.join("\n  ")}\nin ${JSON.stringify(raw)}`];
	for (const d of diff) notes.add(`${what}: ${d.replace(/: .* was dropped/, " was dropped")} (stable ${schemaName}; the unstable schema has it)`);
	return [];
}

function checkSchema(schemaName, raw, what) {
	const problems = schemaProblems(schemaName, raw, what);
	assert.deepEqual(problems, [], problems.join("\n"));
}

// startAgent spawns `agent-lsp acp` and connects the SDK's client to it. The
// client is an editor: it reads files from its buffers (else the disk),
// writes them to its buffers and the disk, allows once whatever it is asked,
// and records every update, with the raw messages as they came.
function startAgent(name) {
	const child = spawn(binary, ["acp"], { env: agentEnv(), stdio: ["pipe", "pipe", "pipe"] });
	const a = {
		name,
		child,
		stderr: "",
		exited: new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal }))),
		wire: [], // every message from the agent, in order
		sent: [], // every message to the agent, in order
		updates: [], // parsed session/update params, in order
		rawUpdates: [], // the same, raw
		reads: [],
		writes: [],
		permissions: [],
		buffers: new Map(),
	};
	child.stderr.setEncoding("utf8");
	child.stderr.on("data", (d) => (a.stderr += d));
	child.on("error", (err) => (a.stderr += `\nspawn: ${err}`));

	const stream = ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
	// A tap on the incoming side: the raw messages, in wire order.
	const tap = new TransformStream({
		transform(msg, controller) {
			a.wire.push(msg);
			if (msg.method === methods.client.session.update) a.rawUpdates.push(msg.params);
			controller.enqueue(msg);
		},
	});
	const out = new TransformStream({
		transform(msg, controller) {
			a.sent.push(msg);
			controller.enqueue(msg);
		},
	});
	out.readable.pipeTo(stream.writable).catch(() => {});
	const tapped = { writable: out.writable, readable: stream.readable.pipeThrough(tap) };
	const rawRequest = (requestId) => a.wire.find((m) => m.method !== undefined && m.id === requestId);

	const app = client({ name: "agent-lsp-acp-node-e2e" })
		.onNotification(methods.client.session.update, ({ params }) => {
			const raw = a.rawUpdates[a.updates.length];
			a.updates.push(params);
			sdkErrors.push(...schemaProblems(paramsSchema["session/update"], raw, `${name}: session/update (${raw?.update?.sessionUpdate})`, params));
		})
		.onRequest(methods.client.fs.readTextFile, ({ params, requestId }) => {
			checkParams(a, rawRequest(requestId), params);
			a.reads.push(params);
			let text = a.buffers.get(params.path);
			if (text === undefined) {
				try {
					text = readFileSync(params.path, "utf8");
				} catch {
					throw RequestError.resourceNotFound(params.path);
				}
			}
			if (params.line != null || params.limit != null) {
				const lines = text.split("\n");
				const from = Math.max((params.line ?? 1) - 1, 0);
				text = lines.slice(from, params.limit != null ? from + params.limit : undefined).join("\n");
			}
			return { content: text };
		})
		.onRequest(methods.client.fs.writeTextFile, ({ params, requestId }) => {
			checkParams(a, rawRequest(requestId), params);
			a.writes.push(params);
			a.buffers.set(params.path, params.content);
			writeFileSync(params.path, params.content);
			return {};
		})
		.onRequest(methods.client.session.requestPermission, ({ params, requestId }) => {
			checkParams(a, rawRequest(requestId), params);
			a.permissions.push(params);
			const allow = params.options.find((o) => o.kind === "allow_once");
			log(`${name}: permission asked for ${params.toolCall.toolCallId} (${params.toolCall.title}): ${allow ? allow.optionId : "cancelled"}`);
			return allow ? { outcome: { outcome: "selected", optionId: allow.optionId } } : { outcome: { outcome: "cancelled" } };
		});
	a.connection = app.connect(tapped);
	a.agent = a.connection.agent;
	// request sends a request and checks its response against the schema.
	a.request = async (method, params, schemaName) => {
		const res = await withTimeout(a.agent.request(method, params), `${name}: ${method}`);
		checkSchema(schemaName, res, `${name}: the ${method} response`);
		return res;
	};
	return a;
}

function checkParams(a, raw, params) {
	sdkErrors.push(...schemaProblems(paramsSchema[raw.method], raw.params, `${a.name}: ${raw.method}`, params));
}

// stop ends the agent's input and waits for it to exit (it releases the store).
async function stop(a) {
	a.connection.close();
	a.child.stdin.end();
	const { code, signal } = await withTimeout(a.exited, `${a.name}: exit after its input ended`);
	assert.equal(code, 0, `${a.name} exited with ${code ?? signal}`);
}

async function initialize(a) {
	assert.equal(PROTOCOL_VERSION, 1, "the SDK's protocol version");
	const res = await a.request(
		methods.agent.initialize,
		{ protocolVersion: PROTOCOL_VERSION, clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: false } },
		"zInitializeResponse",
	);
	assert.equal(res.protocolVersion, 1, "protocolVersion");
	assert.equal(res.agentCapabilities?.loadSession, true, "agentCapabilities.loadSession");
	assert.equal(res.agentCapabilities?.promptCapabilities?.embeddedContext, true, "agentCapabilities.promptCapabilities.embeddedContext");
	return res;
}

const textOf = (updates, kind) =>
	updates
		.filter((u) => u.update.sessionUpdate === kind && u.update.content?.type === "text")
		.map((u) => u.update.content.text)
		.join("");
const toolCalls = (updates, id) => updates.map((u) => u.update).filter((u) => u.sessionUpdate === "tool_call" && u.toolCallId === id);
const toolCallUpdates = (updates, id) => updates.map((u) => u.update).filter((u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === id);
const show = (updates) => updates.map((u) => JSON.stringify(u.update)).join("\n  ");

const agents = [];
async function main() {
	// 1. initialize
	const first = startAgent("first agent-lsp acp");
	agents.push(first);
	const init = await initialize(first);
	log(`initialize: ${init.agentInfo?.name} ${init.agentInfo?.version}, protocol ${init.protocolVersion}, loadSession ${init.agentCapabilities.loadSession}`);

	// 2. session/new
	const created = await first.request(methods.agent.session.new, { cwd: workspace, mcpServers: [] }, "zNewSessionResponse");
	const sessionId = created.sessionId;
	assert.match(sessionId, /^s-/, "the session ID");
	log(`session/new: ${sessionId}`);

	// 3. session/prompt: read, edit (through the client), a command (asks), reply.
	const prompted = await first.request(
		methods.agent.session.prompt,
		{ sessionId, prompt: [{ type: "text", text: PROMPT }] },
		"zPromptResponse",
	);
	assert.equal(prompted.stopReason, "end_turn", "stopReason");
	const ups = first.updates;
	for (const u of ups) assert.equal(u.sessionId, sessionId, `an update of another session: ${JSON.stringify(u)}`);
	log(`session/prompt: ${prompted.stopReason} after ${ups.length} updates`);

	const read = toolCalls(ups, "call_read");
	assert.equal(read.length, 1, `one tool_call call_read in:\n  ${show(ups)}`);
	assert.equal(read[0].kind, "read", "call_read's kind");

	const diffs = toolCallUpdates(ups, "call_edit").flatMap((u) => (u.content ?? []).filter((c) => c.type === "diff"));
	assert.ok(
		diffs.some((d) => d.path.endsWith("greet.go") && d.newText.includes('"Hi, "')),
		`a tool_call_update of call_edit with the diff of greet.go in:\n  ${show(ups)}`,
	);

	assert.equal(first.permissions.length, 1, `one permission request: ${JSON.stringify(first.permissions)}`);
	assert.equal(first.permissions[0].toolCall.toolCallId, "call_grep", "the permission request's tool call");
	assert.equal(first.permissions[0].sessionId, sessionId, "the permission request's session");

	assert.ok(
		toolCallUpdates(ups, "call_grep").some((u) => u.status === "completed"),
		`a tool_call_update of call_grep with status completed in:\n  ${show(ups)}`,
	);
	const reply = textOf(ups, "agent_message_chunk");
	assert.ok(reply.includes("Done over ACP."), `the agent's text: ${JSON.stringify(reply)}`);

	assert.ok(
		first.writes.some((w) => w.path === greet && w.content.includes('"Hi, "') && w.sessionId === sessionId),
		`fs/write_text_file of ${greet} with "Hi, ": ${JSON.stringify(first.writes)}`,
	);
	assert.ok(first.reads.some((r) => r.path === greet), `fs/read_text_file of ${greet}: ${JSON.stringify(first.reads)}`);
	assert.ok(readFileSync(greet, "utf8").includes('"Hi, "'), "greet.go on disk after the edit");
	log(`checked: ${first.reads.length} reads, ${first.writes.length} writes, ${first.permissions.length} permission request, reply ${JSON.stringify(reply)}`);

	// 4. A second process loads the session: its conversation is replayed
	// as session/update notifications before the load's response.
	await stop(first);
	log("the first process exited");
	const second = startAgent("second agent-lsp acp");
	agents.push(second);
	await initialize(second);
	await withTimeout(second.agent.request(methods.agent.session.load, { sessionId, cwd: workspace, mcpServers: [] }), "session/load");
	const seen = second.updates.slice(); // what the client had when the load answered
	const loadID = second.sent.find((m) => m.method === methods.agent.session.load).id;
	const loadResponseAt = second.wire.findIndex((m) => m.method === undefined && m.id === loadID);
	assert.ok(loadResponseAt >= 0 && "result" in second.wire[loadResponseAt], `the session/load response: ${JSON.stringify(second.wire[loadResponseAt])}`);
	checkSchema("zLoadSessionResponse", second.wire[loadResponseAt].result, "the session/load response");
	log(`session/load: ${seen.length} updates before its response`);

	const before = (what, ok) => assert.ok(seen.some((u) => u.sessionId === sessionId && ok(u.update)), `${what} before the session/load response; had:\n  ${show(seen)}`);
	before(`user_message_chunk ${JSON.stringify(PROMPT)}`, (u) => u.sessionUpdate === "user_message_chunk" && u.content.type === "text" && u.content.text.includes(PROMPT));
	assert.ok(textOf(seen, "agent_message_chunk").includes("Done over ACP."), `agent_message_chunk "Done over ACP." before the session/load response; had:\n  ${show(seen)}`);
	for (const id of ["call_read", "call_edit", "call_grep"]) {
		before(`tool_call ${id} completed`, (u) => u.sessionUpdate === "tool_call" && u.toolCallId === id && u.status === "completed");
	}
	await stop(second);
	log("the second process exited");

	assert.deepEqual(sdkErrors, [], `the SDK disagrees:\n${sdkErrors.join("\n")}`);
	for (const n of notes) log(`note: ${n}`);
}

const overall = setTimeout(() => {
	consoleError("acp-node: FAIL: the test did not finish within 5 minutes");
	dump();
	process.exit(1);
}, 5 * 60_000);

function dump() {
	for (const a of agents) {
		consoleError(`--- ${a.name}: stderr ---\n${a.stderr}`);
		consoleError(`--- ${a.name}: its messages ---\n${a.wire.map((m) => JSON.stringify(m)).join("\n")}`);
	}
	if (sdkErrors.length) consoleError(`--- the SDK's complaints ---\n${sdkErrors.join("\n")}`);
}

try {
	await main();
	clearTimeout(overall);
	log("PASS");
} catch (err) {
	clearTimeout(overall);
	consoleError(`acp-node: FAIL: ${err?.stack ?? err}`);
	dump();
	for (const a of agents) a.child.kill();
	process.exit(1);
}
