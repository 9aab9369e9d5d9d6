-- The install recipe of README.md, loaded the way lazy.nvim loads it (lazy.nvim
-- itself needs Neovim 0.8+ and the network): the spec between the README's
-- "lazy spec" markers is evaluated and its build function runs with the plugin
-- in a copy of the repository (AGENT_LSP_TEST_LAZY_DIR, that run.sh made
-- without editors/neovim/bin and without help tags): first without a release
-- URL (go install, with the module proxy off), then with a release served on
-- loopback by this test (the download checked against its SHA256SUMS), then
-- with releases whose checksum is wrong or missing (refused, the installed
-- binary untouched). Then the plugin folder goes on the runtime path and
-- config(plugin, opts) runs: the commands exist, :help agent-lsp opens, the
-- default cmd is the installed binary (before PATH), it serves a buffer, and
-- :checkhealth says where it came from.
local here = debug.getinfo(1, "S").source:match("^@(.*)/")
local harness = dofile(here .. "/harness.lua")
local test = harness.test
local dir = assert(os.getenv("AGENT_LSP_TEST_LAZY_DIR"), "AGENT_LSP_TEST_LAZY_DIR")
local ws = assert(os.getenv("AGENT_LSP_TEST_WS"), "AGENT_LSP_TEST_WS")

local function install_version() return dofile(dir .. "/editors/neovim/lua/agent_lsp/version.lua") end

local spec
local plugin = { dir = dir, name = "agent-lsp" }
local bin = dir .. "/editors/neovim/bin/agent-lsp"

local function sha256(file) return vim.fn.system({ "sha256sum", file }):match("^(%x+)") end

-- The build step's messages (vim.notify, which lazy.nvim shows).
local notified, notify = {}, vim.notify
vim.notify = function(msg) table.insert(notified, msg) end

local function record() return vim.fn.json_decode(table.concat(vim.fn.readfile(dir .. "/editors/neovim/bin/agent-lsp.install.json"), "\n")) end

