-- agent/saveDocuments: before a command runs (a build, the tests), the server
-- asks to save the documents its session edited that have unsaved changes,
-- since the command reads the disk. Each is written with :update in its
-- buffer (so BufWritePre and BufWritePost run, formatters included); what
-- cannot be written is answered with the reason, which the command's result
-- then gives the model. Only the documents asked about are written.
local M = {}

-- skips: the buffers not written, each test with its reason.
---@type { test: fun(b: integer): boolean, reason: fun(b: integer): string }[]
local skips = {
  {
    test = function(b) return vim.bo[b].buftype ~= "" end,
    reason = function(b) return ("not a file buffer (buftype=%s)"):format(vim.bo[b].buftype) end,
  },
  {
    test = function(b) return not vim.bo[b].modifiable end,
    reason = function() return "the buffer is not modifiable" end,
  },
}

---Saves the document of uri; returns why it could not, nil when the disk now
---holds the buffer's text (also when there was nothing to write: the buffer
---is not loaded, or not modified).
---@param uri string
---@return string|nil reason
function M.save(uri)
  local b = vim.uri_to_bufnr(uri)
  if not vim.api.nvim_buf_is_loaded(b) then
    return nil
  end
  for _, skip in ipairs(skips) do
    if skip.test(b) then
      return skip.reason(b)
    end
  end
  if not vim.bo[b].modified then
    return nil
  end
  local ok, err
  vim.api.nvim_buf_call(b, function()
    ok, err = pcall(vim.cmd, "silent update")
  end)
  if not ok then
    -- "Vim(update):E45: 'readonly' option is set ...", an autocommand's error
    -- (a BufWritePre formatter), ...: its first line, without the command.
    return (vim.split(tostring(err), "\n", { plain = true })[1]:gsub("^Vim%(%a+%):", ""))
  end
  if vim.bo[b].modified then
    return "not written: the buffer is still modified after :update (a BufWriteCmd that did not write?)"
  end
end

---The answer to agent/saveDocuments for uris: each saved, or failed with its
---reason; with enabled false (save_before_commands), none is written.
---@param uris string[]
---@param enabled boolean
---@return AgentLsp.SaveDocumentsResult
function M.documents(uris, enabled)
  local out = { saved = {}, failed = {} }
  for _, uri in ipairs(uris) do
    local reason = "save_before_commands is off"
    if enabled then
      reason = M.save(uri)
    end
    if reason then
      table.insert(out.failed, { uri = uri, reason = reason })
    else
      table.insert(out.saved, uri)
    end
  end
  return out
end

return M
