// The golden fixtures of the wire contract (testdata/protocol, recorded from
// the real server by the Go tests) through the extension: their file names are
// exactly the extension's commands, event kinds and the requests it answers,
// and every example renders with its key values. tsc has already checked each fixture against the
// protocol types (scripts/fixtures.mjs generates test/fixtures from them).
import { endpointLine } from "../src/reasons";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { test } from "node:test";
import { defaultSettings, initializationOptions, tuning } from "../src/config";
import { ChatTranscript } from "../src/chatModel";
import { deleted, dollars, EventFormatter, mcpReport, modelItem, processItem, projectItem, projectsReport, sessionDocLink, sessionItem, stoppedProcess, summary, switched, tokens, transcript, unread, usageText } from "../src/format";
import { eventTypes, requests, serverRequests, type AgentEventOf, type CommandExample, type CommandName, type EventType, type RunResult } from "../src/protocol";
import { commandExamples, eventExamples } from "./fixtures";
import { slashItems, type SlashItem } from "../src/slash";
import { beforeSide, filesSince, forkedLine, rewindSummary, scopeItems } from "../src/rewind";
import { nth } from "./nth";

/** The page's matcher of the slash commands' list, from media/slash.js itself (the page runs it as it is). */
const slashMatches = (() => {
  const source = /^function slashMatches\(text, items\) \{\n[\s\S]*?\n\}$/m.exec(readFileSync("media/slash.js", "utf8"))?.[0];
  assert.ok(source, "media/slash.js has no function slashMatches(text, items)");
  // eslint-disable-next-line @typescript-eslint/no-implied-eval -- the page script (media/slash.js) evaluated as the webview runs it
  return new Function(`${source}\nreturn slashMatches;`)() as (text: string, items: SlashItem[]) => SlashItem[] | undefined;
})();

const protocol = "../../testdata/protocol"; // the tests run in editors/vscode

/** The names of a fixture folder's files. */
const fixtureNames = (dir: string) =>
  readdirSync(`${protocol}/${dir}`)
    .filter((f) => f.endsWith(".json"))
    .map((f) => f.slice(0, -".json".length))
    .sort();

/** The keys of a table over a union of names (Object.keys types them as plain strings). */
const keys = <K extends string>(table: Record<K, unknown>) => Object.keys(table) as K[];

/** Asserts that text shows every wanted value. */
function shows(text: string, want: (string | number)[], what: string): void {
  for (const w of want) {
    assert.ok(text.includes(String(w)), `${what} shows ${JSON.stringify(w)}: ${JSON.stringify(text)}`);
  }
}

test("the fixtures name exactly the commands in requests, the event kinds and the server's requests the extension knows", () => {
  assert.deepEqual(
    Object.values(requests)
      .map((r) => r.command)
      .sort(),
    fixtureNames("commands"),
  );
  assert.deepEqual([...eventTypes].sort(), fixtureNames("events"));
  // A request's file is named after its method with "/" written "." (save.test.ts answers them).
  assert.deepEqual(serverRequests.map((m) => m.replaceAll("/", ".")).sort(), fixtureNames("requests"));
});

