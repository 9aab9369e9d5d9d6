-- What the user sees outside buffers: notifications, the echo area and the
-- statusline text (with its AgentLspStatus autocommand).
local compat = require("agent_lsp.compat")
local config = require("agent_lsp.config")
local state = require("agent_lsp.state")

local M = {}

---Notifies msg, prefixed with the plugin's name.
---@param msg string
---@param level? integer a vim.log.levels value, default INFO
function M.notify(msg, level) vim.notify("agent-lsp: " .. msg, level or vim.log.levels.INFO) end

---Echoes a progress text, unless echo_progress is off; not kept in :messages.
---@param msg string
function M.echo(msg)
  if config.options.echo_progress then
    vim.api.nvim_echo({ { msg, "Comment" } }, false, {})
  end
end

---Prints text in the message area, kept in :messages.
---@param text string
function M.print(text) vim.api.nvim_echo({ { text } }, true, {}) end

---Sets the statusline text, redraws the statuslines and fires User AgentLspStatus.
---@param text string
function M.set_status(text)
  state.status = text
  pcall(vim.cmd, "redrawstatus")
  compat.fire("AgentLspStatus")
end

---Sets the statusline text to the latest progress of a run still in flight
---other than ended (the run whose progress or result just ended), else "":
---one run's end, or a prompt queued into a running session, leaves the
---progress of the others on show.
---@param ended? AgentLsp.Run
function M.restore_status(ended)
  local text = ""
  for _, run in pairs(state.runs) do
    if run ~= ended and not run.result and not run.progress_ended and #run.progress > 0 then
      text = run.progress[#run.progress]
    end
  end
  M.set_status(text)
end

---The statusline text while a review is open.
M.REVIEW_WAITING = "agent: waiting for review"

---The statusline text while the server asks to run a command.
M.PERMISSION_WAITING = "agent: waiting for permission"

---Marks a review open or closed: the statusline says a review waits while
---one is open, then shows the progress again.
---@param open boolean
function M.set_reviewing(open)
  state.reviewing = open
  pcall(vim.cmd, "redrawstatus")
  compat.fire("AgentLspStatus")
end

---Marks the server's question (may the agent run this command, call this
---MCP tool, may this repository's MCP server start?) open or answered: the
---statusline says the agent waits for permission meanwhile.
---@param open boolean
function M.set_asking(open)
  state.waiting = open and "permission" or nil
  pcall(vim.cmd, "redrawstatus")
  compat.fire("AgentLspStatus")
end

---The statusline component: "agent: waiting for review" while a review is
---open, "agent: waiting for permission" while the server asks to run a
---command, else the running agent's latest progress with the run's tokens
---(and cost) so far, or "".
---@return string
function M.statusline()
  if state.reviewing then
    return M.REVIEW_WAITING
  elseif state.waiting == "permission" then
    return M.PERMISSION_WAITING
  end
  local u = state.usage
  if state.status == "" or type(u) ~= "table" or not next(state.runs) then
    return state.status
  end
  local render = require("agent_lsp.render")
  local cost, left = render.cost(u.cost), render.budget(state.budget)
  return ("%s · %s tokens%s%s"):format(state.status, tostring(u.total), cost and (" · " .. cost) or "", left and (" · " .. left) or "")
end

return M
