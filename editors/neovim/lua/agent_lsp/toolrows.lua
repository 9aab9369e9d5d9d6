-- The chat's tool rows: a tool call as an item line with its target and
-- status, and below it its details, indented by four spaces (the chat folds
-- them): an edit's diff (one line each, "+" added, "-" removed), a command's
-- last output lines, any other tool's arguments and the end of its result.
-- The status agrees with what the model was told: a command that ran and
-- exited non-zero is "exit 1" (it ran), not a failed tool; an edit the user
-- rejected in a review is "rejected". Built from tool.start/tool.end events
-- or from a stored transcript's tool messages.
local render = require("agent_lsp.render")

local M = {}

---How a tool call ended: tool.end's ok, summary and output (the end of the
---result), or a stored tool message (summary "", output the whole result).
---@class AgentLsp.ToolEnd
---@field ok boolean
---@field summary string
---@field output string

---Most diff lines a row shows; the rest is counted.
M.DIFF_LIMIT = 80
---Most output lines a row shows.
M.OUTPUT_LINES = 20

local INDENT = "    "

---The arguments of a tool call as a table; {} when they are not a JSON object.
---@param args any the model's raw JSON text
---@return table
function M.args(args)
  local ok, a = pcall(vim.fn.json_decode, type(args) == "string" and args or "")
  return ok and type(a) == "table" and not vim.tbl_islist(a) and a or {}
end

local function str(a, key) return type(a[key]) == "string" and a[key] or nil end

---The lines of text without trailing blank ones.
local function lines_of(text)
  local lines = render.split((render.str(text):gsub("%s+$", "")))
  if #lines == 1 and lines[1] == "" then
    return {}
  end
  return lines
end

---A run_command result split into its header (notes, then how the command
---ended) and the output after the "$ command" line; a result cut before its
---header is all output.
---@param result string
---@return string[] header
---@return string[] output
function M.command_parts(result)
  local lines = lines_of(result)
  for i, l in ipairs(lines) do
    if l:find("^%$ ") then
      local prev = lines[i - 1]
      if prev and (prev:find("^exit status %d+") or prev:find("^timed out after") or prev:find("^could not run")) then
        return vim.list_slice(lines, 1, i - 1), vim.list_slice(lines, i + 1)
      end
      break
    end
  end
  return {}, lines
end

