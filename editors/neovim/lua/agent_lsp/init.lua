-- agent-lsp for Neovim: starts the agent-lsp server through the built-in LSP
-- client and drives its agent.* commands. This is the public API; the work is
-- done by the modules beside it:
--   config    the options and their defaults
--   compat    every difference between Neovim 0.7 and later releases
--   client    starting and attaching the client, executeCommand, handlers
--   commands  the :Agent* commands and the functions behind them
--   ui        notifications, echo area, statusline
--   state     the running work (runs in flight, last session, status)
--   render    text of the commands' results: pickers, project lists, run
--             summaries, transcripts
--   events    text of agent/event notifications
--   log       the event log (:AgentLog)
--   mcp       the MCP servers' list (:AgentMcp)
--   edit      applying workspace edits: the version check, buffers the
--             edit loads attached once it is applied
--   hunks     line hunks between two texts, and applying them to a buffer
--   review    the diff shown for edits that need confirmation, by hunk
--   save      agent/saveDocuments: saving the agent's edits before commands
--   chat      the chat buffer (:AgentChat): transcript, live runs, sending
--   context   the chat's #references: agent.run's context
--   health    :checkhealth agent_lsp
--   version   the plugin's version (the repository's VERSION)
--   types     LuaCATS types of the wire contract (annotations only)
-- plugin/agent_lsp.lua defines the commands at startup; setup() configures
-- the plugin and starts attaching to file buffers.
local client = require("agent_lsp.client")
local commands = require("agent_lsp.commands")
local config = require("agent_lsp.config")
local ui = require("agent_lsp.ui")

local M = {}

---The options in effect (the defaults until setup()); a field set here takes
---effect at its next use, e.g. `require("agent_lsp").config.edits = "review"`.
---@type AgentLsp.Config
M.config = config.options

---The plugin's version, the repository's VERSION (the server's and the VS
---Code extension's too).
---@type string
M.version = require("agent_lsp.version")

---The plugin's view of the running work: runs in flight, the last run and
---session, the statusline text.
---@type AgentLsp.State
M.state = require("agent_lsp.state")

---Hook called with every agent/event notification, after the User
---AgentLspEvent autocommand.
---@type fun(ev: AgentLsp.AgentEvent)|nil
M.on_event = nil

---Configures the plugin: merges opts over the defaults, defines the :Agent*
---commands (again, when plugin/agent_lsp.lua did), and with autostart
---attaches to file buffers as they open and to those already loaded.
---@param opts? AgentLsp.Config|table any subset of the options
function M.setup(opts)
  config.setup(opts)
  commands.define()
  client.autostart(config.options.autostart)
end

---Runs the agent on prompt (asked for when empty); opts.range = { line1, line2 }
---(1-based) sends those lines as the selection the prompt is about.
---opts.follow_up (:AgentRun!) continues the last session, and opts.session
---a given one: while that session's run goes, the prompt is queued for its
---next step ("queued (position N)" is shown; that run's result covers it).
---@param prompt? string
---@param opts? AgentLsp.RunOpts
---@return string|nil token the run's progress token, a key of state.runs
function M.run(prompt, opts) return commands.run(prompt, opts) end

---Resumes an interrupted (cancelled, failed, crashed or step-limited) session
---from its last checkpoint; without id, picks one.
---@param id? string
function M.resume(id) commands.resume(id) end

---Cancels the runs this Neovim started, or session id.
---@param id? string
function M.cancel(id) commands.cancel(id) end

---Picks a session, then shows, resumes or deletes it.
function M.sessions() commands.sessions() end

---Shows a session's transcript in a read-only Markdown scratch buffer: session
---id, else the last session of this Neovim, else one picked. With context
---(a subagent's context id, listed under the transcript's Subagents), that
---subagent's transcript instead; <CR> on a subagent's line opens it too.
---@param id? string
---@param context? string
function M.show_session(id, context) commands.show_session(id, context) end

---Shows the event log: every agent/event so far and the result of each run
---started here, in a scratch buffer that grows as more arrive.
function M.show_log() commands.show_log() end

---Prints the workspace's projects (name, type, tech stack, git branch, build
---and test status), or passes the list to fn instead.
---@param fn? fun(list: AgentLsp.ProjectInfo[])
function M.projects(fn) commands.projects(fn) end

---Lists each project's MCP servers (:AgentMcp: name, source, transport,
---status and reason, tool count) in a scratch buffer, or passes the list to
---fn instead.
---@param fn? fun(list: AgentLsp.McpProject[])
function M.mcp(fn) commands.mcp(fn) end

---Moves the last session to project (picked when omitted); before any session
---exists, the next run uses it.
---@param project? string
function M.switch(project) commands.switch(project) end

---Opens or toggles the chat of the current session (:AgentChat); with prompt,
---sends it there; new: a new chat (:AgentChat!).
---@param prompt? string
---@param new? boolean
function M.chat(prompt, new) commands.chat(prompt, new) end

---Sets the model of the next runs; without name, picks one of agent.models.
---@param name? string
function M.model(name) commands.model(name) end

---Sets the mode of the next runs (agent, plan, ask); without mode, picks one.
---@param mode? AgentLsp.Mode
function M.mode(mode) commands.mode(mode) end

---Statusline component: "agent: waiting for review" while an edit's review is
---open, else the running agent's latest progress, or "".
---@return string
function M.statusline() return ui.statusline() end

---Attaches the agent-lsp client of the buffer's project root to the buffer,
---starting it if needed.
---@param bufnr? integer default the current buffer
---@return integer|nil client_id nil when the client could not start (reported)
function M.attach(bufnr) return client.attach(bufnr) end

---Sends workspace/executeCommand to client c: the agent.* commands of the
---wire contract. on_result gets the result; an error is reported instead.
---@param c table a vim.lsp client
---@param command string e.g. "agent.session"
---@param args? table the command's argument object
---@param on_result? fun(result: any)
---@param extra? table more request params, e.g. { workDoneToken = token }
---@param on_error? fun(err: table) called after an error is reported
---@return boolean sent
---@return integer|nil request_id
function M.execute(c, command, args, on_result, extra, on_error) return client.execute(c, command, args, on_result, extra, on_error) end

return M
