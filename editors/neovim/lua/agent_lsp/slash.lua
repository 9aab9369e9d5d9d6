-- Slash commands in the chat: the completions of "/name" at the start of a
-- prompt line, from agent.commands (the built-ins, the user's and the
-- project's command files). The server expands "/name arguments" itself
-- when the prompt is sent (agent.run), so nothing here changes the prompt.
local compat = require("agent_lsp.compat")

local M = {}

---The complete-items of the slash commands whose "/name" starts with base,
---asked of the server with a short wait (a completion cannot wait long);
---files that cannot run are left out.
---@param c table a vim.lsp client
---@param base string what the user typed, "/" included
---@return table[] items for complete(): word, menu (the argument hint), info
function M.items(c, base)
  local res = compat.call(c, "request_sync", "workspace/executeCommand", { command = "agent.commands", arguments = { vim.empty_dict() } }, 2000, 0)
  local r = res and res.result
  local items = {}
  if type(r) ~= "table" or type(r.commands) ~= "table" then
    return items
  end
  for _, cmd in ipairs(r.commands) do
    local word = "/" .. cmd.name
    if not cmd.error and word:sub(1, #base) == base then
      table.insert(items, {
        word = word .. " ",
        abbr = word,
        menu = cmd.argumentHint or "",
        info = (cmd.description or "") .. " (" .. (cmd.source or "") .. ")",
        kind = cmd.source == "builtin" and "b" or cmd.source == "user" and "u" or "p",
      })
    end
  end
  return items
end

return M
