-- "Run this plan": a plan run that ends with a plan (its result's plan) is
-- remembered per session; :AgentRunPlan starts an agent-mode run in that
-- session with the plan as its prompt, whatever :AgentMode chose for the
-- next runs (docs/modes.md). The run's notification and the chat's end line
-- say so.
local M = {}

local state = require("agent_lsp.state")

---What the notification and the chat add after a plan.
M.HINT = ":AgentRunPlan runs this plan in agent mode (same session)"

---The prompt of the run that carries out plan.
---@param plan string
---@return string
function M.prompt(plan) return "Carry out this plan:\n\n" .. vim.trim(plan) end

-- plan_of is the plan a result carries, or nil.
local function plan_of(result)
  if type(result) ~= "table" or result.status ~= "done" or type(result.plan) ~= "string" or vim.trim(result.plan) == "" then
    return nil
  end
  return result.plan
end

---Remembers the plan of a run's result (a later run of its session without
---one forgets it: it went on from there); returns the hint to show, or nil.
---@param result AgentLsp.RunResult
---@param client_id? integer the client that ran it
---@return string|nil
function M.remember(result, client_id)
  if type(result) ~= "table" or type(result.session) ~= "string" or result.status == "queued" then
    return nil
  end
  local plan = plan_of(result)
  if not plan then
    state.plans[result.session] = nil
    if state.last_plan == result.session then
      state.last_plan = nil
    end
    return nil
  end
  state.plans[result.session] = { plan = plan, client_id = client_id }
  state.last_plan = result.session
  return M.HINT
end

---The lines the chat adds after a run's end line: the hint after a plan.
---@param result AgentLsp.RunResult|false
---@return string[]
function M.chat_lines(result) return plan_of(result) and { "_" .. M.HINT .. "_" } or {} end

---:AgentRunPlan [session]: runs the plan of session (default: the plan that
---ended last) in agent mode, in its session.
---@param session? string
---@return string|nil token the run's progress token, nil if none started
function M.run(session)
  local ui = require("agent_lsp.ui")
  session = (session and session ~= "") and session or state.last_plan
  local entry = session and state.plans[session]
  if not entry then
    ui.notify("no plan to run: run a prompt in plan mode first (:AgentMode plan)", vim.log.levels.WARN)
    return nil
  end
  local c = entry.client_id and vim.lsp.get_client_by_id(entry.client_id) or nil
  return require("agent_lsp.commands").run(M.prompt(entry.plan), { session = session, mode = "agent", client = c })
end

---Completes :AgentRunPlan: the sessions with a plan.
---@param lead string
---@return string[]
function M.complete(lead)
  return vim.tbl_filter(function(s) return s:sub(1, #lead) == lead end, vim.tbl_keys(state.plans))
end

return M
