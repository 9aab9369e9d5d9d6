-- The agent-lsp client: finding a buffer's project root, starting the client
-- and attaching it to buffers, sending workspace/executeCommand, and handling
-- what the server sends ($/progress, agent/event, workspace/applyEdit,
-- agent/saveDocuments, agent/diagnostics, agent/languageRequest).
local compat = require("agent_lsp.compat")
local config = require("agent_lsp.config")
local edit = require("agent_lsp.edit")
local language = require("agent_lsp.language")
local log = require("agent_lsp.log")
local review = require("agent_lsp.review")
local save = require("agent_lsp.save")
local state = require("agent_lsp.state")
local ui = require("agent_lsp.ui")

local M = {}

local NAME = "agent-lsp"

-- Handlers ---------------------------------------------------------------

local handlers = {}

-- $/progress of a run this Neovim started becomes the run's progress, the
-- statusline text and an echo.
handlers["$/progress"] = function(err, result, ctx, cfg)
  -- Neovim's own handler keeps its progress messages (vim.lsp.status()) informed.
  pcall(vim.lsp.handlers["$/progress"], err, result, ctx, cfg)
  local run = result and result.token and state.runs[result.token]
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
    table.insert(run.progress, text)
    if value.kind == "end" then
      run.progress_ended = true
      ui.restore_status() -- another run's progress, if one is going
    else
      ui.set_status(text)
    end
    ui.echo(text)
  end
end

---Sends the follow-ups waiting for run's session (see commands.run) to it;
---session nil: it never became known, and they report what was not sent.
---@param run AgentLsp.Run
---@param session string|nil
function M.settle_waiting(run, session)
  local waiting = run.waiting or {}
  run.waiting = nil
  for _, send in ipairs(waiting) do
    send(session)
  end
end

---Records that client id ran session: the per-session commands (cancel,
---resume, the transcript, ...) go to that client (M.for_session).
---@param session string|nil
---@param id integer|nil
function M.remember_session(session, id)
  if type(session) == "string" and session ~= "" and id then
    state.session_clients[session] = id
  end
end

---The client that ran session (M.remember_session) while that client runs, else
---fallback, else the current client (M.current). Normally one client serves
---the whole Neovim; after a restart, or with clients started elsewhere, the
---session's own server is the one that knows its run.
---@param session string|nil
---@param fallback? table a vim.lsp client
---@return table|nil client
function M.for_session(session, fallback)
  local id = session and state.session_clients[session]
  local c = id and vim.lsp.get_client_by_id(id)
  if c and not compat.call(c, "is_stopped") then
    return c
  end
  return fallback or M.current()
end

---Records a subagent context of session, for :AgentSession's completion.
---@param session string
---@param context string
function M.remember_subagent(session, context)
  local known = state.subagents[session] or {}
  state.subagents[session] = known
  if not vim.tbl_contains(known, context) then
    table.insert(known, context)
  end
end

-- withheld reports the tools a run.start left out to fit the context, once
-- per list.
local function withheld(ev)
  local names = require("agent_lsp.events").withheld(ev)
  if names and not state.withheld_seen[names] then
    state.withheld_seen[names] = true
    ui.notify(("tools left out to fit the model's context of %s tokens: %s (a larger context_tokens keeps them, if the model has the room)"):format(tostring(ev.contextTokens), names), vim.log.levels.WARN)
  end
end

