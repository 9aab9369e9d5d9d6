-- agent-lsp for Neovim: starts the agent-lsp server through the built-in LSP
-- client and drives its agent.* commands. Works on Neovim 0.7 and later; newer
-- APIs are feature-detected, never version-pinned.
local review = require("agent_lsp.review")
local render = require("agent_lsp.render")

local M = {}

local NAME = "agent-lsp"
local uv = vim.uv or vim.loop

local defaults = {
  -- Command that starts the server (agent-lsp on PATH by default).
  cmd = { "agent-lsp" },
  -- Extra environment for the server process, e.g. { OPENAI_BASE_URL = "http://localhost:11434/v1" }.
  -- Keep API keys in your shell environment (OPENAI_API_KEY), not here.
  cmd_env = nil,
  -- Model settings sent as initializationOptions.model; nil keeps the server's
  -- defaults and the environment (OPENAI_BASE_URL, AGENT_LSP_MODEL).
  model = nil,
  base_url = nil,
  -- Name of the environment variable that holds the API key (default OPENAI_API_KEY).
  api_key_env = nil,
  -- Session store file; nil uses the server's default ($XDG_STATE_HOME/agent-lsp/sessions.db).
  store = nil,
  -- "apply" sends edits as they are made; "review" shows each edit as a diff to accept or reject.
  edits = "apply",
  -- Command patterns the agent may run without asking (* matches any text); deny wins.
  allow = {},
  deny = {},
  -- Files whose presence marks a project root; the nearest one upward wins, else the cwd.
  root_markers = { ".git", "go.mod", "package.json", "Cargo.toml", "pyproject.toml", "mix.exs" },
  -- Attach to every file buffer as it is opened; false starts the client on first use.
  autostart = true,
  -- Keys in the review diff.
  review_keys = { accept = "ga", reject = "gr" },
  -- Show progress in the echo area (the statusline function works either way).
  echo_progress = true,
}

M.config = vim.deepcopy(defaults)

-- state is the plugin's view of the running work, for the commands and the statusline.
local state = {
  roots = {}, -- root -> client id (Neovim 0.7 path)
  runs = {}, -- token -> { client_id, request_id, session, prompt }
  last_session = nil,
  project = nil, -- project chosen with :AgentSwitch before any session exists
  status = "", -- statusline text
  next_token = 0,
}
M.state = state

local function notify(msg, level)
  vim.notify("agent-lsp: " .. msg, level or vim.log.levels.INFO)
end

local function echo(msg)
  if M.config.echo_progress then
    vim.api.nvim_echo({ { msg, "Comment" } }, false, {})
  end
end

