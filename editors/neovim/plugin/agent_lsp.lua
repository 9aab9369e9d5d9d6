-- Defines the :Agent* commands at startup. Only the command table loads now;
-- the rest of the plugin loads when a command is first used. Configuring is
-- require("agent_lsp").setup({...}), which also starts attaching the client
-- to file buffers (nothing attaches before it).
if vim.g.loaded_agent_lsp then
  return
end
vim.g.loaded_agent_lsp = true

require("agent_lsp.commands").define()