-- agent/event: run.start tells a run without a session yet its session; every
-- event goes to the event log, the AgentLspEvent autocommand and the on_event
-- hook.
---@param ev AgentLsp.AgentEvent
handlers["agent/event"] = function(_, ev, ctx)
  if type(ev) ~= "table" then
    return
  end
  log.event(ev)
  if ev.type == "run.start" and ev.session and not ev.contextId then
    M.remember_session(ev.session, ctx and ctx.client_id)
    for _, run in pairs(state.runs) do
      local mine = not (ctx and ctx.client_id) or run.client_id == ctx.client_id -- a run of the client that sent it
      if mine and (run.session == nil or run.session == ev.session) then
        run.session = ev.session
        M.settle_waiting(run, ev.session)
        break
      end
    end
    state.last_session = ev.session
    withheld(ev)
  elseif ev.type == "subagent.start" and ev.session and ev.contextId then
    M.remember_subagent(ev.session, ev.contextId)
  elseif ev.type == "usage" and type(ev.budget) == "table" then
    state.budget = ev.budget -- shared by the run's subagents
    if not ev.contextId and type(ev.run) == "table" then
      state.usage = ev.run
    end
    ui.set_status(state.status)
  elseif ev.type == "usage" and not ev.contextId and type(ev.run) == "table" then
    state.usage = ev.run
    ui.set_status(state.status)
  end
  if (ev.type == "run.end" or ev.type == "subagent.end") and ev.branch then
    require("agent_lsp.branches").note(ev, ctx and ctx.client_id and M.folders(ctx.client_id) or { compat.uv.cwd() })
  end
  -- The chat shows its session's events (when a chat was ever opened).
  local chat = package.loaded["agent_lsp.chat"]
  if chat then
    if ev.type == "run.start" then
      chat.adopt(ev)
    end
    chat.on_event(ev)
  end
  compat.fire("AgentLspEvent", ev)
  -- The hook is a field of the public module, required here rather than at
  -- load time because that module requires this one.
  local on_event = require("agent_lsp").on_event
  if on_event then
    on_event(ev)
  end
end

---The handlers of the client's notifications and requests, by method (the
---tests deliver server messages through them).
M.handlers = handlers

-- workspace/applyEdit: an edit computed against text its buffer no longer
-- holds is refused (edit.stale); one that needs confirmation goes through the
-- review diff, any other is applied as sent. Files the edit loads are
-- attached to the client once it is applied (edit.apply).
---@param params { label?: string, edit: table } ApplyWorkspaceEditParams
---@return { applied: boolean, failureReason?: string }
handlers["workspace/applyEdit"] = function(_, params, ctx)
  local stale = edit.stale(params.edit)
  if stale then
    return { applied = false, failureReason = stale }
  end
  local c = vim.lsp.get_client_by_id(ctx.client_id)
  local encoding = c and c.offset_encoding or "utf-16"
  if review.wants_review(params.edit) then
    return review.ask(params, encoding, config.options.review_keys, ctx.client_id)
  end
  return edit.apply(params.edit, ctx.client_id, function() return edit.as_sent(params.edit, encoding) end)
end

-- window/showMessageRequest: the server asks whether the agent may run a
-- command or call an MCP tool, or whether a repository's MCP server may
-- start; Neovim's handler offers the question's own actions (a numbered list
-- on 0.7), and the statusline says the agent waits for permission meanwhile.
handlers["window/showMessageRequest"] = function(err, params, ctx, cfg)
  ui.set_asking(true)
  local ok, result, e = pcall(vim.lsp.handlers["window/showMessageRequest"], err, params, ctx, cfg)
  ui.set_asking(false)
  if not ok then
    error(result)
  end
  return result, e
end

-- agent/saveDocuments: the documents the agent edited are saved before its
-- command runs (unless save_before_commands is off).
---@param params AgentLsp.SaveDocumentsParams
---@return AgentLsp.SaveDocumentsResult
handlers["agent/saveDocuments"] = function(_, params) return save.documents(params.uris, config.options.save_before_commands) end

-- agent/diagnostics and agent/languageRequest: the agent sees what Neovim's
-- language servers see (language.lua).
---@param params AgentLsp.DiagnosticsParams
---@return AgentLsp.DiagnosticsResult
handlers["agent/diagnostics"] = function(_, params) return language.diagnostics(params) end

---@param params AgentLsp.LanguageRequestParams
---@return any
handlers["agent/languageRequest"] = function(_, params) return language.request(params) end

-- Starting ---------------------------------------------------------------

-- has tells whether dir holds one of the markers.
local function has(dir, markers)
  for _, marker in ipairs(markers) do
    if compat.uv.fs_stat(dir .. "/" .. marker) then
      return true
    end
  end
  return false
end

---The project of path: the nearest folder upward with a manifest (a root
---marker other than .git), else the outermost folder with a .git, else the
---cwd. (vim.fs, which could walk, is 0.8+.)
---@param path string a file, or "" for the cwd
---@return string
function M.find_root(path)
  local dir = path ~= "" and vim.fn.fnamemodify(path, ":p:h") or compat.uv.cwd()
  local manifests = vim.tbl_filter(function(m) return m ~= ".git" end, config.options.root_markers)
  local git, prev
  while dir and dir ~= prev do
    if has(dir, manifests) then
      return dir
    end
    if compat.uv.fs_stat(dir .. "/.git") then
      git = dir
    end
    prev = dir
    dir = vim.fn.fnamemodify(dir, ":h")
  end
  return git or compat.uv.cwd()
