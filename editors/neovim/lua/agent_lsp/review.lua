-- Review mode: an edit whose change annotation needs confirmation is shown as a
-- diff (current text against the proposed text) in a new tab, and the user
-- accepts or rejects it. Where Neovim runs server-request handlers in a
-- coroutine (newer releases), the diff stays interactive and the accept/reject
-- mappings answer; on releases that answer synchronously (0.7) the same keys
-- are read while the diff is on screen, and other keys move around in it.
-- The echo line says why the server asks (the annotation's description):
-- review mode asks about every edit, apply mode about edits of protected files.
local compat = require("agent_lsp.compat")

local M = {}

local current -- the open review: { tab, bufs, hint, finish }

-- confirmations lists the change annotations of a workspace edit that need confirmation.
local function confirmations(edit)
  local out = {}
  if type(edit) == "table" and type(edit.changeAnnotations) == "table" then
    for _, a in pairs(edit.changeAnnotations) do
      if type(a) == "table" and a.needsConfirmation then
        table.insert(out, a)
      end
    end
  end
  return out
end

---True when the workspace edit carries an annotation that needs confirmation.
---@param edit table|nil a WorkspaceEdit
---@return boolean
function M.wants_review(edit)
  return #confirmations(edit) > 0
end

---The echo line of a review: the edit's label, why it needs confirmation
---(the descriptions of its annotations that need it, e.g. "protected file:
---..."), and the keys that answer.
---@param params table ApplyWorkspaceEditParams: { label?, edit }
---@param keys AgentLsp.ReviewKeys
---@return string
function M.hint(params, keys)
  local why, seen = {}, {}
  for _, a in ipairs(confirmations(params.edit)) do
    if type(a.description) == "string" and a.description ~= "" and not seen[a.description] then
      seen[a.description] = true
      table.insert(why, a.description)
    end
  end
  table.sort(why)
  local parts = { params.label or "agent edit", unpack(why) }
  table.insert(parts, ("%s accept, %s reject"):format(keys.accept, keys.reject))
  return table.concat(parts, " — ")
end

---"mappings" when the handler can wait for the accept/reject mappings, else
---"prompt" (the keys are read while the handler waits).
---@return "mappings"|"prompt"
function M.mode()
  return compat.can_yield() and "mappings" or "prompt"
end

---The review on screen, or nil: { tab, bufs = { {original, proposed, path} }, hint }.
---@return table|nil
function M.current()
  return current
end

local function file_lines(fname)
  local bufnr = vim.fn.bufnr(fname)
  if bufnr ~= -1 and vim.api.nvim_buf_is_loaded(bufnr) then
    return vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), vim.bo[bufnr].filetype
  end
  if compat.uv.fs_stat(fname) then
    return vim.fn.readfile(fname), ""
  end
  return {}, ""
end

local function scratch(name, lines, ft)
  local b = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(b, 0, -1, false, lines)
  pcall(vim.api.nvim_buf_set_name, b, name)
  vim.bo[b].bufhidden = "wipe"
  vim.bo[b].buftype = "nofile"
  if ft and ft ~= "" then
    vim.bo[b].filetype = ft
  end
  return b
end

-- changes lists {uri, edits} of a workspace edit, in order.
local function changes(edit)
  local out = {}
  for _, dc in ipairs(edit.documentChanges or {}) do
    if dc.textDocument and dc.edits then
      table.insert(out, { uri = dc.textDocument.uri, edits = dc.edits })
    end
  end
  for uri, edits in pairs(edit.changes or {}) do
    table.insert(out, { uri = uri, edits = edits })
  end
  return out
end

local function open(edit, encoding)
  local view = { bufs = {} }
  for i, ch in ipairs(changes(edit)) do
    local fname = vim.uri_to_fname(ch.uri)
    local lines, ft = file_lines(fname)
    local rel = vim.fn.fnamemodify(fname, ":~:.")
    local orig = scratch(("agent-review://%d/current/%s"):format(i, rel), lines, ft)
    local prop = scratch(("agent-review://%d/proposed/%s"):format(i, rel), lines, ft)
    vim.lsp.util.apply_text_edits(ch.edits, prop, encoding)
    for _, b in ipairs({ orig, prop }) do
      vim.bo[b].buflisted = false
      vim.bo[b].modifiable = false
    end
    vim.cmd("tabnew")
    if not view.tab then
      view.tab = vim.api.nvim_get_current_tabpage()
    end
    local empty = vim.api.nvim_get_current_buf()
    vim.api.nvim_win_set_buf(0, orig)
    vim.cmd("diffthis")
    vim.cmd("rightbelow vsplit")
    vim.api.nvim_win_set_buf(0, prop)
    vim.cmd("diffthis")
    if vim.api.nvim_buf_is_valid(empty) and empty ~= orig then
      pcall(vim.api.nvim_buf_delete, empty, { force = true })
    end
    table.insert(view.bufs, { original = orig, proposed = prop, path = fname })
  end
  vim.api.nvim_set_current_tabpage(view.tab)
  return view
end

local function close(view)
  for _, pair in ipairs(view.bufs) do
    for _, b in ipairs({ pair.original, pair.proposed }) do
      if vim.api.nvim_buf_is_valid(b) then
        pcall(vim.api.nvim_buf_delete, b, { force = true })
      end
    end
  end
end

-- fit makes the current tab page's command line ('cmdheight' is kept per tab
-- page, so the review's own) tall enough to echo text without a hit-enter
-- prompt, up to half the screen.
local function fit(text)
  local over = vim.fn.strdisplaywidth(text) - vim.v.echospace
  local lines = 1 + math.max(0, math.ceil(over / vim.o.columns))
  vim.o.cmdheight = math.max(vim.o.cmdheight, math.min(lines, math.floor(vim.o.lines / 2)))
end

-- show_hint says in the echo area why the review asks and how to answer it.
local function show_hint(hint)
  vim.api.nvim_echo({ { hint, "WarningMsg" } }, false, {})
end

-- prompt waits for the user's answer while the diff is on screen, for Neovim
-- releases whose request handlers cannot yield: the accept and reject keys
-- answer (also a/y and r/n/q/Esc), and other keys move around the diff as
-- normal-mode commands (j, k, ]c, Ctrl-D, ...).
local function prompt(hint, keys)
  local accept = { [keys.accept] = true, a = true, y = true }
  local reject = { [keys.reject] = true, r = true, n = true, q = true, ["\27"] = true }
  local function is_prefix(p)
    for _, set in ipairs({ accept, reject }) do
      for k in pairs(set) do
        if #k > #p and k:sub(1, #p) == p then
          return true
        end
      end
    end
    return p:match("^%d+$") or p:match("^%d*[gz%[%]\23]$")
  end
  local pending = ""
  while true do
    vim.cmd("redraw")
    show_hint(hint)
    local ok, c = pcall(vim.fn.getcharstr)
    if not ok then
      return false -- interrupted (Ctrl-C)
    end
    pending = pending .. c
    if accept[pending] then
      return true
    elseif reject[pending] then
      return false
    elseif not is_prefix(pending) then
      pcall(vim.cmd, "normal! " .. vim.api.nvim_replace_termcodes(pending, true, false, true))
      pending = ""
    end
  end
