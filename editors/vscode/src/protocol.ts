// The agent-lsp wire contract (docs/protocol.md) as the extension uses it:
// the commands' argument and result types, the table binding each command to
// them, and the agent/event kinds. The golden fixtures of testdata/protocol
// are type-checked against these types (scripts/fixtures.mjs), so the types
// say exactly which fields the server sends: no index signatures, optional
// only what the server omits.

/** A server command (workspace/executeCommand) bound to its argument and result types. */
export interface Request<A, R> {
  readonly command: string;
  /** Never set: carries A and R for the type checker, so a mismatch does not compile. */
  readonly types?: { args: A; result: R };
}

function request<C extends CommandName>(command: C): Request<Commands[C]["args"], Commands[C]["result"]> {
  return { command };
}

/** How the agent's edits reach the editor. */
export type EditMode = "apply" | "review";

/** When a run's checkpoints reach the disk. */
export type Durability = "sync" | "batched" | "exit";

/** A session's status: running, or how its last run ended. */
export type SessionStatus = "running" | RunStatus;

/** How a run ended. */
export type RunStatus = "done" | "cancelled" | "failed" | "limit";

/** A command without arguments: only `{}` type-checks. */
export type NoArgs = Record<string, never>;

/** Arguments naming a session. */
export interface SessionArgs {
  session: string;
}

/** Arguments of agent.run. */
export interface RunArgs {
  prompt: string;
  project?: string;
  session?: string;
  uri?: string;
  range?: { start: { line: number; character: number }; end: { line: number; character: number } };
  edits?: EditMode;
  durability?: Durability;
}

/** Arguments of agent.resume. */
export interface ResumeArgs extends SessionArgs {
  edits?: EditMode;
  durability?: Durability;
}

/** The model's token counts of a run. */
export interface Usage {
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
}

/** The result of agent.run and agent.resume. */
export interface RunResult {
  session: string;
  status: RunStatus;
  reply: string;
  edits: number;
  steps: number;
  usage: Usage;
  /** What failed, for status failed. */
  error?: string;
}

/** One entry of agent.sessions. */
export interface SessionInfo {
  session: string;
  project: string;
  title: string;
  status: SessionStatus;
  created: string;
  updated: string;
  messages: number;
}

/** A tool call of an AI message; args is the model's raw JSON text. */
export interface ToolCall {
  id: string;
  name: string;
  args: string;
}

/** A message as the server stores it: in agent.session and in message events. */
export interface Message {
  id: string;
  role: "system" | "human" | "ai" | "tool";
  name?: string;
  content: string;
  toolCalls?: ToolCall[];
  /** The call a tool message answers. */
  toolCallId?: string;
}

/** The result of agent.session. */
export interface SessionDetail {
  session: string;
  project: string;
  status: SessionStatus;
  title: string;
  messages: Message[];
}

/** How a project is built, as the server detected it from its manifests. */
export interface TechStack {
  language: string;
  languageVersion?: string;
  packageManager?: string;
  buildCommand?: string;
  testCommand?: string;
  manifests?: string[];
  /** The types of further manifests found beside the principal one. */
  others?: string[];
}

/** The outcome of a project's last build or test. */
export interface Outcome {
  status: "unknown" | "pending" | "success" | "failed";
  command?: string;
  summary?: string;
  at?: string;
}

/** A project's runtime context. */
export interface ProjectContext {
  openFiles: string[];
  pendingChanges: string[];
  lastBuild: Outcome;
  lastTest: Outcome;
  recentErrors: string[];
}

/** How commands are confined: the `sandbox` setting. */
export type SandboxMode = "workspace-write" | "read-only" | "off";

/** How a project's commands are sandboxed on this machine (docs/security.md, The sandbox). */
export interface SandboxReport {
  mode: SandboxMode;
  /** The kernel's Landlock ABI; 0: none. */
  landlockABI: number;
  /** The rights actually enforced at that ABI, human-readable; empty when nothing is. */
  enforced: string[];
  /** What is not enforced, and why. */
  notEnforced?: string[];
  /** The directories commands may write. */
  writable?: string[];
  /** Whether commands may use the network. */
  network: boolean;
}

/** One entry of agent.projects. */
export interface ProjectInfo {
  name: string;
  path: string;
  type: string;
  techStack: TechStack;
  gitBranch?: string;
  context: ProjectContext;
  sandbox: SandboxReport;
}

