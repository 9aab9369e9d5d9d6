-- luacheck for the plugin and its tests (scripts/lint-lua.sh runs it).
-- The plugin runs on Neovim 0.7.2 and later: LuaJIT, Lua 5.1.
std = "luajit"
globals = { "vim" } -- fields such as vim.g, vim.bo and vim.b are set
max_line_length = false

files["tests"] = {
  globals = { "print" }, -- tests silence print while a handler asks its question
  ignore = { "431" }, -- one long file of tests: a test's local may shadow an outer one
}