---Serves the files under root over HTTP on 127.0.0.1 (a port of its own),
---from this Neovim's event loop (it runs while the build step waits for curl).
---@return integer port
---@return string[] requests the paths asked for
local function serve(root)
  local uv = vim.loop
  local server = uv.new_tcp()
  assert(server:bind("127.0.0.1", 0))
  local requests = {}
  server:listen(16, function()
    local c = uv.new_tcp()
    server:accept(c)
    local buf = ""
    c:read_start(function(_, chunk)
      if not chunk then
        return c:close()
      end
      buf = buf .. chunk
      if not buf:find("\r\n\r\n", 1, true) then
        return
      end
      c:read_stop()
      local path = buf:match("^GET (%S+)") or ""
      table.insert(requests, path)
      local f = not path:find("..", 1, true) and io.open(root .. path, "rb")
      local body = f and f:read("*a")
      if f then
        f:close()
      end
      local status = body and "200 OK" or "404 Not Found"
      c:write(("HTTP/1.1 %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s"):format(status, body and #body or 0, body or ""), function() c:close() end)
    end)
  end)
  return server:getsockname().port, requests
end

test("the README's lazy.nvim spec evaluates to a spec with a build function and config", function()
  local readme = table.concat(vim.fn.readfile(dir .. "/editors/neovim/README.md"), "\n")
  local block = readme:match("<!%-%- begin: lazy spec %-%->\n```lua\n(.-)\n```\n<!%-%- end: lazy spec %-%->")
  assert(block, "no lazy spec in README.md")
  spec = assert(loadstring("return " .. block))()
  assert(type(spec.build) == "function" and type(spec.config) == "function", vim.inspect(spec))
end)

test("without a release URL its build installs the server with go install, offline, and makes the help tags", function()
  assert(vim.fn.filereadable(dir .. "/editors/neovim/doc/tags") == 0, "help tags before the build")
  assert(vim.fn.executable(bin) == 0, "a binary before the build")
  vim.env.AGENT_LSP_RELEASE_URL = nil
  vim.env.GOPROXY = "off" -- no module download: the checkout and Go's cache only
  spec.build(plugin)
  vim.env.GOPROXY = nil
  assert(vim.fn.executable(bin) == 1, "no editors/neovim/bin/agent-lsp")
  assert(vim.fn.system({ bin, "--version" }):match("^agent%-lsp " .. vim.pesc(install_version())), "its --version")
  assert(vim.fn.filereadable(dir .. "/editors/neovim/doc/tags") == 1, "no help tags")
  local r = record()
  assert(r.how == "go install" and r.dir == dir, vim.inspect(r))
  assert(notified[#notified]:find("^agent%-lsp: built with go install from " .. vim.pesc(dir) .. ": agent%-lsp "), vim.inspect(notified))
end)

-- A release as scripts/release.sh lays it out (the test's own server binary
-- stands in for the platform's asset), served on loopback under /v{version}.
local release = vim.fn.tempname()
local install = dofile(dir .. "/editors/neovim/lua/agent_lsp/install.lua")
local asset = install.asset(assert(install.platform(), "no release platform for this machine"))
local port, requests = serve(release)
local url = ("http://127.0.0.1:%d/v{version}"):format(port)
local function publish(folder, sums)
  local d = release .. "/" .. folder
  vim.fn.mkdir(d, "p")
  vim.fn.system({ "cp", assert(os.getenv("AGENT_LSP_TEST_BIN"), "AGENT_LSP_TEST_BIN"), d .. "/" .. asset })
  vim.fn.writefile(sums(sha256(d .. "/" .. asset)), d .. "/SHA256SUMS")
  return d .. "/" .. asset
end

test("with a release URL its build downloads the platform's binary over loopback and checks it against SHA256SUMS", function()
  local served = publish("v" .. install.version, function(sum) return { ("%s  agent-lsp-other-platform"):format(("0"):rep(64)), ("%s  %s"):format(sum, asset) } end)
  vim.fn.delete(dir .. "/editors/neovim/doc/tags")
  vim.env.AGENT_LSP_RELEASE_URL = url
  spec.build(plugin)
  assert(vim.deep_equal(requests, { "/v" .. install.version .. "/SHA256SUMS", "/v" .. install.version .. "/" .. asset }), vim.inspect(requests))
  assert(sha256(bin) == sha256(served), "the installed binary is not the release's")
  assert(vim.fn.executable(bin) == 1, "the downloaded binary is not executable")
  assert(vim.fn.filereadable(dir .. "/editors/neovim/doc/tags") == 1, "no help tags")
  local r = record()
  local want = ("http://127.0.0.1:%d/v%s/%s"):format(port, install.version, asset)
  assert(r.how == "release" and r.url == want and r.sha256 == sha256(served), vim.inspect(r))
  assert(notified[#notified]:find("agent-lsp: downloaded " .. want .. " (SHA-256 checked against SHA256SUMS): agent-lsp ", 1, true), vim.inspect(notified))
end)

test("a download whose checksum is not the release's, or that SHA256SUMS does not list, is refused and installs nothing", function()
  local before = sha256(bin)
  publish("bad", function() return { ("%s  %s"):format(("ab"):rep(32), asset) } end)
  vim.env.AGENT_LSP_RELEASE_URL = ("http://127.0.0.1:%d/bad"):format(port)
  local ok, err = pcall(spec.build, plugin)
  assert(not ok and err:find("checksum mismatch", 1, true) and err:find(("ab"):rep(32), 1, true) and err:find("refused", 1, true), tostring(err))
  assert(sha256(bin) == before and record().how == "release", "the refused download replaced the binary")
  publish("unlisted", function(sum) return { ("%s  agent-lsp-other-platform"):format(sum) } end)
  vim.env.AGENT_LSP_RELEASE_URL = ("http://127.0.0.1:%d/unlisted"):format(port)
  ok, err = pcall(spec.build, plugin)
  assert(not ok and err:find("has no checksum of " .. asset, 1, true), tostring(err))
  vim.env.AGENT_LSP_RELEASE_URL = "http://example.com/release"
  ok, err = pcall(spec.build, plugin)
  assert(not ok and err:find("want https://", 1, true), tostring(err))
  assert(sha256(bin) == before, "a refused release replaced the binary")
  assert(vim.fn.isdirectory(dir .. "/editors/neovim/bin/.download") == 0, "the download's leftovers")
  vim.env.AGENT_LSP_RELEASE_URL = nil
end)

test("lazy.nvim's loading: the plugin folder on the runtime path, then config(plugin, opts)", function()
  vim.notify = notify
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

test(":checkhealth agent_lsp says how the binary was found: downloaded from the release, built with go install, on PATH", function()
  vim.cmd("checkhealth agent_lsp")
  local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
  local want = ("server binary: the plugin's own, downloaded by the build step from http://127.0.0.1:%d/v%s/%s (SHA-256 %s, checked against the release's SHA256SUMS)"):format(port, install.version, asset, sha256(bin))
  assert(text:find(want, 1, true), text)
  vim.cmd("bwipeout!")
  local health = require("agent_lsp.health")
  local built = health.found(bin, install.binary(), { how = "go install", dir = dir }, bin)
  assert(built == "the plugin's own, built by the build step with go install from " .. dir, built)
  local path = health.found("agent-lsp", install.binary(), nil, "/usr/local/bin/agent-lsp")
  assert(path:find("^found on PATH at /usr/local/bin/agent%-lsp"), path)
  local option = health.found("/opt/agent-lsp", install.binary(), { how = "release" }, "/opt/agent-lsp")
  assert(option == "set by the cmd option: /opt/agent-lsp", option)
end)

harness.finish()
