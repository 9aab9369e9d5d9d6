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
---contract (true and false), the message roles (as headings), the
---reasons of a compaction and an MCP server's tool count before its first
---listing (-1).
M.words = {
  ok = { [true] = "ok", [false] = "failed" },
  keySet = { [true] = "set", [false] = "not set" },
  needsKey = { [true] = "runs are refused until one is set", [false] = "runs can start" },
  applied = { [true] = "applied", [false] = "refused" },
  cancelled = { [true] = "run cancelled", [false] = "no run was going" },
  deleted = { [true] = "deleted", [false] = "was already gone" },
  stopped = { [true] = "stopped", [false] = "not stopped" },
  summarized = { [true] = "summarized", [false] = "dropped" },
  network = { [true] = "network allowed", [false] = "no network" },
  role = { human = "You", ai = "Agent", system = "System", tool = "Tool result" },
  reason = { budget = "to fit the context", overflow = "after the model's context overflowed" },
  tools = { [-1] = "tools not listed yet" },
  notStored = { [true] = "NOT stored", [false] = "stored" },
  settled = { [true] = "settled", [false] = "not settled yet" },
  restorable = { [true] = "can be restored", [false] = "not restorable" },
  conversation = { [true] = "the prompt and later left the conversation (kept as a branch)", [false] = "the conversation did not change" },
  kept = { [true] = "kept yours", [false] = "restored over yours" },
  undone = { [true] = "undid the rewind", [false] = "rewound" },
  undo = { [true] = "take the newest rewind back", [false] = "rewind to a checkpoint" },
  exists = { [true] = "as it was", [false] = "did not exist then" },
  retry = { [true] = "retry the last prompt", [false] = "a new prompt" },
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
function M.oneline(text) return (M.str(text):gsub("%s*\n%s*", " ")) end

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

---n and what, plural unless n is 1: "1 edit", "2 edits".
---@param n any
---@param what string
---@return string
function M.count(n, what) return ("%s %s%s"):format(M.str(n), what, n == 1 and "" or "s") end
local count = M.count

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
function M.message_heading(m) return parts(M.word("role", m.role), m.name, M.str(m.id)) end

---A tool call of an AI message: "calls `read_file` {"path":"a.go"} (call_1)".
---@param tc AgentLsp.ToolCall
---@return string
function M.tool_call(tc) return ("calls `%s` %s (%s)"):format(M.str(tc.name), M.oneline(tc.args), M.str(tc.id)) end

-- Sessions ------------------------------------------------------------------

---One line describing a session, for vim.ui.select.
---@param s AgentLsp.SessionInfo
---@return string
function M.session_item(s)
  return ("%-11s %-10s %-19s %s  (%s · %s · created %s%s%s%s%s)"):format(
    M.str(s.status),
    M.str(s.project),
    M.time(s.updated),
    M.oneline(s.title),
    M.str(s.session),
    count(s.messages, "message"),
    M.time(s.created),
    s.model and (" · model " .. s.model) or "",
    s.edits and (" · " .. s.edits .. " mode") or "",
    s.root and (" · " .. s.root) or "",
    s.notStored == true and (" · " .. M.word("notStored", true)) or ""
  )
end

local function fence(text)
  local lines = M.split(text)
  table.insert(lines, 1, "```")
  table.insert(lines, "```")
  return lines
end

-- status_text is a session's or subagent's status; "" (a subagent that
-- never checkpointed) as words.
local function status_text(status) return status == "" and "not started" or M.str(status) end

---The line of a subagent in a transcript's list: "- done · <task> (subagent-1a2b)".
---@param sub AgentLsp.SubagentInfo
---@return string
function M.subagent_line(sub) return ("- %s · %s (%s)"):format(status_text(sub.status), M.oneline(sub.task), M.str(sub.contextId)) end

---The Markdown lines of an agent.session result: title, session (and the
---subagent's context), the subagents it started, then each message under a
---heading (a tool result under the name of its call). The second result maps
---the line numbers (1-based) of the subagents' lines to their contexts.
---@param s AgentLsp.SessionDetail
---@return string[] lines
---@return table<integer, string> contexts line -> contextId
function M.transcript(s)
  local context = s.context and ("context " .. M.str(s.context)) or nil
  local out = { "# " .. M.oneline(s.title), "", parts("session " .. M.str(s.session), context, "project " .. M.str(s.project), "status " .. status_text(s.status)) }
  local contexts = {}
  if type(s.subagents) == "table" and #s.subagents > 0 then
    vim.list_extend(out, { "", "## Subagents", "", "<CR> on a subagent opens its transcript (:AgentSession {session} {context})." })
    for _, sub in ipairs(s.subagents) do
      table.insert(out, M.subagent_line(sub))
      contexts[#out] = sub.contextId
    end
  end
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
  return out, contexts
end

---The name of a transcript's buffer: agent-session://<session>, and
---/<context> for a subagent's.
---@param session string
---@param context? string
---@return string
function M.transcript_name(session, context) return "agent-session://" .. session .. (context and context ~= "" and ("/" .. context) or "") end

---Opens a read-only Markdown scratch buffer with a session's transcript. With
---open_context, <CR> on a subagent's line calls it with the session and the
---subagent's context (elsewhere <CR> moves as usual).
---@param s AgentLsp.SessionDetail
---@param open_context? fun(session: string, context: string)
---@return integer bufnr
function M.open_transcript(s, open_context)
  local name = M.transcript_name(s.session, s.context)
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
  local lines, contexts = M.transcript(s)
  vim.api.nvim_buf_set_lines(b, 0, -1, false, lines)
  vim.bo[b].modifiable = false
  vim.bo[b].filetype = "markdown"
  if open_context and next(contexts) then
    vim.api.nvim_buf_set_keymap(b, "n", "<CR>", "", {
      noremap = true,
      nowait = true,
      desc = "Open the transcript of the subagent on this line",
      callback = function()
        local context = contexts[vim.api.nvim_win_get_cursor(0)[1]]
        if context then
          open_context(s.session, context)
        else
          vim.cmd("normal! " .. vim.v.count1 .. "+")
        end
      end,
    })
  end
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
  local d = c.diagnostics
  if type(d) == "table" then
    table.insert(lines, ("    diagnostics (%s, %s): %s errors, %s warnings in %s files"):format(M.str(d.server), M.time(d.at), M.str(d.errors), M.str(d.warnings), M.str(d.files)))
    for _, e in ipairs(d.top or {}) do
      table.insert(lines, "      " .. M.oneline(e))
    end
  end
  return lines
end

---The line of what answers a project's language questions: the editor's
---language servers, a server agent-lsp starts, or none (and why).
---@param l AgentLsp.ProjectLanguage|nil
---@return string[]
function M.project_language(l)
  if type(l) ~= "table" then
    return {}
  end
  if l.by == "editor" then
    return { "    language: answered by the editor (Neovim's language servers)" }
  end
  local fields = { "    language: " .. M.str(l.by) }
  if l.server then
    table.insert(fields, ("%s (%s), %s"):format(M.str(l.server), M.str(l.command), M.str(l.state)))
  end
  if l.note then
    table.insert(fields, M.oneline(l.note))
  end
  return { table.concat(fields, " · ") }
end

---The lines of a project's sandbox report: its mode, Landlock ABI and
---network, the directories commands may write, then each right enforced and
---each one not; nothing when the server sent none.
---@param s AgentLsp.SandboxReport
---@return string[]
function M.project_sandbox(s)
  if type(s) ~= "table" then
    return {}
  end
  local head = ("    sandbox: %s · Landlock ABI %s · %s"):format(M.str(s.mode), M.str(s.landlockABI), M.word("network", s.network))
  if s.isolation then
    head = head .. " · isolation " .. M.str(s.isolation)
  end
  if s.processes then
    head = head .. " · processes bounded by " .. M.str(s.processes)
  end
  local lines = { head }
  if s.writable and #s.writable > 0 then
    table.insert(lines, "    writable: " .. table.concat(s.writable, ", "))
  end
  for _, r in ipairs(s.enforced or {}) do
    table.insert(lines, "    enforced: " .. M.oneline(r))
  end
  for _, r in ipairs(s.notEnforced or {}) do
    table.insert(lines, "    not enforced: " .. M.oneline(r))
  end
  return lines
end

-- Runs ----------------------------------------------------------------------

---A cost in USD: "$0.00332" (nil when there is none: no price for the model).
---@param cost any
---@return string|nil
function M.cost(cost)
  if type(cost) ~= "number" then
    return nil
  end
  local s = tostring(cost)
  if s:find("e", 1, true) then
    s = ("%.8f"):format(cost):gsub("0+$", "")
  end
  return "$" .. s
end

---What a run's budget leaves: "8000 of 50000 tokens left · $0.12 of $0.5
---left"; nil without limits.
---@param b? AgentLsp.Budget
---@return string|nil
function M.budget(b)
  if type(b) ~= "table" then
    return nil
  end
  local out = {}
  if type(b.maxTokens) == "number" and b.maxTokens > 0 then
    table.insert(out, ("%d of %d tokens left"):format(math.max(b.maxTokens - (b.tokens or 0), 0), b.maxTokens))
  end
  if type(b.maxCost) == "number" and b.maxCost > 0 then
    table.insert(out, ("%s of %s left"):format(M.cost(math.max(b.maxCost - (b.cost or 0), 0)), M.cost(b.maxCost)))
  end
  return #out > 0 and table.concat(out, " · ") or nil
end

-- counts: "done · 1 edit · 9 steps · 105 tokens · $0.0031".
local function counts(r)
  local usage = type(r.usage) == "table" and r.usage or {}
  local status = M.str(r.status) .. (type(r.limit) == "string" and (" (" .. r.limit .. ")") or "")
  return parts(status, count(r.edits, "edit"), count(r.steps, "step"), count(usage.totalTokens, "token"), M.cost(usage.cost))
end
M.counts = counts

---What a queued result says: "queued (position 2): <the prompt>".
---@param r AgentLsp.RunResult
---@param prompt? string the prompt that was queued
---@return string
function M.queued_line(r, prompt) return ("queued (position %s)"):format(M.str(r.position)) .. (prompt and (": " .. M.oneline(prompt)) or "") end

---The lines that show the prompts a cancelled run never read, one
---"not sent: <prompt>" each (a prompt's further lines indented below it).
---@param queued? string[]
---@param indent? string before each line
---@return string[]
function M.unsent_lines(queued, indent)
  indent = indent or ""
  local lines = {}
  for _, p in ipairs(type(queued) == "table" and queued or {}) do
    for i, line in ipairs(M.split(p)) do
      table.insert(lines, indent .. (i == 1 and "not sent: " or "    ") .. line)
    end
  end
  return lines
end

---The summary of a run's result for a notification ("done · 1 edit · 3 steps
---· 105 tokens — <the error, else the reply's first line>", then a "not
---sent: <prompt>" line for each queued prompt the run never read), and the
---whole reply without trailing space. A queued result is its queued_line.
---@param result AgentLsp.RunResult
---@param prompt? string the prompt of the request
---@return string summary
---@return string reply
function M.run_summary(result, prompt)
  local reply = (result.reply or ""):gsub("%s+$", "")
  if result.status == "queued" then
    return M.queued_line(result, prompt), reply
  end
  local after = result.error and M.oneline(result.error) or reply:match("^[^\n]*")
  local lines = { counts(result) .. (after ~= "" and (" — " .. after) or "") }
  for _, p in ipairs(type(result.queued) == "table" and result.queued or {}) do
    table.insert(lines, "not sent: " .. M.oneline(p))
  end
  return table.concat(lines, "\n"), reply
end

---A run's result in full, for the event log: the counts with the token
---split, the error, the reply, then for a queued result what was queued, for
---a cancelled one the prompts it never read (args: the request's, whose
---prompt a queued line shows).
---@param r AgentLsp.RunResult
---@param args? AgentLsp.RunArgs|AgentLsp.ResumeArgs
---@return string[]
function M.run_result(r, args)
  local usage = type(r.usage) == "table" and r.usage or {}
  local lines = { ("%s result: %s (%s prompt + %s completion)"):format(M.str(r.session), counts(r), M.str(usage.promptTokens), M.str(usage.completionTokens)) }
  if r.position ~= nil or r.status == "queued" then
    table.insert(lines, "    " .. M.queued_line(r, type(args) == "table" and args.prompt or nil))
  end
  if r.error then
    vim.list_extend(lines, M.block("    error: ", r.error))
  end
  if r.reply and r.reply ~= "" then
    vim.list_extend(lines, M.block("    ", r.reply))
  end
  vim.list_extend(lines, M.unsent_lines(r.queued, "    "))
  return lines
end

---The lines of agent.models: the endpoint and the current model, then each
---model offered ("* " marks the current one), with its owner.
---@param r AgentLsp.ModelsResult
---@return string[]
function M.models(r)
  local lines = { ("endpoint %s · current model %s"):format(M.str(r.baseURL), M.str(r.current)) }
  for _, m in ipairs(type(r.models) == "table" and r.models or {}) do
    table.insert(lines, ("%s %s%s"):format(m.id == r.current and "*" or "-", M.str(m.id), m.ownedBy and (" (" .. m.ownedBy .. ")") or ""))
  end
  return lines
end

-- MCP servers -----------------------------------------------------------------

---An MCP server's tool count: "8 tools", "1 tool", or (-1, before its first
---listing) "tools not listed yet".
---@param n any
---@return string
function M.mcp_tools(n)
  local word = M.words.tools[n]
  return word or count(n, "tool")
end

-- short cuts text to its first line and at most width characters ("…" marks a cut).
local function short(text, width)
  local first = M.str(text):match("^[^\n]*")
  local cut = first ~= M.str(text)
  if vim.fn.strchars(first) > width then
    first, cut = vim.fn.strcharpart(first, 0, width - 1):gsub("%s+$", ""), true
  end
  return cut and (first .. "…") or first
end

-- pad fills s with spaces to width display cells.
local function pad(s, width) return s .. (" "):rep(math.max(0, width - vim.fn.strdisplaywidth(s))) end

---The lines of agent.mcp for the :AgentMcp buffer: per project a line
---"<project> — <root>", then one line per server, its columns aligned:
---name, source, transport, status, tools, and the reason's first line
---(cut to 60 characters). The second result maps the line numbers (1-based)
---of the servers' lines to { project, server }, for their details.
---@param list AgentLsp.McpProject[]
---@return string[] lines
---@return table<integer, { project: AgentLsp.McpProject, server: AgentLsp.McpServer }> servers
function M.mcp_lines(list)
  list = type(list) == "table" and list or {}
  local name_w = 4
  for _, p in ipairs(list) do
    for _, s in ipairs(type(p.servers) == "table" and p.servers or {}) do
      name_w = math.max(name_w, vim.fn.strdisplaywidth(M.str(s.name)))
    end
  end
  local lines, at = {}, {}
  for _, p in ipairs(list) do
    if #lines > 0 then
      table.insert(lines, "")
    end
    table.insert(lines, ("%s — %s"):format(M.str(p.project), M.str(p.root)))
    local servers = type(p.servers) == "table" and p.servers or {}
    if #servers == 0 then
      table.insert(lines, "  no MCP servers")
    end
    for _, s in ipairs(servers) do
      local line = ("  %s  %s  %s  %s  %s"):format(pad(M.str(s.name), name_w), pad(M.str(s.source), 7), pad(M.str(s.transport), 5), pad(M.str(s.status), 20), M.mcp_tools(s.tools))
      if s.reason and s.reason ~= vim.NIL and s.reason ~= "" then
        line = line .. " — " .. short(s.reason, 60)
      elseif type(s.withheld) == "table" and #s.withheld > 0 then
        line = line .. (" — %d left out to fit the context"):format(#s.withheld)
      end
      table.insert(lines, line)
      at[#lines] = { project = p, server = s }
    end
  end
  if #lines == 0 then
    lines = { "no projects" }
  end
  return lines, at
end

-- mcp_origin is where an MCP server is defined and, when it has one, the
-- reason it does not run (every line).
local function mcp_origin(s)
  local lines = { ("defined in %s (%s)"):format(M.str(s.origin), M.str(s.source)) }
  if s.reason and s.reason ~= vim.NIL and s.reason ~= "" then
    vim.list_extend(lines, M.block("reason: ", s.reason))
  end
  return lines
end

---The details of one MCP server (<CR> in :AgentMcp): its name and project,
---where it is defined, in full, its transport, status and tools, and why it
---does not run, every line of the reason.
---@param p AgentLsp.McpProject
---@param s AgentLsp.McpServer
---@return string[]
function M.mcp_details(p, s)
  local where = mcp_origin(s)
  local lines = {
    ("MCP server %s of project %s"):format(M.str(s.name), M.str(p.project)),
    where[1],
    ("%s · %s · %s"):format(M.str(s.transport), M.str(s.status), M.mcp_tools(s.tools)),
  }
  vim.list_extend(lines, where, 2)
  if type(s.withheld) == "table" and #s.withheld > 0 then
    table.insert(lines, "left out to fit the context: " .. table.concat(vim.tbl_map(M.str, s.withheld), ", "))
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
  ["agent.cancel"] = function(r, args) return { ("session %s: %s"):format(M.str(args.session), M.word("cancelled", r.cancelled)) } end,
  ["agent.sessions"] = function(list) return #list > 0 and vim.tbl_map(M.session_item, list) or { "no sessions" } end,
  ["agent.session"] = M.transcript,
  ["agent.deleteSession"] = function(r, args) return { ("session %s %s"):format(M.str(args.session), M.word("deleted", r.deleted)) } end,
  ["agent.projects"] = function(list)
    local lines = {}
    for _, p in ipairs(list) do
      table.insert(lines, M.project_line(p))
      vim.list_extend(lines, M.project_context(p.context))
      vim.list_extend(lines, M.project_language(p.language))
      vim.list_extend(lines, M.project_sandbox(p.sandbox))
    end
    return #lines > 0 and lines or { "no projects" }
  end,
  -- :AgentProcesses: one line per running background process.
  ["agent.processes"] = function(list)
    local lines = {}
    for _, p in ipairs(list) do
      table.insert(lines, ("%s  %s  (%s · session %s · since %s)"):format(M.str(p.id), M.str(p.command), M.str(p.project), M.str(p.session), M.time(p.started)))
    end
    return #lines > 0 and lines or { "no background processes running" }
  end,
  -- Rewind (rewind.lua): the checkpoints with their files, what a rewind did, the fork.
  ["agent.checkpoints"] = function(r) return require("agent_lsp.rewind").checkpoints_lines(r) end,
  ["agent.rewind"] = function(r, args) return require("agent_lsp.rewind").rewind_lines(r, args) end,
  ["agent.fork"] = function(r, args) return require("agent_lsp.rewind").fork_lines(r, args) end,
  ["agent.checkpointFile"] = function(r, args) return require("agent_lsp.rewind").file_lines(r, args) end,
  ["agent.stopProcess"] = function(r, args) return { ("background process %s of session %s %s"):format(M.str(args.id), M.str(args.session), M.word("stopped", r.stopped)) } end,
  ["agent.models"] = M.models,
  -- What the next runs use (agent.endpoint), on one line.
  ["agent.endpoint"] = function(ep) return { ("model %s at %s · API key %s in %s · %s"):format(M.str(ep.model), M.str(ep.baseURL), M.word("keySet", ep.keySet), M.str(ep.apiKeyEnv), M.word("needsKey", ep.needsKey)) } end,
  -- The :AgentMcp list, each server's line followed by where it is
  -- defined and the whole reason (which <CR> shows there).
  ["agent.mcp"] = function(list)
    local lines, at = M.mcp_lines(list)
    local out = {}
    for i, line in ipairs(lines) do
      table.insert(out, line)
      for _, d in ipairs(at[i] and mcp_origin(at[i].server) or {}) do
        table.insert(out, "    " .. d)
      end
      local withheld = at[i] and at[i].server.withheld
      if type(withheld) == "table" and #withheld > 0 then
        table.insert(out, "    left out to fit the context: " .. table.concat(vim.tbl_map(M.str, withheld), ", "))
      end
    end
    return out
  end,
  ["agent.switchProject"] = function(r) return { ("session %s now works on project %s"):format(M.str(r.session), M.str(r.project)) } end,
  -- The slash commands: "/name hint — description (source, file)".
  ["agent.commands"] = function(r)
    local lines = {}
    for _, c in ipairs(r.commands or {}) do
      local line = "/" .. M.str(c.name) .. (c.argumentHint and (" " .. M.str(c.argumentHint)) or "")
      line = ("%s — %s (%s%s)"):format(line, M.str(c.description), M.str(c.source), c.path and (", " .. M.str(c.path)) or "")
      if c.error then
        line = line .. " cannot run: " .. M.str(c.error)
      end
      table.insert(lines, line)
    end
    return #lines > 0 and lines or { "no slash commands" }
  end,
}

return M
