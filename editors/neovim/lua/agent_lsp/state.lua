-- The plugin's view of the running work, shared by the commands, the
-- handlers and the statusline (and exposed as require("agent_lsp").state).

---A run this Neovim started (agent.run or agent.resume), tracked by its
---progress token until its result arrives.
---@class AgentLsp.Run
---@field client_id integer
---@field request_id? integer the executeCommand request, for $/cancelRequest
---@field session? string known from the result or the run.start event
---@field prompt string
---@field command? "agent.run"|"agent.resume" the request that started it
---@field progress string[] the progress texts so far
---@field progress_ended? boolean its progress ended (its result is due)
---@field result? AgentLsp.RunResult|false set when the run ends, or at once when its prompt was queued; false when the request failed (the error was reported)
---@field waiting? fun(session: string|nil)[] follow-ups sent to this run's session once it is known (nil: it never was)

---@class AgentLsp.State
---@field roots { id?: integer } the one client of this Neovim, which serves every root as a workspace folder (see compat.start)
---@field initialized table<integer, boolean> clients initialized (on_init ran) and not exited
---@field pending_folders table<integer, { added: table[], removed: table[] }> folder changes waiting for a client's initialization
---@field restarts? integer crashed servers restarted in a row (the backoff's index)
---@field runs table<string, AgentLsp.Run> progress token -> run in flight
---@field next_token integer counter behind the progress tokens
---@field last_run? AgentLsp.Run the run started last
---@field last_result? AgentLsp.RunResult
---@field last_reply? string the last result's reply, without trailing space
---@field last_session? string the session of the last run (:AgentSession, :AgentSwitch)
---@field project? string project chosen with :AgentSwitch before any session exists
---@field unsent? string[] the prompts the last cancelled run never read (:AgentRun! offers them again)
---@field subagents table<string, string[]> session -> the subagent contexts seen (events, transcripts), for completion
---@field session_clients table<string, integer> session -> the id of the client that ran it (run.start, a run's result): per-session commands go there
---@field withheld_seen table<string, boolean> the lists of withheld tools already reported
---@field status string statusline text: the running agent's latest progress, or ""
---@field reviewing boolean an edit's review is open (the statusline says so)
---@field loading table<integer, boolean> buffers an edit is loading: attached once it is applied (see edit.apply), not as they load
---@field model? string the model chosen with :AgentModel, sent as each run's model
---@field models? string[] the model ids agent.models listed last (:AgentModel's completion)
---@field mode? AgentLsp.Mode the mode chosen with :AgentMode, sent as each run's mode (nil: agent)
---@field budget? AgentLsp.Budget the running run's limits and what it spent (run.start, usage events): the statusline and the chat say what is left
---@field usage? AgentLsp.RunUsage the latest usage event's run totals (the statusline's tokens)
---@field waiting? string what the agent waits for: "review" or "permission" (the statusline says so)
---@field start_failed? boolean a failed start was reported (said once, not per buffer)
---@field plans table<string, { plan: string, client_id?: integer }> session -> the plan its last plan run ended with (:AgentRunPlan runs it; plan.lua)
---@field last_plan? string the session of the plan that ended last

---@type AgentLsp.State
return {
  roots = {},
  initialized = {},
  pending_folders = {},
  runs = {},
  next_token = 0,
  status = "",
  reviewing = false,
  loading = {},
  subagents = {},
  session_clients = {},
  withheld_seen = {},
  plans = {},
}
