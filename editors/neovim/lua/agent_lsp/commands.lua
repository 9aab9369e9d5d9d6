-- The :Agent* commands (M.list) and the functions behind them.
-- plugin/agent_lsp.lua requires this module at startup to define the
-- commands, so the modules it uses load lazily, when a command first runs.
local M = {}

-- lazy stands in for the module name: reads and writes of its fields go to
-- the module, which the first of them requires.
local function lazy(name)
  return setmetatable({}, {
    __index = function(_, key) return require(name)[key] end,
    __newindex = function(_, key, value) require(name)[key] = value end,
  })
end

---@module "agent_lsp.client"
local client = lazy("agent_lsp.client")
---@module "agent_lsp.compat"
local compat = lazy("agent_lsp.compat")
---@module "agent_lsp.config"
local config = lazy("agent_lsp.config")
---@module "agent_lsp.log"
local log = lazy("agent_lsp.log")
---@module "agent_lsp.render"
local render = lazy("agent_lsp.render")
---@module "agent_lsp.state"
local state = lazy("agent_lsp.state")
---@module "agent_lsp.ui"
local ui = lazy("agent_lsp.ui")

-- notify_result notifies the result of command as its renderer writes it.
local function notify_result(command, result, args) ui.notify(table.concat(render.results[command](result, args), "\n")) end

