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
/** "interrupted": stored as running, running nowhere now (a crash or a kill cut it off); it resumes. */
export type SessionStatus = "running" | "interrupted" | RunStatus;

/** How a run ended. */
export type RunStatus = "done" | "cancelled" | "failed" | "limit";

/** A subagent's status: "" when it never checkpointed. */
export type SubagentStatus = SessionStatus | "";

/** A command without arguments: only `{}` type-checks. */
export type NoArgs = Record<string, never>;

/** Arguments naming a session. */
export interface SessionArgs {
  session: string;
}

/** A range of a document, in the negotiated position encoding. */
export interface WireRange {
  start: { line: number; character: number };
  end: { line: number; character: number };
}

/** A document, or a range of it, attached to a prompt (#file, #selection): the server reads it as the editor has it. */
export interface ContextRef {
  uri: string;
  range?: WireRange;
}

/** Arguments of agent.run. */
export interface RunArgs {
  prompt: string;
  project?: string | undefined;
  session?: string;
  uri?: string;
  range?: WireRange;
  edits?: EditMode;
  durability?: Durability;
  /** The model of this run and of the session's next ones. */
  model?: string;
  /** Documents and ranges attached to the prompt; never their text. */
  context?: ContextRef[];
  /** Images attached to the prompt (the model must take images: model.vision). */
  images?: ImageRef[];
  /** What the run may do (docs/modes.md); unset: the session's, else the mode setting's. */
  mode?: Mode;
  /** Most prompt plus completion tokens the run may spend; unset: the settings'. */
  maxTokens?: number;
  /** Most USD the run may spend (the model needs a price); unset: the settings'. */
  maxCost?: number;
  /** "worktree": run in a git worktree of the project's HEAD on a new branch (docs/worktrees.md). */
  isolation?: "none" | "worktree";
}

/** A run's mode: agent reads, edits and runs commands; plan and ask only read, and answer with a plan or an answer. */
export type Mode = "agent" | "plan" | "ask";

/** The modes, in the order the picker lists them. */
export const modes: readonly Mode[] = ["agent", "plan", "ask"];

/** An image attached to agent.run: a file (absolute, or relative to the project), or its bytes in base64. */
export interface ImageRef {
  path?: string;
  data?: string;
  mimeType?: string;
}

/** Arguments of agent.resume. */
export interface ResumeArgs extends SessionArgs {
  edits?: EditMode;
  durability?: Durability;
  model?: string;
  mode?: Mode;
  maxTokens?: number;
  maxCost?: number;
}

/** The model's token counts of a run. */
export interface Usage {
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
  /** USD, when the price table has the model. */
  cost?: number;
}

/** The fields every agent.run and agent.resume result has. */
interface RunOutcome {
  session: string;
  reply: string;
  edits: number;
  steps: number;
  usage: Usage;
}

/** A run that ended: the result of agent.resume, and of agent.run unless it was queued. */
export interface FinishedRun extends RunOutcome {
  status: RunStatus;
  /** What failed, for status failed. */
  error?: string;
  /** For status failed: the kind of failure a setting fixes, when it is one. */
  reason?: Reason;
  /** The prompts queued for this run that it ended without reading (a cancelled run), in queue order. */
  queued?: string[];
  /** For status limit: which limit stopped the run. */
  limit?: Limit;
  /** A plan run's plan (its answer). */
  plan?: string;
  /** A run with isolation worktree: the branch its changes were committed to (docs/worktrees.md). */
  branch?: string;
  /** The worktree's folder, when it could not be removed. */
  worktree?: string;
}

/** The limit that stopped a run: its step limit, or its token or cost budget. */
export type Limit = "steps" | "tokens" | "cost";

/** A run's limits (unset: none) and what it spent against them. */
export interface Budget {
  maxTokens?: number;
  maxCost?: number;
  tokens: number;
  cost?: number;
}

/**
 * agent.run given the session of a running run: the prompt waits at position
 * (from 1) for that run's next step, and that run's own result covers it.
 */
export interface QueuedRun extends RunOutcome {
  status: "queued";
  position: number;
}

/** The result of agent.run. */
export type RunResult = FinishedRun | QueuedRun;

