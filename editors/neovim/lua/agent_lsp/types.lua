---@meta
-- The wire contract (docs/protocol.md) as LuaCATS types, for lua-language-server.
-- Annotations only: no module requires this file. tests/protocol.lua reads it
-- and checks every fixture of testdata/protocol against these classes, field
-- by field, both ways: a field the fixtures have and a class lacks fails, and
-- so does a required field the fixtures lack. The aliases AgentLsp.Call and
-- AgentLsp.AgentEvent list the commands and the event kinds; each of their
-- classes names its command or event type with a literal, and those names
-- must be exactly the fixtures' names. Type expressions hold no spaces (the
-- test's reader takes the first word after the field name as its type).

---@alias AgentLsp.EditMode "apply"|"review"

---@alias AgentLsp.Durability "sync"|"batched"|"exit"

---@alias AgentLsp.RunStatus "done"|"cancelled"|"failed"|"limit"

---@alias AgentLsp.SessionStatus AgentLsp.RunStatus|"running"

-- Arguments ----------------------------------------------------------------

---@class AgentLsp.Position
---@field line integer 0-based
---@field character integer in the negotiated position encoding

---@class AgentLsp.Range
---@field start AgentLsp.Position
---@field end AgentLsp.Position

---Arguments of agent.run.
---@class AgentLsp.RunArgs
---@field prompt string
---@field project? string default: the session's current project, else the first
---@field session? string continue this session; absent: a new one
---@field uri? string with range: the selection the prompt is about
---@field range? AgentLsp.Range
---@field edits? AgentLsp.EditMode this run's edit mode
---@field durability? AgentLsp.Durability this run's checkpoint durability

---Arguments of agent.resume.
---@class AgentLsp.ResumeArgs
---@field session string
---@field edits? AgentLsp.EditMode
---@field durability? AgentLsp.Durability

---Arguments of the commands about one session: agent.cancel, agent.session
---and agent.deleteSession.
---@class AgentLsp.SessionArgs
---@field session string

---Arguments of agent.sessions.
---@class AgentLsp.SessionsArgs
---@field project? string only this project's sessions

---Arguments of agent.projects: none (an empty object).
---@class AgentLsp.NoArgs

---Arguments of agent.switchProject.
---@class AgentLsp.SwitchArgs
---@field session string
---@field project string

-- Results ------------------------------------------------------------------

---Tokens a run spent.
---@class AgentLsp.Usage
---@field promptTokens integer
---@field completionTokens integer
---@field totalTokens integer

---Result of agent.run and agent.resume, when the run ends.
---@class AgentLsp.RunResult
---@field session string
---@field status AgentLsp.RunStatus
---@field reply string the agent's answer ("" when it gave none)
---@field edits integer
---@field steps integer
---@field usage AgentLsp.Usage
---@field error? string what failed (status "failed")

---Result of agent.cancel.
---@class AgentLsp.CancelResult
---@field cancelled boolean whether a run was going

---An entry of agent.sessions (newest first).
---@class AgentLsp.SessionInfo
---@field session string
---@field project string
---@field title string the prompt's first words
---@field status AgentLsp.SessionStatus
---@field created string RFC 3339
---@field updated string RFC 3339
---@field messages integer

---@class AgentLsp.ToolCall
---@field id string
---@field name string
---@field args string the model's raw JSON text

---@alias AgentLsp.Role "system"|"human"|"ai"|"tool"

---A message of a session's transcript, and of the `message` event.
---@class AgentLsp.Message
---@field id string
---@field role AgentLsp.Role
---@field name? string
---@field content string
---@field toolCalls? AgentLsp.ToolCall[] an AI message's tool calls
---@field toolCallId? string the call a "tool" message answers

---Result of agent.session.
---@class AgentLsp.SessionDetail
---@field session string
---@field project string
---@field status AgentLsp.SessionStatus
---@field title string
---@field messages AgentLsp.Message[]

---Result of agent.deleteSession.
---@class AgentLsp.DeleteResult
---@field deleted boolean whether the session existed

---How a project is built, as the server detected it from its manifests.
---@class AgentLsp.TechStack
---@field language string
---@field languageVersion? string
---@field packageManager? string
---@field buildCommand? string
---@field testCommand? string
---@field manifests? string[] the manifest files found, e.g. "go.mod"
---@field others? string[] types of further manifests beside the principal one

---@alias AgentLsp.OutcomeStatus "unknown"|"pending"|"success"|"failed"

---A project's last build or test.
---@class AgentLsp.Outcome
---@field status AgentLsp.OutcomeStatus
---@field command? string
---@field summary? string
---@field at? string RFC 3339

---A project's runtime context.
---@class AgentLsp.ProjectContext
---@field openFiles string[] paths relative to the project
---@field pendingChanges string[] files with edits not saved yet
---@field lastBuild AgentLsp.Outcome
---@field lastTest AgentLsp.Outcome
---@field recentErrors string[] newest first

---@alias AgentLsp.SandboxMode "workspace-write"|"read-only"|"off"

