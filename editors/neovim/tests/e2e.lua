-- Headless end-to-end test of the plugin against the real agent-lsp binary and
-- the scripted model. run.sh sets the environment; the exit code is the verdict.
local bin = assert(os.getenv("AGENT_LSP_TEST_BIN"), "AGENT_LSP_TEST_BIN")
local ws = assert(os.getenv("AGENT_LSP_TEST_WS"), "AGENT_LSP_TEST_WS")
local store = assert(os.getenv("AGENT_LSP_TEST_STORE"), "AGENT_LSP_TEST_STORE")

local harness = dofile(debug.getinfo(1, "S").source:match("^@(.*)/") .. "/harness.lua")
local log, test = harness.log, harness.test

local function wait_for(what, fn, ms)
  if not vim.wait(ms or 20000, fn, 20) then
    error("timed out waiting for " .. what, 2)
  end
end

local function contains(list, pred)
  for _, v in ipairs(list) do
    if pred(v) then
      return v
    end
  end
end

-- Record what the user would see.
local notes = {}
vim.notify = function(msg)
  table.insert(notes, msg)
end
local echoed = {}
vim.api.nvim_echo = function(chunks)
  local parts = {}
  for _, c in ipairs(chunks) do
    table.insert(parts, c[1])
  end
  table.insert(echoed, table.concat(parts))
end

