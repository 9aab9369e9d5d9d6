-- The :AgentMcp buffer: each project's MCP servers as agent.mcp lists them
-- (render.mcp_lines), in a scratch buffer at the bottom. <CR> on a server
-- shows its details (where it is defined, why it does not run) in a float;
-- R asks the server again and redraws the list in place.
local render = require("agent_lsp.render")

local M = {}

---The buffer's name.
M.NAME = "agent-lsp://mcp"

---The servers of the list shown, by line (render.mcp_lines).
---@type table<integer, { project: AgentLsp.McpProject, server: AgentLsp.McpServer }>
M.servers = {}

-- buffer is the list's buffer while it is loaded.
local function buffer()
  local b = vim.fn.bufnr(M.NAME)
  return b ~= -1 and vim.api.nvim_buf_is_loaded(b) and b or nil
end

---Shows the details of the server on the cursor's line in a float (by the
---cursor, closed when it moves); elsewhere says what <CR> does. Returns the
---lines shown.
---@return string[]|nil
function M.details()
  local at = M.servers[vim.api.nvim_win_get_cursor(0)[1]]
  if not at then
    vim.notify("agent-lsp: <CR> on a server's line shows where it is defined and why it does not run", vim.log.levels.INFO)
    return nil
  end
  local lines = render.mcp_details(at.project, at.server)
  vim.lsp.util.open_floating_preview(lines, "", { border = "single", focus_id = "agent-lsp-mcp", max_width = math.max(40, vim.o.columns - 4), wrap = true })
  return lines
end

---Shows list in the MCP buffer: the window showing it, else a new one at the
---bottom. refresh (R) asks again and calls M.show with the new list.
---@param list AgentLsp.McpProject[]
---@param refresh fun()
---@return integer bufnr
function M.show(list, refresh)
  local lines, at = render.mcp_lines(list)
  local header = { "MCP servers · <CR> on a server: where it is defined, why it does not run · R: refresh", "" }
  M.servers = {}
  for i, v in pairs(at) do
    M.servers[i + #header] = v
  end
  local b = buffer()
  local w = b and vim.fn.win_findbuf(b)[1]
  if w then
    vim.api.nvim_set_current_win(w)
  else
    vim.cmd("botright new")
    if b then
      vim.api.nvim_win_set_buf(0, b)
    else
      b = vim.api.nvim_get_current_buf()
      vim.bo[b].buftype = "nofile"
      vim.bo[b].bufhidden = "wipe"
      vim.bo[b].swapfile = false
      pcall(vim.api.nvim_buf_set_name, b, M.NAME)
      vim.bo[b].filetype = "agent-lsp-mcp"
    end
  end
  local fresh = vim.api.nvim_buf_line_count(b) == 1 and vim.api.nvim_buf_get_lines(b, 0, 1, false)[1] == ""
  local cursor = vim.api.nvim_win_get_cursor(0)
  if fresh then -- a new list: the cursor on its first server
    local rows = vim.tbl_keys(M.servers)
    table.sort(rows)
    cursor = { rows[1] or 1, 0 }
  end
  vim.bo[b].modifiable = true
  vim.api.nvim_buf_set_lines(b, 0, -1, false, vim.list_extend(header, lines))
  vim.bo[b].modifiable = false
  vim.api.nvim_win_set_cursor(0, { math.min(cursor[1], vim.api.nvim_buf_line_count(b)), 0 })
  vim.api.nvim_buf_set_keymap(b, "n", "<CR>", "", { noremap = true, nowait = true, desc = "Details of the MCP server on this line", callback = function() M.details() end })
  vim.api.nvim_buf_set_keymap(b, "n", "R", "", { noremap = true, nowait = true, desc = "List the MCP servers again", callback = refresh })
  return b
end

return M