end
local find_root = M.find_root

-- Workspace folders ------------------------------------------------------

---The workspace folders of client id (the roots it serves).
---@param id integer
---@return string[] dirs
function M.folders(id)
  local c = vim.lsp.get_client_by_id(id)
  return vim.tbl_map(function(f) return vim.uri_to_fname(f.uri) end, c and c.workspace_folders or {})
end

-- change_folders sends workspace/didChangeWorkspaceFolders, or keeps the
-- change until the client is initialized (its on_init sends it).
local function change_folders(id, added, removed)
  local c = vim.lsp.get_client_by_id(id)
  if not c then
    return
  end
  if not state.initialized[id] then
    local pending = state.pending_folders[id] or { added = {}, removed = {} }
    state.pending_folders[id] = pending
    vim.list_extend(pending.added, added)
    vim.list_extend(pending.removed, removed)
    return
  end
  compat.call(c, "notify", "workspace/didChangeWorkspaceFolders", { event = { added = added, removed = removed } })
end

-- folder_list is client c's list of workspace folders, which add_folder and
-- remove_folder change. Before its initialization 0.7 has none yet (and
-- sets it from the config when initialized, which on_init then corrects).
local function folder_list(c)
  if not c.workspace_folders then
    c.workspace_folders = vim.deepcopy(c.config and c.config.workspace_folders or {})
  end
  return c.workspace_folders
end

-- index_of is the index of uri in list, or nil.
local function index_of(list, uri)
  for i, f in ipairs(list) do
    if f.uri == uri then
      return i
    end
  end
end

---Adds root to client id's workspace folders (workspace/didChangeWorkspaceFolders)
---unless it has it.
---@param id integer
---@param root string
---@return boolean added
function M.add_folder(id, root)
  local c = vim.lsp.get_client_by_id(id)
  if not c then
    return false
  end
  local list, uri = folder_list(c), vim.uri_from_fname(root)
  if index_of(list, uri) then
    return false
  end
  local folder = { uri = uri, name = vim.fn.fnamemodify(root, ":t") }
  table.insert(list, folder)
  change_folders(id, { folder }, {})
  return true
end

---Removes root from client id's workspace folders.
---@param id integer
---@param root string
---@return boolean removed
function M.remove_folder(id, root)
  local c = vim.lsp.get_client_by_id(id)
  local list = c and folder_list(c) or {}
  local i = index_of(list, vim.uri_from_fname(root))
  if not i then
    return false
  end
  local folder = table.remove(list, i)
  change_folders(id, {}, { folder })
  return true
end

-- Restarts -----------------------------------------------------------------

---The waits before restarting a crashed server, in ms: the nth restart in a
---row waits backoff[n]; after the last, the plugin stops trying until the
---next start.
M.backoff = { 500, 2000, 8000, 30000 }

-- restart starts the client again after a crash, with the folders and the
-- buffers the crashed one had.
local function restart(folders, bufs)
  state.restarts = (state.restarts or 0) + 1
  local wait = M.backoff[state.restarts]
  if not wait then
    ui.notify("the server keeps crashing; not restarting it again (:checkhealth agent_lsp)", vim.log.levels.ERROR)
    return
  end
  ui.notify(("restarting the server in %.1f s"):format(wait / 1000), vim.log.levels.WARN)
  vim.defer_fn(function()
    local id
    for _, b in ipairs(bufs) do
      if vim.api.nvim_buf_is_loaded(b) and M.is_file_buffer(b) then
        id = M.attach(b) or id
      end
    end
    id = id or M.attach(0)
    for _, dir in ipairs(folders) do
      if id then
        M.add_folder(id, dir)
      end
    end
  end, wait)
end

---The client's capabilities: Neovim's, experimental.saveDocuments (the
---client answers agent/saveDocuments) and experimental.language (it answers
---agent/diagnostics and agent/languageRequest).
---@return table
function M.capabilities()
  local caps = vim.lsp.protocol.make_client_capabilities()
  caps.experimental = vim.tbl_extend("force", caps.experimental or {}, { saveDocuments = true, language = true })
  language.setup()
  return caps