/** Every server command by its wire name, with its argument and result types. */
export interface Commands {
  "agent.run": { args: RunArgs; result: RunResult };
  "agent.resume": { args: ResumeArgs; result: RunResult };
  "agent.cancel": { args: SessionArgs; result: { cancelled: boolean } };
  "agent.sessions": { args: { project?: string }; result: SessionInfo[] };
  "agent.session": { args: SessionArgs; result: SessionDetail };
  "agent.deleteSession": { args: SessionArgs; result: { deleted: boolean } };
  "agent.projects": { args: NoArgs; result: ProjectInfo[] };
  "agent.switchProject": { args: { session: string; project: string }; result: { session: string; project: string } };
}

export type CommandName = keyof Commands;

/** The result of command C. */
export type ResultOf<C extends CommandName> = Commands[C]["result"];

/** One call of a command: what a fixture of testdata/protocol/commands holds. */
export interface CommandExample<C extends CommandName> {
  arguments: Commands[C]["args"];
  result: ResultOf<C>;
}

/** The server's commands, one entry per command of the contract, as the code calls them. */
export const requests = {
  run: request("agent.run"),
  resume: request("agent.resume"),
  cancel: request("agent.cancel"),
  sessions: request("agent.sessions"),
  session: request("agent.session"),
  deleteSession: request("agent.deleteSession"),
  projects: request("agent.projects"),
  switchProject: request("agent.switchProject"),
};

/** A work-done progress value the server reports on a run's token. */
export interface ProgressValue {
  kind: "begin" | "report" | "end";
  title?: string;
  message?: string;
}

/**
 * An agent/event notification as it arrives: the envelope only. The type may
 * be one this extension does not know (the contract lets the server add
 * kinds); isAgentEvent tells.
 */
export interface WireEvent {
  session: string;
  seq: number;
  type: string;
}

/** The envelope of an event of kind T; a subagent's events also name it and its parent. */
interface Envelope<T extends string> extends WireEvent {
  type: T;
  /** The subagent that produced the event (`subagent-<8 hex>`); absent for the session's own run. */
  contextId?: string;
  /** The context that started that subagent. */
  parentId?: string;
}

// One interface per event kind: the envelope and exactly the kind's fields (docs/protocol.md, Events).
export interface RunStartEvent extends Envelope<"run.start"> {
  project: string;
}
export interface MessageDeltaEvent extends Envelope<"message.delta"> {
  text: string;
}
export interface MessageEvent extends Envelope<"message"> {
  message: Message;
}
export interface ToolStartEvent extends Envelope<"tool.start"> {
  name: string;
  /** The model's raw JSON text. */
  args: string;
  callId: string;
}
export interface ToolEndEvent extends Envelope<"tool.end"> {
  callId: string;
  name: string;
  /** False for an error result. */
  ok: boolean;
  summary: string;
}
export interface SubagentStartEvent extends Envelope<"subagent.start"> {
  task: string;
}
export interface SubagentEndEvent extends Envelope<"subagent.end"> {
  ok: boolean;
  status: RunStatus;
}
export interface EditEvent extends Envelope<"edit"> {
  uri: string;
  applied: boolean;
}
export interface RunEndEvent extends Envelope<"run.end"> {
  status: RunStatus;
  /** What failed, for status failed. */
  error?: string;
}

/** An agent/event notification of a kind the extension knows. */
export type AgentEvent =
  | RunStartEvent
  | MessageDeltaEvent
  | MessageEvent
  | ToolStartEvent
  | ToolEndEvent
  | SubagentStartEvent
  | SubagentEndEvent
  | EditEvent
  | RunEndEvent;

export type EventType = AgentEvent["type"];

/** The event of kind T. */
export type AgentEventOf<T extends EventType> = Extract<AgentEvent, { type: T }>;

/** The event kinds, at run time; the Record makes the compiler insist on exactly the kinds of AgentEvent. */
export const eventTypes: readonly string[] = Object.keys({
  "run.start": true,
  "message.delta": true,
  message: true,
  "tool.start": true,
  "tool.end": true,
  "subagent.start": true,
  "subagent.end": true,
  edit: true,
  "run.end": true,
} satisfies Record<EventType, true>);

const known = new Set(eventTypes);

/** True for an event of a kind the extension knows; the contract says to ignore the others. */
export function isAgentEvent(ev: WireEvent): ev is AgentEvent {
  return known.has(ev.type);
}
