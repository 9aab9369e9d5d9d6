---@meta
-- Types of the server's wire contract (PROTOCOL.md) as the plugin uses them,
-- for lua-language-server. Annotations only: no module requires this file.

---@alias AgentLsp.EditMode "apply"|"review"

---@alias AgentLsp.RunStatus "done"|"cancelled"|"failed"|"limit"

---@class AgentLsp.Position
---@field line integer 0-based
---@field character integer in the client's position encoding

---@class AgentLsp.Range
---@field start AgentLsp.Position
---@field end AgentLsp.Position

---Arguments of agent.run.
---@class AgentLsp.RunArgs
---@field prompt string
---@field edits? AgentLsp.EditMode
---@field session? string continue this session; absent: a new one
---@field project? string default: the session's current project, else the first
---@field uri? string with range: the selection the prompt is about
---@field range? AgentLsp.Range

---Arguments of agent.resume.
---@class AgentLsp.ResumeArgs
---@field session string
---@field edits? AgentLsp.EditMode

---Result of agent.run and agent.resume, when the run ends.
---@class AgentLsp.RunResult
---@field session string
---@field status AgentLsp.RunStatus
---@field reply string
---@field edits integer
---@field steps integer

---An entry of agent.sessions (newest first).
---@class AgentLsp.SessionInfo
---@field session string
---@field project string
---@field title string
---@field status AgentLsp.RunStatus|"running"
---@field created string RFC 3339
---@field updated string RFC 3339
---@field messages integer

---@class AgentLsp.ToolCall
---@field id string
---@field name string
---@field args string JSON text

---A message of a session's transcript.
---@class AgentLsp.Message
---@field id string
---@field role "system"|"human"|"ai"|"tool"
---@field name? string
---@field content string
---@field toolCalls? AgentLsp.ToolCall[]
---@field toolCallId? string the call a "tool" message answers

---Result of agent.session.
---@class AgentLsp.SessionDetail
---@field session string
---@field project string
---@field status string
---@field messages AgentLsp.Message[]

---How a project is built, as the server detected it from its manifests.
---@class AgentLsp.TechStack
---@field language string
---@field languageVersion? string
---@field packageManager? string
---@field buildCommand? string
---@field testCommand? string
---@field manifests? string[]
---@field others? string[] types of further manifests beside the principal one

---An entry of agent.projects.
---@class AgentLsp.ProjectInfo
---@field name string
---@field path string
---@field type string "go", "rust", "python", "javascript", "typescript", "elixir" or "unknown"
---@field techStack AgentLsp.TechStack
---@field gitBranch? string
---@field context table openFiles, lastBuild, lastTest, recentErrors

---Result of agent.switchProject.
---@class AgentLsp.SwitchResult
---@field session string
---@field project string

---The agent/event notification: {session, seq, type, ...}; seq increases by
---one per session. The other fields depend on the type.
---@class AgentLsp.AgentEvent
---@field session string
---@field seq integer
---@field type "run.start"|"message.delta"|"message"|"tool.start"|"tool.end"|"subagent.start"|"subagent.end"|"edit"|"run.end"|string
---@field project? string run.start
---@field text? string message.delta
---@field message? AgentLsp.Message message
---@field name? string tool.start
---@field args? string tool.start
---@field callId? string tool.start, tool.end
---@field ok? boolean tool.end, subagent.end
---@field summary? string tool.end
---@field contextId? string subagent.start, subagent.end
---@field task? string subagent.start
---@field uri? string edit
---@field applied? boolean edit
---@field status? AgentLsp.RunStatus run.end
---@field error? string
