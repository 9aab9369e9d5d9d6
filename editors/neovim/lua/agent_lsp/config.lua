-- The plugin's options: the defaults, and the user's merged over them by setup().
local M = {}

---@class AgentLsp.ReviewKeys
---@field accept string accepts the edit shown in the review diff
---@field reject string rejects it

---@class AgentLsp.Config
---@field cmd string[] Command that starts the server (`agent-lsp` on PATH by default); setup() takes a string as a one-word command.
---@field cmd_env? table<string, string> Extra environment for the server, e.g. `{ OPENAI_BASE_URL = "http://localhost:11434/v1" }`; keep API keys out (in your shell's environment).
---@field model? string Model name, sent in initializationOptions.model; nil keeps the server's default and AGENT_LSP_MODEL.
---@field base_url? string OpenAI-compatible endpoint, sent in initializationOptions.model; nil keeps OPENAI_BASE_URL, else OpenAI's.
---@field api_key_env? string Name of the environment variable that holds the API key; nil means OPENAI_API_KEY.
---@field store? string Session store file; nil uses the server's default ($XDG_STATE_HOME/agent-lsp/sessions.db).
---@field edits AgentLsp.EditMode "apply" sends edits as they are made; "review" shows each as a diff to accept or reject.
---@field allow string[] Command patterns the agent may run without asking (* matches any text).
---@field deny string[] Command patterns the agent may never run; deny wins over allow.
---@field allow_edit string[] Protected files (`.git/`, `.vscode/`, `.env*`, CI workflows, ...) the agent may change without your confirmation, as globs over project paths, e.g. `.vscode/settings.json`; an edit of any other protected file is shown for review, in apply mode too. Sent as permissions.allowEdit.
---@field scrub_env? string[] Patterns (* matches any text) of environment variables the agent's commands never get; nil keeps the server's list (credentials, and sockets such as NVIM and SSH_AUTH_SOCK), a list replaces it, {} removes only the API key's variable. Sent as scrubEnv.
---@field root_markers string[] Files whose presence marks a project root; the nearest one upward wins, else the cwd.
---@field autostart boolean Attach to every file buffer as it opens (from setup() on); false starts the client on first use.
---@field review_keys AgentLsp.ReviewKeys Keys that answer the review diff.
---@field echo_progress boolean Echo progress in the echo area (statusline() has it either way).

---@type AgentLsp.Config
M.defaults = {
  cmd = { "agent-lsp" },
  edits = "apply",
  allow = {},
  deny = {},
  allow_edit = {},
  root_markers = { ".git", "go.mod", "package.json", "Cargo.toml", "pyproject.toml", "mix.exs" },
  autostart = true,
  review_keys = { accept = "ga", reject = "gr" },
  echo_progress = true,
}

---The options in effect: the defaults until setup(). setup() refills this
---same table, so whoever holds it (require("agent_lsp").config) sees the
---change, and a field set on it takes effect at the next use.
---@type AgentLsp.Config
M.options = vim.deepcopy(M.defaults)

---Merges opts over the defaults into M.options.
---@param opts? AgentLsp.Config|table any subset of the options
function M.setup(opts)
  local merged = vim.tbl_deep_extend("force", vim.deepcopy(M.defaults), opts or {})
  if type(merged.cmd) == "string" then
    merged.cmd = { merged.cmd }
  end
  for key in pairs(M.options) do
    M.options[key] = nil
  end
  for key, value in pairs(merged) do
    M.options[key] = value
  end
end

---The server's initializationOptions for the options in effect.
---@return table
function M.init_options()
  local o = M.options
  local init = {
    edits = o.edits,
    permissions = { allow = o.allow, deny = o.deny, allowEdit = o.allow_edit },
    scrubEnv = o.scrub_env,
  }
  if o.model or o.base_url or o.api_key_env then
    init.model = { model = o.model, baseURL = o.base_url, apiKeyEnv = o.api_key_env }
  end
  if o.store then
    init.store = { path = o.store }
  end
  return init
end

return M
