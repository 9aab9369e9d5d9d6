-- :checkhealth agent_lsp: Neovim and the review mode it gets, the plugin's
-- version and help tags, the server binary (how it was found: installed by
-- the build step from a release or with go install, the cmd option, PATH)
-- and its version (against the plugin's), `agent-lsp doctor --json` (settings, the API key's presence, a
-- live check of the endpoint, the store, the sandbox), the running clients,
-- settings that will misbehave, and the integrations found. The API key is
-- never shown: doctor reports only whether it is present.
local compat = require("agent_lsp.compat")
local config = require("agent_lsp.config")
local version = require("agent_lsp.version")

local M = {}

---The plugins the agent works with when they are installed, by module name.
M.integrations = {
  { module = "telescope", what = "pickers (vim.ui.select through telescope-ui-select)" },
  { module = "fzf-lua", what = "pickers (vim.ui.select through fzf-lua's register_ui_select)" },
  { module = "snacks", what = "pickers and notifications" },
  { module = "fidget", what = "shows the agent's $/progress" },
  { module = "lualine", what = "statusline: require('agent_lsp').statusline()" },
}

---Runs argv with env, waiting at most timeout_ms; nil output when it could
---not start or timed out.
---@param argv string[]
---@param env? table<string, string>
---@param timeout_ms integer
---@return string|nil output stdout
---@return integer code the exit code (-1: timed out, -2: did not start)
function M.run(argv, env, timeout_ms)
  local out = {}
  local ok, job = pcall(vim.fn.jobstart, argv, {
    env = env,
    stdout_buffered = true,
    on_stdout = function(_, data) out = data end,
  })
  if not ok or job <= 0 then
    return nil, -2
  end
  local code = vim.fn.jobwait({ job }, timeout_ms)[1]
  if code == -1 then
    vim.fn.jobstop(job)
    return nil, -1
  end
  return table.concat(out, "\n"), code
end

