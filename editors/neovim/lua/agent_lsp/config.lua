-- The plugin's options: the defaults, and the user's merged over them by setup().
local M = {}

---@class AgentLsp.ReviewKeys
---@field accept string accepts the review: the proposed side as it is (the hunks taken, and your changes where it is editable)
---@field reject string rejects the edit
---@field take string takes the hunk under the cursor: its proposed text
---@field drop string drops the hunk under the cursor: its current text stays
---@field next string moves to the next hunk
---@field prev string moves to the previous hunk

---@class AgentLsp.ChatKeys
---@field send string sends the prompt under the last ## You (normal and insert mode)
---@field send_normal string sends it too (normal mode)
---@field cancel string cancels the chat's run (normal and insert mode)
---@field hide string hides the chat
---@field sessions string switches the chat to another session
---@field next_turn string moves to the next heading
---@field prev_turn string moves to the previous heading
---@field yank_code string yanks the nearest code block

---@class AgentLsp.ChatOptions
---@field layout "vertical"|"float"|"tab" how :AgentChat opens the chat
---@field keys AgentLsp.ChatKeys buffer-local keys of the chat (nowait); "" or false leaves one unmapped

---@class AgentLsp.Config
---@field cmd string[] Command that starts the server: by default the binary the install recipe built into the plugin (bin/agent-lsp), else `agent-lsp` on PATH; setup() takes a string as a one-word command.
---@field cmd_env? table<string, string> Extra environment for the server, e.g. `{ OPENAI_BASE_URL = "http://localhost:11434/v1" }`; keep API keys out (in your shell's environment).
---@field model? string Model name, sent in initializationOptions.model; nil keeps the server's default and AGENT_LSP_MODEL.
---@field base_url? string OpenAI-compatible endpoint, sent in initializationOptions.model; nil keeps OPENAI_BASE_URL, else OpenAI's.
---@field api_key_env? string Name of the environment variable that holds the API key; nil means OPENAI_API_KEY.
---@field store? string Session store file; nil uses the server's default ($XDG_STATE_HOME/agent-lsp/sessions.db).
---@field context_tokens? integer|"auto" The model's context size in tokens (1024 or more), which every request fits with room for the answer; set it to your local server's context (Ollama's num_ctx, llama.cpp's -c). nil (the server's default, AGENT_LSP_CONTEXT_TOKENS, else "auto") or "auto": the known size of well-known models, else 8192. Sent as model.contextTokens.
---@field window? integer Most recent messages the model sees besides the run's prompts, 10 to 1000; nil keeps the server's default (200). The token budget usually binds first.
---@field tool_output? integer Bytes of one tool output the model sees (head and tail kept), 1024 to 1048576; nil keeps the server's default (16384). Sent as toolOutput.
---@field read_only_subagents? boolean Give subagents only the tools that read (read_file, list_files, search); nil keeps the server's default (false). Sent as subagents.readOnly.
---@field edits AgentLsp.EditMode "apply" sends edits as they are made; "review" shows each as a diff to accept or reject.
---@field allow string[] Command patterns the agent may run without asking (* matches any text).
---@field deny string[] Command patterns the agent may never run; deny wins over allow.
---@field allow_edit string[] Protected files (`.git/`, `.vscode/`, `.env*`, CI workflows, ...) the agent may change without your confirmation, as globs over project paths, e.g. `.vscode/settings.json`; an edit of any other protected file is shown for review, in apply mode too. Sent as permissions.allowEdit.
---@field scrub_env? string[] Patterns (* matches any text) of environment variables the agent's commands never get; nil keeps the server's list (credentials, and sockets such as NVIM and SSH_AUTH_SOCK), a list replaces it, {} removes only the API key's variable. Sent as scrubEnv.
---@field mcp_servers? table<string, AgentLsp.McpServerConfig> MCP (Model Context Protocol) servers whose tools the agent may use, by name, in the inner shape of .mcp.json's mcpServers: `{ files = { command = "npx", args = { "-y", "@modelcontextprotocol/server-filesystem", "." } }, issues = { type = "http", url = "https://...", headers = { ... } } }`; `${VAR}` takes the server's environment. Sent as mcpServers; a wrong server is reported and left out.
---@field mcp_allow? string[] Servers of a repository's .mcp.json that start without asking, by name, "*" for all; the others are asked about when a project first runs. Sent as mcp.allow.
---@field mcp_config_files? string[] Files in the .mcp.json shape whose servers the agent may use, like mcp_servers (your $XDG_CONFIG_HOME/agent-lsp/mcp.json is always read). Sent as mcp.configFiles.
---@field mcp_timeout? integer Seconds one MCP tool call may take, 1 to 3600; nil keeps the server's default (AGENT_LSP_MCP_TIMEOUT, else 60). Sent as mcpTimeout.
---@field mcp_idle? integer Seconds without a call after which a project's MCP servers stop, 1 to 86400 (the next call starts them again); nil keeps the server's default (600). Sent as mcpIdle.
---@field language_servers? table<string, AgentLsp.LanguageServerConfig|false> The language servers agent-lsp starts itself when an editor gives it no language features (headless runs, ACP), by project type: `{ go = { command = "gopls" }, rust = false }`; in Neovim the agent uses Neovim's own language servers instead. Sent as languageServers.
---@field diagnostics_wait? integer Milliseconds an edit's result waits for the diagnostics of the edited file (Neovim's language servers', settled on DiagnosticChanged), 100 to 60000; nil keeps the server's default (1500). Sent as diagnosticsWait.
---@field max_tokens? integer Most prompt plus completion tokens one run may spend, its summaries and subagents included, 1 to 1000000000: the run stops cleanly before the model call that would cross it (status limit; :AgentResume continues with a fresh budget). nil: the server's (the limits.maxTokens setting, else none). Sent with each run as maxTokens, so a change takes effect at the next run.
---@field max_cost? number Most USD one run may spend at its model's price (the server's prices setting must have one, or the run is refused), above 0 and at most 1000000; stops as max_tokens does. nil: the server's (limits.maxCost, else none). Sent with each run as maxCost.
---@field root_markers string[] Files whose presence marks a project root; the nearest one upward wins, else the cwd.
---@field autostart boolean Attach to every file buffer as it opens (from setup() on); false starts the client on first use.
---@field review_keys AgentLsp.ReviewKeys Keys of the review diff: move between hunks, take or drop one, accept or reject.
---@field save_before_commands boolean Save the buffers the agent edited when it runs a command (agent/saveDocuments), so that builds and tests see its edits; false leaves them unsaved (the command's result says so).
---@field echo_progress boolean Echo progress in the echo area (statusline() has it either way).
---@field chat AgentLsp.ChatOptions The chat buffer (:AgentChat): its layout and keys.

---A language server of language_servers.
---@class AgentLsp.LanguageServerConfig
---@field command string
---@field args? string[]
---@field initializationOptions? table

---An MCP server of mcp_servers: a stdio server (command, args, env, cwd) or
---an HTTP one (type "http", url, headers).
---@class AgentLsp.McpServerConfig
---@field type? "stdio"|"http" default stdio, or http when only url is given
---@field command? string a stdio server's program
---@field args? string[]
---@field env? table<string, string> variables it gets besides the clean environment commands get
---@field cwd? string default the project's folder
---@field url? string an HTTP server's endpoint
---@field headers? table<string, string>
---@field sandbox? boolean false: a stdio server runs outside the sandbox

---The binary the install recipe builds into the plugin (bin/agent-lsp beside
---lua/), which the default cmd prefers to agent-lsp on PATH.
---@return string
function M.default_binary()
  local root = vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h:h")
  local built = root .. "/bin/agent-lsp"
  return vim.fn.executable(built) == 1 and built or "agent-lsp"
end

---@type AgentLsp.Config
M.defaults = {
  cmd = { M.default_binary() },
  edits = "apply",
  allow = {},
  deny = {},
  allow_edit = {},
  root_markers = { ".git", "go.mod", "package.json", "Cargo.toml", "pyproject.toml", "mix.exs" },
  autostart = true,
  review_keys = { accept = "ga", reject = "gr", take = "do", drop = "dp", next = "]c", prev = "[c" },
  save_before_commands = true,
  echo_progress = true,
  chat = {
    layout = "vertical",
    keys = { send = "<C-s>", send_normal = "<CR>", cancel = "<C-c>", hide = "q", sessions = "gs", next_turn = "]]", prev_turn = "[[", yank_code = "gy" },
  },
}

---The options in effect: the defaults until setup(). setup() refills this
---same table, so whoever holds it (require("agent_lsp").config) sees the
---change, and a field set on it takes effect at the next use.
---@type AgentLsp.Config
M.options = vim.deepcopy(M.defaults)

-- is_integer tells whether v is an integer from lo to hi.
local function is_integer(v, lo, hi) return type(v) == "number" and v == math.floor(v) and v >= lo and v <= hi end

-- strings tells whether v is a list of strings.
local function strings(v)
  if type(v) ~= "table" or not vim.tbl_islist(v) then
    return false
  end
  for _, s in ipairs(v) do
    if type(s) ~= "string" then
      return false
    end
  end
  return true
end

-- string_map tells whether v is a table of strings by name.
local function string_map(v)
  if type(v) ~= "table" or (next(v) ~= nil and vim.tbl_islist(v)) then
    return false
  end
  for k, s in pairs(v) do
    if type(k) ~= "string" or k == "" or type(s) ~= "string" then
      return false
    end
  end
  return true
end

local MCP_TYPES = { stdio = "stdio", http = "http", ["streamable-http"] = "http", streamableHttp = "http" }

---What is wrong with the definition of MCP server name (as the server
---checks it), or nil. Values are never quoted: env and headers may hold
---secrets.
---@param name any
---@param def any
---@return string|nil
function M.mcp_server_problem(name, def)
  if type(name) ~= "string" or name:match("^%s*$") then
    return "a server needs a name (mcp_servers is a table of servers by name)"
  elseif type(def) ~= "table" or (next(def) ~= nil and vim.tbl_islist(def)) then
    return "must be a table with command (stdio) or url (http)"
  end
  if name == "mcpServers" and def.command == nil and def.url == nil then
    return "give the servers themselves, mcp_servers = { NAME = { command = ... } }, not the whole .mcp.json"
  end
  for _, field in ipairs({ "command", "cwd", "url" }) do
    if def[field] ~= nil and type(def[field]) ~= "string" then
      return field .. " must be a string"
    end
  end
  if def.args ~= nil and not strings(def.args) then
    return "args must be a list of strings"
  end
  for _, field in ipairs({ "env", "headers" }) do
    if def[field] ~= nil and not string_map(def[field]) then
      return field .. " must be a table of strings by name"
    end
  end
  if def.sandbox ~= nil and type(def.sandbox) ~= "boolean" then
    return "sandbox must be true or false"
  end
  local transport = def.type == nil and ((def.command == nil and def.url ~= nil) and "http" or "stdio") or MCP_TYPES[def.type]
  if not transport then
    return ('type must be "stdio" or "http", not %s'):format(vim.inspect(def.type))
  elseif transport == "stdio" then
    if not def.command or def.command == "" then
      return "a stdio server needs a command"
    elseif def.url ~= nil or def.headers ~= nil then
      return "a stdio server has no url or headers"
    end
  else
    if def.command ~= nil or def.args ~= nil or def.env ~= nil then
      return "an http server has no command, args or env"
    elseif not def.url or not def.url:match("^https?://.") then
      return "an http server needs an http(s) url"
    end
  end
  return nil
end

---The checks of the options the server bounds, by option: true when the
---value is fine (nil always is: the server's default), and what it must be.
---The bounds are the server's: outside them it refuses to start. A check
---with filter instead cleans the value: it returns what is kept (nil:
---nothing) and a message for each part left out.
---@type table<string, { ok?: fun(v: any): boolean, want?: string, filter?: fun(v: any): any, string[] }>
M.checks = {
  mcp_allow = { ok = strings, want = [[a list of server names (strings), "*" for all]] },
  mcp_config_files = { ok = strings, want = "a list of file names (strings)" },
  mcp_timeout = { ok = function(v) return is_integer(v, 1, 3600) end, want = "an integer from 1 to 3600 (seconds)" },
  mcp_idle = { ok = function(v) return is_integer(v, 1, 86400) end, want = "an integer from 1 to 86400 (seconds)" },
  diagnostics_wait = { ok = function(v) return is_integer(v, 100, 60000) end, want = "an integer from 100 to 60000 (milliseconds)" },
  language_servers = {
    ok = function(v)
      if type(v) ~= "table" or (next(v) ~= nil and vim.tbl_islist(v)) then
        return false
      end
      for _, s in pairs(v) do
        if s ~= false and not (type(s) == "table" and type(s.command) == "string" and s.command ~= "") then
          return false
        end
      end
      return true
    end,
    want = "a table of servers by project type, each { command = ..., args = {...} } or false",
  },
  mcp_servers = {
    filter = function(v)
      if type(v) ~= "table" or (next(v) ~= nil and vim.tbl_islist(v)) then
        return nil, { "mcp_servers must be a table of servers by name, as under .mcp.json's mcpServers; no MCP servers are sent" }
      end
      local kept, problems = {}, {}
      local names = vim.tbl_keys(v)
      table.sort(names, function(a, b) return tostring(a) < tostring(b) end)
      for _, name in ipairs(names) do
        local problem = M.mcp_server_problem(name, v[name])
        if problem then
          table.insert(problems, ("mcp_servers.%s: %s; this server is left out"):format(tostring(name), problem))
        else
          kept[name] = v[name]
        end
      end
      return next(kept) and kept or nil, problems
    end,
  },
  context_tokens = {
    ok = function(v) return v == "auto" or is_integer(v, 1024, 10000000) end,
    want = [[an integer from 1024 to 10000000 (your model server's context size: Ollama's num_ctx, llama.cpp's -c) or "auto"]],
  },
  window = { ok = function(v) return is_integer(v, 10, 1000) end, want = "an integer from 10 to 1000 (messages)" },
  tool_output = { ok = function(v) return is_integer(v, 1024, 1048576) end, want = "an integer from 1024 to 1048576 (bytes)" },
  read_only_subagents = { ok = function(v) return type(v) == "boolean" end, want = "true or false" },
  max_tokens = { ok = function(v) return is_integer(v, 1, 1000000000) end, want = "an integer from 1 to 1000000000 (tokens)" },
  max_cost = { ok = function(v) return type(v) == "number" and v > 0 and v <= 1000000 end, want = "a number of USD above 0, at most 1000000" },
}

---Checks the options of M.checks in o: each wrong value is reported (an
---error notification naming the option, what it must be and the value) and
---removed, so that the server's default applies instead of the server
---refusing to start.
---@param o table the options
---@return string[] problems the messages reported
function M.validate(o)
  local problems = {}
  local names = vim.tbl_keys(M.checks)
  table.sort(names)
  for _, name in ipairs(names) do
    local v, check = o[name], M.checks[name]
    if v ~= nil and check.filter then
      local kept, found = check.filter(v)
      if #found > 0 then
        vim.list_extend(problems, found)
        o[name] = kept
      end
    elseif v ~= nil and not check.ok(v) then
      table.insert(problems, ("%s must be %s, not %s; the server's default is used"):format(name, M.checks[name].want, vim.inspect(v)))
      o[name] = nil
    end
  end
  for _, msg in ipairs(problems) do
    vim.notify("agent-lsp: " .. msg, vim.log.levels.ERROR)
  end
  return problems
end

---Merges opts over the defaults into M.options; wrong values of the options
---the server bounds are reported and left out (M.validate).
---@param opts? AgentLsp.Config|table any subset of the options
function M.setup(opts)
  local merged = vim.tbl_deep_extend("force", vim.deepcopy(M.defaults), opts or {})
  if type(merged.cmd) == "string" then
    merged.cmd = { merged.cmd }
  end
  M.validate(merged)
  for key in pairs(M.options) do
    M.options[key] = nil
  end
  for key, value in pairs(merged) do
    M.options[key] = value
  end
end

---The budget of each run, sent with every agent.run and agent.resume: the
---max_tokens and max_cost options in effect, checked as setup() checks them
---(a value set on the options since is checked here).
---@return integer|nil maxTokens
---@return number|nil maxCost
function M.run_limits()
  M.validate(M.options)
  return M.options.max_tokens, M.options.max_cost
end

---mcp_servers as initializationOptions.mcpServers: each definition as it is,
---but empty env and headers left out (an empty Lua table is a JSON list,
---which the server refuses where it wants an object).
---@param servers table<string, AgentLsp.McpServerConfig>
---@return table
function M.mcp_servers_json(servers)
  local out = {}
  for name, def in pairs(servers) do
    local d = vim.deepcopy(def)
    for _, field in ipairs({ "env", "headers" }) do
      if type(d[field]) == "table" and next(d[field]) == nil then
        d[field] = nil
      end
    end
    out[name] = d
  end
  return out
end

---The server's initializationOptions for the options in effect (a value set
---on M.options since setup() is checked here, as in setup()). Options left
---nil are not sent: the server's defaults apply.
---@return table
function M.init_options()
  local o = M.options
  M.validate(o)
  local init = {
    edits = o.edits,
    permissions = { allow = o.allow, deny = o.deny, allowEdit = o.allow_edit },
    scrubEnv = o.scrub_env,
    window = o.window,
    toolOutput = o.tool_output,
  }
  if o.model or o.base_url or o.api_key_env or o.context_tokens then
    init.model = { model = o.model, baseURL = o.base_url, apiKeyEnv = o.api_key_env, contextTokens = o.context_tokens }
  end
  if o.store then
    init.store = { path = o.store }
  end
  if o.read_only_subagents ~= nil then
    init.subagents = { readOnly = o.read_only_subagents }
  end
  if type(o.mcp_servers) == "table" and next(o.mcp_servers) then
    init.mcpServers = M.mcp_servers_json(o.mcp_servers)
  end
  if o.mcp_allow or o.mcp_config_files then
    init.mcp = {
      allow = o.mcp_allow,
      configFiles = o.mcp_config_files and vim.tbl_map(function(f) return vim.fn.expand(f) end, o.mcp_config_files),
    }
  end
  init.mcpTimeout = o.mcp_timeout
  init.mcpIdle = o.mcp_idle
  init.diagnosticsWait = o.diagnostics_wait
  if type(o.language_servers) == "table" and next(o.language_servers) then
    init.languageServers = vim.tbl_map(function(s) return s == false and vim.NIL or s end, o.language_servers)
  end
  return init
end

return M