-- -u NONE loads no plugin/ files: source ours the way such a setup would.
test("plugin/agent_lsp.lua defines the commands and loads nothing else", function()
  vim.cmd("runtime plugin/agent_lsp.lua")
  for _, name in ipairs({ "AgentRun", "AgentResume", "AgentCancel", "AgentSessions", "AgentSession", "AgentLog", "AgentProjects", "AgentSwitch" }) do
    assert(vim.fn.exists(":" .. name) == 2, ":" .. name .. " is not defined")
  end
  local loaded = {}
  for name in pairs(package.loaded) do
    if name:find("^agent_lsp") then
      table.insert(loaded, name)
    end
  end
  assert(#loaded == 1 and loaded[1] == "agent_lsp.commands", "loaded at startup: " .. vim.inspect(loaded))
  vim.api.nvim_del_user_command("AgentProjects")
  vim.cmd("runtime plugin/agent_lsp.lua")
  assert(vim.fn.exists(":AgentProjects") == 0, "a second load defined the commands again")
end)

local agent = require("agent_lsp")
agent.setup({ cmd = { bin }, store = store })

test("setup() defines the commands too", function()
  assert(vim.fn.exists(":AgentProjects") == 2, ":AgentProjects is not defined")
end)

local events = {}
agent.on_event = function(ev)
  table.insert(events, ev)
end

local function run_and_wait(cmd)
  local before = agent.state.last_run
  vim.cmd(cmd)
  wait_for("the run to start", function()
    return agent.state.last_run ~= before
  end, 5000)
  local run = agent.state.last_run
  wait_for("the run to end", function()
    return run.result ~= nil
  end)
  return run
end

local function buffer_text()
  return table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
end

local greet = ws .. "/greet.go"
local disk_before = table.concat(vim.fn.readfile(greet), "\n")

test("the client attaches to a file buffer and initializes", function()
  vim.cmd("edit " .. greet)
  wait_for("the agent-lsp client", function()
    for _, c in pairs(vim.lsp.buf_get_clients(0)) do
      if c.name == "agent-lsp" and c.initialized ~= false then
        return true
      end
    end
  end)
end)

test(":AgentRun edits the buffer through Neovim's applyEdit and shows progress", function()
  local run = run_and_wait("AgentRun Add a Farewell function next to Greet")
  assert(run.result.status == "done", "status " .. tostring(run.result.status))
  assert(run.result.edits == 1, "edits " .. tostring(run.result.edits))
  local text = buffer_text()
  assert(text:find("func Farewell(name string) string {", 1, true), "buffer lacks Farewell:\n" .. text)
  assert(vim.bo.modified, "the edit should land in the buffer, unsaved")
  assert(table.concat(vim.fn.readfile(greet), "\n") == disk_before, "the file on disk changed behind the editor")
  assert(run.progress[1]:find("^agent: Add a Farewell function"), "progress begin: " .. vim.inspect(run.progress))
  assert(contains(run.progress, function(p) return p:find("edit_file", 1, true) end), "no progress for the edit: " .. vim.inspect(run.progress))
  assert(contains(echoed, function(e) return e:find("agent: ", 1, true) end), "nothing echoed")
  for _, t in ipairs({ "run.start", "tool.start", "edit", "run.end" }) do
    assert(contains(events, function(e) return e.type == t end), "no agent/event " .. t)
  end
  assert(contains(notes, function(n) return n:find("done · 1 edit", 1, true) end), "no summary: " .. vim.inspect(notes))
  vim.cmd("silent write")
end)

local first_session = agent.state.last_session
local range_session

test(":AgentLog shows every event of the run as events.lua renders it, then the result", function()
  vim.cmd("AgentLog")
  local text = buffer_text()
  assert(vim.api.nvim_buf_get_name(0):find("agent-lsp://log", 1, true), vim.api.nvim_buf_get_name(0))
  -- Deltas are left out: the complete message replaced their lines.
  for _, e in ipairs(events) do
    if e.type ~= "message.delta" then
      for _, line in ipairs(require("agent_lsp.events").render(e)) do
        assert(text:find(line, 1, true), "the log lacks: " .. line .. "\n" .. text)
      end
    end
  end
  assert(text:find(first_session .. " result: done · 1 edit", 1, true), text)
  vim.cmd("close")
end)

test(":AgentSessions lists the session", function()
  local shown
  local orig = vim.ui.select
  vim.ui.select = function(items, opts, on_choice)
    shown = { items = items, opts = opts }
    on_choice(nil)
  end
  vim.cmd("AgentSessions")
  wait_for("the session picker", function()
    return shown ~= nil
  end, 5000)
  vim.ui.select = orig
  local item = contains(shown.items, function(s) return s.session == first_session end)
  assert(item, "session " .. tostring(first_session) .. " not listed: " .. vim.inspect(shown.items))
  local line = shown.opts.format_item(item)
  assert(line:find("done", 1, true) and line:find("Farewell", 1, true), "picker line: " .. line)
end)

test(":AgentSession shows the transcript in a scratch buffer", function()
  vim.cmd("AgentSession " .. first_session)
  wait_for("the transcript buffer", function()
    return vim.api.nvim_buf_get_name(0):find("agent-session://", 1, true) ~= nil
  end, 5000)
  local text = buffer_text()
  assert(text:find("## You", 1, true) and text:find("Add a Farewell function", 1, true), text)
  assert(text:find("calls `edit_file`", 1, true), text)
  assert(vim.bo.buftype == "nofile" and not vim.bo.modifiable, "transcript should be a read-only scratch buffer")
  vim.cmd("close")
end)

test(":AgentProjects and :AgentSwitch", function()
  vim.cmd("AgentProjects")
  wait_for("the project list", function()
    return contains(echoed, function(e) return e:find("sample (go)", 1, true) end) ~= nil
  end, 5000)
  local stack = "[go 1.22, go modules; build: go build ./..., test: go test ./...]"
  assert(contains(echoed, function(e) return e:find("sample (go) " .. stack, 1, true) end), "no tech stack: " .. vim.inspect(echoed))
  assert(contains(echoed, function(e) return e:find("\n    sandbox: workspace%-write · Landlock ABI %d+ · ") end), "no sandbox: " .. vim.inspect(echoed))
  local orig = vim.ui.select
  vim.ui.select = function(items, _, on_choice)
    on_choice(items[1])
  end
  vim.cmd("AgentSwitch")
  wait_for("the switch", function()
    return contains(notes, function(n) return n:find("now works on project sample", 1, true) end) ~= nil
  end, 5000)
  vim.ui.select = orig
end)

test(":AgentCancel stops a slow run", function()
  vim.cmd("AgentRun this is slow")
  local run = agent.state.last_run
  wait_for("the run's session", function()
    return run.session ~= nil
  end)
  vim.cmd("AgentCancel")
  wait_for("the cancelled result", function()
    return run.result ~= nil
  end)
  assert(run.result.status == "cancelled", "status " .. tostring(run.result.status))
  assert(agent.state.status == "", "statusline still shows " .. agent.state.status)
end)

test("the event log's buffer kept growing while hidden", function()
  local b = vim.fn.bufnr("agent-lsp://log")
  local text = table.concat(vim.api.nvim_buf_get_lines(b, 0, -1, false), "\n")
  local session = agent.state.last_run.result.session
  assert(text:find(session .. " result: cancelled", 1, true), text)
  assert(text:find("run.end cancelled", 1, true), text)
end)

-- answer_review answers the review on screen the way a user would: it moves
-- the cursor in the diff, then presses the accept or reject keys.
local function answer_review(accept, seen)
  local timer = vim.loop.new_timer()
  timer:start(50, 50, vim.schedule_wrap(function()
    local cur = require("agent_lsp.review").current()
    if not cur or seen.done then
      return
    end
    seen.done = true
    seen.proposed = table.concat(vim.api.nvim_buf_get_lines(cur.bufs[1].proposed, 0, -1, false), "\n")
    seen.original = table.concat(vim.api.nvim_buf_get_lines(cur.bufs[1].original, 0, -1, false), "\n")
    seen.diff = vim.wo.diff
    seen.cmdheight = vim.o.cmdheight
    timer:stop()
    timer:close()
    seen.cursor = vim.api.nvim_win_get_cursor(0)[1]
    -- Move in the diff first (a normal-mode command), then answer with the mapping keys.
    vim.api.nvim_input("j")
    vim.defer_fn(function()
      seen.moved = vim.api.nvim_win_get_cursor(0)[1]
      vim.api.nvim_input(accept and "ga" or "gr")
    end, 100)
  end))
end

-- review_run runs cmd and answers its review; it returns the run and what the review showed.
local function review_run(cmd, accept)
  local review = require("agent_lsp.review")
  local seen = {}
  local real_mode = review.mode
  review.mode = function() -- record which way the handler waits; it still decides
    seen.mode = real_mode()
    return seen.mode
  end
  answer_review(accept, seen)
  local ok, run = pcall(run_and_wait, cmd)
  review.mode = real_mode
  assert(ok, run)
  return run, seen
end

test("review mode: a diff in a split, accepted", function()
  agent.config.edits = "review"
  vim.cmd("edit " .. greet)
  local run, seen = review_run("1,3AgentRun Exclaim in Greet", true)
  assert(seen.done, "no review was shown; reply: " .. tostring(run.result.reply))
  assert(seen.diff, "the review window is not in diff mode")
  assert(seen.moved == seen.cursor + 1, ("j did not move in the diff: %s -> %s"):format(seen.cursor, seen.moved))
  assert(seen.proposed:find('"Hello, " + name + "!"', 1, true), "proposed: " .. seen.proposed)
  assert(not seen.original:find("!", 1, true), "original: " .. seen.original)
  assert(run.result.status == "done", "status " .. tostring(run.result.status))
  assert(buffer_text():find('"Hello, " + name + "!"', 1, true), "accepted edit not in the buffer: " .. buffer_text())
  assert(#vim.api.nvim_list_tabpages() == 1, "the review tab was not closed")
  range_session = run.result.session
  vim.cmd("silent write")
  log("     (review answered through " .. tostring(seen.mode) .. ")")
end)

test("review mode: rejected, the buffer stays as it was", function()
  vim.cmd("edit " .. greet)
  local before = buffer_text()
  local run, seen = review_run("AgentRun Exclaim in Greet", false)
  assert(seen.done, "no review was shown")
  assert(buffer_text() == before, "rejected edit changed the buffer")
  assert(run.result.status == "done", "status " .. tostring(run.result.status))
  assert(run.result.reply:find("rejected", 1, true), "reply: " .. tostring(run.result.reply))
  agent.config.edits = "apply"
end)

test("a range reaches the agent as the selection", function()
  local detail
  agent.execute(vim.lsp.get_client_by_id(agent.state.last_run.client_id), "agent.session", { session = range_session }, function(d)
    detail = d
  end)
  wait_for("the session", function() return detail ~= nil end, 5000)
  local user = contains(detail.messages, function(m) return m.role == "human" end)
  assert(user and user.content:find("(The user selected greet.go lines 1-3:)", 1, true), "first user message: " .. vim.inspect(user))
  assert(user.content:find("func Greet(name string) string {", 1, true), "selection text missing: " .. user.content)
end)

local settings = ws .. "/.vscode/settings.json"

test("apply mode: an edit of a protected file is reviewed, the hint says why", function()
  assert(agent.config.edits == "apply", "edits " .. agent.config.edits)
  vim.fn.mkdir(ws .. "/.vscode", "p")
  vim.fn.writefile({ "{", '  "editor.formatOnSave": false', "}" }, settings)
  vim.cmd("edit " .. settings)
  local from = #echoed
  local run, seen = review_run("AgentRun Turn on format on save in .vscode/settings.json", true)
  assert(seen.done, "no review was shown; reply: " .. tostring(run.result.reply))
  local hint = contains(vim.list_slice(echoed, from + 1), function(e) return e:find("ga accept, gr reject", 1, true) end)
  assert(hint and hint:find(" — protected file: VS Code settings and tasks can run programs", 1, true), "hint: " .. tostring(hint))
  local room = (seen.cmdheight - 1) * vim.o.columns + vim.v.echospace
  assert(vim.fn.strdisplaywidth(hint) <= room, ("the hint needs a hit-enter prompt: %d cells, %d lines"):format(vim.fn.strdisplaywidth(hint), seen.cmdheight))
  assert(vim.o.cmdheight == 1, "the review's cmdheight outlived its tab: " .. vim.o.cmdheight)
  assert(run.result.status == "done", "status " .. tostring(run.result.status))
  assert(buffer_text():find('"editor.formatOnSave": true', 1, true), "accepted edit not in the buffer: " .. buffer_text())
  vim.cmd("silent write")
end)

-- restart stops the agent-lsp clients and attaches a new one to the current
-- buffer: the server reads initializationOptions when it starts.
local function restart()
  local compat = require("agent_lsp.compat")
  for _, c in ipairs(compat.get_clients("agent-lsp")) do
    compat.call(c, "stop")
    wait_for("the client to stop", function() return vim.lsp.get_client_by_id(c.id) == nil end, 5000)
  end
  agent.attach(0)
  wait_for("the new client to initialize", function()
    return contains(vim.tbl_values(vim.lsp.buf_get_clients(0)), function(c) return c.name == "agent-lsp" end) ~= nil
  end)
end

test("allow_edit and scrub_env reach the server: the allowed protected file is edited unasked", function()
  agent.config.allow_edit = { ".vscode/settings.json" }
  agent.config.scrub_env = { "*_TOKEN", "NVIM", "NVIM_LISTEN_ADDRESS" }
  local started, err = pcall(restart) -- a setting of the wrong shape fails initialize
  agent.config.allow_edit, agent.config.scrub_env = {}, nil
  assert(started, err)
  local review = require("agent_lsp.review")
  local ask, asked = review.ask, nil
  review.ask = function(params)
    asked = params
    return { applied = false, failureReason = "the test expected no review" }
  end
  local ok, run = pcall(run_and_wait, "AgentRun Also set the tab size, next to format on save")
  review.ask = ask
  assert(ok, run)
  assert(asked == nil, "reviewed: " .. vim.inspect(asked and asked.edit.changeAnnotations))
  assert(run.result.status == "done", "status " .. tostring(run.result.status))
  assert(buffer_text():find('"editor.tabSize": 4', 1, true), "edit not in the buffer: " .. buffer_text())
  vim.cmd("silent write")
end)

test(":help agent-lsp opens the plugin's help", function()
  vim.cmd("helptags " .. os.getenv("AGENT_LSP_TEST_PLUGIN") .. "/doc")
  vim.cmd("help agent-lsp")
  assert(vim.bo.filetype == "help", "filetype " .. vim.bo.filetype)
  assert(vim.fn.expand("%:t") == "agent-lsp.txt", vim.fn.expand("%:t"))
  vim.cmd("help :AgentRun")
  assert(vim.api.nvim_get_current_line():find("*:AgentRun*", 1, true), vim.api.nvim_get_current_line())
  vim.cmd("close")
end)

test("a missing server binary is reported once, clearly", function()
  local cmd = agent.config.cmd
  agent.config.cmd = { "/nonexistent/agent-lsp" }
  agent.state.roots = {}
  local before = #notes
  vim.cmd("enew")
  vim.cmd("file " .. ws .. "/elsewhere/one.txt")
  agent.attach(0)
  agent.attach(0)
  agent.config.cmd = cmd
  local new = { unpack(notes, before + 1) }
  assert(#new == 1, "notifications: " .. vim.inspect(new))
  assert(new[1]:find("could not start /nonexistent/agent-lsp: not found or not executable", 1, true), new[1])
  vim.cmd("bwipeout!")
end)

harness.finish()