/** One entry of agent.sessions. */
export interface SessionInfo {
  session: string;
  project: string;
  /** The project's folder: a session continues only where it is open. Absent when not recorded. */
  root?: string;
  title: string;
  status: SessionStatus;
  /** The model of its last run: its next run's unless one is given. */
  model?: string;
  /** The edit mode an ACP client chose for it (session/set_mode); absent when none did. */
  edits?: "apply" | "review";
  created: string;
  updated: string;
  messages: number;
  /** Kept in the server's memory only: the store could not be opened; gone when the server ends. */
  notStored?: boolean;
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
  /** Images the message shows the model (a prompt's, read_image's); their bytes stay in the server's store. */
  images?: MessageImage[];
}

/** An image of a message. */
export interface MessageImage {
  id: string;
  name: string;
  mimeType: string;
  width: number;
  height: number;
  /** Bytes. */
  size: number;
}

/** Arguments of agent.session: a session, or one subagent's context of it. */
export interface SessionDetailArgs extends SessionArgs {
  /** A subagent's context id (`subagent-...`): its transcript instead of the session's. */
  context?: string;
}

/** A subagent a session (or a subagent) started, in the order they were called. */
export interface SubagentInfo {
  contextId: string;
  task: string;
  status: SubagentStatus;
}

/** The result of agent.session. */
export interface SessionDetail {
  session: string;
  /** The subagent's context, when one was asked for. */
  context?: string;
  project: string;
  /** A subagent's context that never checkpointed has status "". */
  status: SubagentStatus;
  /** A subagent's title is its task. */
  title: string;
  messages: Message[];
  /** The subagents this transcript started. */
  subagents: SubagentInfo[];
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
  /** The latest diagnostics a language server reported, when one did. */
  diagnostics?: { server?: string; errors: number; warnings: number; files: number; top?: string[]; at?: string };
}

/** How commands are confined: the `sandbox` setting. */
export type SandboxMode = "workspace-write" | "read-only" | "off";

/** How a project's commands are sandboxed on this machine (docs/security.md, The sandbox). */
export interface SandboxReport {
  mode: SandboxMode;
  /** The kernel's Landlock ABI; 0: none. */
  landlockABI: number;
  /** The mechanism in force: namespaces, or snapshot where user namespaces are refused; seatbelt on macOS, restricted-token on Windows; none when not confined. */
  isolation?: "namespaces" | "snapshot" | "seatbelt" | "restricted-token" | "none";
  /** What bounds a command's processes ("pids cgroup v1", "RLIMIT_NPROC"); absent when nothing does. */
  processes?: string;
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
  /** What answers the project's language questions: this editor, a language server agent-lsp starts, or nothing. */
  language?: ProjectLanguage;
}

/** ProjectInfo.language. */
export interface ProjectLanguage {
  by: "editor" | "agent-lsp" | "none";
  server?: string;
  command?: string;
  state?: string;
  note?: string;
}

/** A model the endpoint offers. */
export interface ModelInfo {
  id: string;
  ownedBy?: string;
}

/**
 * Why a run cannot start, or failed, when a setting fixes it: the data.reason
 * of a refused agent.run, agent.resume or agent.models, and a failed run's
 * reason. Each has its action (reasons.ts).
 */
export type Reason = "no-api-key" | "key-refused" | "model-unknown" | "endpoint-unreachable";

/** The data of an error refused for a Reason: the endpoint, the model, the key's variable, the setting that fixes it. */
export interface ReasonData {
  reason: Reason;
  setting: string;
  baseURL: string;
  model: string;
  apiKeyEnv: string;
  /** model-unknown: the models the endpoint offers. */
  models?: string[];
}

/** The result of agent.endpoint: what the next runs use, without asking the endpoint (the empty chat shows it). */
export interface EndpointInfo {
  baseURL: string;
  model: string;
  apiKeyEnv: string;
  keySet: boolean;
  /** The endpoint needs a key and none is set: runs are refused (no-api-key). */
  needsKey: boolean;
}

/** The result of agent.models: the endpoint, the model runs use unless they name one, and the endpoint's list. */
export interface ModelsResult {
  baseURL: string;
  current: string;
  models: ModelInfo[];
}

