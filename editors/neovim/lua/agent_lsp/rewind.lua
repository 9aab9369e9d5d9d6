-- Rewind (docs/rewind.md): :AgentRewind picks one of a session's checkpoints
-- (one per prompt, the state just before it, listed with the files that
-- prompt's run changed), then what goes back: the conversation and the files,
-- the conversation only, or the files only; :AgentFork starts a new session
-- from the conversation before a checkpoint's prompt and opens it in the
-- chat; :AgentRetry sends a session's last prompt again, its earlier answer
-- rewound. The session is the chat's when run from a chat buffer, else the
-- last one of this Neovim, else one picked. The restored files arrive as one
-- workspace/applyEdit; a file the user changed since is asked about through
-- window/showMessageRequest (client.lua). The server's refusals (a running
-- session, pruned contents, a file outside the project) show as it words
-- them.
local client = require("agent_lsp.client")
local render = require("agent_lsp.render")
local state = require("agent_lsp.state")
local ui = require("agent_lsp.ui")

local M = {}

---The scopes of a rewind, in the order the picker offers them, with what each does.
M.scopes = {
  { "both", "the conversation and the files" },
  { "conversation", "the conversation only (the files stay as they are)" },
  { "files", "the files only (the conversation stays)" },
}

---A file a checkpoint lists, on one line: "greet.go +3 −1", why it cannot be restored.
---@param f AgentLsp.CheckpointFile
---@return string
function M.file_label(f)
  local label = ("%s +%s −%s"):format(render.str(f.path), render.str(f.added), render.str(f.removed))
  if f.restorable == false then
    label = label .. " (" .. (f.reason and render.str(f.reason) or "not restorable") .. ")"
  end
  return label
end

---The files checkpoint n's prompt and every later one changed, each once, by path.
---@param list AgentLsp.Checkpoint[]
---@param n integer
---@return AgentLsp.CheckpointFile[]
function M.files_since(list, n)
  local by_uri, out = {}, {}
  for _, c in ipairs(list) do
    if c.checkpoint >= n then
      for _, f in ipairs(type(c.files) == "table" and c.files or {}) do
        local was = by_uri[f.uri]
        if was then
          was.added, was.removed = was.added + f.added, was.removed + f.removed
          was.restorable = was.restorable and f.restorable
          was.reason = was.reason or f.reason
        else
          by_uri[f.uri] = vim.deepcopy(f)
          table.insert(out, by_uri[f.uri])
        end
      end
    end
  end
  table.sort(out, function(a, b) return a.path < b.path end)
  return out
end

---A checkpoint's line in the picker: "2. Add Sub and test it — greet.go +2 −1, sub_test.go +9 −0".
---@param c AgentLsp.Checkpoint
---@return string
function M.checkpoint_item(c)
  local files = vim.tbl_map(M.file_label, type(c.files) == "table" and c.files or {})
  local notes = vim.tbl_map(render.oneline, type(c.notes) == "table" and c.notes or {})
  local line = ("%s. %s — %s"):format(render.str(c.checkpoint), render.oneline(c.prompt), #files > 0 and table.concat(files, ", ") or "no file changed")
  return #notes > 0 and (line .. "; " .. table.concat(notes, "; ")) or line
end

---What checkpoint n and the later ones could not record, each once.
---@param list AgentLsp.Checkpoint[]
---@param n integer
---@return string[]
function M.notes_since(list, n)
  local out, seen = {}, {}
  for _, c in ipairs(list) do
    if type(c.checkpoint) == "number" and c.checkpoint >= n then
      for _, note in ipairs(type(c.notes) == "table" and c.notes or {}) do
        local line = render.oneline(note)
        if not seen[line] then
          seen[line] = true
          table.insert(out, line)
        end
      end
    end
  end
  return out
end

---agent.checkpoints for the event log: each checkpoint, then its files with their URIs.
---@param r AgentLsp.CheckpointsResult
---@return string[]
function M.checkpoints_lines(r)
  local lines = {}
  for _, c in ipairs(type(r.checkpoints) == "table" and r.checkpoints or {}) do
    table.insert(lines, ("checkpoint %s: %s (%s · %s)"):format(render.str(c.checkpoint), render.oneline(c.prompt), render.time(c.time), render.str(c.model)))
    for _, f in ipairs(type(c.files) == "table" and c.files or {}) do
      table.insert(lines, ("    %s · %s · %s"):format(M.file_label(f), render.word("restorable", f.restorable), render.str(f.uri)))
    end
    for _, note in ipairs(type(c.notes) == "table" and c.notes or {}) do
      table.insert(lines, "    note: " .. render.oneline(note))
    end
  end
  return #lines > 0 and lines or { "no checkpoints" }
end

-- names is the paths of a rewind's files, with extra (a field's words) after each.
local function names(list, extra)
  return table.concat(vim.tbl_map(function(f) return render.str(f.path) .. (extra and (" (" .. extra(f) .. ")") or "") end, list), ", ")
