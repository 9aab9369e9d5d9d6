-- What a run that cannot start, or failed, for a reason a setting fixes
-- says in Neovim: the options that fix it (api_key_env, base_url, model)
-- and :checkhealth agent_lsp, never "resume". The server names the reason
-- in a refused request's error data (data.reason) and a failed run's
-- result (reason).

local M = {}

---@class AgentLsp.ReasonData
---@field reason AgentLsp.Reason
---@field setting string the initializationOptions setting that fixes it
---@field baseURL string
---@field model string
---@field apiKeyEnv string
---@field models? string[] model-unknown: the models the endpoint offers

-- What to do, by reason, in the plugin's options.
local fixes = {
  ["no-api-key"] = function(d)
    return ("no API key: %s needs one and %s is not set. Set it in Neovim's environment (or name another variable with setup({ api_key_env = ... })), or point setup({ base_url = ... }) at a server that needs none. :checkhealth agent_lsp checks the setup."):format(
      d.baseURL or "the endpoint",
      d.apiKeyEnv or "OPENAI_API_KEY"
    )
  end,
  ["key-refused"] = function(d)
    return ("%s refused the API key. Set a valid key in %s (setup({ api_key_env = ... }) names the variable). :checkhealth agent_lsp checks the setup."):format(d.baseURL or "the endpoint", d.apiKeyEnv or "OPENAI_API_KEY")
  end,
  ["model-unknown"] = function(d)
    local offered = type(d.models) == "table" and #d.models > 0 and (" It offers: " .. table.concat(d.models, ", ") .. ".") or ""
    return ("%s does not offer the model %q. Pick one with :AgentModel, or setup({ model = ... }).%s"):format(d.baseURL or "the endpoint", d.model or "?", offered)
  end,
  ["endpoint-unreachable"] = function(d) return ("cannot reach %s. Start the model server, or point setup({ base_url = ... }) at one. :checkhealth agent_lsp checks the setup."):format(d.baseURL or "the endpoint") end,
}

---The data of a JSON-RPC error refused for a reason, else nil.
---@param err? table
---@return AgentLsp.ReasonData|nil
function M.of(err)
  local d = type(err) == "table" and err.data or nil
  if type(d) == "table" and fixes[d.reason] then
    return d
  end
  return nil
end

---What to do about a reason, in the plugin's options.
---@param d AgentLsp.ReasonData
---@return string
function M.message(d) return fixes[d.reason](d) end

---The line that follows a failed run's summary when its reason has a fix (nil otherwise).
---@param result AgentLsp.RunResult
---@return string|nil
function M.hint(result)
  local fix = result.reason and fixes[result.reason]
  if not fix then
    return nil
  end
  return fix({ reason = result.reason })
end

return M
