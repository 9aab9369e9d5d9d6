-- The #references of a chat prompt, which become agent.run's context:
--   #buffer          the buffer the chat was opened from
--   #buffer:<name>   a loaded file buffer whose name is <name> or ends in /<name>
--   #selection       the last visual selection in the chat's buffer of origin
--   #diagnostics     the diagnostics of the buffer of origin, as text in the prompt
--   #image:<path>    an image file (PNG, JPEG, GIF, WebP), relative to the cwd or absolute
-- The server reads the documents as the editor has them (unsaved changes
-- included), so their text is never pasted into the prompt: the buffers are
-- attached to the client, and the references name their URIs and ranges.
local client = require("agent_lsp.client")
local compat = require("agent_lsp.compat")

local M = {}

-- file_buffers lists the loaded buffers holding files.
local function file_buffers()
  return vim.tbl_filter(function(b) return vim.api.nvim_buf_is_loaded(b) and client.is_file_buffer(b) end, vim.api.nvim_list_bufs())
end

---The buffer #buffer:<name> means: a loaded file buffer whose name is name, or
---ends in "/" .. name; nil when none or several do (then the second result
---lists them).
---@param name string
---@return integer|nil
---@return string[]|nil ambiguous
function M.find_buffer(name)
  local found = {}
  for _, b in ipairs(file_buffers()) do
    local full = vim.api.nvim_buf_get_name(b)
    if full == name or full:sub(-#name - 1) == "/" .. name then
      table.insert(found, b)
    end
  end
  if #found == 1 then
    return found[1]
  end
  return nil, #found > 1 and vim.tbl_map(vim.api.nvim_buf_get_name, found) or nil
end

-- selection is the LSP range of the last visual selection in buf ('< and '>),
-- or nil when it has none.
local function selection(buf, encoding)
  local s = vim.api.nvim_buf_get_mark(buf, "<")
  local e = vim.api.nvim_buf_get_mark(buf, ">")
  if s[1] == 0 or e[1] == 0 then
    return nil
  end
  local last = vim.api.nvim_buf_get_lines(buf, e[1] - 1, e[1], false)[1] or ""
  local first = vim.api.nvim_buf_get_lines(buf, s[1] - 1, s[1], false)[1] or ""
  local ecol = math.min(e[2] + 1, #last) -- '> is inclusive; linewise selections give a huge column
  return {
    start = { line = s[1] - 1, character = compat.line_width(first:sub(1, s[2]), encoding) },
    ["end"] = { line = e[1] - 1, character = compat.line_width(last:sub(1, ecol), encoding) },
  }
end

-- diagnostics is the text of buf's diagnostics, one "name:line: message" each.
local function diagnostics(buf)
  local name = vim.fn.fnamemodify(vim.api.nvim_buf_get_name(buf), ":.")
  local lines = {}
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    table.insert(lines, ("%s:%d: %s"):format(name, d.lnum + 1, (d.message:gsub("\n", " "))))
  end
  return #lines > 0 and table.concat(lines, "\n") or "(no diagnostics)"
end

---@class AgentLsp.Resolved
---@field prompt string the prompt to send (#diagnostics expanded to the diagnostics' text)
---@field context AgentLsp.ContextRef[]
---@field images AgentLsp.ImageRef[] the #image: files, by absolute path

-- The references, by name: each adds to out (a context entry, or text) the
-- reference with argument arg, or returns a problem.
---@type table<string, fun(out: AgentLsp.Resolved, arg: string|nil, origin: integer|nil, c: table): string|nil>
local refs = {
  buffer = function(out, arg, origin, c)
    local buf, several = origin, nil
    if arg then
      buf, several = M.find_buffer(arg)
    end
    if not buf then
      return several and ("#buffer:%s names several buffers: %s"):format(arg, table.concat(several, ", ")) or (arg and ("#buffer:%s: no loaded file buffer has that name"):format(arg) or "#buffer: the chat was not opened from a file buffer")
    end
    M.attach(buf, c)
    table.insert(out.context, { uri = vim.uri_from_bufnr(buf) })
  end,
  selection = function(out, _, origin, c)
    local range = origin and selection(origin, c.offset_encoding)
    if not range then
      return "#selection: the buffer the chat was opened from has no visual selection"
    end
    M.attach(origin, c)
    table.insert(out.context, { uri = vim.uri_from_bufnr(origin), range = range })
  end,
  image = function(out, arg)
    if not arg then
      return "#image: names no file: write #image:<path>"
    end
    local path = vim.fn.fnamemodify(vim.fn.expand(arg), ":p")
    if vim.fn.filereadable(path) ~= 1 then
      return ("#image:%s: no readable file %s"):format(arg, path)
    end
    table.insert(out.images, { path = path })
  end,
  diagnostics = function(out, _, origin)
    if not origin then
      return "#diagnostics: the chat was not opened from a file buffer"
    end
    out.prompt = out.prompt .. "\n\nDiagnostics:\n" .. diagnostics(origin)
  end,
}

---Attaches buf to client c, so that the server has its text as the editor does.
---@param buf integer
---@param c table
function M.attach(buf, c)
  if not vim.lsp.buf_is_attached(buf, c.id) then
    vim.lsp.buf_attach_client(buf, c.id)
  end
end

---Finds the #references in prompt: the context they attach, and the problems
---of those that name nothing (then nothing should be sent).
---@param prompt string
---@param origin integer|nil the buffer #buffer and #selection mean
---@param c table the client the run goes to
---@return AgentLsp.Resolved
---@return string[] problems
function M.resolve(prompt, origin, c)
  local out, problems = { prompt = prompt, context = {}, images = {} }, {}
  for name, arg in (" " .. prompt):gmatch("%f[%S]#(%a+):?(%S*)") do -- the space: a reference may start the prompt
    local ref = refs[name]
    if ref then
      local problem = ref(out, arg ~= "" and arg or nil, origin, c)
      if problem then
        table.insert(problems, problem)
      end
    end
  end
  return out, problems
end

---The completions of a #reference: #buffer, #buffer:<name> of each loaded
---file buffer (its path relative to the cwd), #selection, #diagnostics.
---@return string[]
function M.candidates()
  local out = { "#buffer", "#selection", "#diagnostics" }
  for _, b in ipairs(file_buffers()) do
    table.insert(out, "#buffer:" .. vim.fn.fnamemodify(vim.api.nvim_buf_get_name(b), ":."))
  end
  return out
end

return M
