-- agent/event notifications as text, for the event log (:AgentLog): one line
-- per event, and more when a text spans lines (indented below). A line starts
-- with where the event comes from, "<session> #<seq>", and for a subagent's
-- events "[<contextId> of <parentId>]", then the event's type and its kind's
-- fields. A type this plugin does not know is shown as a generic line of its
-- fields, never an error: the contract may add kinds. tests/protocol.lua
-- checks that M.kinds has exactly the fixtures' event types and that every
-- value of every fixture in testdata/protocol/events is shown.
local render = require("agent_lsp.render")

local M = {}

local str, word, oneline = render.str, render.word, render.oneline

-- message is the text of a message: its heading and content, then its tool
-- calls and the call it answers, each on a line.
local function message(m)
  assert(type(m) == "table", "message is not an object") -- then the generic text shows it
  local lines = { render.message_heading(m) .. ":" .. (m.content == "" and "" or (" " .. str(m.content))) }
  for _, tc in ipairs(m.toolCalls or {}) do
    table.insert(lines, render.tool_call(tc))
  end
  for _, img in ipairs(m.images or {}) do
    table.insert(lines, ("image %s: %s, %s by %s pixels, %s bytes (%s)"):format(str(img.name), str(img.mimeType), str(img.width), str(img.height), str(img.size), str(img.id)))
  end
  if m.toolCallId then
    table.insert(lines, "answers " .. m.toolCallId)
  end
  return table.concat(lines, "\n")
end

---The line of a context.compacted event: "⋯ 6 older messages summarized to
---fit the context (9000 → 2500 tokens)", or "dropped ...: <error>".
---@param ev AgentLsp.Event.ContextCompacted
---@return string
function M.compacted(ev)
  return ("⋯ %s %s %s (%s → %s tokens)%s"):format(render.count(ev.messages, "older message"), word("summarized", ev.summarized), word("reason", ev.reason), str(ev.before), str(ev.after), ev.error and (": " .. oneline(ev.error)) or "")
end

---The line of a usage event: "scripted: 1000 prompt + 11 completion = 1011
---tokens (context 8192) · $0.0026 · run: 4000 + 11 = 4011 tokens · $0.0101".
---@param ev AgentLsp.Event.Usage
---@return string
function M.usage(ev)
  local run = type(ev.run) == "table" and ev.run or {}
  local function cost(c)
    local s = render.cost(c)
    return s and (" · " .. s) or ""
  end
  return ("%s: %s prompt + %s completion = %s tokens (context %s)%s · run: %s + %s = %s tokens%s"):format(
    str(ev.model),
    str(ev.prompt),
    str(ev.completion),
    str(ev.total),
    str(ev.contextTokens),
    cost(ev.cost),
    str(run.prompt),
    str(run.completion),
    str(run.total),
    cost(run.cost)
  )
end

---The tools a run.start left out to fit the context, or nil when none.
---@param ev AgentLsp.Event.RunStart
---@return string|nil
function M.withheld(ev)
  if type(ev.withheld) == "table" and #ev.withheld > 0 then
    return table.concat(vim.tbl_map(str, ev.withheld), ", ")
  end
end

---The text of each event kind after its envelope, by type; it may span lines.
---@type table<string, fun(ev: table): string>
M.kinds = {
  ["run.start"] = function(ev)
    local withheld = M.withheld(ev)
    return ("project %s · context %s tokens%s"):format(str(ev.project), str(ev.contextTokens), withheld and (" · tools left out to fit it: " .. withheld) or "")
  end,
  ["message.delta"] = function(ev) return str(ev.text) end,
  ["message"] = function(ev) return message(ev.message) end,
  ["message.queued"] = function(ev) return ("(position %s) %s"):format(str(ev.position), message(ev.message)) end,
  ["context.compacted"] = M.compacted,
  ["tool.start"] = function(ev) return ("%s %s (%s)"):format(str(ev.name), oneline(ev.args), str(ev.callId)) end,
  ["tool.end"] = function(ev)
    local head = ("%s %s: %s (%s)"):format(str(ev.name), word("ok", ev.ok), str(ev.summary), str(ev.callId))
    return ev.output and (head .. "\n" .. str(ev.output)) or head
  end,
  ["subagent.start"] = function(ev) return str(ev.task) end,
  ["subagent.end"] = function(ev) return ("%s, %s"):format(str(ev.status), word("ok", ev.ok)) end,
  ["edit"] = function(ev) return ("%s %s"):format(word("applied", ev.applied), str(ev.uri)) end,
  ["usage"] = M.usage,
  ["events.dropped"] = function(ev) return ("%s not read in time, #%s to #%s"):format(render.count(ev.count, "event"), str(ev.fromSeq), str(ev.toSeq)) end,
  ["run.end"] = function(ev) return str(ev.status) .. (ev.error and (": " .. str(ev.error)) or "") end,
}

-- The envelope's fields, which every line starts with.
local envelope = { session = true, seq = true, type = true, contextId = true, parentId = true }

-- generic is the text of an event without a renderer: its fields other than
-- the envelope's, sorted, as key=value (tables as JSON).
local function generic(ev)
  local keys = {}
  for k in pairs(ev) do
    if not envelope[k] then
      table.insert(keys, tostring(k))
    end
  end
  table.sort(keys)
  local out = {}
  for _, k in ipairs(keys) do
    local v = ev[k]
    if type(v) == "table" then
      local ok, json = pcall(vim.fn.json_encode, v)
      v = ok and json or vim.inspect(v)
    end
    table.insert(out, k .. "=" .. oneline(v))
  end
  return table.concat(out, " ")
end

---The lines of an event: its origin and type, then its kind's text, or for a
---kind without a renderer (or fields a renderer cannot read) the generic text.
---@param ev AgentLsp.AgentEvent
---@return string[]
function M.render(ev)
  local origin = str(ev.session) .. " #" .. str(ev.seq)
  if ev.contextId then
    origin = ("%s [%s of %s]"):format(origin, str(ev.contextId), str(ev.parentId))
  end
  local kind = M.kinds[ev.type]
  local ok, text = false, nil
  if kind then
    ok, text = pcall(kind, ev)
  end
  if not ok then
    text = generic(ev)
  end
  return render.block(("%s %s "):format(origin, str(ev.type)), text)
end

return M