end

---The root_dir of the config vim.lsp.enable uses (0.11+): on_dir gets the
---project of a buffer holding a file (find_root), the start or reuse of the
---one client goes on from there; other buffers, and those an edit is loading
---(attached once it is applied, see edit.apply), are left alone.
---@param bufnr integer
---@param on_dir fun(root: string)
function M.root_dir(bufnr, on_dir)
  if M.is_file_buffer(bufnr) and not state.loading[bufnr] then
    on_dir(find_root(vim.api.nvim_buf_get_name(bufnr)))
  end
end

-- client_config is the client's config for a start in root; root nil: the
-- config vim.lsp.enable starts from (0.11+), whose root_dir is M.root_dir
-- and whose first workspace folder Neovim derives from the root it gives.
local function client_config(root)
  local id -- the client's, known at on_init
  return {
    name = NAME,
    capabilities = M.capabilities(),
    cmd = config.options.cmd,
    cmd_env = config.options.cmd_env,
    root_dir = root or M.root_dir,
    workspace_folders = root and { { uri = vim.uri_from_fname(root), name = vim.fn.fnamemodify(root, ":t") } } or nil,
    init_options = config.init_options(),
    handlers = handlers,
    -- One client for every root: a start for another root (vim.lsp.start,
    -- vim.lsp.enable on 0.11+) reuses the running client, and each buffer
    -- it attaches adds its project as a workspace folder.
    reuse_client = function(c, conf) return c.name == conf.name end,
    on_attach = function(c, bufnr)
      if M.is_file_buffer(bufnr) then
        M.add_folder(c.id, find_root(vim.api.nvim_buf_get_name(bufnr)))
      end
    end,
    on_init = function(c)
      id = c.id
      state.initialized[c.id] = true
      -- A client vim.lsp.enable started (0.11+) is the one client from now on.
      local known = state.roots.id and vim.lsp.get_client_by_id(state.roots.id)
      if not known or compat.call(known, "is_stopped") then
        state.roots.id = c.id
      end
      vim.defer_fn(function() -- a minute of service ends a run of crashes
        if state.initialized[c.id] then
          state.restarts = 0
        end
      end, 60000)
      local pending = state.pending_folders[c.id]
      state.pending_folders[c.id] = nil
      if pending then
        local list = folder_list(c)
        for _, f in ipairs(pending.added) do
          if not index_of(list, f.uri) then
            table.insert(list, f)
          end
        end
        for _, f in ipairs(pending.removed) do
          local i = index_of(list, f.uri)
          if i then
            table.remove(list, i)
          end
        end
        change_folders(c.id, pending.added, pending.removed)
      end
    end,
    on_exit = function(code, signal, client_id)
      client_id = client_id or id
      local served = client_id and state.initialized[client_id]
      local folders = client_id and M.folders(client_id) or {}
      local bufs = client_id and vim.lsp.get_buffers_by_client_id and vim.lsp.get_buffers_by_client_id(client_id) or {}
      if client_id then
        state.initialized[client_id] = nil
      end
      if (code ~= 0 or signal ~= 0) and signal ~= 15 then
        vim.schedule(function()
          ui.notify(("server exited (code %d, signal %d); see :lua vim.cmd('edit '..vim.lsp.get_log_path())"):format(code, signal), vim.log.levels.WARN)
          -- A server that served, then crashed, comes back; one that never
          -- initialized (a wrong setting, a broken binary) does not.
          if served and state.roots.id == client_id then
            restart(folders, bufs)
          end
        end)
      end
    end,
  }
end

---True for a buffer holding a file: a normal buffer with a name.
---@param bufnr integer
---@return boolean
function M.is_file_buffer(bufnr) return vim.api.nvim_buf_is_valid(bufnr) and vim.bo[bufnr].buftype == "" and vim.api.nvim_buf_get_name(bufnr) ~= "" end

-- failed reports that the client could not start, once until a start
-- succeeds.
local function failed(why)
  if not state.start_failed then
    state.start_failed = true
    ui.notify(("could not start %s: %s (:help agent-lsp-troubleshooting)"):format(table.concat(config.options.cmd, " "), why), vim.log.levels.ERROR)
  end
end