end

---What a rewind did, as the notification says it; warn when something was not restored as asked.
---@param r AgentLsp.RewindResult
---@param scope AgentLsp.RewindScope
---@return string text
---@return boolean warn
function M.summary(r, scope)
  local parts = { ("%s to before prompt %s:"):format(render.word("undone", false), render.str(r.checkpoint)) }
  local restored = type(r.restored) == "table" and r.restored or {}
  if r.undone == true then
    -- (the rewind's own words: what it did, which the undo took back)
    parts = { ("%s to before prompt %s (%s):"):format(render.word("undone", true), render.str(r.checkpoint), render.word("conversation", r.conversation)) }
    if r.conversation == true then
      table.insert(parts, "the conversation is back;")
    end
    if #restored > 0 or r.conversation ~= true then
      table.insert(parts, #restored > 0 and ("put back " .. names(restored) .. ";") or "no file needed putting back;")
    end
    scope = "undo"
  end
  if scope ~= "files" and scope ~= "undo" then
    table.insert(parts, render.word("conversation", r.conversation) .. ";")
  end
  if scope ~= "conversation" and scope ~= "undo" then
    table.insert(parts, #restored > 0 and ("restored " .. names(restored) .. ";") or "no file needed restoring;")
  end
  local conflicts = type(r.conflicts) == "table" and r.conflicts or {}
  if #conflicts > 0 then
    table.insert(parts, "changed by you since: " .. names(conflicts, function(f) return render.word("kept", f.kept) end) .. ";")
  end
  local left = type(r.notRestorable) == "table" and r.notRestorable or {}
  if #left > 0 then
    table.insert(parts, "not restorable: " .. names(left, function(f) return render.str(f.reason) end) .. ";")
  end
  local warn = #left > 0
  for _, f in ipairs(conflicts) do
    warn = warn or f.kept == true
  end
  return (table.concat(parts, " "):gsub(";$", "")), warn
end

---agent.rewind for the event log: the summary, then each file with its URI.
---@param r AgentLsp.RewindResult
---@param args AgentLsp.RewindArgs
---@return string[]
function M.rewind_lines(r, args)
  local lines = { ("session %s: %s"):format(render.str(args.session), (M.summary(r, args.restore or "both"))) }
  if r.rewind then
    table.insert(lines, ("    rewind %s%s"):format(render.str(r.rewind), r.undone and " (taken back)" or " (:AgentRewind undo takes it back)"))
  end
  for _, kind in ipairs({ "restored", "conflicts", "notRestorable" }) do
    for _, f in ipairs(type(r[kind]) == "table" and r[kind] or {}) do
      table.insert(lines, ("    %s %s %s"):format(kind, render.str(f.path), render.str(f.uri)))
    end
  end
  return lines
end

---agent.fork's line.
---@param r AgentLsp.SessionArgs
---@param args AgentLsp.ForkArgs
---@return string[]
-- file_lines shows agent.checkpointFile's answer: the file before prompt N, then its lines.
---@param r AgentLsp.CheckpointFileResult
---@param args AgentLsp.CheckpointFileArgs
---@return string[]
function M.file_lines(r, args)
  local lines = { ("%s (%s) before prompt %s: %s"):format(render.str(r.path), render.str(r.uri), render.str(args.checkpoint), render.word("exists", r.exists)) }
  if r.exists then
    vim.list_extend(lines, vim.split(r.content or "", "\n", { plain = true }))
  end
  return lines
end

function M.fork_lines(r, args) return { ("session %s forked before prompt %s: the new session is %s"):format(render.str(args.session), render.str(args.checkpoint), render.str(r.session)) } end

-- The session and its client --------------------------------------------------

-- chat_session is the session of the chat buffer bufnr, and its client.
local function chat_session(bufnr)
  local chat = package.loaded["agent_lsp.chat"]
  local c = chat and chat.chats[bufnr]
  if c and c.session then
    return c.session, c.client_id and vim.lsp.get_client_by_id(c.client_id)
  end
end

-- running says whether a run of this Neovim works on session.
local function running(session)
  for _, run in pairs(state.runs) do
    if run.session == session and run.result == nil then
      return true
    end
  end
  return false
end

-- with_session calls fn(session, client) for the chat's session, else the
-- last one, else one the user picks; a running session is refused.
local function with_session(what, fn)
  local session, fallback = chat_session(vim.api.nvim_get_current_buf())
  session = session or state.last_session
  local go = function(s, c)
    if running(s) then
      return ui.notify(("session %s is running: :AgentCancel it first, then %s"):format(s, what), vim.log.levels.WARN)
    end
    c = client.for_session(s, c)
    if c then
      fn(s, c)
    end
  end
  if session then
    return go(session, fallback)
  end
  local c = client.current()
  if not c then
    return
  end
  client.execute(c, "agent.sessions", vim.empty_dict(), function(list)
    if type(list) ~= "table" or #list == 0 then
      return ui.notify("no sessions yet")
    end
    vim.ui.select(list, { prompt = "Session to " .. what, format_item = render.session_item, kind = "agent-lsp.session" }, function(s)
      if s then
        go(s.session, c)
      end
    end)
  end)
end

-- pick_checkpoint lists session's checkpoints and calls fn with the one
-- numbered n (given), else the one picked, and the whole list.
local function pick_checkpoint(c, session, n, prompt, fn)
  client.execute(c, "agent.checkpoints", { session = session }, function(r)
    local list = type(r) == "table" and type(r.checkpoints) == "table" and r.checkpoints or {}
    if #list == 0 then
      return ui.notify(("session %s has no checkpoints yet"):format(session))
    end
    if n then
      for _, cp in ipairs(list) do
        if cp.checkpoint == n then
          return fn(cp, list)
        end
      end
      return ui.notify(("session %s has no checkpoint %d (it has 1 to %d)"):format(session, n, #list), vim.log.levels.ERROR)
    end
    vim.ui.select(list, { prompt = prompt, format_item = M.checkpoint_item, kind = "agent-lsp.checkpoint" }, function(cp)
      if cp then
        fn(cp, list)
      end
    end)
  end)
end

-- reload_chat reads the session's chat again, when one is open.
local function reload_chat(session)
  local chat = package.loaded["agent_lsp.chat"]
  for _, ch in pairs(chat and chat.chats or {}) do
    if ch.session == session and vim.api.nvim_buf_is_valid(ch.buf) then
      chat.reload(ch)
    end
  end
end

-- Commands --------------------------------------------------------------------

-- do_rewind sends agent.rewind and says what it did.
local function do_rewind(c, session, n, scope)
  local args = { session = session, checkpoint = n, restore = scope }
  client.execute(c, "agent.rewind", args, function(r)
    require("agent_lsp.log").add(M.rewind_lines(r, args))
    local text, warn = M.summary(r, scope)
    ui.notify(text, warn and vim.log.levels.WARN or vim.log.levels.INFO)
    if r.conversation then
      reload_chat(session)
    end
  end)
end

---:AgentRewind undo: the session's newest rewind taken back (the files it
---wrote as before it, one workspace edit; the conversation it took out).
function M.undo()
  with_session("rewind", function(session, c)
    local args = { session = session, undo = true }
    client.execute(c, "agent.rewind", args, function(r)
      require("agent_lsp.log").add(M.rewind_lines(r, args))
      local text, warn = M.summary(r, "both")
      ui.notify(text, warn and vim.log.levels.WARN or vim.log.levels.INFO)
      if r.conversation then
        reload_chat(session)
      end
    end)
  end)
end

---:AgentRewind [N [both|conversation|files]]: a checkpoint of the session
---(picked, with the files each prompt changed, unless N is given), then what
---goes back (picked, listing the files prompt N and later changed, unless
---given).
---@param n? integer
---@param scope? AgentLsp.RewindScope
function M.rewind(n, scope)
  if scope and not vim.tbl_contains({ "both", "conversation", "files" }, scope) then
    return ui.notify(("unknown scope %q: both, conversation or files"):format(scope), vim.log.levels.ERROR)
  end
  with_session("rewind", function(session, c)
    pick_checkpoint(c, session, n, "Rewind to before which prompt?", function(cp, list)
      if scope then
        return do_rewind(c, session, cp.checkpoint, scope)
      end
      local files = vim.tbl_map(M.file_label, M.files_since(list, cp.checkpoint))
      local changed = #files > 0 and ("; files changed since: " .. table.concat(files, ", ")) or "; no file changed since"
      for _, note in ipairs(M.notes_since(list, cp.checkpoint)) do
        changed = changed .. "; " .. note
      end
      vim.ui.select(M.scopes, {
        prompt = ("Rewind to before prompt %d (%s)%s. What goes back?"):format(cp.checkpoint, render.oneline(cp.prompt), changed),
        format_item = function(s) return s[2] end,
        kind = "agent-lsp.rewind",
      }, function(s)
        if s then
          do_rewind(c, session, cp.checkpoint, s[1])
        end
      end)
    end)
  end)
end

---:AgentFork [N]: a new session with the conversation before prompt N
---(picked unless given), opened in the chat; files untouched.
---@param n? integer
function M.fork(n)
  with_session("fork", function(session, c)
    pick_checkpoint(c, session, n, "Fork from before which prompt?", function(cp)
      local args = { session = session, checkpoint = cp.checkpoint }
      client.execute(c, "agent.fork", args, function(r)
        local line = M.fork_lines(r, args)[1]
        require("agent_lsp.log").add({ line })
        client.remember_session(r.session, c.id)
        state.last_session = r.session
        ui.notify(line)
        require("agent_lsp.chat").open_session(r.session, c)
      end)
    end)
  end)
end

---:AgentRetry: the session's last prompt again (agent.run with retry), its
---earlier answer rewound; its chat, when open, is read again once it ends.
function M.retry()
  with_session("retry", function(session, c)
    local config = require("agent_lsp.config")
    ---@type AgentLsp.RunArgs
    local args = { session = session, retry = true, edits = config.options.edits, model = state.model, mode = state.mode or "agent" }
    -- The last prompt, for the chat's heading of the run and the status line.
    client.execute(c, "agent.checkpoints", { session = session }, function(r)
      local list = type(r) == "table" and type(r.checkpoints) == "table" and r.checkpoints or {}
      if #list == 0 then
        return ui.notify(("session %s has no prompt to retry"):format(session))
      end
      require("agent_lsp.commands").start_run(c, "agent.run", args, list[#list].prompt, function(result)
        if result then
          reload_chat(session)
        end
      end)
    end)
  end)
end

return M
