-- The chat buffer (:AgentChat): a session's transcript, then its runs live.
-- The buffer is Markdown; it always ends with a "## You" heading, and the
-- text under that last heading is the next prompt. What the agent says is
-- inserted above that heading: streamed text (message.delta), tool calls as
-- items with their status and their details folded below them (toolrows.lua:
-- an edit's diff, a command's last output), and an end line per run. Every
-- run has a heading and an end line, the runs this chat did not send too (a
-- resume, :AgentRun in its session). A buffer belongs to one session
-- (agent://chat/<session>; agent://chat/new until the first send names it)
-- and to the client that ran it; the chats share one window.
local client = require("agent_lsp.client")
local commands = require("agent_lsp.commands")
local config = require("agent_lsp.config")
local context = require("agent_lsp.context")
local render = require("agent_lsp.render")
local slash = require("agent_lsp.slash")
local state = require("agent_lsp.state")
local toolrows = require("agent_lsp.toolrows")
local ui = require("agent_lsp.ui")

local M = {}

local YOU, AGENT = "## You", "## Agent"

---@class AgentLsp.Chat
---@field buf integer
---@field session? string
---@field client_id? integer the client that ran the session
---@field origin? integer the buffer the chat was opened from (#buffer, #selection)
---@field stream? { text: string, lines: integer } the text being streamed: its lines are the last ones above the input
---@field tools table<string, { mark: integer, lines: integer, name: string, args: string }> callId -> its row: an extmark on its item, its line count
---@field running integer the runs of this chat in flight
---@field pending? AgentLsp.Run the first run, until its session is known (run.start)
---@field queued? integer prompts sent while the session ran, not read yet
---@field last_run? AgentLsp.Run
---@field expecting table[] the runs this chat sent whose run.start has not come, oldest first
---@field other? { edits: integer, usage?: table } a run of the session this chat did not send, while it goes
---@field reloading? AgentLsp.AgentEvent[] while the session is read again (events.dropped): the events that came meanwhile

-- The extmarks of the tool rows' items.
local ns = vim.api.nvim_create_namespace("agent_lsp_chat")

---The open chats, by buffer.
---@type table<integer, AgentLsp.Chat>
M.chats = {}

-- Buffer text -----------------------------------------------------------------

-- input_heading is the line (1-based) of the last "## You" heading.
local function input_heading(buf)
  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  for i = #lines, 1, -1 do
    if lines[i] == YOU then
      return i
    end
  end
end

---The prompt: the text under the last "## You" heading, trimmed.
---@param buf integer
---@return string
function M.input(buf)
  local h = input_heading(buf)
  if not h then
    return ""
  end
  return vim.trim(table.concat(vim.api.nvim_buf_get_lines(buf, h, -1, false), "\n"))
end

-- insert_point is where output goes (0-based): before the blank line above
-- the input heading. A buffer without a heading gets one.
local function insert_point(buf)
  local h = input_heading(buf)
  if not h then
    vim.api.nvim_buf_set_lines(buf, -1, -1, false, { "", YOU, "" })
    h = input_heading(buf)
  end
  return h - 2
end

-- add inserts lines above the input, ending the streamed text.
local function add(chat, lines)
  chat.stream = nil
  local at = insert_point(chat.buf)
  vim.api.nvim_buf_set_lines(chat.buf, at, at, false, lines)
  return at
end

-- follow keeps the chat's windows whose cursor is on the output's end, and
-- is called after output is added: they stay at the input.
local function follow(chat)
  local last = vim.api.nvim_buf_line_count(chat.buf)
  for _, w in ipairs(vim.fn.win_findbuf(chat.buf)) do
    if w ~= vim.api.nvim_get_current_win() then
      pcall(vim.api.nvim_win_set_cursor, w, { last, 0 })
    end
  end
end

---How each tool call of messages ended, by call id, from its tool message
---(the result): its row's status and details (toolrows.lua).
---@param messages AgentLsp.Message[]
---@return table<string, AgentLsp.ToolEnd>
function M.tool_ends(messages)
  local ends = {}
  for _, m in ipairs(messages) do
    if m.role == "tool" and type(m.toolCallId) == "string" then
      local content = type(m.content) == "string" and m.content or ""
      ends[m.toolCallId] = { ok = content:find("^error:") == nil, summary = "", output = content }
    end
  end
  return ends
end

---The lines of a transcript in the chat's shape: its title and project, each
---human message under "## You", each AI message under "## Agent" with its
---tool calls as rows (toolrows.lua, their status and details from the tool
---messages; a call without a result in a session that is not running was
---interrupted), and the end of the last run. No internal ids.
---@param detail AgentLsp.SessionDetail
---@return string[]
---@return table<string, { at: integer, lines: integer, name: string, args: string }> pending the rows of calls still running, by call id: their first line (0-based) and line count
function M.transcript_lines(detail)
  local out = { "# " .. render.oneline(detail.title ~= "" and detail.title or "Agent chat"), "", ("project %s · %s"):format(render.str(detail.project), render.str(detail.status)) }
  local messages = type(detail.messages) == "table" and detail.messages or {}
  local ends = M.tool_ends(messages)
  local pending = {}
  local last_role
  for _, m in ipairs(messages) do
    if m.role == "human" or m.role == "ai" then
      if m.role ~= last_role then
        vim.list_extend(out, { "", m.role == "human" and YOU or AGENT })
      end
      last_role = m.role
      if m.content ~= "" then
        vim.list_extend(out, render.split(m.content))
      end
      for _, tc in ipairs(m.toolCalls or {}) do
        local rows = toolrows.lines(tc.name, tc.args, ends[tc.id], detail.status ~= "running")
        if detail.status == "running" and not ends[tc.id] and type(tc.id) == "string" then
          pending[tc.id] = { at = #out, lines = #rows, name = render.str(tc.name), args = tc.args }
        end
        vim.list_extend(out, rows)
      end
    end
  end
  if detail.status ~= "running" and #messages > 0 then
    table.insert(out, "— " .. render.str(detail.status))
  end
  return out, pending
end

---A run's end line: "— done · 1 edit · 3 steps · 1082 tokens · $0.0033", and
---for a failed run its reason.
---@param result AgentLsp.RunResult
---@return string[]
function M.end_lines(result)
  local lines = { "— " .. render.counts(result) }
  local left = render.budget(state.budget)
  if left then
    lines[1] = lines[1] .. " · " .. left
  end
  if result.error then
    lines[1] = lines[1] .. " — " .. render.oneline(result.error)
  end
  vim.list_extend(lines, render.unsent_lines(result.queued))
  vim.list_extend(lines, require("agent_lsp.plan").chat_lines(result))
  return lines
end

-- Events ----------------------------------------------------------------------

-- chat_of is the chat of session.
local function chat_of(session)
  for _, chat in pairs(M.chats) do
    if chat.session == session and vim.api.nvim_buf_is_valid(chat.buf) then
      return chat
    end
  end
end

-- The chat's handling of each event kind of its session's own context.
local on = {
  ["message.delta"] = function(chat, ev)
    local s = chat.stream or { text = "", lines = 0 }
    local at = insert_point(chat.buf)
    s.text = s.text .. render.str(ev.text)
    local lines = render.split(s.text)
    vim.api.nvim_buf_set_lines(chat.buf, at - s.lines, at, false, lines)
    s.lines = #lines
    chat.stream = s
  end,
  ["tool.start"] = function(chat, ev)
    local lines = toolrows.lines(render.str(ev.name), ev.args)
    local at = add(chat, lines)
    local mark = vim.api.nvim_buf_set_extmark(chat.buf, ns, at, 0, {})
    chat.tools[ev.callId or ""] = { mark = mark, lines = #lines, name = render.str(ev.name), args = ev.args }
  end,
  ["tool.end"] = function(chat, ev)
    local row = chat.tools[ev.callId or ""]
    local at = row and vim.api.nvim_buf_get_extmark_by_id(chat.buf, ns, row.mark, {})[1]
    if not at then
      return
    end
    local lines = toolrows.lines(row.name, row.args, { ok = ev.ok == true, summary = render.str(ev.summary), output = type(ev.output) == "string" and ev.output or "" })
    vim.api.nvim_buf_set_lines(chat.buf, at, at + row.lines, false, lines)
    row.lines = #lines
    chat.tools[ev.callId] = nil
  end,
  ["run.start"] = function(chat, ev)
    local mine = table.remove(chat.expecting, 1)
    if mine then
      mine.started = true
      return -- the chat wrote its heading when it sent the prompt
    end
    -- A run this chat did not send: a resume, or a prompt sent to its session from elsewhere.
    chat.other = { edits = 0 }
    local run
    for _, r in pairs(state.runs) do
      if r.session == ev.session and not r.result then
        run = r
      end
    end
    if run and run.command == "agent.run" and run.prompt then
      local lines = { "", YOU }
      vim.list_extend(lines, render.split(run.prompt))
      vim.list_extend(lines, { "", AGENT })
      add(chat, lines)
    else
      add(chat, { "", AGENT .. ((not run or run.command == "agent.resume") and " · resumed" or "") .. (ev.mode and (" · " .. ev.mode .. " mode") or "") })
    end
  end,
  ["edit"] = function(chat, ev)
    if chat.other and ev.applied then
      chat.other.edits = chat.other.edits + 1
    end
  end,
  ["usage"] = function(chat, ev)
    if chat.other then
      chat.other.usage = ev.run
    end
  end,
  ["run.end"] = function(chat, ev)
    local other = chat.other
    if not other then
      return -- the chat's own run: its result writes the end line
    end
    chat.other = nil
    local usage = type(other.usage) == "table" and other.usage or {}
    local line = "— "
      .. table.concat(vim.tbl_filter(function(p) return p ~= nil end, { render.str(ev.status), render.count(other.edits, "edit"), usage.total and render.count(usage.total, "token") or nil, render.cost(usage.cost) }), " · ")
    add(chat, { ev.error and (line .. " — " .. render.oneline(ev.error)) or line })
  end,
  ["message"] = function(chat, ev)
    -- A queued prompt the run reads now: the agent's answer follows it.
    if type(ev.message) == "table" and ev.message.role == "human" and chat.queued and chat.queued > 0 then
      chat.queued = chat.queued - 1
      add(chat, { "", AGENT })
    end
  end,
  ["context.compacted"] = function(chat, ev) add(chat, { "_" .. require("agent_lsp.events").compacted(ev) .. "_" }) end,
}

-- show_detail puts a session's transcript in place of everything above the
-- chat's input (kept as typed); the rows of calls still running take their
-- tool.end events.
local function show_detail(chat, detail)
  local lines, pending = M.transcript_lines(detail)
  local h = input_heading(chat.buf)
  vim.api.nvim_buf_clear_namespace(chat.buf, ns, 0, -1)
  vim.api.nvim_buf_set_lines(chat.buf, 0, h and (h - 2) or -1, false, lines)
  if not h then
    vim.api.nvim_buf_set_lines(chat.buf, -1, -1, false, { "", YOU, "" })
  end
  chat.stream, chat.tools = nil, {}
  for id, row in pairs(pending) do
    chat.tools[id] = { mark = vim.api.nvim_buf_set_extmark(chat.buf, ns, row.at, 0, {}), lines = row.lines, name = row.name, args = row.args }
  end
end

---Reads the chat's session again (agent.session) and shows it: after the
---server dropped events of it that this window did not read in time. The
---events that come meanwhile follow the transcript.
---@param chat AgentLsp.Chat
function M.reload(chat)
  local c = client.for_session(chat.session, chat.client_id and vim.lsp.get_client_by_id(chat.client_id))
  if not c or chat.reloading then
    return
  end
  chat.reloading = {}
  client.execute(c, "agent.session", { session = chat.session }, function(detail)
    local held = chat.reloading or {}
    chat.reloading = nil
    if not vim.api.nvim_buf_is_valid(chat.buf) then
      return
    end
    if type(detail) == "table" then
      show_detail(chat, detail)
    end
    for _, ev in ipairs(held) do
      M.on_event(ev)
    end
    follow(chat)
  end)
end

on["events.dropped"] = M.reload

---Shows an agent/event in the chat of its session (a subagent's only in the
---log).
---@param ev AgentLsp.AgentEvent
function M.on_event(ev)
  local chat = chat_of(ev.session)
  local handle = on[ev.type]
  if not chat or not handle or ev.contextId then
    return
  end
  if chat.reloading then
    return table.insert(chat.reloading, ev) -- shown after the transcript being read
  end
  handle(chat, ev)
  follow(chat)
end

-- Sending ---------------------------------------------------------------------

-- finish shows a run's end in the chat (err: the error of a refused request).
local function finish(chat, result, err)
  chat.running = math.max(chat.running - 1, 0)
  if not vim.api.nvim_buf_is_valid(chat.buf) then
    return
  end
  if result == false then
    local why = require("agent_lsp.reasons").of(err)
    local text = why and require("agent_lsp.reasons").message(why) or (err and err.message)
    add(chat, { "— refused: " .. (text and render.oneline(text) or "the request failed (see the notification)") })
  elseif result.status ~= "queued" then
    add(chat, M.end_lines(result))
  end
  follow(chat)
end

-- name_buffer names the chat's buffer after its session.
local function name_buffer(chat)
  if chat.session then
    pcall(vim.api.nvim_buf_set_name, chat.buf, "agent://chat/" .. chat.session)
  end
end

---Sends the text under the last "## You" heading as agent.run: with the
---chat's session (a new one on the first send; queued while it runs), its
---#references as context.
---@param buf? integer default the current buffer
function M.send(buf)
  buf = buf or vim.api.nvim_get_current_buf()
  local chat = M.chats[buf]
  if not chat then
    return
  end
  local prompt = M.input(buf)
  local session = chat.session or (chat.pending and chat.pending.session)
  if chat.running > 0 and not session then
    return ui.notify("the chat's first run has no session yet; send again in a moment", vim.log.levels.WARN)
  end
  if prompt == "" then
    return ui.notify("nothing to send: write the prompt under the last " .. YOU .. " heading", vim.log.levels.WARN)
  end
  local c = client.for_session(session, chat.client_id and vim.lsp.get_client_by_id(chat.client_id))
  if not c then
    return
  end
  chat.client_id = c.id
  local refs, problems = context.resolve(prompt, chat.origin, c)
  if #problems > 0 then
    return ui.notify(table.concat(problems, "\n"), vim.log.levels.ERROR)
  end
  -- The input becomes the sent prompt; a new input follows it. Text still
  -- streaming continues below it (its lines are no longer the last ones).
  local queued = chat.running > 0 or chat.other ~= nil
  chat.stream = nil
  local heading = AGENT .. ((state.mode and state.mode ~= "agent") and (" · " .. state.mode .. " mode") or "")
  vim.api.nvim_buf_set_lines(buf, -1, -1, false, queued and { "", YOU, "" } or { "", heading, "", YOU, "" })
  chat.running = chat.running + 1
  -- A run of its own, whose run.start the chat waits for (its heading is written).
  local ticket = not queued and {} or nil
  if ticket then
    table.insert(chat.expecting, ticket)
  end
  local token = commands.run(refs.prompt, {
    session = session,
    context = refs.context,
    images = refs.images,
    client = c,
    on_result = function(result, run, err)
      if ticket and not ticket.started then -- queued or refused after all: no run.start comes
        for i, t in ipairs(chat.expecting) do
          if t == ticket then
            table.remove(chat.expecting, i)
            break
          end
        end
      end
      if result and result.session and result.session ~= "" and not chat.session then
        chat.session = result.session
        name_buffer(chat)
      end
      if result and result.status == "done" and result.steps == 0 and (result.reply or "") ~= "" then
        add(chat, vim.split(result.reply, "\n", { plain = true })) -- a built-in slash command's answer: no run, no events
      end
      if result and result.status == "queued" then
        chat.queued = (chat.queued or 0) + 1
        add(chat, { ("_queued (position %s): the running run reads it at its next step_"):format(render.str(result.position)) })
      end
      chat.last_run = run
      finish(chat, result, err)
    end,
  })
  -- The run's session, once run.start names it, routes its events here.
  local run = token and state.runs[token]
  if run and not chat.session then
    chat.pending = run
  end
  follow(chat)
end

-- adopt gives a new chat the session of its first run once run.start names it.
---@param ev AgentLsp.AgentEvent
function M.adopt(ev)
  for _, chat in pairs(M.chats) do
    if not chat.session and chat.pending and chat.pending.session == ev.session then
      chat.session = ev.session
      name_buffer(chat)
    end
  end
end

---Cancels the chat's running run.
---@param buf? integer
function M.cancel(buf)
  local chat = M.chats[buf or vim.api.nvim_get_current_buf()]
  if not chat then
    return
  end
  local session = chat.session or (chat.pending and chat.pending.session)
  if not session then
    return ui.notify("nothing is running in this chat")
  end
  local c = client.for_session(session, chat.client_id and vim.lsp.get_client_by_id(chat.client_id))
  if c then
    client.execute(c, "agent.cancel", { session = session }, function(res)
      if not res.cancelled then
        ui.notify("nothing is running in this chat")
      end
    end)
  end
end

-- Moving and yanking ----------------------------------------------------------

---Moves the cursor to the next (dir 1) or previous (dir -1) "## " heading.
---@param dir integer
function M.jump(dir)
  local row = vim.api.nvim_win_get_cursor(0)[1]
  local lines = vim.api.nvim_buf_get_lines(0, 0, -1, false)
  local i = row + dir
  while i >= 1 and i <= #lines do
    if lines[i]:find("^## ") then
      return vim.api.nvim_win_set_cursor(0, { i, 0 })
    end
    i = i + dir
  end
end

---The code block nearest to line row (1-based): the one around it, else the
---first one below, else the last one above; nil when there is none.
---@param lines string[]
---@param row integer
---@return string[]|nil
function M.code_block(lines, row)
  local blocks, open = {}, nil
  for i, line in ipairs(lines) do
    if line:find("^%s*```") then
      if open then
        table.insert(blocks, { first = open, last = i })
        open = nil
      else
        open = i
      end
    end
  end
  local best
  for _, b in ipairs(blocks) do
    if b.first <= row and row <= b.last then
      best = b
      break
    end
    local d = b.first > row and b.first - row or row - b.last
    if not best or d < best.d then
      best = { first = b.first, last = b.last, d = d }
    end
  end
  return best and vim.list_slice(lines, best.first + 1, best.last - 1) or nil
end

---Yanks the nearest code block into the unnamed register.
function M.yank_code()
  local code = M.code_block(vim.api.nvim_buf_get_lines(0, 0, -1, false), vim.api.nvim_win_get_cursor(0)[1])
  if not code then
    return ui.notify("no code block in this chat")
  end
  vim.fn.setreg('"', code, "l")
  ui.notify(("yanked %d lines"):format(#code))
end

-- Windows ---------------------------------------------------------------------

-- The ways to open the chat's window, by config.chat.layout.
local layouts = {
  vertical = function(buf)
    vim.cmd("botright vsplit")
    vim.api.nvim_win_set_buf(0, buf)
  end,
  tab = function(buf)
    vim.cmd("tabnew")
    vim.api.nvim_win_set_buf(0, buf)
  end,
  float = function(buf)
    local w, h = math.floor(vim.o.columns * 0.8), math.floor(vim.o.lines * 0.8)
    vim.api.nvim_open_win(buf, true, { relative = "editor", width = w, height = h, row = math.floor((vim.o.lines - h) / 2), col = math.floor((vim.o.columns - w) / 2), border = "rounded", style = "minimal" })
  end,
}

-- The chat's keys: the action of each config.chat.keys entry, its modes.
local actions = {
  send = { modes = { "n", "i" }, fn = function() M.send() end, desc = "Send the prompt under the last ## You" },
  send_normal = { modes = { "n" }, fn = function() M.send() end, desc = "Send the prompt under the last ## You" },
  cancel = { modes = { "n", "i" }, fn = function() M.cancel() end, desc = "Cancel the chat's run" },
  hide = { modes = { "n" }, fn = function() M.hide() end, desc = "Hide the chat" },
  sessions = { modes = { "n" }, fn = function() M.switch() end, desc = "Switch the chat to another session" },
  next_turn = { modes = { "n" }, fn = function() M.jump(1) end, desc = "Next turn" },
  prev_turn = { modes = { "n" }, fn = function() M.jump(-1) end, desc = "Previous turn" },
  yank_code = { modes = { "n" }, fn = function() M.yank_code() end, desc = "Yank the nearest code block" },
}

local function map_keys(buf)
  local keys = config.options.chat.keys
  for name, action in pairs(actions) do
    local lhs = keys[name]
    if lhs and lhs ~= "" then
      for _, mode in ipairs(action.modes) do
        vim.api.nvim_buf_set_keymap(buf, mode, lhs, "", { noremap = true, nowait = true, desc = action.desc, callback = action.fn })
      end
    end
  end
end

---The lines of a new chat, above its input: its title, then how to use it.
---(A status line of the setup, e.g. the model and endpoint, goes after the
---title.)
---@return string[]
function M.intro_lines()
  return {
    "# Agent chat",
    "",
    "Write under ## You; "
      .. config.options.chat.keys.send
      .. " sends. #buffer, #buffer:<name>, #selection, #diagnostics and #image:<path> attach context; /name runs a slash command (<C-x><C-o> completes both). Tool rows fold: zo opens one.",
    "Mode: " .. (state.mode or "agent") .. " (:AgentMode switches: agent edits, plan and ask only read).",
  }
end

-- new_buffer makes a chat buffer with lines, for session (nil: a new one).
local function new_buffer(lines, session, client_id, origin)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.bo[buf].buftype = "nofile"
  vim.bo[buf].bufhidden = "hide"
  vim.bo[buf].swapfile = false
  vim.api.nvim_buf_set_name(buf, "agent://chat/" .. (session or ("new-" .. buf)))
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.api.nvim_buf_set_lines(buf, -1, -1, false, { "", YOU, "" })
  vim.bo[buf].filetype = "markdown"
  vim.bo[buf].omnifunc = "v:lua.agent_lsp_chat_omnifunc"
  map_keys(buf)
  M.chats[buf] = { buf = buf, session = session, client_id = client_id, origin = origin, tools = {}, running = 0, expecting = {} }
  vim.api.nvim_create_autocmd("BufWipeout", { buffer = buf, once = true, callback = function() M.chats[buf] = nil end })
  return buf
end

---The fold level of line lnum of the current buffer ('foldexpr' of the
---chat's window): a tool row's details fold under its item.
---@param lnum integer
---@return string
function M.foldexpr(lnum) return toolrows.foldlevel(vim.api.nvim_get_current_buf(), lnum) end

---A closed fold's line ('foldtext' of the chat's window): the tool row's
---item, and how many lines of details it hides.
---@return string
function M.foldtext()
  local item = vim.api.nvim_buf_get_lines(0, vim.v.foldstart - 1, vim.v.foldstart, false)[1] or ""
  return ("%s  [%d more lines]"):format(item, vim.v.foldend - vim.v.foldstart)
end

_G.agent_lsp_chat_foldexpr = M.foldexpr
_G.agent_lsp_chat_foldtext = M.foldtext

-- chat_window is the window of the current tab showing a chat, if one does.
local function chat_window()
  for _, w in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    if M.chats[vim.api.nvim_win_get_buf(w)] then
      return w
    end
  end
end

-- show goes to the window showing buf, else shows buf in the chat window
-- (there is one: every chat shares it), else opens one (the layout's). The
-- window folds the tool rows' details.
local function show(buf)
  local win = vim.fn.win_findbuf(buf)[1] or chat_window()
  if win then
    vim.api.nvim_set_current_win(win)
    vim.api.nvim_win_set_buf(win, buf)
  else
    (layouts[config.options.chat.layout] or layouts.vertical)(buf)
  end
  local wo = vim.wo[vim.api.nvim_get_current_win()]
  wo.foldmethod, wo.foldexpr, wo.foldtext = "expr", "v:lua.agent_lsp_chat_foldexpr(v:lnum)", "v:lua.agent_lsp_chat_foldtext()"
  wo.foldlevel, wo.foldenable = 0, true
  vim.api.nvim_win_set_cursor(0, { vim.api.nvim_buf_line_count(buf), 0 })
end

---Hides the chat's windows (the buffer stays); the last window shows the
---alternate buffer instead (else a new one).
function M.hide()
  local buf = vim.api.nvim_get_current_buf()
  for _, w in ipairs(vim.fn.win_findbuf(buf)) do
    if #vim.api.nvim_list_wins() > 1 then
      vim.api.nvim_win_close(w, false)
    else
      vim.api.nvim_set_current_win(w)
      local alt = vim.fn.bufnr("#")
      if alt > 0 and alt ~= buf and vim.api.nvim_buf_is_valid(alt) then
        vim.api.nvim_win_set_buf(w, alt)
      else
        vim.cmd("enew")
      end
    end
  end
end

-- origin_buffer is the buffer #buffer and #selection mean: the current one
-- when it holds a file.
local function origin_buffer()
  local b = vim.api.nvim_get_current_buf()
  return client.is_file_buffer(b) and b or nil
end

---Opens the chat of session, with its transcript (fetched from the client).
---@param session string
---@param c table the client
---@param origin? integer
---@param prompt? string put under the input heading and sent
function M.open_session(session, c, origin, prompt)
  for buf, chat in pairs(M.chats) do
    if chat.session == session then
      show(buf)
      if prompt then
        M.prompt(buf, prompt)
      end
      return buf
    end
  end
  c = client.for_session(session, c)
  if not c then
    return
  end
  client.execute(c, "agent.session", { session = session }, function(detail)
    local buf = new_buffer(M.transcript_lines(detail), session, c.id, origin)
    show(buf)
    if prompt then
      M.prompt(buf, prompt)
    end
  end)
end

---Puts prompt under the chat's input heading and sends it.
---@param buf integer
---@param prompt string
function M.prompt(buf, prompt)
  local h = input_heading(buf) or vim.api.nvim_buf_line_count(buf)
  vim.api.nvim_buf_set_lines(buf, h, -1, false, render.split(prompt))
  M.send(buf)
end

---:AgentChat [prompt]: toggles the chat of the current session (the last
---run's; a new chat when there is none); with a prompt, opens it and sends
---the prompt. new (:AgentChat!): a new chat, whose first send starts a new
---session.
---@param prompt? string
---@param new? boolean
function M.toggle(prompt, new)
  prompt = prompt ~= "" and prompt or nil
  local cur = vim.api.nvim_get_current_buf()
  if M.chats[cur] and not new then
    if prompt then
      return M.prompt(cur, prompt)
    end
    return M.hide()
  end
  local origin = origin_buffer() or (M.chats[cur] and M.chats[cur].origin)
  local session = not new and state.last_session or nil
  for buf, chat in pairs(M.chats) do
    -- :AgentChat! takes a new chat that has sent nothing yet, if there is one.
    local fresh = not chat.session and chat.running == 0 and not chat.pending
    if (new and fresh) or (not new and (chat.session == session or (not session and not chat.session))) then
      chat.origin = origin or chat.origin
      show(buf)
      if prompt then
        M.prompt(buf, prompt)
      end
      return buf
    end
  end
  if session then
    local c = client.for_session(session)
    return c and M.open_session(session, c, origin, prompt)
  end
  local c = client.current()
  local buf = new_buffer(M.intro_lines(), nil, c and c.id, origin)
  if c then
    M.show_endpoint(buf, c)
  end
  show(buf)
  if prompt then
    M.prompt(buf, prompt)
  end
  return buf
end

---The endpoint line of an empty chat: the model, the endpoint, whether a key
---is set; without one an endpoint needs, what to set.
---@param ep table agent.endpoint's result
---@return string
function M.endpoint_line(ep)
  local key = ep.keySet and "API key set" or ("no API key (" .. render.str(ep.apiKeyEnv) .. ")")
  local line = ("_Model %s at %s · %s_"):format(render.str(ep.model), render.str(ep.baseURL), key)
  if ep.needsKey then
    line = line .. " — this endpoint needs one: set " .. render.str(ep.apiKeyEnv) .. " (setup({ api_key_env = ... }) names the variable) or setup({ base_url = ... }); :checkhealth agent_lsp"
  end
  return line
end

---Adds the endpoint line (agent.endpoint) under an empty chat's header.
---@param buf integer
---@param c table the client
function M.show_endpoint(buf, c)
  client.execute(c, "agent.endpoint", vim.empty_dict(), function(ep)
    local chat = M.chats[buf]
    if chat and not chat.session and chat.running == 0 and vim.api.nvim_buf_is_valid(buf) then
      vim.api.nvim_buf_set_lines(buf, 3, 3, false, { "", M.endpoint_line(ep) })
    end
  end)
end

---gs: picks a session and opens its chat.
function M.switch()
  local cur = M.chats[vim.api.nvim_get_current_buf()]
  local c = cur and cur.client_id and vim.lsp.get_client_by_id(cur.client_id) or client.current()
  if not c then
    return
  end
  client.execute(c, "agent.sessions", vim.empty_dict(), function(list)
    if type(list) ~= "table" or #list == 0 then
      return ui.notify("no sessions yet")
    end
    vim.ui.select(list, { prompt = "Chat with session", format_item = render.session_item, kind = "agent-lsp.session" }, function(item)
      if item then
        M.open_session(item.session, c, cur and cur.origin)
      end
    end)
  end)
end

---Omni completion in a chat buffer: the #references, and a slash command
---(agent.commands) at the start of a line.
---@param findstart integer
---@param base string
---@return integer|table
function M.omnifunc(findstart, base)
  if findstart == 1 then
    local line = vim.api.nvim_get_current_line():sub(1, vim.api.nvim_win_get_cursor(0)[2])
    local start = line:find("#[%w_:%./%-]*$") or line:find("^/[%w_:%.%-]*$")
    return start and start - 1 or -3
  end
  if base:sub(1, 1) == "/" then
    local chat = M.chats[vim.api.nvim_get_current_buf()]
    local c = chat and chat.client_id and vim.lsp.get_client_by_id(chat.client_id) or client.current()
    return c and slash.items(c, base) or {}
  end
  local items = {}
  for _, word in ipairs(context.candidates()) do
    if word:sub(1, #base) == base then
      table.insert(items, word)
    end
  end
  return items
end

_G.agent_lsp_chat_omnifunc = M.omnifunc

return M
