-- The agent sees what Neovim's language servers see (docs/language.md): the
-- client declares experimental.language and answers agent/diagnostics with
-- vim.diagnostic.get (waiting, when asked, for the diagnostics of a buffer's
-- current text: a DiagnosticChanged after its last change) and
-- agent/languageRequest with vim.lsp.buf_request_sync to the language
-- servers attached to the file's buffer, other than agent-lsp. A file the
-- agent edited in a buffer no language server is attached to gets the
-- servers of the other buffers of its kind, so that they see the edit.
local compat = require("agent_lsp.compat")

local M = {}

local NAME = "agent-lsp"

---Bounds of what is sent back: diagnostics per document, documents, locations or symbols.
M.bounds = { per_document = 500, documents = 5000, items = 2000 }

---b:changedtick of each buffer when its diagnostics last changed: they are
---settled while it is still the buffer's changedtick.
---@type table<integer, integer>
M.settled_at = {}

---When (vim.loop.now(), ms) each buffer's diagnostics were first and last
---reported for its changedtick in M.settled_at.
---@type table<integer, {first: integer, last: integer}>
M.reported = {}

---How long a buffer's diagnostics must stay unchanged before agent/diagnostics
---answers: as long as their first report for its text took, within these
---bounds (ms). A server may report in parts (typescript-language-server: the
---syntax first, the semantic part a moment later, the earlier one shown meanwhile).
M.quiet = { min = 250, max = 2000 }

local group

---Starts following diagnostic changes (once).
function M.setup()
  if group then
    return
  end
  group = vim.api.nvim_create_augroup("agent_lsp_language", { clear = true })
  local event, pattern = compat.diagnostic_event()
  vim.api.nvim_create_autocmd(event, {
    group = group,
    pattern = pattern,
    callback = function(args)
      local b = args.buf
      if b and b > 0 and vim.api.nvim_buf_is_valid(b) then
        local tick, now = vim.api.nvim_buf_get_changedtick(b), vim.loop.now()
        local r = M.settled_at[b] == tick and M.reported[b] or { first = now }
        r.last = now
        M.settled_at[b], M.reported[b] = tick, r
      end
    end,
  })
end

---Whether the diagnostics of buffer b reflect its current text.
---@param b integer
---@return boolean
function M.settled(b) return vim.api.nvim_buf_is_valid(b) and M.settled_at[b] == vim.api.nvim_buf_get_changedtick(b) end

---Whether buffer b's diagnostics are settled for its current text and have
---stayed unchanged for the quiet period: as long as their first report after
---start (when the agent asked) took, within M.quiet.
---@param b integer
---@param start integer vim.loop.now() when the wait began
---@return boolean
function M.quiet_since(b, start)
  local r = M.reported[b]
  if not M.settled(b) or not r then
    return false
  end
  local wait = math.min(math.max(r.first - start, M.quiet.min), M.quiet.max)
  return vim.loop.now() - r.last >= wait
end

local function extension(b) return vim.fn.fnamemodify(vim.api.nvim_buf_get_name(b), ":e") end

---The language servers (not agent-lsp) attached to buffer b.
---@param b integer
---@return table[] clients
function M.clients(b)
  local out = {}
  for _, c in ipairs(compat.all_clients()) do
    if c.name ~= NAME and vim.lsp.buf_is_attached(b, c.id) then
      table.insert(out, c)
    end
  end
  return out
end

---Attaches to buffer b (loading it) the language servers attached to other
---buffers of files with b's extension, when none is attached to it: a file
---the agent edited that the user has not opened.
---@param b integer
function M.attach_peers(b)
  if not vim.api.nvim_buf_is_loaded(b) then
    pcall(vim.fn.bufload, b)
  end
  if #M.clients(b) > 0 or extension(b) == "" then
    return
  end
  for _, c in ipairs(compat.all_clients()) do
    if c.name ~= NAME then
      for _, other in ipairs(vim.lsp.get_buffers_by_client_id(c.id) or {}) do
        if other ~= b and extension(other) == extension(b) then
          vim.lsp.buf_attach_client(b, c.id)
          break
        end
      end
    end
  end
end

