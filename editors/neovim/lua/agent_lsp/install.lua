-- The install step of the lazy.nvim spec (lazy.nvim runs it at install and
-- update, before the plugin is on the runtime path, so this file is loaded
-- with dofile and loads its neighbours the same way): the server binary goes
-- into the plugin's bin/, then the help tags are made. With a release URL
-- (the spec's release, else $AGENT_LSP_RELEASE_URL) the binary is that
-- release's asset for this platform, downloaded with curl and checked against
-- the release's SHA256SUMS: a missing entry or another checksum refuses it and
-- installs nothing. Without one, `go install` builds it from the checkout.
-- Either way bin/agent-lsp.install.json records how, which :checkhealth shows.
local here = debug.getinfo(1, "S").source:sub(2):match("^(.*)[/\\]") or "."
local compat = dofile(here .. "/compat.lua")

local M = {}

---The folder of the plugin (editors/neovim): bin/ and doc/ are in it.
M.root = vim.fn.fnamemodify(here .. "/install.lua", ":p:h:h:h")
---The plugin's version (the repository's VERSION): a release URL's {version}.
M.version = dofile(here .. "/version.lua")

---The release's asset names by platform, as scripts/release.sh names them (VS Code's platform names).
local arches = { x86_64 = "x64", amd64 = "x64", AMD64 = "x64", x64 = "x64", aarch64 = "arm64", arm64 = "arm64", ARM64 = "arm64" }
local systems = { Linux = "linux", Darwin = "darwin", Windows_NT = "win32" }

---This machine's platform in the release's names ("linux-x64", "darwin-arm64",
---"win32-x64", ...), or nil when the release has no binary for it.
---@param uname? {sysname: string, machine: string} default vim.loop.os_uname()
---@return string|nil
function M.platform(uname)
  uname = uname or compat.uv.os_uname()
  local sys, arch = systems[uname.sysname], arches[uname.machine]
  return sys and arch and (sys .. "-" .. arch) or nil
end

---The release's file for platform: agent-lsp-linux-x64, agent-lsp-win32-x64.exe.
---@param platform string
---@return string
function M.asset(platform) return "agent-lsp-" .. platform .. (platform:match("^win32") and ".exe" or "") end

---Where the binary goes: bin/agent-lsp (agent-lsp.exe on Windows) in the plugin,
---which the default cmd prefers to agent-lsp on PATH.
---@return string
function M.binary() return M.root .. "/bin/agent-lsp" .. (vim.fn.has("win32") == 1 and ".exe" or "") end

---The install record beside the binary: {how = "release"|"go install", ...}.
---@return string
function M.record_path() return M.root .. "/bin/agent-lsp.install.json" end

---The install record, or nil when the build step did not install the binary.
---@return table|nil
function M.record()
  local ok, lines = pcall(vim.fn.readfile, M.record_path())
  if not ok then
    return nil
  end
  local decoded, r = pcall(vim.fn.json_decode, table.concat(lines, "\n"))
  return decoded and type(r) == "table" and r or nil
end

---A release URL's checks: https, a file:// folder, or http only to this
---machine (a download and its checksums from the same plain-http host prove
---nothing). Returns an error, or nil when url may be used.
---@param url string
---@return string|nil
function M.url_problem(url)
  if url:match("^https://") or url:match("^file://") then
    return nil
  end
  local host = url:match("^http://%[([^%]]+)%]") or url:match("^http://([^/:]+)")
  if host == "127.0.0.1" or host == "localhost" or host == "::1" then
    return nil
  end
  return ("release URL %s: want https:// (http:// only to this machine, or a file:// folder)"):format(url)
end

---Runs argv (in cwd, with env added to the environment) to its end; error()s
---with its output when it fails.
---@param what string what the command does, for the error
---@param argv string[]
---@param opts? {cwd?: string, env?: table<string, string>}
---@return string output stdout and stderr
local function run(what, argv, opts)
  opts = opts or {}
  local out = {}
  local collect = function(_, data) vim.list_extend(out, data) end
  local ok, job = pcall(vim.fn.jobstart, argv, { cwd = opts.cwd, env = opts.env, on_stdout = collect, on_stderr = collect })
  if not ok or job <= 0 then
    error(("agent-lsp install: %s: %s did not start (is it installed?)"):format(what, argv[1]), 0)
  end
  local code = vim.fn.jobwait({ job }, 600000)[1]
  if code == -1 then
    vim.fn.jobstop(job)
    error(("agent-lsp install: %s did not end within 10 minutes"):format(what), 0)
  end
  local text = vim.trim(table.concat(out, "\n"))
  if code ~= 0 then
    error(("agent-lsp install: %s failed (exit %d): %s"):format(what, code, text), 0)
  end
  return text
end

---The SHA-256 of file, in hex: sha256sum, else shasum (macOS), else certutil (Windows).
---@param file string
---@return string
function M.sha256(file)
  local tools = {
    { "sha256sum", "--", file },
    { "shasum", "-a", "256", "--", file },
    { "certutil", "-hashfile", file, "SHA256" },
  }
  for _, argv in ipairs(tools) do
    if vim.fn.executable(argv[1]) == 1 then
      -- sha256sum and shasum print "HEX  FILE"; certutil a line of hex, spaced on older Windows.
      for line in run("the checksum of " .. file, argv):gmatch("[^\r\n]+") do
        local hex = line:match("^(%x+)%s") or line:gsub("%s", "")
        if #hex == 64 and hex:match("^%x+$") then
          return hex:lower()
        end
      end
    end
  end
  error("agent-lsp install: no tool to compute a SHA-256 (sha256sum, shasum or certutil)", 0)