/** One MCP server of a project, as agent.mcp lists it. */
export interface McpServerInfo {
  name: string;
  /** Where it is defined: user, editor, flag or project (a repository's .mcp.json). */
  source: string;
  /** The file or setting that defines it. */
  origin: string;
  transport: "stdio" | "http";
  /** stopped, starting, running, failed, waiting for approval or denied. */
  status: string;
  /** Why it does not run, when it does not. */
  reason?: string;
  /** Its tools; -1 before its first listing. */
  tools: number;
  /** Its tools the project's newest run left out of the model's list to fit the context. */
  withheld?: string[];
}

/** One project's MCP servers: an entry of agent.mcp. */
export interface McpProject {
  project: string;
  root: string;
  servers: McpServerInfo[];
}

/** A slash command a prompt may start with, as agent.commands lists it. */
export interface CommandInfo {
  /** Without the slash. */
  name: string;
  description: string;
  argumentHint?: string;
  /** builtin, user or project. */
  source: string;
  /** Its file: relative to the project's root, or absolute for the user's. */
  path?: string;
  /** Why the file cannot run. */
  error?: string;
}

/** Every server command by its wire name, with its argument and result types. */
export interface Commands {
  "agent.run": { args: RunArgs | RetryArgs; result: RunResult };
  "agent.resume": { args: ResumeArgs; result: FinishedRun };
  "agent.cancel": { args: SessionArgs; result: { cancelled: boolean } };
  "agent.sessions": { args: { project?: string }; result: SessionInfo[] };
  "agent.session": { args: SessionDetailArgs; result: SessionDetail };
  "agent.deleteSession": { args: SessionArgs; result: { deleted: boolean } };
  "agent.projects": { args: NoArgs; result: ProjectInfo[] };
  "agent.switchProject": { args: { session: string; project: string }; result: { session: string; project: string } };
  "agent.models": { args: NoArgs; result: ModelsResult };
  "agent.endpoint": { args: NoArgs; result: EndpointInfo };
  "agent.mcp": { args: NoArgs; result: McpProject[] };
  "agent.commands": { args: { project?: string }; result: { commands: CommandInfo[] } };
  "agent.processes": { args: { session?: string }; result: ProcessInfo[] };
  "agent.stopProcess": { args: { session: string; id: string }; result: { stopped: boolean } };
  "agent.checkpoints": { args: SessionArgs; result: CheckpointsResult };
  "agent.rewind": { args: RewindArgs; result: RewindResult };
  "agent.fork": { args: ForkArgs; result: SessionArgs };
  "agent.checkpointFile": { args: CheckpointFileArgs; result: CheckpointFileResult };
}

/** agent.checkpointFile's arguments: a file prompt N or a later one changed. */
export interface CheckpointFileArgs {
  session: string;
  checkpoint: number;
  uri: string;
}

/** agent.checkpointFile's answer: the file's content before prompt N (exists false: prompt N or a later one created it). */
export interface CheckpointFileResult {
  path: string;
  uri: string;
  exists: boolean;
  content?: string;
}

/** agent.run with retry: the session's last prompt again, its conversation rewound to before it (docs/rewind.md). */
export interface RetryArgs {
  session: string;
  retry: true;
  project?: string;
  edits?: EditMode;
  model?: string;
  mode?: Mode;
}

/** A file a prompt's run changed, as a checkpoint lists it. */
export interface CheckpointFile {
  /** Relative to its project. */
  path: string;
  uri: string;
  added: number;
  removed: number;
  /** False: its earlier content is not known (a command changed it); reason says why. */
  restorable: boolean;
  reason?: string;
}

/** Checkpoint N: the state just before prompt N of the session (1, 2, … in prompt order). */
export interface Checkpoint {
  checkpoint: number;
  /** The first line of prompt N. */
  prompt: string;
  /** RFC 3339. */
  time: string;
  model: string;
  /** The files prompt N's run changed. */
  files: CheckpointFile[];
  /** What the checkpoint could not record (a command's files not looked for: the project was over rewind.scanLimit). */
  notes?: string[];
}

export interface CheckpointsResult {
  checkpoints: Checkpoint[];
}

/** What a rewind restores: the conversation, the files, or both. */
export type RewindScope = "both" | "conversation" | "files";

export interface RewindArgs {
  session: string;
  checkpoint: number;
  restore: RewindScope;
}