---A vim.diagnostic as LSP's Diagnostic: the server's own when the LSP client kept it.
---@param d table
---@return AgentLsp.LspDiagnostic
local function lsp_diagnostic(d)
  local lsp = type(d.user_data) == "table" and d.user_data.lsp or nil
  if type(lsp) == "table" and type(lsp.range) == "table" and lsp.message then
    return { range = lsp.range, severity = lsp.severity or d.severity, code = lsp.code, source = lsp.source, message = lsp.message }
  end
  return {
    range = {
      start = { line = d.lnum, character = d.col },
      ["end"] = { line = d.end_lnum or d.lnum, character = d.end_col or d.col },
    },
    severity = d.severity,
    code = d.code,
    source = d.source,
    message = d.message,
  }
end

---The diagnostics of buffer b, bounded.
local function of_buffer(b)
  local out = {}
  for i, d in ipairs(vim.diagnostic.get(b)) do
    if i > M.bounds.per_document then
      break
    end
    table.insert(out, lsp_diagnostic(d))
  end
  return out
end

---agent/diagnostics: the documents asked for (every buffer with diagnostics
---when none), after waiting up to params.settle ms for those of their
---current text.
---@param params AgentLsp.DiagnosticsParams
---@return AgentLsp.DiagnosticsResult
function M.diagnostics(params)
  M.setup()
  local uris = params.uris or {}
  local bufs, served = {}, {}
  for _, uri in ipairs(uris) do
    local b = vim.uri_to_bufnr(uri)
    if (params.settle or 0) > 0 then
      M.attach_peers(b)
      if #M.clients(b) > 0 then
        table.insert(served, b) -- a buffer no language server serves gets no diagnostics to wait for
      end
    end
    table.insert(bufs, b)
  end
  local settled
  if #served > 0 then
    local start = vim.loop.now()
    settled = vim.wait(params.settle, function()
      for _, b in ipairs(served) do
        if not M.quiet_since(b, start) then
          return false
        end
      end
      return true
    end, 20)
  end
  local items = {}
  if #uris > 0 then
    for i, b in ipairs(bufs) do
      table.insert(items, { uri = uris[i], diagnostics = of_buffer(b) })
    end
  else
    local seen = {}
    for _, d in ipairs(vim.diagnostic.get(nil)) do
      if not seen[d.bufnr] and #items < M.bounds.documents then
        seen[d.bufnr] = true
        local name = vim.api.nvim_buf_get_name(d.bufnr)
        if name ~= "" and not name:match("^%a[%w+.-]*://") then
          table.insert(items, { uri = vim.uri_from_bufnr(d.bufnr), diagnostics = of_buffer(d.bufnr) })
        end
      end
    end
  end
  return { items = items, settled = settled }
end

---The requests the language tools send.
M.methods = {
  ["textDocument/definition"] = true,
  ["textDocument/references"] = true,
  ["textDocument/implementation"] = true,
  ["textDocument/hover"] = true,
  ["textDocument/documentSymbol"] = true,
  ["workspace/symbol"] = true,
}

---How long one request may take, in ms.
M.timeout = 20000

---agent/languageRequest: the first non-empty answer of the language servers
---of the file's buffer (for workspace/symbol, of any buffer), or vim.NIL.
---@param params AgentLsp.LanguageRequestParams
---@return any
function M.request(params)
  if not M.methods[params.method] then
    error(("agent/languageRequest: %s is not one of the language tools' requests"):format(tostring(params.method)))
  end
  local p = params.params or {}
  local b
  if p.textDocument and p.textDocument.uri then
    b = vim.uri_to_bufnr(p.textDocument.uri)
    M.attach_peers(b)
  else
    for _, c in ipairs(compat.all_clients()) do
      if c.name ~= NAME and compat.supports(c, params.method) then
        b = (vim.lsp.get_buffers_by_client_id(c.id) or {})[1]
        if b then
          break
        end
      end
    end
  end
  if not b then
    return vim.NIL
  end
  local supported = false
  for _, c in ipairs(M.clients(b)) do
    supported = supported or compat.supports(c, params.method)
  end
  if not supported then
    return vim.NIL -- buf_request_sync would only complain that no server answers it
  end
  local results = vim.lsp.buf_request_sync(b, params.method, p, M.timeout) or {}
  for _, r in pairs(results) do
    local result = r.result
    if result ~= nil and result ~= vim.NIL and not (vim.tbl_islist(result) and #result == 0) then
      if vim.tbl_islist(result) and #result > M.bounds.items then
        result = vim.list_slice(result, 1, M.bounds.items)
      end
      return result
    end
  end
  return vim.NIL
end

return M