/** What an event of each kind shows in the transcript; [] means nothing. */
const eventShows: { [T in EventType]: (ev: AgentEventOf<T>) => string[] } = {
  // The header: the session, its project and its token budget, with the tools left out to fit it.
  "run.start": (ev) => [ev.session, ev.project, `context ${ev.contextTokens} tokens`, ...(ev.withheld ?? [])],
  "message.delta": (ev) => [ev.text],
  // The run's own AI text arrives as deltas; a subagent's is not streamed, so its message shows.
  message: ({ message: m, contextId }) => (m.role === "human" || (m.role === "ai" && contextId && m.content) ? [m.content] : []),
  // The prompt waits for the run's next step: its place and its text.
  "message.queued": (ev) => [`queued (position ${ev.position}): ${ev.message.content}`],
  // How many older messages left the model's view, and how: summarized with the token counts, or dropped and why.
  "context.compacted": (ev) => [
    `⋯ ${ev.messages} older message`,
    ev.summarized ? "summarized" : "dropped",
    ...(ev.summarized ? [] : ["without a summary"]),
    `(${ev.before} → ${ev.after} tokens)`,
    ev.reason === "overflow" ? "overflowed" : "to fit the context",
    ...(ev.error ? [ev.error] : []),
  ],
  "tool.start": (ev) => {
    const args: Record<string, unknown> = JSON.parse(ev.args);
    return [ev.name, String(args["path"] ?? args["pattern"] ?? args["command"])]; // the tool and what it works on
  },
  "tool.end": (ev) => [ev.ok ? "✓" : "✗", ev.name, ev.summary],
  "subagent.start": (ev) => ["subagent", ev.task],
  "subagent.end": (ev) => ["subagent", ev.status],
  edit: (ev) => [ev.applied ? "edited" : "edit refused", ev.uri],
  // Not in the transcript: the status bar and the chat's end line show the run's totals (checked below).
  usage: () => [],
  "run.end": (ev) => [ev.status, ...(ev.error ? [ev.error] : [])],
  // How many events the window missed, which, and that the chat reads the session again.
  "events.dropped": (ev) => [`${ev.count} events`, `#${ev.fromSeq} to #${ev.toSeq}`, "reads the session again"],
};

function formatExamples<T extends EventType>(type: T): void {
  for (const ev of eventExamples[type]) {
    const text = new EventFormatter().format(ev);
    const want = eventShows[type](ev);
    const what = `${type} #${ev.seq}`;
    if (want.length === 0) {
      assert.equal(text, "", `${what} shows nothing`);
      continue;
    }
    shows(text, ev.contextId ? [`[${ev.contextId}]`, ...want] : want, what); // a subagent's lines name it
  }
}

test("every usage fixture's run totals show as tokens, and its cost when priced", () => {
  for (const ev of eventExamples.usage) {
    const text = usageText(ev.run);
    shows(text, [tokens(ev.run.total), "tokens"], `usage #${ev.seq}`);
    assert.equal(text.includes("$"), ev.run.cost !== undefined, `usage #${ev.seq}: a cost only when priced: ${text}`);
  }
});

test("every usage fixture's totals and model show in the chat's end line of its run", () => {
  for (const ev of eventExamples.usage) {
    const chat = new ChatTranscript(ev.session);
    chat.event({ session: ev.session, seq: 1, type: "run.start", project: "sample", contextTokens: ev.contextTokens });
    chat.event(ev);
    const end = nth(chat.event({ session: ev.session, seq: ev.seq + 1, type: "run.end", status: "done" }), 0);
    shows(end.html, [`${tokens(ev.run.total)} tokens`, ev.model, ...(ev.run.cost ? [dollars(ev.run.cost)] : [])], `chat end line after usage #${ev.seq}`);
  }
});

/** What an event of each kind shows in the chat view's transcript (escaped HTML); [] means nothing. */
const chatShows: { [T in EventType]: (ev: AgentEventOf<T>) => string[] } = {
  "run.start": () => [],
  "message.delta": (ev) => (ev.contextId ? [] : [ev.text.replace(/[<>&]/g, "")].filter(Boolean)),
  message: ({ message: m, contextId }) => (m.role === "ai" && contextId && m.content ? ["Subagent"] : []),
  "message.queued": (ev) => [`queued #${ev.position}`],
  "context.compacted": (ev) => [`${ev.messages} older messages`, `(${ev.before} → ${ev.after} tokens)`],
  "tool.start": (ev) => [ev.name, "⟳"],
  "tool.end": (ev) => [ev.name, ev.ok ? "✓" : "✗"],
  "subagent.start": () => ["subagent"],
  "subagent.end": (ev) => ["subagent", ev.status],
  edit: (ev) => [ev.applied ? "edited" : "edit refused", `data-open="${ev.uri}"`],
  usage: () => [],
  "run.end": (ev) => [`── ${ev.status}`],
  "events.dropped": () => [], // the chat reads the session again instead (chat.test.ts)
};

