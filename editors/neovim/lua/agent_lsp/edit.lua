-- Applying the server's workspace edits honestly.
--  * The version check: a TextDocumentEdit carries the version of the text
--    the server computed it against. Neovim's own check (0.7) only prints
--    "newer than edits" and answers applied, and skips version 0 (didOpen's)
--    altogether, applying the edit at stale positions; stale() refuses it.
--  * Buffers the edit loads: a file the edit changes that is not loaded is
--    not attached to the client as the edit loads it (the autostart
--    autocommand skips state.loading) but after the edit applies: its didOpen
--    then carries the edited text, before the answer. Attached as it loads,
--    the edit would reach the server as a didChange Neovim sends only after
--    its debounce, behind the answer, and the server would see no change.
--  * Files the edit creates: Neovim holds an empty document as one empty
--    line, which stays after the text the edit inserts (a file created with
--    "a\n" would hold "a\n\n"); as_sent removes that line.
local compat = require("agent_lsp.compat")
local state = require("agent_lsp.state")

local M = {}

-- uris lists the URIs of the documents a workspace edit changes, each once,
-- in order.
local function uris(we)
  local out, seen = {}, {}
  local function add(uri)
    if uri and not seen[uri] then
      seen[uri] = true
      table.insert(out, uri)
    end
  end
  for _, dc in ipairs(we.documentChanges or {}) do
    add(dc.textDocument and dc.textDocument.uri or dc.uri)
  end
  local keys = vim.tbl_keys(we.changes or {})
  table.sort(keys)
  for _, uri in ipairs(keys) do
    add(uri)
  end
  return out
end

---The file of uri as the user sees it: relative to the cwd where it can be.
---@param uri string
---@return string
function M.name(uri) return vim.fn.fnamemodify(vim.uri_to_fname(uri), ":~:.") end

---Why the workspace edit must not be applied, or nil: one of its
---TextDocumentEdits was computed against a version of its document the
---buffer no longer holds (the user typed since), or for a document that is
---no longer open.
---@param we table a WorkspaceEdit
---@return string|nil reason
function M.stale(we)
  for _, dc in ipairs(we.documentChanges or {}) do
    local doc = dc.textDocument
    local version = doc and doc.version
    if type(version) == "number" then -- null (vim.NIL, or nil) for a file the server has not open
      local current, at = compat.at_version(vim.uri_to_bufnr(doc.uri), version)
      if at == nil then
        return ("%s is no longer open in the editor (the edit was made for version %d)"):format(M.name(doc.uri), version)
      elseif not current then
        return ("%s changed since the edit was made (version %d, the buffer is at %d)"):format(M.name(doc.uri), version, at)
      end
    end
  end
end

---Removes the line Neovim leaves after the text inserted into an empty
---document (its one empty line): the buffer then holds the inserted text.
---@param bufnr integer
function M.trim(bufnr)
  local n = vim.api.nvim_buf_line_count(bufnr)
  if n > 1 and vim.api.nvim_buf_get_lines(bufnr, n - 1, n, false)[1] == "" then
    vim.api.nvim_buf_set_lines(bufnr, n - 1, n, false, {})
  end
end

---Applies workspace edit we as the server sent it, with Neovim's
---apply_workspace_edit; the files it creates hold the text it inserts
---(M.trim). An error is raised.
---@param we table a WorkspaceEdit
---@param encoding string the client's position encoding
---@return { applied: boolean }
function M.as_sent(we, encoding)
  vim.lsp.util.apply_workspace_edit(we, encoding)
  for _, dc in ipairs(we.documentChanges or {}) do
    if dc.kind == "create" then
      M.trim(vim.uri_to_bufnr(dc.uri))
    end
  end
  return { applied = true }
end

---Applies workspace edit we by calling apply, which returns the
---ApplyWorkspaceEditResult: the files of we that apply loads are not attached
---as they load; afterwards every loaded file buffer of we is attached to
---client client_id (didOpen with the edited text). An error apply raises is
---the result's failureReason.
---@param we table a WorkspaceEdit
---@param client_id integer
---@param apply fun(): { applied: boolean, failureReason?: string }
---@return { applied: boolean, failureReason?: string }
function M.apply(we, client_id, apply)
  local bufs = vim.tbl_map(vim.uri_to_bufnr, uris(we))
  for _, b in ipairs(bufs) do
    state.loading[b] = not vim.api.nvim_buf_is_loaded(b) or nil
  end
  local ok, result = pcall(apply)
  for _, b in ipairs(bufs) do
    state.loading[b] = nil
    if vim.api.nvim_buf_is_loaded(b) and vim.bo[b].buftype == "" and not vim.lsp.buf_is_attached(b, client_id) then
      vim.lsp.buf_attach_client(b, client_id)
    end
  end
  if not ok then
    return { applied = false, failureReason = tostring(result) }
  end
  return result
end

return M
