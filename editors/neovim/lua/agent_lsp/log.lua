-- The event log: every agent/event this Neovim receives (events.lua) and the
-- result of each run it started (render.lua), as text. :AgentLog shows it in
-- a scratch buffer that keeps growing; a window whose cursor is on the last
-- line follows the new lines. A reply being streamed (message.delta) grows on
-- its own lines, which the complete message replaces when it arrives.
local events = require("agent_lsp.events")
local render = require("agent_lsp.render")

local M = {}

local NAME = "agent-lsp://log"

---The log's lines so far.
---@type string[]
M.lines = {}

---@class AgentLsp.Stream
---@field session string
---@field seq integer the first delta's
---@field text string the text streamed so far
---@field first integer the index of its first line in M.lines

-- The reply being streamed, while its lines are the log's last ones.
---@type AgentLsp.Stream|nil
local stream

-- buffer is the log's buffer while it is loaded.
local function buffer()
  local b = vim.fn.bufnr(NAME)
  return b ~= -1 and vim.api.nvim_buf_is_loaded(b) and b or nil
end

-- set replaces the lines from index first to the end with new, in M.lines
-- and in the buffer.
local function set(first, new)
  for i = #M.lines, first, -1 do
    M.lines[i] = nil
  end
  vim.list_extend(M.lines, new)
  local b = buffer()
  if not b then
    return
  end
  local followers = {}
  for _, w in ipairs(vim.fn.win_findbuf(b)) do
    if vim.api.nvim_win_get_cursor(w)[1] == vim.api.nvim_buf_line_count(b) then
      table.insert(followers, w)
    end
  end
  vim.bo[b].modifiable = true
  vim.api.nvim_buf_set_lines(b, first - 1, -1, false, new)
  vim.bo[b].modifiable = false
  for _, w in ipairs(followers) do
    vim.api.nvim_win_set_cursor(w, { vim.api.nvim_buf_line_count(b), 0 })
  end
end

---Appends lines to the log.
---@param lines string[]
function M.add(lines)
  stream = nil
  set(#M.lines + 1, lines)
end

---Appends an agent/event. A delta continues the reply streamed before it
---when nothing came in between; the complete AI message of that session's
---own run replaces the streamed lines (a queued prompt the run reads then is
---added after them).
---@param ev AgentLsp.AgentEvent
function M.event(ev)
  local open = stream and stream.session == ev.session and ev.contextId == nil and stream
  stream = nil
  if ev.type == "message.delta" then
    local s = open or { session = ev.session, seq = ev.seq, text = "", first = #M.lines + 1 }
    s.text = s.text .. render.str(ev.text)
    set(s.first, events.render({ session = s.session, seq = s.seq, type = ev.type, text = s.text }))
    stream = s
  elseif ev.type == "message" and open and type(ev.message) == "table" and ev.message.role == "ai" then
    set(open.first, events.render(ev))
  else
    set(#M.lines + 1, events.render(ev))
  end
end

---Shows the log in a window at the bottom (the one showing it already, else a
---new one), with the cursor on the last line so that it follows.
function M.open()
  local b = buffer()
  local w = b and vim.fn.win_findbuf(b)[1]
  if w then
    vim.api.nvim_set_current_win(w)
  elseif b then
    vim.cmd("botright sbuffer " .. b)
  else
    vim.cmd("botright new")
    b = vim.api.nvim_get_current_buf()
    vim.bo[b].buftype = "nofile"
    vim.bo[b].bufhidden = "hide" -- kept loaded while hidden, so it stays current
    vim.bo[b].swapfile = false
    vim.api.nvim_buf_set_name(b, NAME)
    vim.api.nvim_buf_set_lines(b, 0, -1, false, M.lines)
    vim.bo[b].modifiable = false
  end
  vim.api.nvim_win_set_cursor(0, { vim.api.nvim_buf_line_count(b), 0 })
end

return M