function chatExamples<T extends EventType>(type: T): void {
  for (const ev of eventExamples[type]) {
    const html = new ChatTranscript(ev.session)
      .event(ev)
      .map((i) => i.html)
      .join("\n");
    const want = chatShows[type](ev);
    if (want.length === 0) {
      assert.equal(html, "", `${type} #${ev.seq} shows nothing in the chat`);
    }
    shows(html, want, `chat ${type} #${ev.seq}`);
  }
}

test("every event fixture shows its key values in the chat view", () => {
  for (const type of keys(chatShows)) {
    chatExamples(type);
  }
});

test("every event fixture shows its key values in the transcript", () => {
  for (const type of keys(eventShows)) {
    formatExamples(type);
  }
});

/**
 * A run's summary: status, counts, and what failed or the reply, and the
 * queued prompts it never read, which the output lists; a queued prompt's
 * summary (a notification) says where in the queue it waits.
 */
const runShows = ({ result: r }: { result: RunResult }) => {
  if (r.status === "queued") {
    shows(summary(r), [`queued as #${r.position}`, `running session ${r.session}`], `summary of queued ${r.session}`);
    assert.equal(unread(r), "", "a queued prompt leaves nothing unread");
    return;
  }
  shows(summary(r), [`Agent ${r.status}`, `${r.edits} edit`, `${r.steps} step`, nth((r.error ?? r.reply).trim().split("\n"), 0)], `summary of ${r.session}`); // a reply's first line
  if (r.usage.totalTokens) {
    shows(summary(r), [usageText({ total: r.usage.totalTokens, cost: r.usage.cost })], `summary of ${r.session}: its usage`);
  }
  if (r.queued?.length) {
    shows(summary(r), [`${r.queued.length} queued prompt`, "not read"], `summary of ${r.session}`);
    for (const p of r.queued) {
      shows(unread(r), [`not read by the ${r.status} run: ${p}`], `unread of ${r.session}`);
    }
  } else {
    assert.equal(unread(r), "", `nothing unread in ${r.session}`);
  }
};