/** A file named by a rewind's result. */
export interface RewoundFile {
  path: string;
  uri: string;
}

export interface RewindResult {
  checkpoint: number;
  /** True when prompt N and later left the conversation. */
  conversation: boolean;
  restored: RewoundFile[];
  /** Files the user changed after the agent did; kept says whether the user's content stayed. */
  conflicts: (RewoundFile & { kept: boolean })[];
  notRestorable: (RewoundFile & { reason: string })[];
}

export interface ForkArgs {
  session: string;
  checkpoint: number;
}

/** A background process running now (run_command with background: true). */
export interface ProcessInfo {
  session: string;
  /** "p1", "p2", ... within its session's run. */
  id: string;
  command: string;
  project: string;
  /** RFC 3339. */
  started: string;
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
  models: request("agent.models"),
  endpoint: request("agent.endpoint"),
  mcp: request("agent.mcp"),
  commands: request("agent.commands"),
  processes: request("agent.processes"),
  stopProcess: request("agent.stopProcess"),
  checkpoints: request("agent.checkpoints"),
  rewind: request("agent.rewind"),
  fork: request("agent.fork"),
  checkpointFile: request("agent.checkpointFile"),
};

/** Params of agent/saveDocuments: documents the session's agent edited that the editor holds unsaved. */
export interface SaveDocumentsParams {
  uris: string[];
}

/** A document the editor could not save, and why (the agent is told). */
export interface SaveFailure {
  uri: string;
  reason: string;
}

/** The answer to agent/saveDocuments: every URI asked for, either saved (the disk has its text) or failed. */
export interface SaveDocumentsResult {
  saved: string[];
  failed: SaveFailure[];
}

/** An LSP Diagnostic, as agent/diagnostics answers it. */
export interface LspDiagnostic {
  range: { start: { line: number; character: number }; end: { line: number; character: number } };
  severity?: number;
  code?: string | number;
  source?: string;
  message: string;
}

/** Params of agent/diagnostics: the documents wanted (none: every document with diagnostics), and how long (ms) to wait for those of their current versions. */
export interface DiagnosticsParams {
  uris: string[];
  settle?: number;
}

/** The answer to agent/diagnostics: each document's diagnostics; settled false when the wait ran out. */
export interface DiagnosticsResult {
  items: { uri: string; diagnostics: LspDiagnostic[] }[];
  settled?: boolean;
}

/** Params of agent/languageRequest: an LSP request the editor's language features answer. */
export interface LanguageRequestParams {
  method: string;
  params: unknown;
}

/** The requests the server sends the editor, by method, with their params and result (docs/protocol.md). */
export interface ServerRequests {
  /** Before a command runs, for a client that declares experimental.saveDocuments. */
  "agent/saveDocuments": { params: SaveDocumentsParams; result: SaveDocumentsResult };
  /** After an edit, and for the diagnostics tool, for a client that declares experimental.language. */
  "agent/diagnostics": { params: DiagnosticsParams; result: DiagnosticsResult };
  /** For the symbol tools, for a client that declares experimental.language: LSP's result, or null. */
  "agent/languageRequest": { params: LanguageRequestParams; result: unknown };
}

export type ServerRequestName = keyof ServerRequests;

/** One request and its answer: what a fixture of testdata/protocol/requests holds. */
export interface RequestExample<M extends ServerRequestName> {
  params: ServerRequests[M]["params"];
  result: ServerRequests[M]["result"];
}

/** The methods of the server's requests, at run time; the Record makes the compiler insist on exactly those of ServerRequests. */
export const serverRequests = Object.keys({
  "agent/saveDocuments": true,
  "agent/diagnostics": true,
  "agent/languageRequest": true,
} satisfies Record<ServerRequestName, true>) as ServerRequestName[];

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
  /** The subagent that produced the event (`subagent-...`); absent for the session's own run. */
  contextId?: string;
  /** The context that started that subagent. */
  parentId?: string;
}

