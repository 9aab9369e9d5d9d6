-- luacheck for the plugin and its tests (scripts/lint-lua.sh runs it).
-- The plugin runs on Neovim 0.7.2 and later: LuaJIT, Lua 5.1.
std = "luajit"
globals = { "vim" } -- fields such as vim.g, vim.bo and vim.b are set
max_line_length = false