end

---Accepts the review on screen.
function M.accept()
  if current then
    current.finish(true)
  end
end

---Rejects the review on screen.
function M.reject()
  if current then
    current.finish(false)
  end
end

---Shows the edit of a workspace/applyEdit request and returns its ApplyWorkspaceEditResult.
---@param params table ApplyWorkspaceEditParams: { label?, edit }
---@param encoding string the client's position encoding
---@param keys AgentLsp.ReviewKeys
---@return { applied: boolean, failureReason?: string }
function M.ask(params, encoding, keys)
  if current then
    return { applied = false, failureReason = "another agent edit is being reviewed" }
  end
  local view = open(params.edit, encoding)
  view.hint = M.hint(params, keys)
  fit(view.hint)
  local decision
  local co = M.mode() == "mappings" and coroutine.running() or nil
  local done = false
  view.finish = function(ok)
    if done then
      return
    end
    done = true
    decision = ok
    if co then
      vim.schedule(function()
        coroutine.resume(co)
      end)
    end
  end
  current = view
  if co then
    for _, pair in ipairs(view.bufs) do
      for _, b in ipairs({ pair.original, pair.proposed }) do
        vim.keymap.set("n", keys.accept, M.accept, { buffer = b, desc = "Accept the agent's edit" })
        vim.keymap.set("n", keys.reject, M.reject, { buffer = b, desc = "Reject the agent's edit" })
        vim.api.nvim_create_autocmd("BufWipeout", { buffer = b, once = true, callback = function() view.finish(false) end })
      end
    end
    show_hint(view.hint)
    coroutine.yield()
  else
    decision = prompt(view.hint, keys)
    done = true
  end
  current = nil
  close(view)
  if not decision then
    return { applied = false, failureReason = "rejected by the user in review" }
  end
  local ok, err = pcall(vim.lsp.util.apply_workspace_edit, params.edit, encoding)
  if not ok then
    return { applied = false, failureReason = tostring(err) }
  end
  return { applied = true }
end

return M
