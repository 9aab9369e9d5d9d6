---@meta
-- The wire contract (docs/protocol.md) as LuaCATS types, for lua-language-server.
-- Annotations only: no module requires this file. tests/protocol.lua reads it
-- and checks every fixture of testdata/protocol against these classes, field
-- by field, both ways: a field the fixtures have and a class lacks fails, and
-- so does a required field the fixtures lack. The aliases AgentLsp.Call and
-- AgentLsp.AgentEvent list the commands and the event kinds; each of their
-- classes names its command or event type with a literal, and those names
-- must be exactly the fixtures' names. Type expressions hold no spaces but
-- inside "literals" (the test's reader takes the expression after the field
-- name up to the first space outside a literal as its type).

---@alias AgentLsp.EditMode "apply"|"review"

---@alias AgentLsp.Durability "sync"|"batched"|"exit"

---@alias AgentLsp.RunStatus "done"|"cancelled"|"failed"|"limit"

---@alias AgentLsp.SessionStatus AgentLsp.RunStatus|"running"|"interrupted"

---The status of agent.run's result: a run's end, or "queued" when the
---session was running and the prompt waits for that run's next step.
---@alias AgentLsp.RunResultStatus AgentLsp.RunStatus|"queued"

-- Arguments ----------------------------------------------------------------

---@class AgentLsp.Position
---@field line integer 0-based
---@field character integer in the negotiated position encoding

---@class AgentLsp.Range
---@field start AgentLsp.Position
---@field end AgentLsp.Position