-- NOT_FOUND is why a command that is not executable does not start.
local NOT_FOUND = "not found or not executable; put agent-lsp on PATH or set cmd"

---Attaches the client of the buffer's project root to the buffer, starting it
---if needed (a buffer without a file only gets the client started). A failure
---is reported once, until a start succeeds.
---@param bufnr? integer default the current buffer
---@return integer|nil client_id
function M.attach(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local file = M.is_file_buffer(bufnr)
  local root = find_root(file and vim.api.nvim_buf_get_name(bufnr) or "")
  if vim.fn.executable(config.options.cmd[1]) ~= 1 then
    failed(NOT_FOUND)
    return nil
  end
  local ok, id = pcall(compat.start, client_config(root), file and bufnr or nil, state.roots)
  if not ok or not id then
    failed(ok and "the client did not start" or tostring(id))
    return nil
  end
  state.start_failed = nil
  M.add_folder(id, root)
  return id
end

---The client for the current buffer: the one attached to it, else (for a
---scratch or transcript buffer) any running one, else a new one. nil when it
---cannot start, which is reported.
---@return table|nil client a vim.lsp client
function M.current()
  local bufnr = vim.api.nvim_get_current_buf()
  local running = compat.get_clients(NAME)
  for _, c in ipairs(running) do
    if vim.lsp.buf_is_attached(bufnr, c.id) then
      return c
    end
  end
  if running[1] and not M.is_file_buffer(bufnr) then
    return running[1]
  end
  state.start_failed = nil -- an explicit command reports a failure again
  local id = M.attach(bufnr)
  return id and vim.lsp.get_client_by_id(id)
end

---The client's config for a start in root; root nil: the config
---vim.lsp.enable starts from (0.11+), whose root_dir is M.root_dir.
---@param root? string
---@return table
function M.config(root) return client_config(root) end

---Attaches to file buffers as they open, and to those already loaded, when
---enabled. On 0.11+ Neovim does that: the config (root_dir M.root_dir,
---reuse_client keeping one client, whose on_attach adds each buffer's
---project as a workspace folder) goes to vim.lsp.config and
---vim.lsp.enable (compat.enable); before, the plugin's own autocommand
---attaches them. Recreating the augroup drops what an earlier setup()
---created.
---@param enabled boolean
function M.autostart(enabled)
  local group = vim.api.nvim_create_augroup("agent_lsp", { clear = true })
  if compat.enable(NAME, function() return client_config(nil) end, enabled) then
    -- vim.lsp.enable skips a command that is not executable without a word.
    if enabled and vim.fn.executable(config.options.cmd[1]) ~= 1 then
      failed(NOT_FOUND)
    end
    return
  end
  if not enabled then
    return
  end
  vim.api.nvim_create_autocmd({ "BufReadPost", "BufNewFile" }, {
    group = group,
    callback = function(a)
      if M.is_file_buffer(a.buf) and not state.loading[a.buf] then -- an edit loading it attaches it once applied
        M.attach(a.buf)
      end
    end,
  })
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(b) and M.is_file_buffer(b) then
      M.attach(b)
    end
  end
end

-- Commands ---------------------------------------------------------------

---Sends workspace/executeCommand with args as the one argument. on_result
---gets the result; an error is reported instead, then passed to on_error.
---@param c table a vim.lsp client
---@param command string e.g. "agent.run"
---@param args? table
---@param on_result? fun(result: any)
---@param extra? table more request params, e.g. { workDoneToken = token }
---@param on_error? fun(err: table) after the error is reported
---@return boolean sent
---@return integer|nil request_id
function M.execute(c, command, args, on_result, extra, on_error)
  local params = { command = command, arguments = { args or vim.empty_dict() } }
  for k, v in pairs(extra or {}) do
    params[k] = v
  end
  return compat.call(c, "request", "workspace/executeCommand", params, function(err, result)
    if err then
      local why = require("agent_lsp.reasons").of(err) -- a setting fixes it: say which, in the plugin's options
      ui.notify(why and require("agent_lsp.reasons").message(why) or (command .. ": " .. (err.message or vim.inspect(err))), vim.log.levels.ERROR)
      if on_error then
        on_error(err)
      end
      return
    end
    if on_result then
      on_result(result)
    end
  end, nil) -- no buffer: the client sends every buffer's pending didChange first, so the server reads what the editor has
end

return M