/** Checks that the renderer showing each command's result shows its key values. */
const commandShows: { [C in CommandName]: (ex: CommandExample<C>) => void } = {
  "agent.run": runShows,
  "agent.resume": runShows,
  // Not shown: the cancelled run's own request ends with status cancelled, and its summary says so.
  "agent.cancel": () => {},
  // An empty chat's first line.
  "agent.endpoint": ({ result: ep }) => {
    const { text, fix } = endpointLine(ep);
    shows(text, [ep.model, ep.baseURL, ep.keySet ? "API key set" : `no API key (${ep.apiKeyEnv})`], "the endpoint line");
    assert.equal(fix, ep.needsKey ? "Set API Key" : undefined, "Set API Key exactly when a key is needed");
  },
  "agent.sessions": ({ result }) => {
    for (const s of result) {
      const item = sessionItem(s);
      shows(item.label, [s.title], s.session);
      shows(item.description, [s.status, s.project, ...(s.model ? [s.model] : []), ...(s.edits ? [`${s.edits} mode`] : [])], s.session);
      shows(item.detail, [s.session, `${s.messages} messages`], s.session);
    }
  },
  "agent.session": ({ arguments: a, result: d }) => {
    const md = transcript(d);
    assert.equal(d.context, a.context, "a subagent's transcript names its context");
    shows(md, [d.title, d.session, d.project, d.status], "transcript");
    if (d.context) {
      shows(md, ["Subagent", d.context, `(${sessionDocLink(d.session)})`], "a subagent's transcript links its session");
    }
    // Each subagent with its task and status, linked to its own transcript (agent.session {session, context}).
    for (const sub of d.subagents) {
      shows(md, [`[${sub.task}](${sessionDocLink(d.session, sub.contextId)})`, sub.status || "not started", sub.contextId], `subagent ${sub.contextId}`);
    }
    assert.equal(md.includes("## Subagents"), d.subagents.length > 0, "the subagents section only when there are some");
    const calls = new Map<string, string>();
    for (const m of d.messages) {
      shows(md, [m.content], `transcript message ${m.id}`);
      for (const c of m.toolCalls ?? []) {
        calls.set(c.id, c.name);
        shows(md, [c.name, c.args], `transcript call ${c.id}`);
      }
      if (m.toolCallId) {
        shows(md, [`${calls.get(m.toolCallId)} result`], `transcript message ${m.id}`);
      }
    }
  },
  "agent.deleteSession": ({ arguments: a, result }) => shows(deleted(a.session, result), [result.deleted ? "Deleted" : "already gone", a.session], "delete"),
  "agent.projects": ({ result }) => {
    for (const p of result) {
      const item = projectItem(p);
      const s = p.techStack;
      assert.equal(item.label, p.name);
      shows(
        item.description,
        [s.language, s.languageVersion, s.packageManager, p.gitBranch].filter((v) => v !== undefined),
        p.name,
      );
      shows(
        item.detail,
        [p.path, s.buildCommand, s.testCommand].filter((v) => v !== undefined),
        p.name,
      );
      const b = p.sandbox;
      shows(item.detail, b.enforced.length ? [b.mode] : ["not sandboxed", ...(b.notEnforced ?? []).slice(0, 1)], p.name);
      const report = projectsReport(result);
      shows(report, [p.name, b.mode, ...b.enforced, ...(b.notEnforced ?? []), ...(b.writable ?? [])], `report of ${p.name}`);
      shows(report, [b.landlockABI ? `Landlock ABI ${b.landlockABI}` : "no Landlock", b.network ? "network allowed" : "no network"], `report of ${p.name}`);
    }
  },
  "agent.mcp": ({ result }) => {
    const report = mcpReport(result);
    for (const p of result) {
      shows(report, [p.project, p.root], `MCP report of ${p.project}`);
      for (const s of p.servers) {
        shows(report, [s.name, s.status, s.transport, s.origin, s.tools < 0 ? "tools not listed yet" : `${s.tools} tool`, ...(s.reason ? [s.reason] : []), ...(s.withheld ?? [])], `MCP server ${s.name} of ${p.project}`);
      }
    }
  },
  // Agent: Background Processes lists each in a quick pick, and says what became of the one stopped.
  "agent.processes": ({ result }) => {
    for (const p of result) {
      const item = processItem(p);
      shows(`${item.label} ${item.description}`, [p.id, p.command, p.project, p.session, p.started], `process ${p.id}`);
    }
  },
  "agent.stopProcess": ({ arguments: a, result }) => shows(stoppedProcess(a, result), [a.id, a.session, result.stopped ? "stopped" : "not stopped"], "stop"),
  "agent.switchProject": ({ result }) => shows(switched(result), [result.session, result.project], "switch"),
  // Rewind…'s quick pick lists, under the scopes that restore files, every file the prompt and later ones changed.
  "agent.checkpoints": ({ result }) => {
    for (const c of result.checkpoints) {
      const files = filesSince(result.checkpoints, c.checkpoint);
      const detail = scopeItems(c.checkpoint, files)
        .map((i) => `${i.description ?? ""} ${i.detail ?? ""}`)
        .join("\n");
      for (const f of c.files) {
        shows(detail, [f.path, ...(f.restorable ? [] : ["not restorable", ...(f.reason ? [f.reason] : [])])], `checkpoint ${c.checkpoint}`);
      }
      shows(detail, [`prompt ${c.checkpoint}`], `checkpoint ${c.checkpoint}`);
    }
  },
  "agent.rewind": ({ arguments: a, result: r }) => {
    const scope = "restore" in a ? a.restore : "both";
    const { text } = rewindSummary(r, scope);
    shows(text, [`prompt ${r.checkpoint}`, ...r.conflicts.map((f) => f.path), ...r.notRestorable.flatMap((f) => [f.path, f.reason])], "rewind");
    if ("undo" in a) shows(text, ["Undid the rewind"], "undo of a rewind");
    if (scope !== "conversation")
      shows(
        text,
        r.restored.map((f) => f.path),
        "rewind's restored files",
      );
  },
  "agent.fork": ({ arguments: a, result }) => shows(forkedLine(a, result), [a.session, a.checkpoint, result.session], "fork"),
  // Changes Since Here: the diff's left side is the content before the prompt.
  "agent.checkpointFile": ({ arguments: a, result: r }) => {
    const side = beforeSide(r.path, a.checkpoint, r);
    assert.equal(side.text, r.exists ? r.content : "");
    shows(side.title, [r.path, `prompt ${a.checkpoint}`], "checkpoint file");
  },
  // The chat's prompt box offers each command that can run when "/" and the start of its name are typed.
  "agent.commands": ({ result }) => {
    const items = slashItems(result.commands);
    for (const c of result.commands) {
      const offered = slashMatches(`/${c.name.slice(0, 2)}`, items)?.find((i) => i.name === c.name);
      if (c.error) {
        assert.equal(offered, undefined, `/${c.name} cannot run: not offered`);
      } else {
        assert.deepEqual(offered, { name: c.name, description: c.description, hint: c.argumentHint, source: c.source }, `/${c.name} offered`);
      }
    }
  },
  "agent.models": ({ result }) => {
    for (const m of result.models) {
      const item = modelItem(m, result, "");
      assert.equal(item.label, m.id);
      shows(item.detail ?? "", m.ownedBy ? [m.ownedBy] : [], m.id);
      assert.equal(item.description.includes("default"), m.id === result.current, `${m.id}: the server's default is marked`);
    }
  },
};

