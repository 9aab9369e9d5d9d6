-- Review: an edit whose change annotation needs confirmation is shown as a
-- diff in a new tab per file: the current text on the left, on the right the
-- proposed text, which is what accepting applies. The proposal is cut into
-- hunks (vim.diff), all taken at first: ]c and [c move between them, do takes
-- the hunk under the cursor (its proposed text), dp drops it (the current
-- text stays), ga accepts the right side as it is, gr rejects (review_keys).
-- Where Neovim runs server-request handlers in a coroutine (newer releases)
-- the diff stays interactive: the keys are buffer mappings (nowait), and the
-- right side can be edited too. On releases that answer synchronously (0.7)
-- the same keys are read while the diff is on screen, other keys move around
-- in it, and the right side changes only by taking and dropping hunks.
-- The hint (the edit, why the server asks, its place in the queue of edits
-- waiting, the keys) is in the windows' winbar where there is one (0.8+),
-- else in the echo area; the statusline component says a review waits.
-- What is applied is exactly the right side: the edit as sent when it is
-- unchanged, else the hunks between the current text and it. The server sees
-- the difference in the didChange and tells the model.
local compat = require("agent_lsp.compat")
local edit = require("agent_lsp.edit")
local hunks = require("agent_lsp.hunks")
local ui = require("agent_lsp.ui")

local M = {}

local ns = vim.api.nvim_create_namespace("agent_lsp_review")

---A hunk of the proposal, with its current lines and where it is in the
---proposed buffer.
---@class AgentLsp.ReviewHunk: AgentLsp.Hunk
---@field old string[] its current lines (from..to-1 of the current text)
---@field marks integer[] extmarks of its start and its end in the proposed buffer

---One file of a review.
---@class AgentLsp.ReviewFile
---@field uri string
---@field original integer scratch buffer: the current text
---@field proposed integer scratch buffer: the text accepting applies
---@field wins integer[] the windows showing them
---@field current string[] the current text's lines when the review opened
---@field proposal string[] the proposed text's lines
---@field hunks AgentLsp.ReviewHunk[]

---The review on screen.
---@class AgentLsp.Review
---@field tab integer the first file's tab page
---@field files AgentLsp.ReviewFile[]
---@field hint string
---@field echo boolean the hint goes to the echo area (no winbar)
---@field decision? boolean true accepted, false rejected; nil while open
---@field resume? fun() called once decided (the waiting handler goes on)

---@type AgentLsp.Review|nil
local current

-- confirmations lists the change annotations of a workspace edit that need confirmation.
local function confirmations(we)
  local out = {}
  if type(we) == "table" and type(we.changeAnnotations) == "table" then
    for _, a in pairs(we.changeAnnotations) do
      if type(a) == "table" and a.needsConfirmation then
        table.insert(out, a)
      end
    end
  end
  return out
end

---True when the workspace edit carries an annotation that needs confirmation.
---@param we table|nil a WorkspaceEdit
---@return boolean
function M.wants_review(we) return #confirmations(we) > 0 end

-- The server ends the description with the edit's place in the queue when
-- other edits wait for a confirmation: "... (1 of 3)".
local QUEUE = "%s*%((%d+ of %d+)%)$"

---The edit's place in the queue of edits waiting for confirmation, e.g.
---"1 of 3" (from its annotation's description); nil when none wait.
---@param params table ApplyWorkspaceEditParams: { label?, edit }
---@return string|nil
function M.queue(params)
  for _, a in ipairs(confirmations(params.edit)) do
    local q = type(a.description) == "string" and a.description:match(QUEUE)
    if q then
      return q
    end
  end
end

---The keys of a review, as the hint lists them.
---@param keys AgentLsp.ReviewKeys
---@return string
function M.keys_text(keys) return ("%s %s hunks, %s take, %s drop, %s accept, %s reject"):format(keys.next, keys.prev, keys.take, keys.drop, keys.accept, keys.reject) end

---The hint of a review: the edit's label, why it needs confirmation (the
---descriptions of its annotations that need it, e.g. "protected file:
---..."), its place in the queue when others wait, and the keys.
---@param params table ApplyWorkspaceEditParams: { label?, edit }
---@param keys AgentLsp.ReviewKeys
---@return string
function M.hint(params, keys)
  local why, seen = {}, {}
  for _, a in ipairs(confirmations(params.edit)) do
    local d = type(a.description) == "string" and a.description:gsub(QUEUE, "") or ""
    if d ~= "" and not seen[d] then
      seen[d] = true
      table.insert(why, d)
    end
  end
  table.sort(why)
  local parts = { params.label or "agent edit", unpack(why) }
  local queue = M.queue(params)
  if queue then
    table.insert(parts, queue)
  end
  table.insert(parts, M.keys_text(keys))
  return table.concat(parts, " — ")
end

---"mappings" when the handler can wait for the review's mappings, else
---"prompt" (the keys are read while the handler waits).
---@return "mappings"|"prompt"
function M.mode() return compat.can_yield() and "mappings" or "prompt" end

---The review on screen, or nil.
---@return AgentLsp.Review|nil
function M.current() return current end

local function lines_of(b) return vim.api.nvim_buf_get_lines(b, 0, -1, false) end

-- file_lines returns the lines of file fname (its buffer's, when loaded),
-- its filetype, and whether it exists.
local function file_lines(fname)
  local bufnr = vim.fn.bufnr(fname)
  if bufnr ~= -1 and vim.api.nvim_buf_is_loaded(bufnr) then
    return lines_of(bufnr), vim.bo[bufnr].filetype, true
  end
  if compat.uv.fs_stat(fname) then
    return vim.fn.readfile(fname), "", true
  end
  return {}, "", false
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
local function changes(we)
  local out = {}
  for _, dc in ipairs(we.documentChanges or {}) do
    if dc.textDocument and dc.edits then
      table.insert(out, { uri = dc.textDocument.uri, edits = dc.edits })
    end
  end
  for uri, edits in pairs(we.changes or {}) do
    table.insert(out, { uri = uri, edits = edits })
  end
  return out
end

-- cut cuts file f's proposal into hunks and marks where each is in the
-- proposed buffer (the marks follow it through takes, drops and edits).
local function cut(f)
  local out, shift = {}, 0
  for _, h in ipairs(hunks.between(f.current, f.proposal)) do
    local from = h.from + shift
    h.old = vim.list_slice(f.current, h.from + 1, h.to)
    h.marks = {
      vim.api.nvim_buf_set_extmark(f.proposed, ns, from, 0, { right_gravity = false }),
      vim.api.nvim_buf_set_extmark(f.proposed, ns, from + #h.lines, 0, { right_gravity = true }),
    }
    shift = shift + #h.lines - (h.to - h.from)
    table.insert(out, h)
  end
  return out
end

local function open(we, encoding, editable)
  local view = { files = {} }
  for i, ch in ipairs(changes(we)) do
    local fname = vim.uri_to_fname(ch.uri)
    local lines, ft, exists = file_lines(fname)
    local rel = vim.fn.fnamemodify(fname, ":~:.")
    local orig = scratch(("agent-review://%d/current/%s"):format(i, rel), lines, ft)
    local prop = scratch(("agent-review://%d/proposed/%s"):format(i, rel), lines, ft)
    vim.lsp.util.apply_text_edits(ch.edits, prop, encoding)
    if not exists then -- a file the edit creates
      edit.trim(prop)
    end
    local f = { uri = ch.uri, original = orig, proposed = prop, wins = {}, current = lines_of(orig), proposal = lines_of(prop) }
    f.hunks = cut(f)
    for _, b in ipairs({ orig, prop }) do
      vim.bo[b].buflisted = false
      vim.bo[b].modifiable = b == prop and editable
    end
    vim.cmd("tabnew")
    if not view.tab then
      view.tab = vim.api.nvim_get_current_tabpage()
    end
    local empty = vim.api.nvim_get_current_buf()
    for _, b in ipairs({ orig, prop }) do
      if b == prop then
        vim.cmd("rightbelow vsplit")
      end
      vim.api.nvim_win_set_buf(0, b)
      vim.cmd("diffthis")
      table.insert(f.wins, vim.api.nvim_get_current_win())
    end
    if vim.api.nvim_buf_is_valid(empty) and empty ~= orig then
      pcall(vim.api.nvim_buf_delete, empty, { force = true })
    end
    table.insert(view.files, f)
  end
  vim.api.nvim_set_current_tabpage(view.tab)
  return view
end

local function close(view)
  for _, f in ipairs(view.files) do
    for _, b in ipairs({ f.original, f.proposed }) do
      if vim.api.nvim_buf_is_valid(b) then
        pcall(vim.api.nvim_buf_delete, b, { force = true })
      end
    end
  end
end

-- rows gives the lines (0-based, the end excluded) of hunk h of file f in
-- buffer b: where it is in the current text, or where its marks are in the
-- proposed buffer.
local function rows(f, h, b)
  if b == f.original then
    return h.from, h.to
  end
  local s = vim.api.nvim_buf_get_extmark_by_id(f.proposed, ns, h.marks[1], {})[1]
  local e = vim.api.nvim_buf_get_extmark_by_id(f.proposed, ns, h.marks[2], {})[1]
  return s, e
end

-- at returns the file of the review the current window shows, and the hunk
-- under the cursor (one without lines on this side is under the lines next
-- to it), or nil.
local function at(view)
  local b = vim.api.nvim_get_current_buf()
  local row = vim.api.nvim_win_get_cursor(0)[1] - 1
  for _, f in ipairs(view.files) do
    if b == f.original or b == f.proposed then
      for _, h in ipairs(f.hunks) do
        local s, e = rows(f, h, b)
        if (s <= row and row < e) or (s == e and (row == s or row == s - 1)) then
          return f, h
        end
      end
      return f, nil
    end
  end
end

-- put makes the lines of hunk h in f's proposed buffer lines.
local function put(f, h, lines)
  local s, e = rows(f, h, f.proposed)
  local modifiable = vim.bo[f.proposed].modifiable
  vim.bo[f.proposed].modifiable = true
  vim.api.nvim_buf_set_lines(f.proposed, s, e, false, lines)
  vim.bo[f.proposed].modifiable = modifiable
  pcall(vim.cmd, "diffupdate")
end

-- jump moves the cursor to the start of the next (dir 1) or previous (-1)
-- hunk of the file the window shows.
local function jump(view, dir)
  local f = at(view)
  if not f then
    return
  end
  local b = vim.api.nvim_get_current_buf()
  local row = vim.api.nvim_win_get_cursor(0)[1] - 1
  local first, last = 1, #f.hunks
  if dir < 0 then
    first, last = last, first
  end
  for i = first, last, dir do
    local s = rows(f, f.hunks[i], b)
    if (s - row) * dir > 0 then
      vim.api.nvim_win_set_cursor(0, { math.min(s, vim.api.nvim_buf_line_count(b) - 1) + 1, 0 })
      return
    end
  end
end

local function decide(view, accepted)
  if view.decision == nil then
    view.decision = accepted
    if view.resume then
      view.resume()
    end
  end
end

-- actions: what the keys of a review do, by the name of their review_keys field.
---@type table<string, { desc: string, run: fun(view: AgentLsp.Review) }>
local actions = {
  accept = { desc = "Accept the agent's edit as the proposed side shows it", run = function(view) decide(view, true) end },
  reject = { desc = "Reject the agent's edit", run = function(view) decide(view, false) end },
  take = {
    desc = "Take the hunk under the cursor (its proposed text)",
    run = function(view)
      local f, h = at(view)
      if h then
        put(f, h, h.lines)
      end
    end,
  },
  drop = {
    desc = "Drop the hunk under the cursor (its current text stays)",
    run = function(view)
      local f, h = at(view)
      if h then
        put(f, h, h.old)
      end
    end,
  },
  next = { desc = "Next hunk of the agent's edit", run = function(view) jump(view, 1) end },
  prev = { desc = "Previous hunk of the agent's edit", run = function(view) jump(view, -1) end },
}

-- fit makes the current tab page's command line ('cmdheight' is kept per tab
-- page, so the review's own) tall enough to echo text without a hit-enter
-- prompt, up to half the screen.
local function fit(text)
  local over = vim.fn.strdisplaywidth(text) - vim.v.echospace
  local lines = 1 + math.max(0, math.ceil(over / vim.o.columns))
  vim.o.cmdheight = math.max(vim.o.cmdheight, math.min(lines, math.floor(vim.o.lines / 2)))
end

local function echo(view)
  if view.echo then
    vim.api.nvim_echo({ { view.hint, "WarningMsg" } }, false, {})
  end
end

-- show_hint puts the hint in the winbars of the review's windows, or where
-- there are none (0.7) in the echo area.
local function show_hint(view)
  view.echo = false
  for _, f in ipairs(view.files) do
    for _, w in ipairs(f.wins) do
      view.echo = not compat.winbar(w, view.hint) or view.echo
    end
  end
  if view.echo then
    fit(view.hint)
  end
  echo(view)
end

-- The keys the prompt also reads: a/y accept, r/n/q/Esc reject.
local more_keys = { a = "accept", y = "accept", r = "reject", n = "reject", q = "reject", ["\27"] = "reject" }

-- prompt reads the keys while the diff is on screen until the review is
-- decided, for Neovim releases whose request handlers cannot yield: the
-- review's keys do their action (all at once: nowait), other keys move
-- around the diff as normal-mode commands (j, k, Ctrl-D, ...).
local function prompt(view, keys)
  local by_key = vim.deepcopy(more_keys)
  for name in pairs(actions) do
    by_key[keys[name]] = name
  end
  local function is_prefix(p)
    for k in pairs(by_key) do
      if #k > #p and k:sub(1, #p) == p then
        return true
      end
    end
    return p:match("^%d+$") or p:match("^%d*[gz%[%]\23]$")
  end
  local pending = ""
  while view.decision == nil do
    vim.cmd("redraw")
    echo(view)
    local ok, c = pcall(vim.fn.getcharstr)
    if not ok then
      decide(view, false) -- interrupted (Ctrl-C)
      return
    end
    pending = pending .. c
    if by_key[pending] then
      actions[by_key[pending]].run(view)
      pending = ""
    elseif not is_prefix(pending) then
      pcall(vim.cmd, "normal! " .. vim.api.nvim_replace_termcodes(pending, true, false, true))
      pending = ""
    end
  end
end

-- wait maps the review's keys in its buffers and yields until they decide
-- (closing the tab rejects), for the releases whose handlers run in a
-- coroutine.
local function wait(view, keys)
  local co = coroutine.running()
  view.resume = function()
    vim.schedule(function() coroutine.resume(co) end)
  end
  for _, f in ipairs(view.files) do
    for _, b in ipairs({ f.original, f.proposed }) do
      for name, action in pairs(actions) do
        vim.keymap.set("n", keys[name], function() action.run(view) end, { buffer = b, nowait = true, desc = action.desc })
      end
      vim.api.nvim_create_autocmd("BufWipeout", { buffer = b, once = true, callback = function() decide(view, false) end })
    end
  end
  coroutine.yield()
end

-- operations are the resource operations (CreateFile) of a workspace edit.
local function operations(we)
  return vim.tbl_filter(function(dc) return dc.kind ~= nil end, we.documentChanges or {})
end

-- apply applies what the review accepted: finals, the proposed side of each
-- file as it was left. Unless all of it was dropped, and once the version
-- check passes again (the user may have typed meanwhile) and the loaded
-- buffers of the files still hold the text the review showed: the edit as
-- sent when the proposal is unchanged, else its resource operations
-- (CreateFile) and the hunks between the current text and the final one.
local function apply(params, files, finals, encoding, client_id)
  local as_proposed, unchanged = true, true
  for i, f in ipairs(files) do
    as_proposed = as_proposed and vim.deep_equal(finals[i], f.proposal)
    unchanged = unchanged and vim.deep_equal(finals[i], f.current)
  end
  if unchanged then
    return { applied = false, failureReason = "every hunk was dropped in the review" }
  end
  local stale = edit.stale(params.edit)
  if stale then
    return { applied = false, failureReason = stale }
  end
  for _, f in ipairs(files) do
    local b = vim.uri_to_bufnr(f.uri)
    if vim.api.nvim_buf_is_loaded(b) and not vim.deep_equal(lines_of(b), f.current) then
      return { applied = false, failureReason = edit.name(f.uri) .. " changed during the review" }
    end
  end
  return edit.apply(params.edit, client_id, function()
    if as_proposed then
      return edit.as_sent(params.edit, encoding)
    end
    vim.lsp.util.apply_workspace_edit({ documentChanges = operations(params.edit) }, encoding)
    for i, f in ipairs(files) do
      local b = vim.uri_to_bufnr(f.uri)
      vim.fn.bufload(b)
      hunks.apply(b, hunks.between(f.current, finals[i]))
      vim.bo[b].buflisted = true
    end
    return { applied = true }
  end)
end

---Shows the edit of a workspace/applyEdit request for review and returns its
---ApplyWorkspaceEditResult: refused when rejected, else what the user chose
---applied (see apply).
---@param params table ApplyWorkspaceEditParams: { label?, edit }
---@param encoding string the client's position encoding
---@param keys AgentLsp.ReviewKeys
---@param client_id integer the client, which files the edit loads are attached to
---@return { applied: boolean, failureReason?: string }
function M.ask(params, encoding, keys, client_id)
  if current then
    return { applied = false, failureReason = "another agent edit is being reviewed" }
  end
  local mappings = M.mode() == "mappings"
  local view = open(params.edit, encoding, mappings)
  view.hint = M.hint(params, keys)
  current = view
  ui.set_reviewing(true)
  show_hint(view)
  if mappings then
    wait(view, keys)
  else
    prompt(view, keys)
  end
  local finals = vim.tbl_map(function(f) return lines_of(f.proposed) end, view.files)
  current = nil
  ui.set_reviewing(false)
  close(view)
  if not view.decision then
    return { applied = false, failureReason = "rejected by the user in review" }
  end
  return apply(params, view.files, finals, encoding, client_id)
end

return M
