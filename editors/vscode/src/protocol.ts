// The agent-lsp wire contract (PROTOCOL.md) as the extension uses it: the
// types of the custom commands and the table binding each to its types.

/** A server command (workspace/executeCommand) bound to its argument and result types. */
export interface Request<A, R> {
  readonly command: string;
  /** Never set: carries A and R for the type checker, so a mismatch does not compile. */
  readonly types?: { args: A; result: R };
}

function request<A, R>(command: string): Request<A, R> {
  return { command };
}

/** How the agent's edits reach the editor. */
export type EditMode = "apply" | "review";

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
}

/** Arguments of agent.resume. */
export interface ResumeArgs extends SessionArgs {
  edits?: EditMode;
}

/** The result of agent.run and agent.resume. */
export interface RunResult {
  session: string;
  status: "done" | "cancelled" | "failed" | "limit" | string;
  reply: string;
  edits: number;
  steps: number;
}

/** One entry of agent.sessions. */
export interface SessionInfo {
  session: string;
  project: string;
  title: string;
  status: string;
  created: string;
  updated: string;
  messages: number;
}

/** A transcript message of agent.session. */
export interface TranscriptMessage {
  id: string;
  role: "system" | "human" | "ai" | "tool" | string;
  name?: string;
  content: string;
  toolCalls?: { id: string; name: string; args: string }[];
  toolCallId?: string;
}

/** The result of agent.session. */
export interface SessionDetail {
  session: string;
  project: string;
  status: string;
  title?: string;
  messages: TranscriptMessage[];
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
  status: "unknown" | "pending" | "success" | "failed" | string;
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

/** One entry of agent.projects. */
export interface ProjectInfo {
  name: string;
  path: string;
  type: string;
  techStack: TechStack;
  gitBranch?: string;
  context: ProjectContext;
}

/** The server's commands, one entry per command of PROTOCOL.md. */
export const requests = {
  run: request<RunArgs, RunResult>("agent.run"),
  resume: request<ResumeArgs, RunResult>("agent.resume"),
  cancel: request<SessionArgs, { cancelled: boolean }>("agent.cancel"),
  sessions: request<{ project?: string }, SessionInfo[]>("agent.sessions"),
  session: request<SessionArgs, SessionDetail>("agent.session"),
  deleteSession: request<SessionArgs, { deleted: boolean }>("agent.deleteSession"),
  projects: request<NoArgs, ProjectInfo[]>("agent.projects"),
  switchProject: request<{ session: string; project: string }, { session: string; project: string }>("agent.switchProject"),
};

/** A work-done progress value the server reports on a run's token. */
export interface ProgressValue {
  kind: "begin" | "report" | "end";
  title?: string;
  message?: string;
}

/** An agent/event notification. */
export interface AgentEvent {
  session: string;
  seq: number;
  type: string;
  [key: string]: unknown;
}