-- fire runs a User autocmd; data reaches it on 0.8+ (0.7's nvim_exec_autocmds has no data).
local function fire(pattern, data)
  if not vim.api.nvim_exec_autocmds then
    return
  end
  if not pcall(vim.api.nvim_exec_autocmds, "User", { pattern = pattern, modeline = false, data = data }) then
    pcall(vim.api.nvim_exec_autocmds, "User", { pattern = pattern, modeline = false })
  end
end

local function set_status(text)
  state.status = text
  pcall(vim.cmd, "redrawstatus")
  fire("AgentLspStatus")
end

-- Root detection without vim.fs (0.8+): walk up from the buffer's directory.
local function find_root(path)
  local dir = path ~= "" and vim.fn.fnamemodify(path, ":p:h") or uv.cwd()
  local prev
  while dir and dir ~= prev do
    for _, marker in ipairs(M.config.root_markers) do
      if uv.fs_stat(dir .. "/" .. marker) then
        return dir
      end
    end
    prev = dir
    dir = vim.fn.fnamemodify(dir, ":h")
  end
  return uv.cwd()
end

local function init_options()
  local c = M.config
  local opts = { edits = c.edits, permissions = { allow = c.allow, deny = c.deny } }
  if c.model or c.base_url or c.api_key_env then
    opts.model = { model = c.model, baseURL = c.base_url, apiKeyEnv = c.api_key_env }
  end
  if c.store then
    opts.store = { path = c.store }
  end
  return opts
end

-- call invokes a client method in the form the running Neovim expects
-- (client:method from 0.11, client.method before).
local function call(client, method, ...)
  if vim.fn.has("nvim-0.11") == 1 then
    return client[method](client, ...)
  end
  return client[method](...)
end

local function get_clients()
  local list = {}
  local all = vim.lsp.get_clients and vim.lsp.get_clients() or vim.lsp.get_active_clients()
  for _, client in pairs(all) do
    if client.name == NAME and not (client.is_stopped and call(client, "is_stopped")) then
      table.insert(list, client)
    end
  end
  return list
end

local handlers = {}

local function client_config(root)
  return {
    name = NAME,
    cmd = M.config.cmd,
    cmd_env = M.config.cmd_env,
    root_dir = root,
    workspace_folders = { { uri = vim.uri_from_fname(root), name = vim.fn.fnamemodify(root, ":t") } },
    init_options = init_options(),
    handlers = handlers,
    on_exit = function(code, signal)
      if code ~= 0 and signal ~= 15 then
        vim.schedule(function()
          notify(("server exited (code %d, signal %d); see :lua vim.cmd('edit '..vim.lsp.get_log_path())"):format(code, signal), vim.log.levels.WARN)
        end)
      end
    end,
  }
end

local function is_file_buffer(bufnr)
  return vim.api.nvim_buf_is_valid(bufnr) and vim.bo[bufnr].buftype == "" and vim.api.nvim_buf_get_name(bufnr) ~= ""
end

--- Attaches the agent-lsp client for the buffer's root to the buffer, starting it if needed.
--- Returns the client id.
function M.attach(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local file = is_file_buffer(bufnr)
  local root = find_root(file and vim.api.nvim_buf_get_name(bufnr) or "")
  local function failed(why)
    if not state.start_failed then -- say it once, not on every buffer
      state.start_failed = true
      notify(("could not start %s: %s (:help agent-lsp-troubleshooting)"):format(table.concat(M.config.cmd, " "), why), vim.log.levels.ERROR)
    end
  end
  if vim.fn.executable(M.config.cmd[1]) ~= 1 then
    failed("not found or not executable; put agent-lsp on PATH or set cmd")
    return nil
  end
  local ok, id = pcall(function()
    if vim.lsp.start and file then
      return vim.lsp.start(client_config(root), { bufnr = bufnr })
    end
    local id = state.roots[root]
    if not (id and vim.lsp.get_client_by_id(id)) then
      if vim.lsp.start_client then
        id = vim.lsp.start_client(client_config(root))
      else
        id = vim.lsp.start(client_config(root), { attach = false })
      end
      state.roots[root] = id
    end
    if id and file then
      vim.lsp.buf_attach_client(bufnr, id)
    end
    return id
  end)
  if not ok or not id then
    failed(ok and "the client did not start" or tostring(id))
    return nil
  end
  state.start_failed = nil
  return id
end

-- client returns the agent-lsp client of the current buffer, starting one if needed.
local function client()
  local bufnr = vim.api.nvim_get_current_buf()
  for _, c in ipairs(get_clients()) do
    if vim.lsp.buf_is_attached(bufnr, c.id) then
      return c
    end
  end
  -- A scratch or transcript buffer uses the running client rather than starting one for the cwd.
  local running = get_clients()[1]
  if running and not is_file_buffer(bufnr) then
    return running
  end
  state.start_failed = nil -- an explicit command reports a failure again
  local id = M.attach(bufnr)
  return id and vim.lsp.get_client_by_id(id)
end

-- execute sends workspace/executeCommand; on_result gets the result, errors are reported.
local function execute(c, command, args, on_result, extra)
  local params = { command = command, arguments = { args or vim.empty_dict() } }
  for k, v in pairs(extra or {}) do
    params[k] = v
  end
  return call(c, "request", "workspace/executeCommand", params, function(err, result)
    if err then
      notify(command .. ": " .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
      return
    end
    if on_result then
      on_result(result)
    end
  end, vim.api.nvim_get_current_buf())
end
M.execute = execute

-- Handlers ---------------------------------------------------------------

local function run_for_token(token)
  return token and state.runs[token]
end

handlers["$/progress"] = function(err, result, ctx, cfg)
  local default = vim.lsp.handlers["$/progress"]
  if default then
    pcall(default, err, result, ctx, cfg)
  end
  local run = result and run_for_token(result.token)
  local value = result and result.value
  if not (run and type(value) == "table") then
    return
  end
  local text
  if value.kind == "begin" then
    text = value.title or "agent"
  elseif value.kind == "report" then
    text = "agent: " .. (value.message or "")
  elseif value.kind == "end" then
    text = "agent: " .. (value.message or "done")
  end
  if text then
    run.progress = run.progress or {}
    table.insert(run.progress, text)
    set_status(value.kind == "end" and "" or text)
    echo(text)
  end
end

handlers["agent/event"] = function(_, ev)
  if type(ev) ~= "table" then
    return
  end
  if ev.type == "run.start" and ev.session then
    for _, run in pairs(state.runs) do
      if run.session == nil or run.session == ev.session then
        run.session = ev.session
        break
      end
    end
    state.last_session = ev.session
  end
  fire("AgentLspEvent", ev)
  if M.on_event then
    M.on_event(ev)
  end
end

handlers["workspace/applyEdit"] = function(err, params, ctx, cfg)
  if params and review.wants_review(params.edit) then
    local c = vim.lsp.get_client_by_id(ctx.client_id)
    return review.ask(params, c and c.offset_encoding or "utf-16", M.config.review_keys)
  end
  return vim.lsp.handlers["workspace/applyEdit"](err, params, ctx, cfg)
end

-- Commands ---------------------------------------------------------------

-- width is the length of line in the client's position encoding.
local function width(line, encoding)
  encoding = encoding or "utf-16"
  if encoding == "utf-8" then
    return #line
  end
  if vim.fn.has("nvim-0.11") == 1 then
    return vim.str_utfindex(line, encoding)
  end
  local u32, u16 = vim.str_utfindex(line)
  return encoding == "utf-32" and u32 or u16
end

local function selection_range(bufnr, line1, line2, encoding)
  local last = vim.api.nvim_buf_get_lines(bufnr, line2 - 1, line2, false)[1] or ""
  return { start = { line = line1 - 1, character = 0 }, ["end"] = { line = line2 - 1, character = width(last, encoding) } }
end

local function summarize(result)
  local edits = result.edits or 0
  local head = ("agent: %s · %d edit%s · %d step%s"):format(
    result.status or "?", edits, edits == 1 and "" or "s", result.steps or 0, result.steps == 1 and "" or "s")
  local reply = (result.reply or ""):gsub("%s+$", "")
  local first = reply:match("^[^\n]*") or ""
  if first ~= "" then
    head = head .. " — " .. first
  end
  return head, reply
end

-- start_run sends agent.run or agent.resume and tracks it until it ends.
local function start_run(c, command, args, prompt)
  state.next_token = state.next_token + 1
  local token = ("agent-lsp-nvim:%d"):format(state.next_token)
  local run = { client_id = c.id, session = args.session, prompt = prompt, progress = {} }
  state.runs[token] = run
  state.last_run = run
  set_status("agent: starting")
  local ok, request_id = execute(c, command, args, function(result)
    state.runs[token] = nil
    run.result = result
    state.last_result = result
    if result.session then
      state.last_session = result.session
    end
    set_status("")
    local head, reply = summarize(result)
    local level = (result.status == "done" or result.status == "cancelled") and vim.log.levels.INFO or vim.log.levels.WARN
    state.last_reply = reply
    notify(head:gsub("^agent: ", ""), level)
    fire("AgentLspRunEnd", result)
  end, { workDoneToken = token })
  if not ok then
    state.runs[token] = nil
    set_status("")
    notify(command .. ": the server is not running", vim.log.levels.ERROR)
    return
  end
  run.request_id = request_id
  return token
end

--- Runs the agent with prompt. opts.range = {line1, line2} (1-based) sends the selection.
function M.run(prompt, opts)
  opts = opts or {}
  if not prompt or prompt:match("^%s*$") then
    vim.ui.input({ prompt = "Agent: " }, function(input)
      if input and not input:match("^%s*$") then
        M.run(input, opts)
      end
    end)
    return
  end
  local c = client()
  if not c then
    return
  end
  local bufnr = vim.api.nvim_get_current_buf()
  local args = { prompt = prompt, edits = M.config.edits, session = opts.session, project = opts.project }
  if not args.session and state.project then
    args.project = args.project or state.project
  end
  if opts.range and is_file_buffer(bufnr) then
    args.uri = vim.uri_from_bufnr(bufnr)
    args.range = selection_range(bufnr, opts.range[1], opts.range[2], c.offset_encoding)
  end
  return start_run(c, "agent.run", args, prompt)
end

-- sessions fetches agent.sessions and calls fn with the list.
local function sessions(c, fn)
  execute(c, "agent.sessions", vim.empty_dict(), function(list)
    fn(list or {})
  end)
end

local function pick_session(prompt, fn, filter)
  local c = client()
  if not c then
    return
  end
  sessions(c, function(list)
    local items = {}
    for _, s in ipairs(list) do
      if not filter or filter(s) then
        table.insert(items, s)
      end
    end
    if #items == 0 then
      notify("no sessions" .. (filter and " to choose from" or " yet"))
      return
    end
    vim.ui.select(items, { prompt = prompt, format_item = render.session_item, kind = "agent-lsp.session" }, function(item)
      if item then
        fn(item.session, c)
      end
    end)
  end)
end

--- Resumes an interrupted session (picker when id is nil).
function M.resume(id)
  local go = function(session, c)
    c = c or client()
    if c then
      start_run(c, "agent.resume", { session = session, edits = M.config.edits }, "resume " .. session)
    end
  end
  if id and id ~= "" then
    return go(id)
  end
  pick_session("Resume session", go, function(s)
    return s.status ~= "done" and s.status ~= "running"
  end)
end

--- Cancels the runs this Neovim started (or the given session).
function M.cancel(id)
  local c = client()
  if not c then
    return
  end
  local targets = {}
  if id and id ~= "" then
    table.insert(targets, id)
  else
    for _, run in pairs(state.runs) do
      if run.session then
        table.insert(targets, run.session)
      else
        local rc = vim.lsp.get_client_by_id(run.client_id)
        if rc and run.request_id then
          call(rc, "cancel_request", run.request_id)
        end
      end
    end
  end
  if #targets == 0 and next(state.runs) == nil then
    notify("nothing is running")
    return
  end
  for _, session in ipairs(targets) do
    execute(c, "agent.cancel", { session = session }, function(res)
      if not res.cancelled then
        notify("session " .. session .. " was not running")
      end
    end)
  end
end

--- Shows a session's transcript in a scratch buffer (picker when id is nil).
function M.show_session(id)
  local go = function(session, c)
    c = c or client()
    if not c then
      return
    end
    execute(c, "agent.session", { session = session }, function(s)
      render.open_transcript(s)
    end)
  end
  if id and id ~= "" then
    return go(id)
  end
  if state.last_session then
    return go(state.last_session)
  end
  pick_session("Show session", go)
end

--- Lists sessions in a picker; the chosen one opens its transcript.
function M.sessions()
  pick_session("Agent sessions", function(session, c)
    vim.ui.select({ "Show transcript", "Resume", "Delete" }, { prompt = "Session " .. session }, function(choice)
      if choice == "Show transcript" then
        M.show_session(session)
      elseif choice == "Resume" then
        M.resume(session)
      elseif choice == "Delete" then
        execute(c, "agent.deleteSession", { session = session }, function(res)
          notify(res.deleted and ("deleted session " .. session) or ("session " .. session .. " was already gone"))
        end)
      end
    end)
  end)
end

--- Prints the projects of the workspace.
function M.projects(fn)
  local c = client()
  if not c then
    return
  end
  execute(c, "agent.projects", vim.empty_dict(), function(list)
    if fn then
      return fn(list or {})
    end
    local chunks = {}
    for _, p in ipairs(list or {}) do
      table.insert(chunks, { render.project_line(p) .. "\n" })
    end
    if #chunks == 0 then
      chunks = { { "no projects" } }
    end
    vim.api.nvim_echo(chunks, true, {})
  end)
end

--- Switches the current session (or the next new one) to a project.
function M.switch(project)
  local go = function(name)
    local c = client()
    if not c then
      return
    end
    if not state.last_session then
      state.project = name
      notify("the next run uses project " .. name)
      return
    end
    execute(c, "agent.switchProject", { session = state.last_session, project = name }, function(res)
      state.project = res.project
      notify(("session %s now works on project %s"):format(res.session, res.project))
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

--- Statusline component: the running agent's latest progress, or "".
function M.statusline()
  return state.status
end

local function complete_sessions()
  return state.last_session and { state.last_session } or {}
end

function M.setup(opts)
  M.config = vim.tbl_deep_extend("force", vim.deepcopy(defaults), opts or {})
  if type(M.config.cmd) == "string" then
    M.config.cmd = { M.config.cmd }
  end
  local cmd = vim.api.nvim_create_user_command
  cmd("AgentRun", function(o)
    M.run(o.args, { range = o.range > 0 and { o.line1, o.line2 } or nil })
  end, { nargs = "*", range = true, desc = "Run the agent on a prompt (with a range: about those lines)" })
  cmd("AgentResume", function(o) M.resume(o.args) end, { nargs = "?", complete = complete_sessions, desc = "Resume an interrupted agent session" })
  cmd("AgentCancel", function(o) M.cancel(o.args) end, { nargs = "?", desc = "Cancel the running agent" })
  cmd("AgentSessions", function() M.sessions() end, { desc = "Pick an agent session" })
  cmd("AgentSession", function(o) M.show_session(o.args) end, { nargs = "?", complete = complete_sessions, desc = "Show an agent session's transcript" })
  cmd("AgentProjects", function() M.projects() end, { desc = "List the agent's projects" })
  cmd("AgentSwitch", function(o) M.switch(o.args) end, { nargs = "?", desc = "Switch the agent session to another project" })

  local group = vim.api.nvim_create_augroup("agent_lsp", { clear = true })
  if M.config.autostart then
    vim.api.nvim_create_autocmd({ "BufReadPost", "BufNewFile" }, {
      group = group,
      callback = function(a)
        if is_file_buffer(a.buf) then
          M.attach(a.buf)
        end
      end,
    })
    for _, b in ipairs(vim.api.nvim_list_bufs()) do
      if vim.api.nvim_buf_is_loaded(b) and is_file_buffer(b) then
        M.attach(b)
      end
    end
  end
end

return M