// One interface per event kind: the envelope and exactly the kind's fields (docs/protocol.md, Events).
export interface RunStartEvent extends Envelope<"run.start"> {
  project: string;
  /** The model's context size in tokens that the run fits its requests in. */
  contextTokens: number;
  /** The tools left out to fit that context. */
  withheld?: string[];
  /** The run's mode, when not agent. */
  mode?: Mode;
  /** The run's limits, when it has any. */
  budget?: Budget;
}
export interface MessageDeltaEvent extends Envelope<"message.delta"> {
  text: string;
}
export interface MessageEvent extends Envelope<"message"> {
  message: Message;
}
/** A prompt given to the running session waits at position for the run's next step; a message event reports it read. */
export interface MessageQueuedEvent extends Envelope<"message.queued"> {
  message: Message;
  position: number;
}
/** Older turns left the model's view: summarized into the summary, or dropped (error says why). */
export interface ContextCompactedEvent extends Envelope<"context.compacted"> {
  /** Estimated tokens of the history the model would see, before and after. */
  before: number;
  after: number;
  /** How many messages left the model's view. */
  messages: number;
  summarized: boolean;
  /** budget, or overflow after the provider refused a request. */
  reason: "budget" | "overflow";
  error?: string;
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
  /** The call did not run: it was not allowed; ruleHint is the rule that would allow it. */
  denied?: { what: string; ruleHint?: string };
  /** The end of the result the model got: its last 20 lines, at most 2 KB (a command's last output, why an edit was refused). */
  output?: string;
}
export interface SubagentStartEvent extends Envelope<"subagent.start"> {
  task: string;
}
export interface SubagentEndEvent extends Envelope<"subagent.end"> {
  ok: boolean;
  status: RunStatus;
  /** A subagent in a worktree: the branch its changes were committed to (docs/worktrees.md). */
  branch?: string;
}
export interface EditEvent extends Envelope<"edit"> {
  uri: string;
  applied: boolean;
}
/** A run's tokens (and cost) so far, its subagents' included. */
export interface RunUsage {
  prompt: number;
  completion: number;
  total: number;
  cost?: number;
}
/** After each model call: that call's tokens, the context it was fitted into, and the run's totals. */
export interface UsageEvent extends Envelope<"usage"> {
  model: string;
  prompt: number;
  completion: number;
  total: number;
  contextTokens: number;
  /** USD, when the price table has the model. */
  cost?: number;
  run: RunUsage;
  /** The run's limits and what it spent against them, when it has any. */
  budget?: Budget;
}
export interface RunEndEvent extends Envelope<"run.end"> {
  status: RunStatus;
  /** What failed, for status failed. */
  error?: string;
  /** For status limit: which limit stopped the run. */
  limit?: Limit;
  /** A run in a worktree: the branch its changes were committed to (docs/worktrees.md). */
  branch?: string;
  /** The worktree's folder, when it could not be removed. */
  worktree?: string;
}

/**
 * The server dropped count of this window's events of the session, fromSeq to
 * toSeq (the envelope's seq is toSeq), because the window did not read them in
 * time; the chat reads the session again (agent.session).
 */
export interface EventsDroppedEvent extends Envelope<"events.dropped"> {
  count: number;
  fromSeq: number;
  toSeq: number;
}

/** An agent/event notification of a kind the extension knows. */
export type AgentEvent =
  RunStartEvent | MessageDeltaEvent | MessageEvent | MessageQueuedEvent | ContextCompactedEvent | ToolStartEvent | ToolEndEvent | SubagentStartEvent | SubagentEndEvent | EditEvent | UsageEvent | RunEndEvent | EventsDroppedEvent;

export type EventType = AgentEvent["type"];

/** The event of kind T. */
export type AgentEventOf<T extends EventType> = Extract<AgentEvent, { type: T }>;

/** The event kinds, at run time; the Record makes the compiler insist on exactly the kinds of AgentEvent. */
export const eventTypes: readonly string[] = Object.keys({
  "run.start": true,
  "message.delta": true,
  message: true,
  "message.queued": true,
  "context.compacted": true,
  "tool.start": true,
  "tool.end": true,
  "subagent.start": true,
  "subagent.end": true,
  edit: true,
  usage: true,
  "run.end": true,
  "events.dropped": true,
} satisfies Record<EventType, true>);

const known = new Set(eventTypes);

/** True for an event of a kind the extension knows; the contract says to ignore the others. */
export function isAgentEvent(ev: WireEvent): ev is AgentEvent {
  return known.has(ev.type);
}
