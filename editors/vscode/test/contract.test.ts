// The golden fixtures of the wire contract (testdata/protocol, recorded from
// the real server by the Go tests) through the extension: their file names are
// exactly the extension's commands and event kinds, and every example renders
// with its key values. tsc has already checked each fixture against the
// protocol types (scripts/fixtures.mjs generates test/fixtures from them).
import assert from "node:assert/strict";
import { readdirSync } from "node:fs";
import { test } from "node:test";
import { deleted, EventFormatter, projectItem, projectsReport, sessionItem, summary, switched, transcript } from "../src/format";
import { eventTypes, requests, type AgentEventOf, type CommandExample, type CommandName, type EventType, type RunResult } from "../src/protocol";
import { commandExamples, eventExamples } from "./fixtures";

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

test("the fixtures name exactly the commands in requests and the event kinds the extension knows", () => {
  assert.deepEqual(Object.values(requests).map((r) => r.command).sort(), fixtureNames("commands"));
  assert.deepEqual([...eventTypes].sort(), fixtureNames("events"));
});

/** What an event of each kind shows in the transcript; [] means nothing. */
const eventShows: { [T in EventType]: (ev: AgentEventOf<T>) => string[] } = {
  "run.start": (ev) => [ev.session, ev.project],
  "message.delta": (ev) => [ev.text],
  // The run's own AI text arrives as deltas; a subagent's is not streamed, so its message shows.
  message: ({ message: m, contextId }) => (m.role === "human" || (m.role === "ai" && contextId && m.content) ? [m.content] : []),
  "tool.start": (ev) => {
    const args: Record<string, unknown> = JSON.parse(ev.args);
    return [ev.name, String(args.path ?? args.pattern ?? args.command)]; // the tool and what it works on
  },
  "tool.end": (ev) => [ev.ok ? "✓" : "✗", ev.name, ev.summary],
  "subagent.start": (ev) => ["subagent", ev.task],
  "subagent.end": (ev) => ["subagent", ev.status],
  edit: (ev) => [ev.applied ? "edited" : "edit refused", ev.uri],
  "run.end": (ev) => [ev.status, ...(ev.error ? [ev.error] : [])],
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

test("every event fixture shows its key values in the transcript", () => {
  for (const type of keys(eventShows)) {
    formatExamples(type);
  }
});

/** A run's summary: status, counts, and what failed or the reply. */
const runShows = ({ result: r }: { result: RunResult }) =>
  shows(summary(r), [`Agent ${r.status}`, `${r.edits} edit`, `${r.steps} step`, r.error ?? r.reply], `summary of ${r.session}`);

/** Checks that the renderer showing each command's result shows its key values. */
const commandShows: { [C in CommandName]: (ex: CommandExample<C>) => void } = {
  "agent.run": runShows,
  "agent.resume": runShows,
  // Not shown: the cancelled run's own request ends with status cancelled, and its summary says so.
  "agent.cancel": () => {},
  "agent.sessions": ({ result }) => {
    for (const s of result) {
      const item = sessionItem(s);
      shows(item.label, [s.title], s.session);
      shows(item.description, [s.status, s.project], s.session);
      shows(item.detail, [s.session, `${s.messages} messages`], s.session);
    }
  },
  "agent.session": ({ result: d }) => {
    const md = transcript(d);
    shows(md, [d.title, d.session, d.project, d.status], "transcript");
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
      shows(item.description, [s.language, s.languageVersion, s.packageManager, p.gitBranch].filter((v) => v !== undefined), p.name);
      shows(item.detail, [p.path, s.buildCommand, s.testCommand].filter((v) => v !== undefined), p.name);
      const b = p.sandbox;
      shows(item.detail, b.enforced.length ? [b.mode] : ["not sandboxed", ...(b.notEnforced ?? []).slice(0, 1)], p.name);
      const report = projectsReport(result);
      shows(report, [p.name, b.mode, ...b.enforced, ...(b.notEnforced ?? []), ...(b.writable ?? [])], `report of ${p.name}`);
      shows(report, [b.landlockABI ? `Landlock ABI ${b.landlockABI}` : "no Landlock", b.network ? "network allowed" : "no network"], `report of ${p.name}`);
    }
  },
  "agent.switchProject": ({ result }) => shows(switched(result), [result.session, result.project], "switch"),
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
