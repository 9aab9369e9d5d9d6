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
---@field root_markers string[] Files whose presence marks a project root; the nearest one upward wins, else the cwd.
---@field autostart boolean Attach to every file buffer as it opens (from setup() on); false starts the client on first use.
---@field review_keys AgentLsp.ReviewKeys Keys of the review diff: move between hunks, take or drop one, accept or reject.
---@field save_before_commands boolean Save the buffers the agent edited when it runs a command (agent/saveDocuments), so that builds and tests see its edits; false leaves them unsaved (the command's result says so).
---@field echo_progress boolean Echo progress in the echo area (statusline() has it either way).
---@field chat AgentLsp.ChatOptions The chat buffer (:AgentChat): its layout and keys.

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
local function is_integer(v, lo, hi)
  return type(v) == "number" and v == math.floor(v) and v >= lo and v <= hi
end

---The checks of the options the server bounds, by option: true when the
---value is fine (nil always is: the server's default), and what it must be.
---The bounds are the server's: outside them it refuses to start.
---@type table<string, { ok: fun(v: any): boolean, want: string }>
M.checks = {
  context_tokens = {
    ok = function(v) return v == "auto" or is_integer(v, 1024, 10000000) end,
    want = [[an integer from 1024 to 10000000 (your model server's context size: Ollama's num_ctx, llama.cpp's -c) or "auto"]],
  },
  window = { ok = function(v) return is_integer(v, 10, 1000) end, want = "an integer from 10 to 1000 (messages)" },
  tool_output = { ok = function(v) return is_integer(v, 1024, 1048576) end, want = "an integer from 1024 to 1048576 (bytes)" },
  read_only_subagents = { ok = function(v) return type(v) == "boolean" end, want = "true or false" },
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
    local v = o[name]
    if v ~= nil and not M.checks[name].ok(v) then
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
  return init
end

return M
