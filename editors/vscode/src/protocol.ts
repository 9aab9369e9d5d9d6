// The agent-lsp wire contract (PROTOCOL.md) as the extension uses it.

/** Server commands, sent with workspace/executeCommand. */
export const ServerCommand = {
  run: "agent.run",
  resume: "agent.resume",
  cancel: "agent.cancel",
  sessions: "agent.sessions",
  session: "agent.session",
  deleteSession: "agent.deleteSession",
  projects: "agent.projects",
  switchProject: "agent.switchProject",
} as const;

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

/** One entry of agent.projects. */
export interface ProjectInfo {
  name: string;
  path: string;
  type: string;
  techStack?: string[];
  gitBranch?: string;
}

/** An agent/event notification. */
export interface AgentEvent {
  session: string;
  seq: number;
  type: string;
  [key: string]: unknown;
}

/** Arguments of agent.run. */
export interface RunArgs {
  prompt: string;
  project?: string;
  session?: string;
  uri?: string;
  range?: { start: { line: number; character: number }; end: { line: number; character: number } };
  edits?: "apply" | "review";
}