function renderExamples<C extends CommandName>(command: C): void {
  for (const ex of commandExamples[command]) {
    commandShows[command](ex);
  }
}

test("every command fixture's result shows its key values where the extension shows it", () => {
  for (const command of keys(commandShows)) {
    renderExamples(command);
  }
});

/** The rows of docs/protocol.md's settings table, by their initializationOptions key (without backquotes). */
function settingsTable(): Map<string, { env: string; default: string; what: string }> {
  const doc = readFileSync("../../docs/protocol.md", "utf8");
  const table = doc.slice(doc.indexOf("<!-- begin: settings -->"), doc.indexOf("<!-- end: settings -->"));
  const rows = new Map<string, { env: string; default: string; what: string }>();
  for (const line of table.split("\n").filter((l) => l.startsWith("| ") && !l.startsWith("| setting"))) {
    const [, env = "", init = "", , def = "", what = ""] = line
      .split("|")
      .slice(1, -1)
      .map((c) => c.trim().replace(/^`|`$/g, ""));
    rows.set(init, { env, default: def, what });
  }
  return rows;
}

test("the context settings go under the keys docs/protocol.md names, with its ranges and defaults, as package.json declares them", () => {
  const rows = settingsTable();
  const properties = JSON.parse(readFileSync("package.json", "utf8")).contributes.configuration.properties;
  for (const [key, t] of Object.entries(tuning)) {
    const row = rows.get(t.init);
    assert.ok(row, `${key}: protocol.md has no setting ${t.init}`);
    const p = properties[`agentLsp.${key}`];
    if (t.range) {
      assert.ok(row.what.includes(`(${t.range[0]}..${t.range[1]})`), `${key}: protocol.md's range of ${t.init} is not ${t.range.join("..")}: ${row.what}`);
      assert.deepEqual([p.minimum, p.maximum, p.default], [t.range[0], t.range[1], null], `${key}: package.json's range, unset by default`);
      // Unset, the server's environment and default apply; the description says which.
      shows(
        p.markdownDescription,
        [row.env, row.default].filter((v) => v !== "–"),
        `agentLsp.${key}'s description`,
      );
    } else {
      assert.deepEqual([p.type, String(p.default)], ["boolean", row.default], `${key}: a boolean with the server's default`);
    }
  }
});

test("agentLsp.prices goes under the key docs/protocol.md names, unset by default so that its environment variable applies", () => {
  const row = settingsTable().get("model.prices");
  assert.ok(row, "protocol.md has no setting model.prices");
  const p = JSON.parse(readFileSync("package.json", "utf8")).contributes.configuration.properties["agentLsp.prices"];
  assert.deepEqual(p.default, {});
  shows(p.markdownDescription, [row.env], "agentLsp.prices' description");
  const prices = { "gpt-4o": { input: 2.5, output: 10 } };
  assert.deepEqual(initializationOptions({ ...defaultSettings, prices })["model"], { prices });
  assert.equal("model" in initializationOptions(defaultSettings), false, "unset: not sent");
});
