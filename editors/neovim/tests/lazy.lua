-- The install recipe of README.md, loaded the way lazy.nvim loads it (lazy.nvim
-- itself needs Neovim 0.8+ and the network): the spec between the README's
-- "lazy spec" markers is evaluated, its build steps run as lazy.nvim runs them
-- (a string as a shell command in the plugin's folder, a function with the
-- plugin) in a copy of the repository (AGENT_LSP_TEST_LAZY_DIR, that run.sh
-- made without editors/neovim/bin and without help tags), the plugin folder
-- goes on the runtime path and config(plugin, opts) runs. Then: the build made
-- the binary and the help tags, the commands exist, :help agent-lsp opens, the
-- default cmd is the binary the build made (before PATH), and that binary
-- serves a buffer.
local here = debug.getinfo(1, "S").source:match("^@(.*)/")
local harness = dofile(here .. "/harness.lua")
local test = harness.test
local dir = assert(os.getenv("AGENT_LSP_TEST_LAZY_DIR"), "AGENT_LSP_TEST_LAZY_DIR")
local ws = assert(os.getenv("AGENT_LSP_TEST_WS"), "AGENT_LSP_TEST_WS")

local spec
local plugin = { dir = dir, name = "agent-lsp" }

test("the README's lazy.nvim spec evaluates to a spec with build steps and config", function()
  local readme = table.concat(vim.fn.readfile(dir .. "/editors/neovim/README.md"), "\n")
  local block = readme:match("<!%-%- begin: lazy spec %-%->\n```lua\n(.-)\n```\n<!%-%- end: lazy spec %-%->")
  assert(block, "no lazy spec in README.md")
  spec = assert(loadstring("return " .. block))()
  assert(type(spec.build) == "table" and #spec.build > 0 and type(spec.config) == "function", vim.inspect(spec))
end)

test("its build steps, run as lazy.nvim runs them, make the binary and the help tags", function()
  assert(vim.fn.filereadable(dir .. "/editors/neovim/doc/tags") == 0, "help tags before the build")
  for i, step in ipairs(spec.build) do
    if type(step) == "function" then
      step(plugin)
    else
      assert(type(step) == "string" and step:sub(1, 1) ~= ":", ("build step %d: %s"):format(i, vim.inspect(step)))
      local out = {}
      local job = vim.fn.jobstart({ "sh", "-c", step }, {
        cwd = dir,
        on_stderr = function(_, data) vim.list_extend(out, data) end,
      })
      local code = vim.fn.jobwait({ job }, 240000)[1]
      assert(code == 0, ("build step %d exited %d: %s"):format(i, code, table.concat(out, "\n")))
    end
  end
  assert(vim.fn.executable(dir .. "/editors/neovim/bin/agent-lsp") == 1, "no editors/neovim/bin/agent-lsp")
  assert(vim.fn.filereadable(dir .. "/editors/neovim/doc/tags") == 1, "no help tags")
end)

test("lazy.nvim's loading: the plugin folder on the runtime path, then config(plugin, opts)", function()
  vim.opt.rtp:append(dir) -- lazy.nvim adds the plugin's folder (here the repository, which has no plugin/)
  spec.config(plugin, spec.opts or {})
  for _, name in ipairs({ "AgentRun", "AgentChat", "AgentModel", "AgentWorkspace" }) do
    assert(vim.fn.exists(":" .. name) == 2, ":" .. name .. " is not defined")
  end
  vim.cmd("help agent-lsp")
  assert(vim.fn.expand("%:t") == "agent-lsp.txt", vim.fn.expand("%:t"))
  vim.cmd("close")
  local doc, tagged = require("agent_lsp.health").helptags()
  assert(doc == dir .. "/editors/neovim/doc" and tagged, vim.inspect({ doc, tagged }))
end)

test("the plugin uses the binary it built before PATH, and it serves a buffer", function()
  local config = require("agent_lsp.config")
  assert(config.options.cmd[1] == dir .. "/editors/neovim/bin/agent-lsp", vim.inspect(config.options.cmd))
  vim.cmd("edit " .. ws .. "/greet.go")
  local ok = vim.wait(20000, function()
    for _, c in pairs(vim.lsp.buf_get_clients(0)) do
      if c.name == "agent-lsp" and c.initialized then
        return true
      end
    end
  end, 50)
  assert(ok, "the built binary did not initialize")
  for _, c in pairs(vim.lsp.get_active_clients()) do
    c.stop()
  end
end)

harness.finish()