---The exit code of a command that ran to its end, from its summary or its
---result's header; nil when it did not run or was cut off.
---@param e AgentLsp.ToolEnd
---@return integer|nil
function M.exit_code(e)
  local code = render.str(e.summary):match(": exit status (%d+)$")
  if not code then
    local header = M.command_parts(e.output)
    code = (header[#header] or ""):match("^exit status (%d+)")
  end
  return code and tonumber(code) or nil
end

local function first_line(text)
  local l = render.str(text):gsub("^%s+", ""):match("^[^\n]*") or ""
  return #l > 160 and (l:sub(1, 159) .. "…") or l
end

---The status of a tool call: "running", "ok: <summary>", a command's
---"exit N", "rejected" (an edit the user turned down in a review), "applied
---with your changes", "interrupted", or "failed: <why>".
---@param name string
---@param e? AgentLsp.ToolEnd nil while it runs
---@param interrupted? boolean it has no result and never will (a stored session that is not running)
---@return string
function M.status(name, e, interrupted)
  if not e then
    return interrupted and "interrupted" or "running"
  end
  if name == "run_command" then
    local code = M.exit_code(e)
    if code then
      return "exit " .. code
    end
  end
  if e.ok then
    return (e.summary ~= "" and ("ok: " .. render.oneline(e.summary))) or "ok"
  end
  local output = render.str(e.output)
  if output:find("(rejected by the user in review)", 1, true) or output:find("(every hunk was dropped in the review)", 1, true) then
    return "rejected"
  end
  if output:find("was applied with changes by the user", 1, true) then
    return "applied with your changes"
  end
  local why = e.summary ~= "" and render.oneline(e.summary) or first_line((output:gsub("^error:%s*", "")))
  return "failed" .. (why ~= "" and (": " .. why) or "")
end

---What a tool call works on, for its item line: a command's "$ line", a
---path, a pattern, a task, a project; else its arguments on one line.
---@param name string
---@param a table the arguments
---@param raw any the raw arguments
---@return string
function M.target(name, a, raw)
  if name == "run_command" and str(a, "command") then
    return "$ " .. render.oneline(a.command)
  end
  for _, k in ipairs({ "path", "pattern", "task", "project", "command" }) do
    if str(a, k) then
      return render.oneline(a[k])
    end
  end
  local s = render.oneline(raw)
  return #s > 80 and (s:sub(1, 77) .. "...") or s
end

local function added(text)
  return vim.tbl_map(function(l) return "+" .. l end, lines_of(text))
end

---The diff an edit_file or create_file call proposes, from its arguments:
---old_text against new_text with three lines of context ("⋯" between
---hunks), or the new lines (a line-range edit names only what replaces the
---lines; a new file is all new); nil for other tools. Each line is "+",
---"-" or " " and the text.
---@param name string
---@param a table the arguments
---@return string[]|nil lines
---@return string note what the lines replace, or ""
function M.diff(name, a)
  if name == "create_file" then
    return added(a.content), "new file"
  end
  if name ~= "edit_file" then
    return nil, ""
  end
  local new = str(a, "new_text") or ""
  if not str(a, "old_text") then
    local from = type(a.start_line) == "number" and a.start_line or nil
    local to = type(a.end_line) == "number" and a.end_line or from
    local note = from and (to and to ~= from and ("replaces lines %d-%d"):format(from, to) or ("replaces line %d"):format(from)) or ""
    return added(new), note
  end
  local function nl(s) return s:sub(-1) == "\n" and s or (s .. "\n") end
  local out, hunks = {}, 0
  for _, l in ipairs(render.split(vim.diff(nl(a.old_text), nl(new), { result_type = "unified", ctxlen = 3 }))) do
    if l:find("^@@") then
      hunks = hunks + 1
      if hunks > 1 then
        table.insert(out, "⋯")
      end
    elseif l:find("^[-+ ]") then
      table.insert(out, l)
    end -- "\ No newline at end of file": the snippets are not whole files
  end
  return out, ""
end

---The item line of a tool call: "- `edit_file` greet.go · rejected".
---@param name any
---@param args any the raw arguments
---@param status string
---@return string
function M.item(name, args, status)
  local a = M.args(args)
  return ("- `%s` %s · %s"):format(render.str(name), M.target(render.str(name), a, args), status)
end

---The detail lines under a tool call's item, indented: an edit's diff (and
---why it did not land), a command's last output lines, or another tool's
---arguments and the end of its result.
---@param name string
---@param args any
---@param e? AgentLsp.ToolEnd
---@return string[]
function M.details(name, args, e)
  local a = M.args(args)
  local out = {}
  local diff, note = M.diff(name, a)
  if diff then
    if note ~= "" then
      table.insert(out, note)
    end
    for i, l in ipairs(diff) do
      if i > M.DIFF_LIMIT then
        table.insert(out, ("⋯ %d more lines"):format(#diff - M.DIFF_LIMIT))
        break
      end
      table.insert(out, l)
    end
    local status = M.status(name, e)
    if e and (status:find("^failed") or status == "applied with your changes") then
      table.insert(out, "why: " .. first_line((render.str(e.output):gsub("^error:%s*", ""))))
    end
  elseif name == "run_command" then
    if e then
      local _, output = M.command_parts(e.output)
      local from = math.max(1, #output - M.OUTPUT_LINES + 1)
      if from > 1 then
        table.insert(out, "⋯")
      end
      vim.list_extend(out, vim.list_slice(output, from))
    end
  else
    table.insert(out, "args: " .. render.oneline(args))
    if e then
      local result = lines_of(e.output)
      vim.list_extend(out, vim.list_slice(result, math.max(1, #result - 9)))
    end
  end
  return vim.tbl_map(function(l) return INDENT .. l end, out)
end

---A tool call's lines: its item, then its details.
---@param name string
---@param args any
---@param e? AgentLsp.ToolEnd
---@param interrupted? boolean
---@return string[]
function M.lines(name, args, e, interrupted)
  local lines = { M.item(name, args, M.status(name, e, interrupted)) }
  vim.list_extend(lines, M.details(name, args, e))
  return lines
end

---True for a tool call's item line.
---@param line string
---@return boolean
function M.is_item(line) return line:find("^%- `[%w_%-]+` ") ~= nil end

---The fold level of line lnum (1-based) of buf, for 'foldexpr': a tool
---call's details fold under its item; everything else is not folded.
---@param buf integer
---@param lnum integer
---@return string
function M.foldlevel(buf, lnum)
  local function line(n) return vim.api.nvim_buf_get_lines(buf, n - 1, n, false)[1] end
  local l = line(lnum) or ""
  if M.is_item(l) then
    return (line(lnum + 1) or ""):sub(1, #INDENT) == INDENT and ">1" or "0"
  end
  if l:sub(1, #INDENT) ~= INDENT then
    return "0"
  end
  for n = lnum - 1, math.max(1, lnum - M.DIFF_LIMIT - 10), -1 do
    local above = line(n)
    if M.is_item(above) then
      return "1"
    elseif above:sub(1, #INDENT) ~= INDENT then
      return "0"
    end
  end
  return "0"
end

return M
