-- Line hunks between two texts (vim.diff's indices), and applying them to a
-- buffer: the review cuts a proposal into hunks the user takes or drops, and
-- applies what the user chose as the hunks between the current text and it.
local M = {}

---One hunk: the lines from..to-1 (0-based) of the old text are replaced by
---lines; from == to when the hunk only adds lines (before line from).
---@class AgentLsp.Hunk
---@field from integer
---@field to integer
---@field lines string[]

local function text(lines) return table.concat(lines, "\n") .. "\n" end

---The hunks that turn the lines old into the lines new, in order.
---@param old string[]
---@param new string[]
---@return AgentLsp.Hunk[]
function M.between(old, new)
  local out = {}
  for _, h in ipairs(vim.diff(text(old), text(new), { result_type = "indices" })) do
    -- 1-based starts; a count of 0 means "after that line" instead.
    local old_start, old_count, new_start, new_count = h[1], h[2], h[3], h[4]
    local from = old_count == 0 and old_start or old_start - 1
    local first = new_count == 0 and new_start or new_start - 1
    table.insert(out, { from = from, to = from + old_count, lines = vim.list_slice(new, first + 1, first + new_count) })
  end
  return out
end

---Applies hunks (M.between of bufnr's lines and the wanted ones) to bufnr,
---the last first, so that each one's lines are still where it says.
---@param bufnr integer
---@param hunks AgentLsp.Hunk[]
function M.apply(bufnr, hunks)
  for i = #hunks, 1, -1 do
    local h = hunks[i]
    vim.api.nvim_buf_set_lines(bufnr, h.from, h.to, false, h.lines)
  end
end

return M