---Arguments of agent.run.
---@class AgentLsp.RunArgs
---@field prompt? string required, unless retry
---@field retry? boolean send the session's last prompt again, its conversation rewound to before it (:AgentRetry)
---@field project? string default: the session's current project, else the first
---@field session? string continue this session; absent: a new one
---@field uri? string with range: the selection the prompt is about
---@field range? AgentLsp.Range
---@field edits? AgentLsp.EditMode this run's edit mode
---@field durability? AgentLsp.Durability this run's checkpoint durability
---@field model? string the model of this run and the session's next ones
---@field context? AgentLsp.ContextRef[] documents or ranges attached (#buffer, #selection): the server reads them as the editor has them
---@field images? AgentLsp.ImageRef[] images attached (#image:): the model must take images (model.vision)
---@field mode? AgentLsp.Mode what the run may do (:AgentMode); absent: the session's, else the setting's
---@field maxTokens? integer most prompt plus completion tokens the run may spend
---@field maxCost? number most USD the run may spend (the model needs a price)

---A run's mode: agent reads, edits and runs commands; plan and ask only read,
---and answer with a plan or an answer (docs/modes.md).
---@alias AgentLsp.Mode "agent"|"plan"|"ask"

---A run's limits (absent: none) and what it spent against them.
---@class AgentLsp.Budget
---@field maxTokens? integer
---@field maxCost? number USD
---@field tokens integer
---@field cost? number USD

---A document (or a range of it) attached to a prompt.
---@class AgentLsp.ContextRef
---@field uri string
---@field range? AgentLsp.Range

---An image attached to a prompt: a file, or its bytes in base64.
---@class AgentLsp.ImageRef
---@field path? string absolute, or relative to the run's project
---@field data? string base64
---@field mimeType? string

---Arguments of agent.resume.
---@class AgentLsp.ResumeArgs
---@field session string
---@field edits? AgentLsp.EditMode
---@field durability? AgentLsp.Durability
---@field model? string
---@field mode? AgentLsp.Mode
---@field maxTokens? integer
---@field maxCost? number

---Arguments of the commands about one session: agent.cancel and
---agent.deleteSession.
---@class AgentLsp.SessionArgs
---@field session string

---Arguments of agent.session.
---@class AgentLsp.SessionDetailArgs
---@field session string
---@field context? string a subagent's context id: its transcript instead of the session's

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
---@field cost? number USD, when the price table has the model

---Result of agent.run and agent.resume, when the run ends; for agent.run
---given a running session, at once with status "queued" (the running run's
---own result then covers the prompt).
---@class AgentLsp.RunResult
---@field session string
---@field status AgentLsp.RunResultStatus
---@field reply string the agent's answer ("" when it gave none)
---@field edits integer
---@field steps integer
---@field usage AgentLsp.Usage
---@field error? string what failed (status "failed")
---@field reason? AgentLsp.Reason status "failed": the kind of failure a setting fixes (reasons.lua)
---@field position? integer status "queued": the prompt's place in the queue, from 1
---@field queued? string[] prompts given to the running session that the run ended without reading (status "cancelled")
---@field limit? "steps"|"tokens"|"cost" status "limit": which limit stopped the run
---@field branch? string a run in a worktree: the branch its changes were committed to
---@field worktree? string the worktree's folder, when it could not be removed
---@field plan? string a plan run's plan (its answer)
---@field branch? string a run with isolation "worktree": the branch its changes were committed to
---@field worktree? string the worktree's folder, when it could not be removed

---Result of agent.cancel.
---@class AgentLsp.CancelResult
---@field cancelled boolean whether a run was going

---An entry of agent.sessions (newest first).
---@class AgentLsp.SessionInfo
---@field session string
---@field project string
---@field root? string the project's folder: the session continues only in a window that has it open
---@field model? string the model the session recorded
---@field edits? "apply"|"review" the edit mode an ACP client chose for it (session/set_mode)
---@field title string the prompt's first words
---@field status AgentLsp.SessionStatus
---@field created string RFC 3339
---@field updated string RFC 3339
---@field messages integer
---@field notStored? boolean kept in the server's memory only (the store could not be opened): gone when the server ends

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
---@field images? AgentLsp.MessageImage[] images the message shows the model (a prompt's, read_image's)

---An image of a message; its bytes stay in the server's store.
---@class AgentLsp.MessageImage
---@field id string
---@field name string
---@field mimeType string
---@field width integer
---@field height integer
---@field size integer bytes

---A subagent a session (or a subagent) started, in the order of the calls.
---@class AgentLsp.SubagentInfo
---@field contextId string its context, for agent.session's context argument
---@field task string
---@field status AgentLsp.SessionStatus|"" "" when it never checkpointed

---Result of agent.session: the session's transcript, or with the context
---argument a subagent's (its title is the task).
---@class AgentLsp.SessionDetail
---@field session string
---@field context? string the subagent's context, when one was asked for
---@field project string
---@field status AgentLsp.SessionStatus|"" a subagent's may be "" (it never checkpointed)
---@field title string
---@field messages AgentLsp.Message[]
---@field subagents AgentLsp.SubagentInfo[] the subagents it started

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
---@field diagnostics? AgentLsp.DiagnosticsSummary the latest a language server reported

---@class AgentLsp.DiagnosticsSummary
---@field server? string
---@field errors integer
---@field warnings integer
---@field files integer
---@field top? string[] the first errors, path:line:col: severity: message
---@field at? string

---@alias AgentLsp.SandboxMode "workspace-write"|"read-only"|"off"

---How a project's commands are sandboxed on this machine (docs/security.md).
---@class AgentLsp.SandboxReport
---@field mode AgentLsp.SandboxMode the sandbox setting
---@field landlockABI integer the kernel's Landlock ABI; 0: none
---@field isolation? "namespaces"|"snapshot"|"seatbelt"|"restricted-token"|"none" the mechanism in force (snapshot: user namespaces are refused; seatbelt: macOS; restricted-token: Windows)
---@field processes? string what bounds a command's processes ("pids cgroup v1", "RLIMIT_NPROC")
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
---@field language? AgentLsp.ProjectLanguage

---What answers a project's language questions.
---@class AgentLsp.ProjectLanguage
---@field by "editor"|"agent-lsp"|"none"
---@field server? string
---@field command? string
---@field state? string
---@field note? string

---A model the endpoint offers.
---@class AgentLsp.ModelInfo
---@field id string
---@field ownedBy? string

---Result of agent.models.
---@class AgentLsp.ModelsResult
---@field baseURL string
---@field current string the model runs use unless agent.run names another
---@field models AgentLsp.ModelInfo[]

---Result of agent.switchProject.
---@class AgentLsp.SwitchResult
---@field session string
---@field project string

---@alias AgentLsp.McpSource "user"|"editor"|"flag"|"project"

---@alias AgentLsp.McpTransport "stdio"|"http"

---@alias AgentLsp.McpStatus "stopped"|"starting"|"running"|"failed"|"waiting for approval"|"denied"

---An MCP server of a project, as agent.mcp lists it.
---@class AgentLsp.McpServer
---@field name string its tools are mcp__<name>__<tool>
---@field source AgentLsp.McpSource where it is defined: the user's mcp.json, the editor's mcpServers, a --mcp-config file, the repository's .mcp.json
---@field origin string the file or setting that defines it
---@field transport AgentLsp.McpTransport
---@field status AgentLsp.McpStatus
---@field reason? string why it failed or does not run (and how to let it)
---@field tools integer how many tools it gives; -1 before its first listing
---@field withheld? string[] its tools the project's newest run left out of the model's list to fit the context

---A project's MCP servers, an entry of agent.mcp.
---@class AgentLsp.McpProject
---@field project string
---@field root string the project's folder
---@field servers AgentLsp.McpServer[]

---A slash command a prompt may start with, as agent.commands lists it.
---@class AgentLsp.CommandInfo
---@field name string without the slash
---@field description string
---@field argumentHint? string
---@field source "builtin"|"user"|"project"
---@field path? string its file: relative to the project's root, or absolute for the user's
---@field error? string why the file cannot run

---Arguments of agent.commands.
---@class AgentLsp.CommandsArgs
---@field project? string default: the first project

---Result of agent.commands.
---@class AgentLsp.CommandsResult
---@field commands AgentLsp.CommandInfo[]

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
---| AgentLsp.Call.Models
---| AgentLsp.Call.Endpoint
---| AgentLsp.Call.Mcp
---| AgentLsp.Call.Commands
---| AgentLsp.Call.Processes
---| AgentLsp.Call.StopProcess
---| AgentLsp.Call.Checkpoints
---| AgentLsp.Call.Rewind
---| AgentLsp.Call.Fork
---| AgentLsp.Call.CheckpointFile

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
---@field arguments AgentLsp.SessionDetailArgs
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

---@class AgentLsp.Call.Processes
---@field command "agent.processes"
---@field arguments AgentLsp.ProcessesArgs
---@field result AgentLsp.ProcessInfo[]

---Arguments of agent.processes: one session's, or every running session's.
---@class AgentLsp.ProcessesArgs
---@field session? string

---A background process running now (run_command with background: true).
---@class AgentLsp.ProcessInfo
---@field session string
---@field id string "p1", "p2", ... within its session's run
---@field command string
---@field project string
---@field started string RFC 3339

---@class AgentLsp.Call.StopProcess
---@field command "agent.stopProcess"
---@field arguments AgentLsp.StopProcessArgs
---@field result AgentLsp.StopProcessResult

---@class AgentLsp.StopProcessArgs
---@field session string
---@field id string

---Result of agent.stopProcess.
---@class AgentLsp.StopProcessResult
---@field stopped boolean

---@class AgentLsp.Call.Checkpoints
---@field command "agent.checkpoints"
---@field arguments AgentLsp.SessionArgs
---@field result AgentLsp.CheckpointsResult

---@class AgentLsp.CheckpointsResult
---@field checkpoints AgentLsp.Checkpoint[]

---Checkpoint N: the state just before prompt N of the session (1, 2, … in prompt order).
---@class AgentLsp.Checkpoint
---@field checkpoint integer
---@field prompt string the prompt's first line
---@field time string RFC 3339
---@field model string
---@field files AgentLsp.CheckpointFile[] the files prompt N's run changed
---@field notes? string[] what the checkpoint could not record (a command's files not looked for: over rewind.scanLimit)

---@class AgentLsp.CheckpointFile
---@field path string relative to its project
---@field uri string
---@field added integer lines
---@field removed integer lines
---@field restorable boolean false: its earlier content is unknown (a command changed it) or pruned
---@field reason? string why it is not restorable

---@class AgentLsp.Call.Rewind
---@field command "agent.rewind"
---@field arguments AgentLsp.RewindArgs
---@field result AgentLsp.RewindResult

---What a rewind restores.
---@alias AgentLsp.RewindScope "both"|"conversation"|"files"

---@class AgentLsp.RewindArgs
---@field session string
---@field checkpoint integer
---@field restore? AgentLsp.RewindScope default both

---@class AgentLsp.RewindResult
---@field checkpoint integer
---@field conversation boolean whether prompt N and later left the conversation
---@field restored AgentLsp.RewoundFile[]
---@field conflicts AgentLsp.RewindConflict[] files the user changed after the agent did
---@field notRestorable AgentLsp.NotRestorable[]

---@class AgentLsp.RewoundFile
---@field path string
---@field uri string

---@class AgentLsp.RewindConflict
---@field path string
---@field uri string
---@field kept boolean true: the user's content stayed

---@class AgentLsp.NotRestorable
---@field path string
---@field uri string
---@field reason string

---@class AgentLsp.Call.Fork
---@field command "agent.fork"
---@field arguments AgentLsp.ForkArgs
---@field result AgentLsp.SessionArgs

---@class AgentLsp.ForkArgs
---@field session string
---@field checkpoint integer

---@class AgentLsp.Call.CheckpointFile
---@field command "agent.checkpointFile"
---@field arguments AgentLsp.CheckpointFileArgs
---@field result AgentLsp.CheckpointFileResult

---@class AgentLsp.CheckpointFileArgs
---@field session string
---@field checkpoint integer
---@field uri string

---A file's content before prompt N (exists false: prompt N or a later one created it).
---@class AgentLsp.CheckpointFileResult
---@field path string
---@field uri string
---@field exists boolean
---@field content? string

---@class AgentLsp.Call.Endpoint
---@field command "agent.endpoint"
---@field arguments AgentLsp.NoArgs
---@field result AgentLsp.EndpointResult

---Result of agent.endpoint: what the next runs use (an empty chat shows it).
---@class AgentLsp.EndpointResult
---@field baseURL string
---@field model string
---@field apiKeyEnv string the variable the key is read from
---@field keySet boolean
---@field needsKey boolean the endpoint needs a key and none is set: runs are refused

---@alias AgentLsp.Reason "no-api-key"|"key-refused"|"model-unknown"|"endpoint-unreachable"

---@class AgentLsp.Denial
---@field what string the command line or tool that was not allowed
---@field ruleHint? string the rule that would allow it

---@class AgentLsp.Call.Models
---@field command "agent.models"
---@field arguments AgentLsp.NoArgs
---@field result AgentLsp.ModelsResult

---@class AgentLsp.Call.Mcp
---@field command "agent.mcp"
---@field arguments AgentLsp.NoArgs
---@field result AgentLsp.McpProject[]

---@class AgentLsp.Call.Commands
---@field command "agent.commands"
---@field arguments AgentLsp.CommandsArgs
---@field result AgentLsp.CommandsResult

-- Requests the server sends the client (besides LSP's own): each with its
-- params and result, the shape of an example in
-- testdata/protocol/requests/<method>.json. --------------------------------

---@alias AgentLsp.ServerRequest
---| AgentLsp.Request.SaveDocuments
---| AgentLsp.Request.Diagnostics
---| AgentLsp.Request.LanguageRequest

---agent/saveDocuments: before a command runs, save these documents (the
---session's edits the editor holds unsaved); sent to a client that set
---capabilities.experimental.saveDocuments.
---@class AgentLsp.Request.SaveDocuments
---@field method "agent/saveDocuments"
---@field params AgentLsp.SaveDocumentsParams
---@field result AgentLsp.SaveDocumentsResult

---@class AgentLsp.SaveDocumentsParams
---@field uris string[]

---@class AgentLsp.SaveDocumentsResult
---@field saved string[] the documents now on disk as in the editor (also those with nothing to write)
---@field failed AgentLsp.SaveFailure[] those not saved, with the reason

---@class AgentLsp.SaveFailure
---@field uri string
---@field reason string e.g. "E45: 'readonly' option is set (add ! to override)"

---agent/diagnostics: the editor's diagnostics of these documents (none: of
---every document that has some), after waiting up to settle ms for those of
---their current text; sent to a client that set
---capabilities.experimental.language.
---@class AgentLsp.Request.Diagnostics
---@field method "agent/diagnostics"
---@field params AgentLsp.DiagnosticsParams
---@field result AgentLsp.DiagnosticsResult

---@class AgentLsp.DiagnosticsParams
---@field uris string[]
---@field settle? integer milliseconds

---@class AgentLsp.DiagnosticsResult
---@field items AgentLsp.DocumentDiagnostics[]
---@field settled? boolean false when the wait ran out

---@class AgentLsp.DocumentDiagnostics
---@field uri string
---@field diagnostics AgentLsp.LspDiagnostic[]

---LSP's Diagnostic.
---@class AgentLsp.LspDiagnostic
---@field range AgentLsp.Range
---@field severity? integer 1 error, 2 warning, 3 information, 4 hint
---@field code? string|integer
---@field source? string
---@field message string

---agent/languageRequest: an LSP request (definition, references,
---implementation, hover, documentSymbol, workspace/symbol) the editor's
---language servers answer; the result is theirs, or null.
---@class AgentLsp.Request.LanguageRequest
---@field method "agent/languageRequest"
---@field params AgentLsp.LanguageRequestParams
---@field result any

---@class AgentLsp.LanguageRequestParams
---@field method string
---@field params any LSP's params of method

-- Events: the agent/event notification, one flat object per kind. ----------

---@alias AgentLsp.AgentEvent
---| AgentLsp.Event.RunStart
---| AgentLsp.Event.MessageDelta
---| AgentLsp.Event.Message
---| AgentLsp.Event.MessageQueued
---| AgentLsp.Event.ContextCompacted
---| AgentLsp.Event.ToolStart
---| AgentLsp.Event.ToolEnd
---| AgentLsp.Event.SubagentStart
---| AgentLsp.Event.SubagentEnd
---| AgentLsp.Event.Edit
---| AgentLsp.Event.Usage
---| AgentLsp.Event.RunEnd
---| AgentLsp.Event.EventsDropped
---| AgentLsp.EventBase # a kind this plugin does not know: shown as a generic line

---The envelope every event carries; seq rises by one per session.
---@class AgentLsp.EventBase
---@field session string
---@field seq integer
---@field type string
---@field contextId? string a subagent's events: the subagent, "subagent-<8 hex>"
---@field parentId? string a subagent's events: the context that started it

---The server dropped count of this window's events, fromSeq to toSeq (seq is
---toSeq), because the window did not read them; the chat reads the session
---again (agent.session).
---@class AgentLsp.Event.EventsDropped: AgentLsp.EventBase
---@field type "events.dropped"
---@field count integer
---@field fromSeq integer
---@field toSeq integer

---A run (agent.run or agent.resume) starts.
---@class AgentLsp.Event.RunStart: AgentLsp.EventBase
---@field type "run.start"
---@field project string
---@field contextTokens integer the model's context size the run fits its requests in
---@field withheld? string[] the tools left out to fit that context
---@field mode? AgentLsp.Mode the run's mode, when not agent
---@field budget? AgentLsp.Budget the run's limits, when it has any

---Streamed text of the model's answer (the session's own run only).
---@class AgentLsp.Event.MessageDelta: AgentLsp.EventBase
---@field type "message.delta"
---@field text string

---A human or AI message is complete (a queued prompt: when the run reads it).
---@class AgentLsp.Event.Message: AgentLsp.EventBase
---@field type "message"
---@field message AgentLsp.Message

---A prompt given to the running session waits for the run's next step.
---@class AgentLsp.Event.MessageQueued: AgentLsp.EventBase
---@field type "message.queued"
---@field message AgentLsp.Message
---@field position integer from 1

---@alias AgentLsp.CompactionReason "budget"|"overflow"

---Older turns left the model's view: summarized, or dropped (error says why).
---@class AgentLsp.Event.ContextCompacted: AgentLsp.EventBase
---@field type "context.compacted"
---@field before integer estimated tokens of the history before
---@field after integer and after
---@field messages integer how many messages left the view
---@field summarized boolean true: folded into the summary; false: dropped
---@field reason AgentLsp.CompactionReason "budget", or "overflow" after the provider refused a request
---@field error? string why they were dropped without a summary

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
---@field output? string the end of the result the model got (its last 20 lines, at most 2 KB)
---@field denied? AgentLsp.Denial the call did not run: it was not allowed

---@class AgentLsp.Event.SubagentStart: AgentLsp.EventBase
---@field type "subagent.start"
---@field task string

---@class AgentLsp.Event.SubagentEnd: AgentLsp.EventBase
---@field type "subagent.end"
---@field ok boolean
---@field status AgentLsp.RunStatus
---@field branch? string a subagent in a worktree: the branch its changes were committed to

---The editor applied or refused an edit of uri.
---@class AgentLsp.Event.Edit: AgentLsp.EventBase
---@field type "edit"
---@field uri string
---@field applied boolean

---The run's tokens (and cost) so far, in a usage event.
---@class AgentLsp.RunUsage
---@field prompt integer
---@field completion integer
---@field total integer
---@field cost? number USD

---After each model call (the run's, its subagents', its summaries').
---@class AgentLsp.Event.Usage: AgentLsp.EventBase
---@field type "usage"
---@field model string
---@field prompt integer that call's tokens
---@field completion integer
---@field total integer
---@field contextTokens integer the context the request was fitted into
---@field cost? number USD, when the price table has the model
---@field run AgentLsp.RunUsage the run's totals so far
---@field budget? AgentLsp.Budget the run's limits and what it spent against them, when it has any

---@class AgentLsp.Event.RunEnd: AgentLsp.EventBase
---@field type "run.end"
---@field status AgentLsp.RunStatus
---@field error? string what failed (status "failed")
---@field limit? "steps"|"tokens"|"cost" status "limit": which limit stopped the run