---How a project's commands are sandboxed on this machine (docs/security.md).
---@class AgentLsp.SandboxReport
---@field mode AgentLsp.SandboxMode the sandbox setting
---@field landlockABI integer the kernel's Landlock ABI; 0: none
---@field enforced string[] the rights actually enforced, human-readable
---@field notEnforced? string[] what is not enforced, and why
---@field writable? string[] the directories commands may write
---@field network boolean whether commands may use the network

---An entry of agent.projects.
---@class AgentLsp.ProjectInfo
---@field name string
---@field path string
---@field type string "go", "rust", "python", "javascript", "typescript", "elixir" or "unknown"
---@field techStack AgentLsp.TechStack
---@field gitBranch? string
---@field context AgentLsp.ProjectContext
---@field sandbox AgentLsp.SandboxReport

---Result of agent.switchProject.
---@class AgentLsp.SwitchResult
---@field session string
---@field project string

-- Commands: each with its argument object and result, the shape of an
-- example in testdata/protocol/commands/<command>.json. ----------------------

---@alias AgentLsp.Call
---| AgentLsp.Call.Run
---| AgentLsp.Call.Resume
---| AgentLsp.Call.Cancel
---| AgentLsp.Call.Sessions
---| AgentLsp.Call.Session
---| AgentLsp.Call.DeleteSession
---| AgentLsp.Call.Projects
---| AgentLsp.Call.SwitchProject

---@class AgentLsp.Call.Run
---@field command "agent.run"
---@field arguments AgentLsp.RunArgs
---@field result AgentLsp.RunResult

---@class AgentLsp.Call.Resume
---@field command "agent.resume"
---@field arguments AgentLsp.ResumeArgs
---@field result AgentLsp.RunResult

---@class AgentLsp.Call.Cancel
---@field command "agent.cancel"
---@field arguments AgentLsp.SessionArgs
---@field result AgentLsp.CancelResult

---@class AgentLsp.Call.Sessions
---@field command "agent.sessions"
---@field arguments AgentLsp.SessionsArgs
---@field result AgentLsp.SessionInfo[]

---@class AgentLsp.Call.Session
---@field command "agent.session"
---@field arguments AgentLsp.SessionArgs
---@field result AgentLsp.SessionDetail

---@class AgentLsp.Call.DeleteSession
---@field command "agent.deleteSession"
---@field arguments AgentLsp.SessionArgs
---@field result AgentLsp.DeleteResult

---@class AgentLsp.Call.Projects
---@field command "agent.projects"
---@field arguments AgentLsp.NoArgs
---@field result AgentLsp.ProjectInfo[]

---@class AgentLsp.Call.SwitchProject
---@field command "agent.switchProject"
---@field arguments AgentLsp.SwitchArgs
---@field result AgentLsp.SwitchResult

-- Events: the agent/event notification, one flat object per kind. ----------

---@alias AgentLsp.AgentEvent
---| AgentLsp.Event.RunStart
---| AgentLsp.Event.MessageDelta
---| AgentLsp.Event.Message
---| AgentLsp.Event.ToolStart
---| AgentLsp.Event.ToolEnd
---| AgentLsp.Event.SubagentStart
---| AgentLsp.Event.SubagentEnd
---| AgentLsp.Event.Edit
---| AgentLsp.Event.RunEnd
---| AgentLsp.EventBase # a kind this plugin does not know: shown as a generic line

---The envelope every event carries; seq rises by one per session.
---@class AgentLsp.EventBase
---@field session string
---@field seq integer
---@field type string
---@field contextId? string a subagent's events: the subagent, "subagent-<8 hex>"
---@field parentId? string a subagent's events: the context that started it

---A run (agent.run or agent.resume) starts.
---@class AgentLsp.Event.RunStart: AgentLsp.EventBase
---@field type "run.start"
---@field project string

---Streamed text of the model's answer (the session's own run only).
---@class AgentLsp.Event.MessageDelta: AgentLsp.EventBase
---@field type "message.delta"
---@field text string

---A human or AI message is complete.
---@class AgentLsp.Event.Message: AgentLsp.EventBase
---@field type "message"
---@field message AgentLsp.Message

---@class AgentLsp.Event.ToolStart: AgentLsp.EventBase
---@field type "tool.start"
---@field name string
---@field args string the model's raw JSON text
---@field callId string

---@class AgentLsp.Event.ToolEnd: AgentLsp.EventBase
---@field type "tool.end"
---@field callId string
---@field name string
---@field ok boolean false for an error result
---@field summary string a few words

---@class AgentLsp.Event.SubagentStart: AgentLsp.EventBase
---@field type "subagent.start"
---@field task string

---@class AgentLsp.Event.SubagentEnd: AgentLsp.EventBase
---@field type "subagent.end"
---@field ok boolean
---@field status AgentLsp.RunStatus

---The editor applied or refused an edit of uri.
---@class AgentLsp.Event.Edit: AgentLsp.EventBase
---@field type "edit"
---@field uri string
---@field applied boolean

---@class AgentLsp.Event.RunEnd: AgentLsp.EventBase
---@field type "run.end"
---@field status AgentLsp.RunStatus
---@field error? string what failed (status "failed")
