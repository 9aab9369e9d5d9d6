-- The agent-lsp client: finding a buffer's project root, starting the client
-- and attaching it to buffers, sending workspace/executeCommand, and handling
-- what the server sends ($/progress, agent/event, workspace/applyEdit,
-- agent/saveDocuments).
local compat = require("agent_lsp.compat")
local config = require("agent_lsp.config")
local edit = require("agent_lsp.edit")
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
    ui.notify(("tools left out to fit the model's context of %s tokens: %s (a larger context_tokens keeps them, if the model has the room)")
      :format(tostring(ev.contextTokens), names), vim.log.levels.WARN)
  end
end

-- agent/event: run.start tells a run without a session yet its session; every
-- event goes to the event log, the AgentLspEvent autocommand and the on_event
-- hook.
---@param ev AgentLsp.AgentEvent
handlers["agent/event"] = function(_, ev)
  if type(ev) ~= "table" then
    return
  end
  log.event(ev)
  if ev.type == "run.start" and ev.session and not ev.contextId then
    for _, run in pairs(state.runs) do
      if run.session == nil or run.session == ev.session then
        run.session = ev.session
        M.settle_waiting(run, ev.session)
        break
      end
    end
    state.last_session = ev.session
    withheld(ev)
  elseif ev.type == "subagent.start" and ev.session and ev.contextId then
    M.remember_subagent(ev.session, ev.contextId)
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
  return edit.apply(params.edit, ctx.client_id, function()
    return edit.as_sent(params.edit, encoding)
  end)
end

-- agent/saveDocuments: the documents the agent edited are saved before its
-- command runs (unless save_before_commands is off).
---@param params AgentLsp.SaveDocumentsParams
---@return AgentLsp.SaveDocumentsResult
handlers["agent/saveDocuments"] = function(_, params)
  return save.documents(params.uris, config.options.save_before_commands)
end

-- Starting ---------------------------------------------------------------

-- find_root walks up from path's directory (vim.fs, which could do it, is 0.8+)
-- to the nearest one holding a root marker; else the cwd.
local function find_root(path)
  local dir = path ~= "" and vim.fn.fnamemodify(path, ":p:h") or compat.uv.cwd()
  local prev
  while dir and dir ~= prev do
    for _, marker in ipairs(config.options.root_markers) do
      if compat.uv.fs_stat(dir .. "/" .. marker) then
        return dir
      end
    end
    prev = dir
    dir = vim.fn.fnamemodify(dir, ":h")
  end
  return compat.uv.cwd()
end

---The client's capabilities: Neovim's, and experimental.saveDocuments (the
---client answers agent/saveDocuments).
---@return table
function M.capabilities()
  local caps = vim.lsp.protocol.make_client_capabilities()
  caps.experimental = vim.tbl_extend("force", caps.experimental or {}, { saveDocuments = true })
  return caps
end

local function client_config(root)
  return {
    name = NAME,
    capabilities = M.capabilities(),
    cmd = config.options.cmd,
    cmd_env = config.options.cmd_env,
    root_dir = root,
    workspace_folders = { { uri = vim.uri_from_fname(root), name = vim.fn.fnamemodify(root, ":t") } },
    init_options = config.init_options(),
    handlers = handlers,
    on_exit = function(code, signal)
      if code ~= 0 and signal ~= 15 then
        vim.schedule(function()
          ui.notify(("server exited (code %d, signal %d); see :lua vim.cmd('edit '..vim.lsp.get_log_path())"):format(code, signal), vim.log.levels.WARN)
        end)
      end
    end,
  }
end

---True for a buffer holding a file: a normal buffer with a name.
---@param bufnr integer
---@return boolean
function M.is_file_buffer(bufnr)
  return vim.api.nvim_buf_is_valid(bufnr) and vim.bo[bufnr].buftype == "" and vim.api.nvim_buf_get_name(bufnr) ~= ""
end

---Attaches the client of the buffer's project root to the buffer, starting it
---if needed (a buffer without a file only gets the client started). A failure
---is reported once, until a start succeeds.
---@param bufnr? integer default the current buffer
---@return integer|nil client_id
function M.attach(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local file = M.is_file_buffer(bufnr)
  local root = find_root(file and vim.api.nvim_buf_get_name(bufnr) or "")
  local cmd = config.options.cmd
  local function failed(why)
    if not state.start_failed then
      state.start_failed = true
      ui.notify(("could not start %s: %s (:help agent-lsp-troubleshooting)"):format(table.concat(cmd, " "), why), vim.log.levels.ERROR)
    end
  end
  if vim.fn.executable(cmd[1]) ~= 1 then
    failed("not found or not executable; put agent-lsp on PATH or set cmd")
    return nil
  end
  local ok, id = pcall(compat.start, client_config(root), file and bufnr or nil, state.roots)
  if not ok or not id then
    failed(ok and "the client did not start" or tostring(id))
    return nil
  end
  state.start_failed = nil
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

---Attaches to file buffers as they open, and to those already loaded, when
---enabled. Recreating the augroup drops what an earlier setup() created.
---@param enabled boolean
function M.autostart(enabled)
  local group = vim.api.nvim_create_augroup("agent_lsp", { clear = true })
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
      ui.notify(command .. ": " .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
      if on_error then
        on_error(err)
      end
      return
    end
    if on_result then
      on_result(result)
    end
  end, vim.api.nvim_get_current_buf())
end

return M