-- doctor_argv is the doctor command for the options in effect: the settings
-- the plugin sends in initializationOptions that doctor has flags for, and
-- the workspace folders of the running clients (else the cwd). mcp_file is
-- a file that holds mcp_servers in the .mcp.json shape (doctor has no flag
-- for the editor's servers), or nil.
local function doctor_argv(bin, o, folders, mcp_file)
  local argv = { bin, "doctor", "--json" }
  local flags = { model = "--model", base_url = "--base-url", store = "--store", mcp_timeout = "--mcp-timeout", mcp_idle = "--mcp-idle" }
  local names = vim.tbl_keys(flags)
  table.sort(names)
  for _, key in ipairs(names) do
    if o[key] then
      vim.list_extend(argv, { flags[key], tostring(o[key]) })
    end
  end
  for _, f in ipairs(o.mcp_config_files or {}) do
    vim.list_extend(argv, { "--mcp-config", vim.fn.expand(f) })
  end
  if mcp_file then
    vim.list_extend(argv, { "--mcp-config", mcp_file })
  end
  for _, name in ipairs(o.mcp_allow or {}) do
    vim.list_extend(argv, { "--allow-mcp", name })
  end
  for _, f in ipairs(folders) do
    vim.list_extend(argv, { "--workspace", f })
  end
  return argv
end

-- mcp_servers_file writes o.mcp_servers to a temporary file in the .mcp.json
-- shape for doctor, and returns its name (nil without servers).
local function mcp_servers_file(o)
  if type(o.mcp_servers) ~= "table" or next(o.mcp_servers) == nil then
    return nil
  end
  local name = vim.fn.tempname()
  vim.fn.writefile({ vim.fn.json_encode({ mcpServers = config.mcp_servers_json(o.mcp_servers) }) }, name)
  return name
end

-- mcp_report reports a project's MCP servers from doctor's report; the
-- servers of mcp_file are mcp_servers'.
local function mcp_report(h, p, mcp_file)
  for _, m in ipairs(type(p.mcp) == "table" and p.mcp or {}) do
    local from = m.origin == mcp_file and "mcp_servers" or (m.source == "project" and "the repository's .mcp.json" or tostring(m.origin))
    local line = ("MCP server %s of %s (%s, from %s): %s"):format(tostring(m.name), tostring(p.name), tostring(m.transport), from, tostring(m.command))
    if m.approval == "needed" then
      h.info(line .. " — the repository's: you are asked before it starts (or name it in mcp_allow)")
    else
      h.ok(line)
    end
  end
end

-- language_report reports the language servers agent-lsp would start for a
-- project (doctor's report): here Neovim's own answer the agent, so they
-- serve only runs without an editor (headless, ACP).
function M.language_report(h, p)
  for _, l in ipairs(type(p.languageServers) == "table" and p.languageServers or {}) do
    local head = ("language server of %s for headless runs"):format(tostring(p.name))
    if l.found then
      h.info(("%s: %s (%s, %s)"):format(head, tostring(l.command), tostring(l.path), tostring(l.source)))
    else
      h.info(("%s: none — %s"):format(head, tostring(l.note)))
    end
  end
end

-- language_clients reports Neovim's language servers: in Neovim they answer
-- the agent (its diagnostics after each edit, definitions, references).
local function language_clients(h)
  local names = {}
  for _, c in ipairs(compat.all_clients()) do
    if c.name ~= "agent-lsp" then
      local bufs = vim.lsp.get_buffers_by_client_id and #vim.lsp.get_buffers_by_client_id(c.id) or 0
      table.insert(names, ("%s (%d buffers)"):format(c.name, bufs))
    end
  end
  if #names > 0 then
    h.ok("the agent sees what these language servers see: " .. table.concat(names, ", "))
  else
    h.info("no language server is attached: the agent's edits carry no diagnostics, and its symbol tools answer nothing, until one is (gopls, typescript-language-server, ... through nvim-lspconfig or vim.lsp.start)")
  end
end

-- prefixes lists the global normal-mode mappings that key is a prefix of.
local function prefixes(key)
  local found = {}
  local want = vim.api.nvim_replace_termcodes(key, true, true, true)
  for _, m in ipairs(vim.api.nvim_get_keymap("n")) do
    local lhs = vim.api.nvim_replace_termcodes(m.lhs, true, true, true)
    if #lhs > #want and lhs:sub(1, #want) == want then
      table.insert(found, m.lhs)
    end
  end
  return found
end

---The settings that will misbehave: a bare * allow rule, review keys that are
---the prefix of a global mapping (the review maps them nowait, which hides
---those mappings in the review).
---@param o AgentLsp.Config
---@return string[]
function M.setting_problems(o)
  local out = {}
  for _, rule in ipairs(o.allow or {}) do
    if vim.trim(rule) == "*" then
      table.insert(out, 'allow has a bare "*": every command runs without asking (only deny rules stop one)')
    end
  end
  local names = vim.tbl_keys(o.review_keys or {})
  table.sort(names)
  for _, name in ipairs(names) do
    local key = o.review_keys[name]
    local hidden = prefixes(key)
    if #hidden > 0 then
      table.insert(out, ("review key %s (%s) is the prefix of the global mappings %s: in the review it acts at once and hides them"):format(key, name, table.concat(hidden, ", ")))
    end
  end
  return out
end

-- Sections ----------------------------------------------------------------------

local function neovim(h)
  local v = vim.version()
  local nvim_version = ("%d.%d.%d"):format(v.major, v.minor, v.patch)
  if compat.requests_in_coroutine() then
    h.ok(("Neovim %s: the review of an edit waits for its mappings (server requests run in a coroutine)"):format(nvim_version))
  else
    h.ok(("Neovim %s: the review of an edit reads its keys in a prompt while the server waits (server requests run synchronously before 0.10)"):format(nvim_version))
  end
end

---The help tags of the plugin's doc/agent-lsp.txt: the folder that holds it
---(nil when no such file is on the runtime path) and whether the tags file
---beside it has the agent-lsp tag.
---@return string|nil doc
---@return boolean tagged
function M.helptags()
  local txt = vim.api.nvim_get_runtime_file("doc/agent-lsp.txt", false)[1]
  if not txt then
    return nil, false
  end
  local doc = vim.fn.fnamemodify(txt, ":h")
  local ok, lines = pcall(vim.fn.readfile, doc .. "/tags")
  if ok then
    for _, line in ipairs(lines) do
      if line:sub(1, 10) == "agent-lsp\t" then
        return doc, true
      end
    end
  end
  return doc, false
end

local function plugin(h)
  h.ok(("plugin version %s"):format(version))
  local doc, tagged = M.helptags()
  if tagged then
    h.ok(("help: :help agent-lsp (tags in %s)"):format(doc))
  elseif doc then
    h.warn(("help tags are missing in %s: :help agent-lsp fails until they are made"):format(doc), {
      ("run :helptags %s (lazy.nvim's build step does it on install and update)"):format(vim.fn.fnameescape(doc)),
    })
  else
    h.warn("doc/agent-lsp.txt is not on the runtime path: add the plugin's folder (editors/neovim), not the repository's root")
  end
end

---The version in `agent-lsp --version`'s output ("agent-lsp 0.2.0 (go1.26 linux/amd64)").
---@param out string
---@return string|nil
function M.server_version(out) return out:match("^agent%-lsp (%S+)") end

---How the server binary bin (cmd[1]) was found: the plugin's own (plugin_bin,
---installed by the build step as its record says: downloaded from a release
---and checked, or built with go install), agent-lsp on PATH (at path), or
---the cmd option.
---@param bin string
---@param plugin_bin string the binary the build step installs
---@param record table|nil the build step's install record (install.record())
---@param path string vim.fn.exepath(bin)
---@return string
function M.found(bin, plugin_bin, record, path)
  local function full(p) return (vim.fn.fnamemodify(p, ":p"):gsub("%.exe$", "")) end
  if full(bin) == full(plugin_bin) then
    if record and record.how == "release" then
      return ("the plugin's own, downloaded by the build step from %s (SHA-256 %s, checked against the release's SHA256SUMS)"):format(tostring(record.url), tostring(record.sha256))
    elseif record and record.how == "go install" then
      return ("the plugin's own, built by the build step with go install from %s"):format(tostring(record.dir))
    end
    return "the plugin's own bin/agent-lsp, not installed by the build step (no install record)"
  elseif bin == "agent-lsp" then
    return ("found on PATH at %s (the plugin has no binary of its own: its build step installs one)"):format(path)
  end
  return ("set by the cmd option: %s"):format(path ~= "" and path or bin)
end

-- binary reports the server binary, how it was found and whether its version
-- is the plugin's; it returns its path, or nil when missing.
local function binary(h, o)
  local bin = o.cmd and o.cmd[1]
  if not bin or vim.fn.executable(bin) ~= 1 then
    h.error(("server binary not found: %s"):format(tostring(bin)), {
      "run the lazy.nvim spec's build step (:Lazy build agent-lsp): it installs the release's binary, or builds it with go install",
      "or build it: go build -o editors/neovim/bin/agent-lsp ./cmd/agent-lsp (the plugin finds it there), or put agent-lsp on PATH",
      "or set cmd in require('agent_lsp').setup({ cmd = { '/path/to/agent-lsp' } })",
    })
    return nil
  end
  local path = vim.fn.exepath(bin)
  local install = require("agent_lsp.install")
  h.info("server binary: " .. M.found(bin, install.binary(), install.record(), path))
  local out, code = M.run({ bin, "--version" }, nil, 5000)
  local v = code == 0 and out and M.server_version(out)
  if v == version then
    h.ok(("server: %s (%s)"):format(vim.trim(out), path ~= "" and path or bin))
  elseif v then
    h.warn(("server: %s (%s) is not the plugin's version %s"):format(vim.trim(out), path ~= "" and path or bin, version), {
      "run the build step again (:Lazy build agent-lsp), or rebuild the server from the plugin's checkout: go build -o editors/neovim/bin/agent-lsp ./cmd/agent-lsp",
      "or update the plugin to the server's version",
    })
  else
    h.warn(("server %s did not tell its version (exit %d)"):format(bin, code))
  end
  return bin
end

local function doctor(h, o, bin)
  local folders = {}
  for _, c in ipairs(compat.get_clients("agent-lsp")) do
    for _, f in ipairs(c.workspace_folders or {}) do
      if f.uri then
        table.insert(folders, vim.uri_to_fname(f.uri))
      end
    end
  end
  if #folders == 0 then
    folders = { compat.uv.cwd() }
  end
  local env = o.cmd_env and vim.tbl_extend("force", vim.fn.environ(), o.cmd_env) or nil
  if o.api_key_env and o.api_key_env ~= "OPENAI_API_KEY" then
    -- doctor reads the key from OPENAI_API_KEY: hand it the one apiKeyEnv names (never shown).
    env = env or vim.fn.environ()
    env.OPENAI_API_KEY = vim.env[o.api_key_env]
  end
  local mcp_file = mcp_servers_file(o)
  local out, code = M.run(doctor_argv(bin, o, folders, mcp_file), env, 15000)
  if mcp_file then
    vim.fn.delete(mcp_file)
  end
  local ok, d = pcall(vim.fn.json_decode, out or "")
  if not out or not ok or type(d) ~= "table" then
    h.error(("agent-lsp doctor --json gave no report (exit %d)"):format(code))
    return
  end
  local report = d.ok and h.ok or h.error
  report(("doctor: %s (version %s, %s)"):format(d.ok and "ready" or "the next run will fail", tostring(d.version), tostring(d.platform)))
  h.info(("model %s at %s"):format(tostring(d.model), tostring(d.baseURL)))
  local key = type(d.apiKey) == "table" and d.apiKey or {}
  if key.present then
    h.ok(("API key: present in %s"):format(tostring(key.variable)))
  else
    h.info(("API key: %s is not set (local endpoints need none)"):format(tostring(key.variable)))
  end
  local e = type(d.endpoint) == "table" and d.endpoint or {}
  local detail = ("%s answered %s in %s ms"):format(tostring(e.url), tostring(e.status), tostring(e.latencyMs))
  if e.status == "ok" then
    h.ok(("endpoint: %s, %s models%s"):format(detail, tostring(e.modelCount), e.modelOffered == false and " (the model is not one of them)" or (e.modelOffered and ", the model among them" or "")))
  else
    h.info(("endpoint: %s (doctor's problems below say what to do)"):format(detail))
  end
  local s = type(d.store) == "table" and d.store or {}
  local store = s.writable and h.ok or h.error
  store(("store: %s (%s%s)"):format(tostring(s.path), s.writable and "writable" or "not writable", s.servedBy and (", served by " .. s.servedBy) or ""))
  local sb = type(d.sandbox) == "table" and d.sandbox or {}
  h.info(("sandbox: %s, Landlock ABI %s, isolation %s"):format(tostring(sb.mode), tostring(sb.landlockABI), tostring(sb.isolation)))
  for _, p in ipairs(type(d.projects) == "table" and d.projects or {}) do
    h.info(("project %s (%s): %s"):format(tostring(p.name), tostring(p.type), tostring(p.path)))
    mcp_report(h, p, mcp_file)
    M.language_report(h, p)
  end
  for _, p in ipairs(type(d.problems) == "table" and d.problems or {}) do
    h.error(p)
  end
  for _, w in ipairs(type(d.warnings) == "table" and d.warnings or {}) do
    h.warn(w)
  end
end

local function clients(h)
  local list = compat.get_clients("agent-lsp")
  if #list == 0 then
    h.info("no agent-lsp client is running (one starts with the first file buffer after setup(), or the first :Agent command)")
  end
  for _, c in ipairs(list) do
    local folders = vim.tbl_map(function(f) return vim.uri_to_fname(f.uri) end, c.workspace_folders or {})
    local bufs = vim.lsp.get_buffers_by_client_id and #vim.lsp.get_buffers_by_client_id(c.id) or 0
    h.ok(("client %d: %d buffers, folders %s"):format(c.id, bufs, #folders > 0 and table.concat(folders, ", ") or tostring(c.config.root_dir)))
  end
end

local function integrations(h)
  for _, i in ipairs(M.integrations) do
    local found = #vim.api.nvim_get_runtime_file("lua/" .. i.module, true) > 0 or #vim.api.nvim_get_runtime_file("lua/" .. i.module .. ".lua", true) > 0
    if found then
      h.ok(("%s found: %s"):format(i.module, i.what))
    else
      h.info(("%s not found (optional: %s)"):format(i.module, i.what))
    end
  end
end

---The check :checkhealth agent_lsp runs.
function M.check()
  local h = compat.health()
  local o = config.options
  h.start("agent-lsp: Neovim")
  neovim(h)
  plugin(h)
  h.start("agent-lsp: server")
  local bin = binary(h, o)
  if bin then
    doctor(h, o, bin)
  end
  h.start("agent-lsp: clients")
  clients(h)
  language_clients(h)
  h.start("agent-lsp: settings")
  local problems = M.setting_problems(o)
  if #problems == 0 then
    h.ok("no setting known to misbehave")
  end
  for _, p in ipairs(problems) do
    h.warn(p)
  end
  h.start("agent-lsp: integrations")
  integrations(h)
end

return M