---@class AgentLsp.RunOpts
---@field range? integer[] { line1, line2 }, 1-based and inclusive: the lines the prompt is about
---@field session? string continue this session (queued when its run is going)
---@field project? string run in this project
---@field follow_up? boolean continue the last session of this Neovim (:AgentRun!): the session of the run started last, queued when that run is going
---@field context? AgentLsp.ContextRef[] documents or ranges attached to the prompt (the chat's #buffer, #selection)
---@field images? AgentLsp.ImageRef[] image files attached to the prompt (the chat's #image:)
---@field client? table the vim.lsp client to send it to (a chat's: the client that ran its session)
---@field mode? AgentLsp.Mode this run's mode instead of :AgentMode's (:AgentRunPlan: agent)
---@field on_result? fun(result: AgentLsp.RunResult|false, run: AgentLsp.Run, err?: table) called with the run's result (false: the request failed, err its error when the server answered one)

-- report_unsent reports the prompts a run's session never read, or
-- follow-ups that could not be sent, under the line why: a warning, and
-- :AgentRun! offers them again.
local function report_unsent(prompts, why)
  if #prompts == 0 then
    return
  end
  state.unsent = prompts
  local lines = { why }
  vim.list_extend(lines, render.unsent_lines(prompts))
  table.insert(lines, ":AgentRun! without a prompt offers " .. (#prompts == 1 and "it" or "them") .. " again")
  ui.notify(table.concat(lines, "\n"), vim.log.levels.WARN)
end

-- start_run sends agent.run or agent.resume and tracks the run until its
-- result arrives, which it notifies and adds to the event log; it returns the
-- run's progress token. A queued result (the session's run was going) only
-- says so: that run goes on, and its result covers the prompt.
local function start_run(c, command, args, prompt, on_result)
  on_result = on_result or function() end
  state.next_token = state.next_token + 1
  local token = ("agent-lsp-nvim:%d"):format(state.next_token)
  ---@type AgentLsp.Run
  local run = { client_id = c.id, session = args.session, prompt = prompt, command = command, progress = {} }
  state.runs[token] = run
  state.last_run = run
  state.usage, state.budget = nil, nil -- the statusline's tokens are the new run's
  ui.set_status("agent: starting")
  local sent, request_id = client.execute(c, command, args, function(result)
    state.runs[token] = nil
    run.result = result
    ui.restore_status(run)
    if result.status == "queued" then
      client.remember_session(result.session or args.session, c.id)
      ui.notify((render.run_summary(result, args.prompt)))
      log.add(render.results[command](result, args))
      on_result(result, run)
      return
    end
    state.last_result = result
    if result.session then
      state.last_session = result.session
      client.remember_session(result.session, c.id)
    end
    client.settle_waiting(run, result.session)
    local summary, reply = render.run_summary(result)
    local plan = require("agent_lsp.plan").remember(result, c.id) -- a plan :AgentRunPlan runs
    local fix = require("agent_lsp.reasons").hint(result) or plan -- a failure a setting fixes: which one
    summary = fix and (summary .. "\n" .. fix) or summary
    state.last_reply = reply
    local ok = result.status == "done" or result.status == "cancelled"
    local unsent = type(result.queued) == "table" and result.queued or {}
    if #unsent > 0 then
      report_unsent(unsent, summary:match("^[^\n]*"))
    else
      ui.notify(summary, ok and vim.log.levels.INFO or vim.log.levels.WARN)
    end
    log.add(render.results[command](result, args))
    on_result(result, run)
    compat.fire("AgentLspRunEnd", result)
  end, { workDoneToken = token }, function(err)
    -- Refused or failed (reported already): nothing runs for this request.
    state.runs[token] = nil
    run.result = run.result or false
    ui.restore_status(run)
    client.settle_waiting(run, run.session)
    on_result(false, run, err)
  end)
  if not sent then
    state.runs[token] = nil
    ui.restore_status(run)
    ui.notify(command .. ": the server is not running", vim.log.levels.ERROR)
    on_result(false, run)
    return nil
  end
  run.request_id = request_id
  return token
end

-- rewind.lua's :AgentRetry starts its run the same way.
M.start_run = start_run

-- selection_range is the LSP range of lines line1..line2 (1-based) of bufnr.
local function selection_range(bufnr, line1, line2, encoding)
  local last = vim.api.nvim_buf_get_lines(bufnr, line2 - 1, line2, false)[1] or ""
  return { start = { line = line1 - 1, character = 0 }, ["end"] = { line = line2 - 1, character = compat.line_width(last, encoding) } }
end

-- follow_up_target is the session a follow-up goes to: that of the run
-- started last while it goes, else the last session. When that run has no
-- session yet, it returns the run instead, to wait on.
---@return string|nil session
---@return AgentLsp.Run|nil wait_for
local function follow_up_target()
  local last = state.last_run
  if last and last.result == nil then
    if last.session then
      return last.session
    end
    return nil, last
  end
  return state.last_session
end

---Runs the agent on prompt (asked for when empty). Given a session whose run
---is going (opts.session, or opts.follow_up while the last run goes), the
---prompt is queued for that run's next step: "queued (position N)" is
---shown, and that run's result covers it.
---@param prompt? string
---@param opts? AgentLsp.RunOpts
---@return string|nil token the run's progress token (state.runs), nil if not started
function M.run(prompt, opts)
  opts = opts or {}
  if not prompt or prompt:match("^%s*$") then
    local default = opts.follow_up and state.unsent and table.concat(vim.tbl_map(render.oneline, state.unsent), " ") or nil
    vim.ui.input({ prompt = opts.follow_up and "Agent (follow-up): " or "Agent: ", default = default }, function(input)
      if input and not input:match("^%s*$") then
        M.run(input, opts)
      end
    end)
    return nil
  end
  local bufnr = vim.api.nvim_get_current_buf()
  ---@type AgentLsp.RunArgs
  local args = {
    prompt = prompt,
    edits = config.options.edits,
    session = opts.session,
    project = opts.project,
    model = state.model,
    mode = opts.mode or state.mode or "agent",
    context = opts.context and #opts.context > 0 and opts.context or nil,
    images = opts.images and #opts.images > 0 and opts.images or nil,
  }
  args.maxTokens, args.maxCost = config.run_limits()
  local wait_for
  if opts.follow_up and not args.session then
    args.session, wait_for = follow_up_target()
  end
  -- A session's prompts go to the client that ran it (a run without a
  -- session yet: to that run's client).
  local c = opts.client or (wait_for and client.for_session(nil, vim.lsp.get_client_by_id(wait_for.client_id))) or client.for_session(args.session)
  if not c then
    return nil
  end
  if not args.session and state.project then
    args.project = args.project or state.project
  end
  if opts.range and client.is_file_buffer(bufnr) then
    args.uri = vim.uri_from_bufnr(bufnr)
    args.range = selection_range(bufnr, opts.range[1], opts.range[2], c.offset_encoding)
  end
  state.unsent = nil
  if wait_for then
    -- The run started last has no session yet: the prompt goes to it once
    -- run.start (or the run's result) names it.
    wait_for.waiting = wait_for.waiting or {}
    table.insert(wait_for.waiting, function(session)
      if not session then
        return report_unsent({ prompt }, "the run ended before it had a session; follow-up not sent:")
      end
      args.session, args.project = session, opts.project
      start_run(c, "agent.run", args, prompt, opts.on_result)
    end)
    ui.notify("the run has no session yet; this follow-up goes to it once it has: " .. render.oneline(prompt))
    return nil
  end
  return start_run(c, "agent.run", args, prompt, opts.on_result)
end

-- pick_session lets the user pick one of the sessions that pass filter (all
-- without one), then calls fn with its id and the client.
local function pick_session(prompt, fn, filter)
  local c = client.current()
  if not c then
    return
  end
  client.execute(c, "agent.sessions", vim.empty_dict(), function(list)
    local items = {}
    for _, s in ipairs(list or {}) do
      if not filter or filter(s) then
        table.insert(items, s)
      end
    end
    if #items == 0 then
      ui.notify("no sessions" .. (filter and " to choose from" or " yet"))
      return
    end
    vim.ui.select(items, { prompt = prompt, format_item = render.session_item, kind = "agent-lsp.session" }, function(item)
      if item then
        fn(item.session, c)
      end
    end)
  end)
end

-- resumable: a session whose last run can go on (interrupted, cancelled,
-- failed, at its step limit); a done one has nothing left to resume, a
-- running one is going.
local function resumable(s) return s.status ~= "done" and s.status ~= "running" end

-- finished says a session is done, with nothing to resume, and offers to
-- continue it in the chat (:AgentChat) or to show its transcript.
local function finished(s, c)
  local title = render.oneline(s.title ~= "" and s.title or s.session)
  vim.ui.select({ "Continue in the chat", "Show the transcript" }, {
    prompt = ("Session “%s” is %s: nothing to resume. Continue it with a new prompt (:AgentChat)?"):format(title, render.str(s.status)),
    kind = "agent-lsp.finished",
  }, function(choice)
    if choice == "Continue in the chat" then
      require("agent_lsp.chat").open_session(s.session, c)
    elseif choice == "Show the transcript" then
      M.show_session(s.session)
    end
  end)
end

---Resumes an interrupted session; without id, picks one. A finished or
---running session is not resumed: the user is told, and offered the chat.
---@param id? string
function M.resume(id)
  local go = function(session, c)
    c = client.for_session(session, c)
    if c then
      local args = { session = session, edits = config.options.edits, model = state.model, mode = state.mode or "agent" }
      args.maxTokens, args.maxCost = config.run_limits()
      start_run(c, "agent.resume", args, "resume " .. session)
    end
  end
  if not id or id == "" then
    return pick_session("Resume session", go, resumable)
  end
  local c = client.for_session(id)
  if not c then
    return
  end
  client.execute(c, "agent.sessions", vim.empty_dict(), function(list)
    for _, s in ipairs(type(list) == "table" and list or {}) do
      if s.session == id and s.status == "running" then
        return ui.notify(("session “%s” is running: :AgentChat shows it"):format(render.oneline(s.title)))
      elseif s.session == id and not resumable(s) then
        return finished(s, c)
      end
    end
    go(id, c)
  end)
end

---Cancels the runs this Neovim started, or session id.
---@param id? string
function M.cancel(id)
  local targets, clients = {}, {} -- sessions; session -> the client of its run
  if id and id ~= "" then
    table.insert(targets, id)
  else
    for _, run in pairs(state.runs) do
      local rc = vim.lsp.get_client_by_id(run.client_id)
      if run.session then
        if not vim.tbl_contains(targets, run.session) then -- a follow-up being queued shares it
          table.insert(targets, run.session)
          clients[run.session] = rc
        end
      elseif rc and run.request_id then -- no session yet: cancel the request itself
        compat.call(rc, "cancel_request", run.request_id)
      end
    end
  end
  if #targets == 0 and next(state.runs) == nil then
    ui.notify("nothing is running")
    return
  end
  for _, session in ipairs(targets) do
    local c = client.for_session(session, clients[session])
    if not c then
      return
    end
    local args = { session = session }
    client.execute(c, "agent.cancel", args, function(res) notify_result("agent.cancel", res, args) end)
  end
end

---Shows a session's transcript in a scratch buffer: session id, else the
---last session of this Neovim, else one picked. With context, the transcript
---of that subagent of the session instead. In a transcript, <CR> on a
---subagent's line opens the subagent's.
---@param id? string
---@param context? string a subagent's context id (AgentLsp.SubagentInfo.contextId)
function M.show_session(id, context)
  context = context ~= "" and context or nil
  local go = function(session, c)
    c = client.for_session(session, c)
    if c then
      ---@type AgentLsp.SessionDetailArgs
      local args = { session = session, context = context }
      client.execute(c, "agent.session", args, function(detail)
        for _, sub in ipairs(type(detail.subagents) == "table" and detail.subagents or {}) do
          client.remember_subagent(session, sub.contextId)
        end
        render.open_transcript(detail, M.show_session)
      end)
    end
  end
  if id and id ~= "" then
    return go(id)
  end
  if state.last_session then
    return go(state.last_session)
  end
  pick_session("Show session", go)
end

---The actions of the sessions menu for session s: those that apply to it.
---@param s AgentLsp.SessionInfo
---@return string[]
function M.session_actions(s)
  local actions = { "Open in the chat", "Show transcript" }
  if resumable(s) then
    table.insert(actions, "Resume")
  end
  if s.status ~= "running" then
    table.insert(actions, "Delete")
  end
  return actions
end

---Picks a session, then what to do with it: open it in the chat, show its
---transcript, resume it (only where that applies) or delete it.
function M.sessions()
  local c0 = client.current()
  if not c0 then
    return
  end
  client.execute(c0, "agent.sessions", vim.empty_dict(), function(list)
    if type(list) ~= "table" or #list == 0 then
      return ui.notify("no sessions yet")
    end
    vim.ui.select(list, { prompt = "Agent sessions", format_item = render.session_item, kind = "agent-lsp.session" }, function(s)
      if not s then
        return
      end
      local session, c = s.session, c0
      vim.ui.select(M.session_actions(s), { prompt = "Session “" .. render.oneline(s.title ~= "" and s.title or session) .. "”" }, function(choice)
        if choice == "Open in the chat" then
          require("agent_lsp.chat").open_session(session, c)
        elseif choice == "Show transcript" then
          M.show_session(session)
        elseif choice == "Resume" then
          M.resume(session)
        elseif choice == "Delete" then
          local args = { session = session }
          client.execute(client.for_session(session, c), "agent.deleteSession", args, function(res) notify_result("agent.deleteSession", res, args) end)
        end
      end)
    end)
  end)
end

---Prints the workspace's projects with their context, or passes the list to fn.
---@param fn? fun(list: AgentLsp.ProjectInfo[])
function M.projects(fn)
  local c = client.current()
  if not c then
    return
  end
  client.execute(c, "agent.projects", vim.empty_dict(), function(list)
    list = list or {}
    if fn then
      return fn(list)
    end
    ui.print(table.concat(render.results["agent.projects"](list), "\n"))
  end)
end

---:AgentProcesses: the background processes running now (agent.processes);
---with "stop ID [SESSION]", stops one (the session defaults to the only
---one running ID).
---@param args string[]
function M.processes(args)
  local c = client.current()
  if not c then
    return
  end
  client.execute(c, "agent.processes", vim.empty_dict(), function(list)
    list = list or {}
    if args[1] ~= "stop" then
      return ui.print(table.concat(render.results["agent.processes"](list), "\n"))
    end
    local id, session = args[2], args[3]
    if not session then
      for _, p in ipairs(list) do
        if p.id == id then
          session = p.session
        end
      end
    end
    if not id or not session then
      return ui.print("usage: :AgentProcesses stop ID [SESSION] (a running process: :AgentProcesses lists them)")
    end
    local a = { session = session, id = id }
    client.execute(c, "agent.stopProcess", a, function(res) ui.print(table.concat(render.results["agent.stopProcess"](res or { stopped = false }, a), "\n")) end)
  end)
end

---:AgentMcp: each project's MCP servers (agent.mcp) in a scratch buffer,
---or the list passed to fn instead. In the buffer, <CR> on a server shows
---where it is defined and why it does not run; R lists them again.
---@param fn? fun(list: AgentLsp.McpProject[])
function M.mcp(fn)
  local c = client.current()
  if not c then
    return
  end
  client.execute(c, "agent.mcp", vim.empty_dict(), function(list)
    list = type(list) == "table" and list or {}
    if fn then
      return fn(list)
    end
    require("agent_lsp.mcp").show(list, function() M.mcp() end)
  end)
end

---Moves the last session to project (picked when omitted); before any
---session exists, the next run uses it.
---@param project? string
function M.switch(project)
  local go = function(name)
    if not state.last_session then
      state.project = name
      ui.notify("the next run uses project " .. name)
      return
    end
    local c = client.for_session(state.last_session)
    if not c then
      return
    end
    local args = { session = state.last_session, project = name }
    client.execute(c, "agent.switchProject", args, function(res)
      state.project = res.project
      notify_result("agent.switchProject", res, args)
    end)
  end
  if project and project ~= "" then
    return go(project)
  end
  M.projects(function(list)
    vim.ui.select(list, { prompt = "Switch to project", format_item = render.project_line }, function(p)
      if p then
        go(p.name)
      end
    end)
  end)
end

---Shows the event log: the agent/event notifications and run results so far,
---growing as more arrive.
function M.show_log() log.open() end

---:AgentChat [prompt]: opens or toggles the chat of the current session;
---with a prompt, sends it there.
---@param prompt? string
---@param new? boolean a new chat (:AgentChat!)
function M.chat(prompt, new) require("agent_lsp.chat").toggle(prompt, new) end

---:AgentReply: the last run's whole reply in a Markdown scratch buffer.
function M.reply()
  if not state.last_reply or state.last_reply == "" then
    return ui.notify("no reply yet")
  end
  vim.cmd("botright new")
  local b = vim.api.nvim_get_current_buf()
  vim.bo[b].buftype = "nofile"
  vim.bo[b].bufhidden = "wipe"
  vim.bo[b].swapfile = false
  vim.api.nvim_buf_set_lines(b, 0, -1, false, render.split(state.last_reply))
  vim.bo[b].modifiable = false
  vim.bo[b].filetype = "markdown"
  pcall(vim.api.nvim_buf_set_name, b, "agent://reply/" .. (state.last_session or "last"))
end

---:AgentModel [name]: with a name, the model of the next runs (sent as each
---run's model); without, picks one of those agent.models lists.
---@param name? string
function M.model(name)
  if name and name ~= "" then
    state.model = name
    return ui.notify("the next runs use model " .. name)
  end
  local c = client.current()
  if not c then
    return
  end
  client.execute(c, "agent.models", vim.empty_dict(), function(r)
    state.models = vim.tbl_map(function(m) return m.id end, type(r.models) == "table" and r.models or {})
    vim.ui.select(r.models or {}, {
      prompt = ("Model (%s; now %s)"):format(render.str(r.baseURL), state.model or render.str(r.current)),
      format_item = function(m) return m.id .. (m.ownedBy and (" (" .. m.ownedBy .. ")") or "") end,
      kind = "agent-lsp.model",
    }, function(m)
      if m then
        M.model(m.id)
      end
    end)
  end)
end

---The modes, in the order :AgentMode lists them, with what each does.
M.modes = {
  { "agent", "reads, edits and runs commands (as your rules allow)" },
  { "plan", "only reads, and answers with a plan; changes nothing" },
  { "ask", "only reads, and answers questions; changes nothing" },
}

---:AgentMode [mode]: with a mode (agent, plan, ask), the mode of the next
---runs (sent as each run's mode); without, picks one.
---@param name? string
function M.mode(name)
  if name and name ~= "" then
    for _, m in ipairs(M.modes) do
      if m[1] == name then
        state.mode = name
        ui.set_status(state.status)
        return ui.notify(("the next runs are in %s mode: the agent %s"):format(name, m[2]))
      end
    end
    return ui.notify(("unknown mode %q: agent, plan or ask"):format(name), vim.log.levels.ERROR)
  end
  vim.ui.select(M.modes, {
    prompt = ("Agent mode (now %s)"):format(state.mode or "agent"),
    format_item = function(m) return m[1] .. ": " .. m[2] end,
    kind = "agent-lsp.mode",
  }, function(m)
    if m then
      M.mode(m[1])
    end
  end)
end

-- complete_models completes :AgentModel from agent.models, asked once (and
-- again after an empty answer) with a short wait.
local function complete_models(lead)
  if not state.models then
    local c = compat.get_clients("agent-lsp")[1]
    local res = c and compat.call(c, "request_sync", "workspace/executeCommand", { command = "agent.models", arguments = { vim.empty_dict() } }, 2000, 0)
    local r = res and res.result
    if type(r) == "table" and type(r.models) == "table" then
      state.models = vim.tbl_map(function(m) return m.id end, r.models)
    end
  end
  return vim.tbl_filter(function(id) return id:sub(1, #lead) == lead end, state.models or {})
end

---:AgentWorkspace add|remove|list [dir]: the client's workspace folders
---(the projects the agent works in). add takes dir (default: the current
---buffer's project), remove a folder of the list.
---@param action string
---@param dir? string
function M.workspace(action, dir)
  local c = client.current()
  if not c then
    return
  end
  dir = dir and dir ~= "" and vim.fn.fnamemodify(vim.fn.expand(dir), ":p"):gsub("/$", "") or nil
  local actions = {
    add = function()
      local root = dir or client.find_root(vim.api.nvim_buf_get_name(0))
      ui.notify(client.add_folder(c.id, root) and ("added " .. root) or (root .. " is already a workspace folder"))
    end,
    remove = function()
      if not dir then
        return ui.notify(":AgentWorkspace remove takes a folder", vim.log.levels.ERROR)
      end
      ui.notify(client.remove_folder(c.id, dir) and ("removed " .. dir) or (dir .. " is not a workspace folder"))
    end,
    list = function() ui.print(table.concat(client.folders(c.id), "\n")) end,
  }
  local fn = actions[action ~= "" and action or "list"]
  if not fn then
    return ui.notify(":AgentWorkspace takes add, remove or list, not " .. action, vim.log.levels.ERROR)
  end
  fn()
end

-- complete_workspace completes :AgentWorkspace: the actions, then for remove the folders.
local function complete_workspace(lead, line)
  local words = vim.split(line:sub(1, #line - #lead), "%s+", { trimempty = true })
  local list = { "add", "remove", "list" }
  if #words >= 2 then
    local c = compat.get_clients("agent-lsp")[1]
    list = words[2] == "remove" and c and client.folders(c.id) or vim.fn.getcompletion(lead, "dir")
  end
  return vim.tbl_filter(function(s) return s:sub(1, #lead) == lead end, list)
end

-- The command table -------------------------------------------------------

local function complete_sessions() return state.last_session and { state.last_session } or {} end

-- complete_session_context completes :AgentSession's arguments: the last
-- session, then the subagent contexts seen of the session given.
local function complete_session_context(lead, line)
  local words = vim.split(line:sub(1, #line - #lead), "%s+", { trimempty = true })
  local list = #words <= 1 and complete_sessions() or (state.subagents[words[2]] or {})
  return vim.tbl_filter(function(s) return s:sub(1, #lead) == lead end, list)
end

---@class AgentLsp.Command
---@field name string
---@field fn fun(o: table) receives the command's arguments (nvim_create_user_command)
---@field opts table nvim_create_user_command options

---@type AgentLsp.Command[]
M.list = {
  {
    name = "AgentRun",
    fn = function(o) M.run(o.args, { range = o.range > 0 and { o.line1, o.line2 } or nil, follow_up = o.bang }) end,
    opts = { nargs = "*", range = true, bang = true, desc = "Run the agent on a prompt (with a range: about those lines; with !: in the last session, queued while its run goes)" },
  },
  {
    name = "AgentResume",
    fn = function(o) M.resume(o.args) end,
    opts = { nargs = "?", complete = complete_sessions, desc = "Resume an interrupted agent session" },
  },
  {
    name = "AgentCancel",
    fn = function(o) M.cancel(o.args) end,
    opts = { nargs = "?", desc = "Cancel the running agent" },
  },
  {
    name = "AgentSessions",
    fn = function() M.sessions() end,
    opts = { desc = "Pick an agent session" },
  },
  {
    name = "AgentSession",
    fn = function(o)
      if #o.fargs > 2 then
        return ui.notify(":AgentSession takes a session and a subagent context, not " .. o.args, vim.log.levels.ERROR)
      end
      M.show_session(o.fargs[1], o.fargs[2])
    end,
    opts = { nargs = "*", complete = complete_session_context, desc = "Show an agent session's transcript, or a subagent's" },
  },
  {
    name = "AgentLog",
    fn = function() M.show_log() end,
    opts = { desc = "Show the agent's event log" },
  },
  {
    name = "AgentChat",
    fn = function(o) M.chat(o.args, o.bang) end,
    opts = { nargs = "*", bang = true, desc = "Open or toggle the agent chat of the current session (with a prompt: send it; with !: a new chat)" },
  },
  {
    name = "AgentReply",
    fn = function() M.reply() end,
    opts = { desc = "Show the agent's last full reply" },
  },
  {
    name = "AgentModel",
    fn = function(o) M.model(o.args) end,
    opts = { nargs = "?", complete = complete_models, desc = "Choose the model of the next agent runs" },
  },
  {
    name = "AgentMode",
    fn = function(o) M.mode(o.args) end,
    opts = {
      nargs = "?",
      complete = function(lead)
        return vim.tbl_filter(function(m) return m:sub(1, #lead) == lead end, { "agent", "plan", "ask" })
      end,
      desc = "Choose the mode of the next agent runs: agent, plan or ask",
    },
  },
  {
    name = "AgentRunPlan",
    fn = function(o) require("agent_lsp.plan").run(o.args) end,
    opts = { nargs = "?", complete = function(lead) return require("agent_lsp.plan").complete(lead) end, desc = "Run the last plan (or SESSION's) in agent mode, in its session" },
  },
  {
    name = "AgentWorkspace",
    fn = function(o) M.workspace(o.fargs[1] or "list", o.fargs[2]) end,
    opts = { nargs = "*", complete = complete_workspace, desc = "Add, remove or list the agent's workspace folders" },
  },
  {
    name = "AgentProjects",
    fn = function() M.projects() end,
    opts = { desc = "List the agent's projects" },
  },
  {
    name = "AgentProcesses",
    fn = function(o) M.processes(o.fargs) end,
    opts = { nargs = "*", desc = "List the agent's background processes; stop ID [SESSION] stops one" },
  },
  {
    name = "AgentBranch",
    fn = function(o)
      local c = client.current()
      require("agent_lsp.branches").command(o.args, c and client.folders(c.id) or { vim.fn.getcwd() })
    end,
    opts = { nargs = "?", desc = "Show the diff of a branch a run in a worktree reported, merge it or delete it" },
  },
  {
    name = "AgentMcp",
    fn = function() M.mcp() end,
    opts = { desc = "List the agent's MCP servers: status, tools, why one does not run" },
  },
  {
    name = "AgentRewind",
    fn = function(o)
      local rewind = require("agent_lsp.rewind")
      if o.fargs[1] == "undo" then
        return rewind.undo()
      end
      rewind.rewind(tonumber(o.fargs[1]), o.fargs[2])
    end,
    opts = {
      nargs = "*",
      complete = function(lead, line)
        local n = #vim.split(line:sub(1, #line - #lead), "%s+", { trimempty = true })
        local words = ({ { "undo" }, { "both", "conversation", "files" } })[n] or {}
        return vim.tbl_filter(function(s) return s:sub(1, #lead) == lead end, words)
      end,
      desc = "Rewind the agent session to before a prompt: the conversation, the files, or both ([N [both|conversation|files]]); undo takes the last rewind back",
    },
  },
  {
    name = "AgentFork",
    fn = function(o) require("agent_lsp.rewind").fork(tonumber(o.args)) end,
    opts = { nargs = "?", desc = "Start a new agent session from the conversation before a prompt ([N])" },
  },
  {
    name = "AgentRetry",
    fn = function() require("agent_lsp.rewind").retry() end,
    opts = { desc = "Send the agent session's last prompt again, its earlier answer rewound" },
  },
  {
    name = "AgentSwitch",
    fn = function(o) M.switch(o.args) end,
    opts = { nargs = "?", desc = "Switch the agent session to another project" },
  },
}

---Defines the user commands of M.list, replacing earlier definitions.
function M.define()
  for _, cmd in ipairs(M.list) do
    vim.api.nvim_create_user_command(cmd.name, cmd.fn, cmd.opts)
  end
end

return M
