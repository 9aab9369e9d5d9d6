-- Text for pickers, project lists and session transcripts.
local M = {}

local function age(ts)
  if type(ts) ~= "string" then
    return ""
  end
  return ts:gsub("T", " "):gsub("%..*$", ""):gsub("Z$", "")
end

--- One line describing a session for vim.ui.select.
function M.session_item(s)
  local title = (s.title or ""):gsub("\n", " ")
  if #title > 60 then
    title = title:sub(1, 57) .. "..."
  end
  return ("%-9s %-10s %-12s %s  (%s)"):format(s.status or "?", s.project or "", age(s.updated), title, s.session)
end

--- One line describing a project.
function M.project_line(p)
  local stack = p.techStack and #p.techStack > 0 and (" [" .. table.concat(p.techStack, ", ") .. "]") or ""
  local branch = p.gitBranch and p.gitBranch ~= "" and (" on " .. p.gitBranch) or ""
  return ("%s (%s)%s%s — %s"):format(p.name, p.type or "unknown", stack, branch, p.path or "")
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

--- The Markdown lines of an agent.session result.
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

--- Opens a read-only scratch buffer with a session's transcript.
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