end

---The checksum SHA256SUMS (sha256sum's format: "HEX  NAME" or "HEX *NAME") gives name, or nil.
---@param sums string the file's text
---@param name string
---@return string|nil
function M.expected(sums, name)
  for line in (sums .. "\n"):gmatch("([^\n]*)\n") do
    local hex, file = line:match("^(%x+)%s+%*?(.-)%s*$")
    if hex and #hex == 64 and file == name then
      return hex:lower()
    end
  end
  return nil
end

local function write_record(r) vim.fn.writefile({ vim.fn.json_encode(r) }, M.record_path()) end

-- download fetches the platform's asset of the release at url into bin/
-- after checking it against the release's SHA256SUMS; it error()s, leaving
-- any binary already there as it was, when a check fails.
local function download(url, platform)
  local problem = M.url_problem(url)
  if problem then
    error("agent-lsp install: " .. problem, 0)
  end
  local name = M.asset(platform)
  local dir = M.root .. "/bin"
  vim.fn.mkdir(dir, "p")
  local tmp = dir .. "/.download"
  vim.fn.delete(tmp, "rf")
  vim.fn.mkdir(tmp, "p")
  local ok, err = pcall(function()
    local curl = { "curl", "--fail", "--silent", "--show-error", "--location", "--retry", "2", "--output" }
    run("download " .. url .. "/SHA256SUMS", vim.list_extend(vim.deepcopy(curl), { tmp .. "/SHA256SUMS", url .. "/SHA256SUMS" }))
    local want = M.expected(table.concat(vim.fn.readfile(tmp .. "/SHA256SUMS"), "\n"), name)
    if not want then
      error(("agent-lsp install: %s/SHA256SUMS has no checksum of %s: refused, nothing installed"):format(url, name), 0)
    end
    run("download " .. url .. "/" .. name, vim.list_extend(vim.deepcopy(curl), { tmp .. "/" .. name, url .. "/" .. name }))
    local got = M.sha256(tmp .. "/" .. name)
    if got ~= want then
      error(("agent-lsp install: checksum mismatch: %s/%s has SHA-256 %s, but the release's SHA256SUMS says %s: refused, nothing installed (a damaged or tampered download)"):format(url, name, got, want), 0)
    end
    local bin = M.binary()
    if vim.fn.has("win32") == 1 then
      vim.fn.delete(bin) -- a rename does not replace a file there
    end
    assert(compat.uv.fs_rename(tmp .. "/" .. name, bin))
    assert(compat.uv.fs_chmod(bin, 493)) -- 0755
    write_record({ how = "release", url = url .. "/" .. name, sha256 = got, platform = platform })
  end)
  vim.fn.delete(tmp, "rf")
  if not ok then
    error(err, 0)
  end
end

-- go_install builds the server from the checkout at repo into bin/.
local function go_install(repo)
  if vim.fn.executable("go") ~= 1 then
    error("agent-lsp install: no release URL is set and go is not on PATH: set release (or $AGENT_LSP_RELEASE_URL) to a release, or install Go", 0)
  end
  vim.fn.mkdir(M.root .. "/bin", "p")
  run("go install ./cmd/agent-lsp", { "go", "install", "./cmd/agent-lsp" }, { cwd = repo, env = { GOBIN = M.root .. "/bin" } })
  write_record({ how = "go install", dir = repo })
end

---The build step: installs the server binary into the plugin's bin/ (from
---the release at opts.release or $AGENT_LSP_RELEASE_URL, "{version}" there
---being the plugin's version; else with go install from the checkout), checks
---that it runs, and makes the help tags. Errors say what failed and what to do.
---@param plugin {dir: string}|string lazy.nvim's plugin (or the repository's folder)
---@param opts? {release?: string}
---@return string message what was installed
function M.build(plugin, opts)
  opts = opts or {}
  local repo = type(plugin) == "table" and plugin.dir or plugin
  local url = opts.release or vim.env.AGENT_LSP_RELEASE_URL
  local how
  if url and url ~= "" then
    url = url:gsub("{version}", M.version):gsub("/+$", "")
    local platform = M.platform()
    if not platform then
      local u = compat.uv.os_uname()
      error(("agent-lsp install: the release has no binary for %s/%s: set no release URL to build it with go install"):format(u.sysname, u.machine), 0)
    end
    download(url, platform)
    how = "downloaded " .. url .. "/" .. M.asset(platform) .. " (SHA-256 checked against SHA256SUMS)"
  else
    go_install(repo)
    how = "built with go install from " .. repo
  end
  local version = run("agent-lsp --version", { M.binary(), "--version" })
  vim.cmd("helptags " .. vim.fn.fnameescape(M.root .. "/doc"))
  local message = ("agent-lsp: %s: %s"):format(how, version)
  vim.notify(message, vim.log.levels.INFO)
  return message
end

return M
