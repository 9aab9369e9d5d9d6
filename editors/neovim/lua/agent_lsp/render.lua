-- Text of what the server answers: M.results renders each command's result
-- (docs/protocol.md), by command name; the pieces it is made of serve the
-- pickers, notifications and the transcript buffer. events.lua renders
-- agent/event with the helpers here. tests/protocol.lua renders every fixture
-- of testdata/protocol and checks that each value in it is shown, so the
-- renderers show every field, with the documented exceptions: M.words (a
-- word instead of the value) and M.time (a timestamp's shorter form).
local M = {}

---A value as text: "?" for a missing one (nil, or vim.NIL for a JSON null),
---so a field the server renamed shows as "?" instead of raising.
---@param v any
---@return string
function M.str(v)
  if v == nil or v == vim.NIL then
    return "?"
  end
  return tostring(v)
end

---Words shown instead of a value, by field name: every boolean of the
---contract (true and false) and the message roles (as headings).
M.words = {
  ok = { [true] = "ok", [false] = "failed" },
  applied = { [true] = "applied", [false] = "refused" },
  cancelled = { [true] = "run cancelled", [false] = "no run was going" },
  deleted = { [true] = "deleted", [false] = "was already gone" },
  network = { [true] = "network allowed", [false] = "no network" },
  role = { human = "You", ai = "Agent", system = "System", tool = "Tool result" },
}

---The word for field's value (M.words), else the value as text.
---@param field string
---@param value any
---@return string
function M.word(field, value)
  local words = M.words[field]
  return words and words[value] or M.str(value)
end

---An RFC 3339 timestamp to the second, for lists: "2026-01-01T10:20:30.5Z"
---becomes "2026-01-01 10:20:30". Other text passes unchanged.
---@param ts any
---@return string
function M.time(ts)
  local s = M.str(ts)
  local date, clock = s:match("^(%d%d%d%d%-%d%d%-%d%d)T(%d%d:%d%d:%d%d)")
  return date and (date .. " " .. clock) or s
end

---Text on one line: its lines joined by spaces.
---@param text any
---@return string
function M.oneline(text)
  return (M.str(text):gsub("%s*\n%s*", " "))
end

---The lines of text ("" gives one empty line).
---@param text any
---@return string[]
function M.split(text)
  local lines = {}
  for line in (M.str(text) .. "\n"):gmatch("([^\n]*)\n") do
    table.insert(lines, line)
  end
  return lines
end

---head followed by text: text's first line on head's line, the others
---indented below it.
---@param head string
---@param text any
---@return string[]
function M.block(head, text)
  local lines = M.split(text)
  lines[1] = head .. lines[1]
  for i = 2, #lines do
    lines[i] = "    " .. lines[i]
  end
  return lines
end

-- count: "1 edit", "2 edits".
local function count(n, what)
  return ("%s %s%s"):format(M.str(n), what, n == 1 and "" or "s")
end

-- parts joins the given values that are present with " · ".
local function parts(...)
  local out = {}
  for i = 1, select("#", ...) do
    local v = select(i, ...)
    if v ~= nil and v ~= vim.NIL then
      table.insert(out, tostring(v))
    end
  end
  return table.concat(out, " · ")
end

---A message's heading: its role's word, name and id.
---@param m AgentLsp.Message
---@return string
function M.message_heading(m)
  return parts(M.word("role", m.role), m.name, M.str(m.id))
end

---A tool call of an AI message: "calls `read_file` {"path":"a.go"} (call_1)".
---@param tc AgentLsp.ToolCall
---@return string
function M.tool_call(tc)
  return ("calls `%s` %s (%s)"):format(M.str(tc.name), M.oneline(tc.args), M.str(tc.id))
end

-- Sessions ------------------------------------------------------------------

---One line describing a session, for vim.ui.select.
---@param s AgentLsp.SessionInfo
---@return string
function M.session_item(s)
  return ("%-9s %-10s %-19s %s  (%s · %s · created %s)"):format(
    M.str(s.status), M.str(s.project), M.time(s.updated), M.oneline(s.title), M.str(s.session), count(s.messages, "message"), M.time(s.created))
end

local function fence(text)
  local lines = M.split(text)
  table.insert(lines, 1, "```")
  table.insert(lines, "```")
  return lines
end

---The Markdown lines of an agent.session result: title, session, then each
---message under a heading (a tool result under the name of its call).
---@param s AgentLsp.SessionDetail
---@return string[]
function M.transcript(s)
  local out = { "# " .. M.oneline(s.title), "", parts("session " .. M.str(s.session), "project " .. M.str(s.project), "status " .. M.str(s.status)) }
  local calls = {}
  for _, m in ipairs(s.messages or {}) do
    table.insert(out, "")
    if m.role == "tool" then
      table.insert(out, "### " .. parts(M.word("role", m.role), calls[m.toolCallId] or "?", M.str(m.toolCallId), m.name, M.str(m.id)))
      vim.list_extend(out, fence(m.content))
    else
      table.insert(out, "## " .. M.message_heading(m))
      if m.content ~= "" then
        vim.list_extend(out, M.split(m.content))
      end
      for _, tc in ipairs(m.toolCalls or {}) do
        calls[tc.id] = tc.name
        table.insert(out, "- " .. M.tool_call(tc))
      end
    end
  end
  return out
end

---Opens a read-only Markdown scratch buffer with a session's transcript.
---@param s AgentLsp.SessionDetail
---@return integer bufnr
function M.open_transcript(s)
  local name = "agent-session://" .. s.session
  local existing = vim.fn.bufnr(name)
  if existing ~= -1 then
    pcall(vim.api.nvim_buf_delete, existing, { force = true })
  end
  vim.cmd("botright new")
  local b = vim.api.nvim_get_current_buf()
  vim.bo[b].buftype = "nofile"
  vim.bo[b].bufhidden = "wipe"
  vim.bo[b].swapfile = false
  pcall(vim.api.nvim_buf_set_name, b, name)
  vim.api.nvim_buf_set_lines(b, 0, -1, false, M.transcript(s))
  vim.bo[b].modifiable = false
  vim.bo[b].filetype = "markdown"
  return b
end

-- Projects ------------------------------------------------------------------

-- stack describes a techStack in brackets: the language and its version (the
-- language alone only when it is not the project's type, which the line shows
-- already), the package manager, the build and test commands, and the types
-- of further manifests found beside.
local function stack(t, project_type)
  if type(t) ~= "table" then
    return ""
  end
  local tools, commands, also = {}, {}, {}
  if t.languageVersion then
    table.insert(tools, M.str(t.language) .. " " .. t.languageVersion)
  elseif t.language ~= project_type then
    table.insert(tools, M.str(t.language))
  end
  if t.packageManager then
    table.insert(tools, t.packageManager)
  end
  if t.buildCommand then
    table.insert(commands, "build: " .. t.buildCommand)
  end
  if t.testCommand then
    table.insert(commands, "test: " .. t.testCommand)
  end
  if t.others and #t.others > 0 then
    table.insert(also, "also " .. table.concat(t.others, ", "))
  end
  local groups = {}
  for _, items in ipairs({ tools, commands, also }) do
    if #items > 0 then
      table.insert(groups, table.concat(items, ", "))
    end
  end
  return #groups > 0 and (" [" .. table.concat(groups, "; ") .. "]") or ""
end

---One line describing a project, with its manifests after the path, e.g.
---"sample (go) [go 1.22, go modules; build: go build ./..., test: go test ./...] on main — /src/sample (go.mod)".
---@param p AgentLsp.ProjectInfo
---@return string
function M.project_line(p)
  local branch = p.gitBranch and p.gitBranch ~= "" and (" on " .. p.gitBranch) or ""
  local manifests = p.techStack and p.techStack.manifests or {}
  local found = #manifests > 0 and (" (" .. table.concat(manifests, ", ") .. ")") or ""
  return ("%s (%s)%s%s — %s%s"):format(M.str(p.name), M.str(p.type), stack(p.techStack, p.type), branch, M.str(p.path), found)
end

-- outcome describes a last build or test: "failed (go test ./..., 2026-01-01 10:20:30): 2 tests failed".
local function outcome(o)
  o = type(o) == "table" and o or {}
  local detail = {}
  if o.command then
    table.insert(detail, o.command)
  end
  if o.at then
    table.insert(detail, M.time(o.at))
  end
  local details = #detail > 0 and (" (" .. table.concat(detail, ", ") .. ")") or ""
  return M.str(o.status) .. details .. (o.summary and (": " .. M.oneline(o.summary)) or "")
end

---The lines under a project's line: its last build and test, the open files
---and pending changes, and each recent error.
---@param c AgentLsp.ProjectContext
---@return string[]
function M.project_context(c)
  c = type(c) == "table" and c or {}
  local lines = { "    last build: " .. outcome(c.lastBuild) .. " · last test: " .. outcome(c.lastTest) }
  local files = {}
  if c.openFiles and #c.openFiles > 0 then
    table.insert(files, "open: " .. table.concat(c.openFiles, ", "))
  end
  if c.pendingChanges and #c.pendingChanges > 0 then
    table.insert(files, "unsaved edits: " .. table.concat(c.pendingChanges, ", "))
  end
  if #files > 0 then
    table.insert(lines, "    " .. table.concat(files, " · "))
  end
  for _, e in ipairs(c.recentErrors or {}) do
    table.insert(lines, "    error: " .. M.oneline(e))
  end
  return lines
end

---The lines of a project's sandbox report: its mode, Landlock ABI and
---network, the directories commands may write, then each right enforced and
---each one not.
---@param s AgentLsp.SandboxReport
---@return string[]
function M.project_sandbox(s)
  s = type(s) == "table" and s or {}
  local lines = { ("    sandbox: %s · Landlock ABI %s · %s"):format(M.str(s.mode), M.str(s.landlockABI), M.word("network", s.network)) }
  if s.writable and #s.writable > 0 then
    table.insert(lines, "    writable: " .. table.concat(s.writable, ", "))
  end
  for _, r in ipairs(s.enforced or {}) do
    table.insert(lines, "    enforced: " .. r)
  end
  for _, r in ipairs(s.notEnforced or {}) do
    table.insert(lines, "    not enforced: " .. r)
  end
  return lines
end

-- Runs ----------------------------------------------------------------------

-- counts: "done · 1 edit · 9 steps · 105 tokens".
local function counts(r)
  local usage = type(r.usage) == "table" and r.usage or {}
  return parts(M.str(r.status), count(r.edits, "edit"), count(r.steps, "step"), count(usage.totalTokens, "token"))
end

---The summary of a run's result for a notification ("done · 1 edit · 3 steps
---· 105 tokens — <the error, else the reply's first line>"), and the whole
---reply without trailing space.
---@param result AgentLsp.RunResult
---@return string summary
---@return string reply
function M.run_summary(result)
  local reply = (result.reply or ""):gsub("%s+$", "")
  local after = result.error and M.oneline(result.error) or reply:match("^[^\n]*")
  return counts(result) .. (after ~= "" and (" — " .. after) or ""), reply
end

---A run's result in full, for the event log: the counts with the token
---split, the error, then the reply.
---@param r AgentLsp.RunResult
---@return string[]
function M.run_result(r)
  local usage = type(r.usage) == "table" and r.usage or {}
  local lines = { ("%s result: %s (%s prompt + %s completion)"):format(M.str(r.session), counts(r), M.str(usage.promptTokens), M.str(usage.completionTokens)) }
  if r.error then
    vim.list_extend(lines, M.block("    error: ", r.error))
  end
  if r.reply and r.reply ~= "" then
    vim.list_extend(lines, M.block("    ", r.reply))
  end
  return lines
end

-- Results by command ----------------------------------------------------------

---The renderer of each command's result, by command name: the lines that
---show result, answering a request made with args. Its keys are the
---commands the plugin knows, which tests/protocol.lua checks against the
---fixtures' commands.
---@type table<string, fun(result: any, args: table): string[]>
M.results = {
  ["agent.run"] = M.run_result,
  ["agent.resume"] = M.run_result,
  ["agent.cancel"] = function(r, args)
    return { ("session %s: %s"):format(M.str(args.session), M.word("cancelled", r.cancelled)) }
  end,
  ["agent.sessions"] = function(list)
    return #list > 0 and vim.tbl_map(M.session_item, list) or { "no sessions" }
  end,
  ["agent.session"] = M.transcript,
  ["agent.deleteSession"] = function(r, args)
    return { ("session %s %s"):format(M.str(args.session), M.word("deleted", r.deleted)) }
  end,
  ["agent.projects"] = function(list)
    local lines = {}
    for _, p in ipairs(list) do
      table.insert(lines, M.project_line(p))
      vim.list_extend(lines, M.project_context(p.context))
      vim.list_extend(lines, M.project_sandbox(p.sandbox))
    end
    return #lines > 0 and lines or { "no projects" }
  end,
  ["agent.switchProject"] = function(r)
    return { ("session %s now works on project %s"):format(M.str(r.session), M.str(r.project)) }
  end,
}

return M
