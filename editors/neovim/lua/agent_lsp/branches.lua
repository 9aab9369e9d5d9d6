-- Branches that runs and subagents in git worktrees reported (run.end and
-- subagent.end events with a branch, docs/worktrees.md): a notification when
-- one arrives, and :AgentBranch to show its diff, merge it or delete it.
local ui = require("agent_lsp.ui")

local M = {}

---@class AgentLsp.Branch
---@field branch string e.g. agent-lsp/1a2b3c4d-1
---@field dir string a folder of the repository that has it

---The branches reported in this Neovim and not merged or deleted here, oldest first.
---@type AgentLsp.Branch[]
M.reported = {}

---Runs git in dir; returns its output lines and whether it succeeded.
---@param dir string
---@param args string[]
---@return string[] lines
---@return boolean ok
function M.git(dir, args)
  local argv = { "git", "-C", dir, "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false" }
  for _, a in ipairs(args) do
    table.insert(argv, a)
  end
  local out = vim.fn.systemlist(argv)
  return out, vim.v.shell_error == 0
end

---The folder, of dirs, whose repository has branch (nil for none).
---@param branch string
---@param dirs string[]
---@return string?
local function repository(branch, dirs)
  for _, dir in ipairs(dirs) do
    local _, ok = M.git(dir, { "rev-parse", "--verify", "--quiet", "refs/heads/" .. branch })
    if ok then
      return dir
    end
  end
end

---Notes the branch an event reports (if any), found in the repository of
---one of dirs (the client's workspace folders), and tells the user once.
---@param ev table an agent/event
---@param dirs string[]
function M.note(ev, dirs)
  local branch = ev.branch
  if type(branch) ~= "string" or branch == "" then
    return
  end
  for _, b in ipairs(M.reported) do
    if b.branch == branch then
      return
    end
  end
  local dir = repository(branch, dirs)
  if not dir then
    return
  end
  table.insert(M.reported, { branch = branch, dir = dir })
  ui.notify(("changes on branch %s: :AgentBranch shows its diff, merges it or deletes it"):format(branch))
end

local function forget(branch)
  M.reported = vim.tbl_filter(function(b) return b.branch ~= branch end, M.reported)
end

---Shows lines in a read-only scratch buffer of filetype ft.
local function scratch(name, lines, ft)
  vim.cmd("botright new")
  local b = vim.api.nvim_get_current_buf()
  vim.bo[b].buftype = "nofile"
  vim.bo[b].bufhidden = "wipe"
  vim.bo[b].swapfile = false
  vim.api.nvim_buf_set_lines(b, 0, -1, false, lines)
  vim.bo[b].modifiable = false
  vim.bo[b].filetype = ft
  pcall(vim.api.nvim_buf_set_name, b, name)
end

---The actions :AgentBranch offers, in order: each a label and what it does.
---@type { label: string, run: fun(b: AgentLsp.Branch) }[]
M.actions = {
  {
    label = "Show the diff",
    run = function(b)
      local out, ok = M.git(b.dir, { "diff", "--no-ext-diff", "HEAD..." .. b.branch })
      if not ok then
        return ui.notify(table.concat(out, "\n"), vim.log.levels.ERROR)
      end
      scratch("agent://branch/" .. b.branch, #out > 0 and out or { "(no change)" }, "diff")
    end,
  },
  {
    label = "Merge it into the current branch",
    run = function(b)
      local out, ok = M.git(b.dir, { "merge", "--no-ff", "--no-edit", b.branch })
      if ok then
        forget(b.branch)
        return ui.notify(("merged %s"):format(b.branch))
      end
      ui.notify(("merging %s failed (resolve it with git):\n%s"):format(b.branch, table.concat(out, "\n")), vim.log.levels.ERROR)
    end,
  },
  {
    label = "Delete it",
    run = function(b)
      local out, ok = M.git(b.dir, { "branch", "-D", b.branch })
      if ok then
        forget(b.branch)
        return ui.notify(("deleted %s"):format(b.branch))
      end
      ui.notify(table.concat(out, "\n"), vim.log.levels.ERROR)
    end,
  },
}

---Asks what to do with b, then does it.
---@param b AgentLsp.Branch
local function act(b)
  vim.ui.select(M.actions, {
    prompt = b.branch .. ":",
    format_item = function(a) return a.label end,
  }, function(a)
    if a then
      a.run(b)
    end
  end)
end

---:AgentBranch [branch]: what to do with a reported branch (the one named,
---else the only one, else the one chosen).
---@param name? string
---@param dirs string[] folders to look for a branch named but not reported in
function M.command(name, dirs)
  if name and name ~= "" then
    for _, b in ipairs(M.reported) do
      if b.branch == name then
        return act(b)
      end
    end
    local dir = repository(name, dirs)
    if not dir then
      return ui.notify(("no branch %s in the workspace's repositories"):format(name), vim.log.levels.WARN)
    end
    return act({ branch = name, dir = dir })
  end
  if #M.reported == 0 then
    return ui.notify("no branch reported yet: runs and subagents with isolation worktree report one")
  end
  if #M.reported == 1 then
    return act(M.reported[1])
  end
  vim.ui.select(M.reported, { prompt = "Branch:", format_item = function(b) return b.branch end }, function(b)
    if b then
      act(b)
    end
  end)
end

return M
