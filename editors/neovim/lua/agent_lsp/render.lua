-- Text for pickers, project lists and session transcripts.
local M = {}

local function age(ts)
  if type(ts) ~= "string" then
    return ""
  end
  return ts:gsub("T", " "):gsub("%..*$", ""):gsub("Z$", "")
end

---One line describing a session, for vim.ui.select.
---@param s AgentLsp.SessionInfo
---@return string
function M.session_item(s)
  local title = (s.title or ""):gsub("\n", " ")
  if #title > 60 then
    title = title:sub(1, 57) .. "..."
  end
  return ("%-9s %-10s %-12s %s  (%s)"):format(s.status or "?", s.project or "", age(s.updated), title, s.session)
end

-- stack describes a techStack (PROTOCOL.md: agent.projects) in brackets: the
-- language and its version (the language alone only when it is not the
-- project's type, which the line shows already), the package manager, the
-- build and test commands, and the types of further manifests found beside.
local function stack(t, project_type)
  if type(t) ~= "table" then
    return ""
  end
  local tools, commands, also = {}, {}, {}
  if t.languageVersion then
    table.insert(tools, (t.language or project_type) .. " " .. t.languageVersion)
  elseif t.language and t.language ~= project_type then
    table.insert(tools, t.language)
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

---One line describing a project, e.g.
---"sample (go) [go 1.22, go modules; build: go build ./..., test: go test ./...] on main — /src/sample".
---@param p AgentLsp.ProjectInfo
---@return string
function M.project_line(p)
  local branch = p.gitBranch and p.gitBranch ~= "" and (" on " .. p.gitBranch) or ""
  return ("%s (%s)%s%s — %s"):format(p.name, p.type or "unknown", stack(p.techStack, p.type), branch, p.path or "")
end

---The summary of a run's result for a notification ("done · 1 edit · 3 steps
---— <first line of the reply>"), and the whole reply without trailing space.
---@param result AgentLsp.RunResult
---@return string summary
---@return string reply
function M.run_summary(result)
  local edits, steps = result.edits or 0, result.steps or 0
  local summary = ("%s · %d edit%s · %d step%s"):format(result.status or "?", edits, edits == 1 and "" or "s", steps, steps == 1 and "" or "s")
  local reply = (result.reply or ""):gsub("%s+$", "")
  local first = reply:match("^[^\n]*") or ""
  if first ~= "" then
    summary = summary .. " — " .. first
  end
  return summary, reply
end

local function split(text)
  local lines = {}
  for line in ((text or "") .. "\n"):gmatch("([^\n]*)\n") do
    table.insert(lines, line)
  end
  return lines
end

local function fence(text)
  local lines = split(text)
  table.insert(lines, 1, "```")
  table.insert(lines, "```")
  return lines
end

local headings = { human = "You", ai = "Agent", system = "System" }

---The Markdown lines of an agent.session result.
---@param s AgentLsp.SessionDetail
---@return string[]
function M.transcript(s)
  local out = { ("# Session %s"):format(s.session), "", ("project: %s · status: %s"):format(s.project or "", s.status or "") }
  local calls = {}
  for _, m in ipairs(s.messages or {}) do
    table.insert(out, "")
    if m.role == "tool" then
      table.insert(out, ("### %s result"):format(calls[m.toolCallId] or "tool"))
      vim.list_extend(out, fence(m.content))
    else
      table.insert(out, "## " .. (headings[m.role] or m.role or "?"))
      if m.content and m.content ~= "" then
        vim.list_extend(out, split(m.content))
      end
      for _, tc in ipairs(m.toolCalls or {}) do
        calls[tc.id] = tc.name
        table.insert(out, ("- calls `%s` %s"):format(tc.name or "?", (tc.args or ""):gsub("\n", " ")))
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

return M
