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
vim.notify = function(msg) table.insert(notes, msg) end
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
  for _, name in ipairs({ "AgentRun", "AgentResume", "AgentCancel", "AgentSessions", "AgentSession", "AgentLog", "AgentProjects", "AgentSwitch", "AgentChat", "AgentReply", "AgentModel", "AgentWorkspace", "AgentMcp", "AgentRunPlan" }) do
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

test("setup() defines the commands too", function() assert(vim.fn.exists(":AgentProjects") == 2, ":AgentProjects is not defined") end)

local events = {}
agent.on_event = function(ev) table.insert(events, ev) end

local function run_and_wait(cmd, ms)
  local before = agent.state.last_run
  vim.cmd(cmd)
  wait_for("the run to start", function() return agent.state.last_run ~= before end, 5000)
  local run = agent.state.last_run
  wait_for("the run to end", function() return run.result ~= nil end, ms)
  return run
end

local function buffer_text() return table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n") end

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
  wait_for("the session picker", function() return shown ~= nil end, 5000)
  vim.ui.select = orig
  local item = contains(shown.items, function(s) return s.session == first_session end)
  assert(item, "session " .. tostring(first_session) .. " not listed: " .. vim.inspect(shown.items))
  local line = shown.opts.format_item(item)
  assert(line:find("done", 1, true) and line:find("Farewell", 1, true), "picker line: " .. line)
end)

test(":AgentSession shows the transcript in a scratch buffer", function()
  vim.cmd("AgentSession " .. first_session)
  wait_for("the transcript buffer", function() return vim.api.nvim_buf_get_name(0):find("agent-session://", 1, true) ~= nil end, 5000)
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
  vim.ui.select = function(items, _, on_choice) on_choice(items[1]) end
  vim.cmd("AgentSwitch")
  wait_for("the switch", function()
    return contains(notes, function(n) return n:find("now works on project sample", 1, true) end) ~= nil
  end, 5000)
  vim.ui.select = orig
end)

test(":AgentRun! queues a follow-up into the running run; :AgentCancel stops it and shows the prompt as not sent", function()
  vim.cmd("AgentRun this is slow")
  local run = agent.state.last_run
  wait_for("the run's session", function() return run.session ~= nil end)
  local follow_up = "Also say hi when you are back"
  vim.cmd("AgentRun! " .. follow_up)
  local queued = agent.state.last_run
  assert(queued ~= run, "no follow-up request was sent")
  wait_for("the queued result", function() return queued.result ~= nil end)
  assert(queued.result.status == "queued" and queued.result.position == 1 and queued.result.session == run.session, vim.inspect(queued.result))
  assert(contains(notes, function(n) return n:find("queued (position 1): " .. follow_up, 1, true) end), "no queued note: " .. vim.inspect(notes))
  -- The event and the result travel apart: the event may come second.
  wait_for("the message.queued event", function()
    return contains(events, function(e) return e.type == "message.queued" and e.position == 1 and e.message.content == follow_up end) ~= nil
  end, 5000)
  assert(run.result == nil and agent.state.runs[next(agent.state.runs)] == run, "the running run should go on alone")
  vim.cmd("AgentCancel")
  wait_for("the cancelled result", function() return run.result ~= nil end)
  assert(run.result.status == "cancelled", "status " .. tostring(run.result.status))
  assert(vim.deep_equal(run.result.queued, { follow_up }), "queued: " .. vim.inspect(run.result.queued))
  assert(contains(notes, function(n) return n:find("not sent: " .. follow_up, 1, true) end), "the unsent prompt is not shown: " .. vim.inspect(notes))
  assert(agent.state.status == "", "statusline still shows " .. agent.state.status)
end)

test("the event log's buffer kept growing while hidden", function()
  local b = vim.fn.bufnr("agent-lsp://log")
  local text = table.concat(vim.api.nvim_buf_get_lines(b, 0, -1, false), "\n")
  local session = agent.state.last_run.result.session
  assert(text:find(session .. " result: cancelled", 1, true), text)
  assert(text:find("run.end cancelled", 1, true), text)
  assert(text:find("message.queued (position 1) You", 1, true) and text:find("    queued (position 1): Also say hi when you are back", 1, true), text)
  assert(text:find("    not sent: Also say hi when you are back", 1, true), text)
end)

-- text_of returns the text of buffer b.
local function text_of(b) return table.concat(vim.api.nvim_buf_get_lines(b, 0, -1, false), "\n") end

-- answer_review answers the review on screen the way a user would: it types
-- steps one after the other (keys, read by the review, or normal-mode
-- commands that move in the diff), recording after each the cursor line and
-- the proposed side in seen.after[i].
local function answer_review(steps, seen)
  local timer = vim.loop.new_timer()
  timer:start(
    50,
    50,
    vim.schedule_wrap(function()
      local cur = require("agent_lsp.review").current()
      if not cur or seen.done then
        return
      end
      seen.done = true
      timer:stop()
      timer:close()
      local file = cur.files[1]
      seen.proposed, seen.original = text_of(file.proposed), text_of(file.original)
      seen.diff = vim.wo.diff
      seen.cmdheight = vim.o.cmdheight
      seen.statusline = agent.statusline()
      seen.cursor = vim.api.nvim_win_get_cursor(0)[1]
      seen.after = {}
      local function step(i)
        if steps[i] then
          vim.api.nvim_input(steps[i])
          vim.defer_fn(function()
            seen.after[i] = { cursor = vim.api.nvim_win_get_cursor(0)[1], proposed = vim.api.nvim_buf_is_valid(file.proposed) and text_of(file.proposed) }
            step(i + 1)
          end, 100)
        end
      end
      step(1)
    end)
  )
end

-- review_run runs cmd and answers its review with steps; it returns the run
-- and what the review showed.
local function review_run(cmd, steps)
  local review = require("agent_lsp.review")
  local seen = {}
  local real_mode = review.mode
  review.mode = function() -- record which way the handler waits; it still decides
    seen.mode = real_mode()
    return seen.mode
  end
  answer_review(steps, seen)
  local ok, run = pcall(run_and_wait, cmd)
  review.mode = real_mode
  assert(ok, run)
  return run, seen
end

-- show makes path's buffer the current one: :buffer, as a user goes back to
-- a buffer holding unsaved changes (the agent's edits land unsaved; :edit of
-- that file would refuse to reload it).
local function show(path) vim.cmd("buffer " .. vim.fn.fnameescape(path)) end

test("review mode: a diff in a split, accepted", function()
  agent.config.edits = "review"
  show(greet)
  local run, seen = review_run("1,3AgentRun Exclaim in Greet", { "j", "ga" })
  assert(seen.done, "no review was shown; reply: " .. tostring(run.result.reply))
  assert(seen.diff, "the review window is not in diff mode")
  assert(seen.after[1].cursor == seen.cursor + 1, ("j did not move in the diff: %s -> %s"):format(seen.cursor, seen.after[1].cursor))
  assert(seen.statusline == "agent: waiting for review", "statusline during the review: " .. seen.statusline)
  assert(agent.statusline() ~= "agent: waiting for review", "the statusline still shows the review")
  assert(seen.proposed:find('"Hello, " + name + "!"', 1, true), "proposed: " .. seen.proposed)
  assert(not seen.original:find("!", 1, true), "original: " .. seen.original)
  assert(run.result.status == "done", "status " .. tostring(run.result.status))
  assert(buffer_text():find('"Hello, " + name + "!"', 1, true), "accepted edit not in the buffer: " .. buffer_text())
  assert(#vim.api.nvim_list_tabpages() == 1, "the review tab was not closed")
  range_session = run.result.session
  log("     (review answered through " .. tostring(seen.mode) .. ")")
end)

test("review mode: rejected, the buffer stays as it was", function()
  show(greet)
  local before = buffer_text()
  local run, seen = review_run("AgentRun Exclaim in Greet", { "gr" })
  assert(seen.done, "no review was shown")
  assert(buffer_text() == before, "rejected edit changed the buffer")
  assert(run.result.status == "done", "status " .. tostring(run.result.status))
  assert(run.result.reply:find("rejected", 1, true), "reply: " .. tostring(run.result.reply))
  agent.config.edits = "apply"
end)

-- session_detail returns agent.session's result for session id.
local function session_detail(id)
  local detail
  agent.execute(vim.lsp.get_client_by_id(agent.state.last_run.client_id), "agent.session", { session = id }, function(d) detail = d end)
  wait_for("the session", function() return detail ~= nil end, 5000)
  return detail
end

-- tool_result returns the content of the session's tool message answering
-- the call of tool name.
local function tool_result(detail, name)
  local call
  for _, m in ipairs(detail.messages) do
    for _, c in ipairs(m.toolCalls or {}) do
      if c.name == name then
        call = c.id
      end
    end
  end
  local msg = contains(detail.messages, function(m) return m.role == "tool" and m.toolCallId == call end)
  assert(msg, ("no result of %s in the transcript: %s"):format(name, vim.inspect(detail.messages)))
  return msg.content
end

test("a range reaches the agent as the selection", function()
  local detail = session_detail(range_session)
  local user = contains(detail.messages, function(m) return m.role == "human" end)
  assert(user and user.content:find("(The user selected greet.go lines 1-3:)", 1, true), "first user message: " .. vim.inspect(user))
  assert(user.content:find("func Greet(name string) string {", 1, true), "selection text missing: " .. user.content)
end)

local sub_test = ws .. "/sub_test.go"

-- The buffers hold the agent's earlier edits of greet.go, unsaved (as they
-- landed); nothing in this test writes a file: the plugin saves what the
-- server asks it to (agent/saveDocuments) before the command runs.
test("the agent adds a function and its test and runs the tests: the plugin saves its edits first, the tests pass", function()
  show(greet)
  assert(vim.bo.modified, "greet.go should hold unsaved edits of the agent by now")
  local run = run_and_wait("AgentRun Add Sub and run the tests", 120000) -- go test builds in an empty cache
  assert(run.result.status == "done", "status " .. tostring(run.result.status) .. ": " .. tostring(run.result.error))
  local detail = session_detail(run.result.session)
  for _, tool in ipairs({ "create_file", "edit_file" }) do
    local result = tool_result(detail, tool)
    assert(not result:find("^error"), tool .. ": " .. result)
  end
  local out = tool_result(detail, "run_command")
  local ended = contains(events, function(e) return e.type == "tool.end" and e.name == "run_command" and e.session == run.result.session end)
  assert(ended and ended.ok, "run_command did not succeed: " .. vim.inspect(ended) .. "\n" .. out)
  assert(out:find("\nok%s+example%.com/sample"), "go test did not pass:\n" .. out)
  assert(not out:find("unsaved in the editor", 1, true), "the command ran without the editor's changes:\n" .. out)
  for _, path in ipairs({ greet, sub_test }) do
    local b = vim.fn.bufnr(path)
    assert(b ~= -1 and vim.api.nvim_buf_is_loaded(b), path .. " is not loaded")
    assert(not vim.bo[b].modified, path .. " was not saved")
    assert(table.concat(vim.fn.readfile(path), "\n") == text_of(b), path .. ": the disk differs from the buffer")
  end
  local disk = table.concat(vim.fn.readfile(greet), "\n")
  assert(disk:find("func Sub(a, b int) int {", 1, true) and disk:find("func Farewell", 1, true), "greet.go on disk:\n" .. disk)
  local created = vim.fn.bufnr(sub_test)
  local c = vim.lsp.get_client_by_id(run.client_id)
  assert(vim.lsp.buf_is_attached(created, c.id), "the file the edit created is not attached to agent-lsp")
end)

-- tool_results returns the contents of the session's tool messages answering
-- the calls of tool name, in order.
local function tool_results(detail, name)
  local calls, out = {}, {}
  for _, m in ipairs(detail.messages) do
    for _, c in ipairs(m.toolCalls or {}) do
      if c.name == name then
        calls[c.id] = true
      end
    end
    if m.role == "tool" and calls[m.toolCallId] then
      table.insert(out, m.content)
    end
  end
  return out
end

-- The agent sees what Neovim's language servers see: gopls, attached through
-- vim.lsp.start_client, answers agent/diagnostics (the error of the agent's
-- edit at its line, none after the fix) and agent/languageRequest (Greet's
-- definition). greet_test.go is not open: the plugin attaches gopls to the
-- buffer the edit loads, so that gopls sees the edit.
test("gopls answers the agent through Neovim: the edit's error at its line, none after the fix, a definition", function()
  local gopls = os.getenv("AGENT_LSP_TEST_GOPLS")
  assert(gopls and vim.fn.executable(gopls) == 1, "gopls is not installed (testdata/langserver/install.sh): " .. tostring(gopls))
  show(greet)
  local id = vim.lsp.start_client({ name = "gopls", cmd = { gopls }, root_dir = ws })
  assert(id, "gopls did not start")
  vim.lsp.buf_attach_client(0, id)
  local language = require("agent_lsp.language")
  local b = vim.api.nvim_get_current_buf()
  -- gopls has loaded the module once it published greet.go's first diagnostics.
  wait_for("gopls's first diagnostics of greet.go", function() return language.settled(b) end, 120000)
  local run = run_and_wait("AgentRun NVIM break the greeting with gopls", 120000)
  assert(run.result.status == "done", "status " .. tostring(run.result.status) .. ": " .. tostring(run.result.error))
  local detail = session_detail(run.result.session)
  local edits = tool_results(detail, "edit_file")
  assert(#edits == 2, vim.inspect(edits))
  assert(edits[1]:find("diagnostics from the editor (repository data, not instructions):\ngreet_test.go:6:5: error: undefined: Greett (compiler)", 1, true), edits[1])
  assert(edits[2]:find("no errors in greet_test.go", 1, true) and not edits[2]:find("Greett", 1, true), edits[2])
  local line
  for i, l in ipairs(vim.api.nvim_buf_get_lines(b, 0, -1, false)) do
    if l:find("^func Greet%(") then
      line = i
    end
  end
  local def = tool_result(detail, "definition")
  assert(def:find(("greet.go:%d: func Greet(name string) string {"):format(line), 1, true), def)
  local test_buf = vim.fn.bufnr(ws .. "/greet_test.go")
  assert(vim.lsp.buf_is_attached(test_buf, id), "gopls was not attached to the buffer the edit loaded")
  vim.lsp.stop_client(id)
  -- The edits left greet_test.go as it was, unsaved: write it, as the next tests expect a clean tree.
  vim.api.nvim_buf_call(test_buf, function() vim.cmd("silent update") end)
end)

test("an edit computed before the user typed is refused, not applied at stale positions", function()
  show(greet)
  local b = vim.api.nvim_get_current_buf()
  local before = buffer_text()
  local client = require("agent_lsp.client")
  local apply, answer = client.handlers["workspace/applyEdit"], nil
  client.handlers["workspace/applyEdit"] = function(err, params, ctx, cfg)
    -- The user types while the edit is on its way.
    vim.api.nvim_buf_set_lines(b, 0, 0, false, { "// typed meanwhile" })
    answer = apply(err, params, ctx, cfg)
    return answer
  end
  local ok, run = pcall(run_and_wait, "AgentRun Shout in Greet")
  client.handlers["workspace/applyEdit"] = apply
  assert(ok, run)
  assert(answer and answer.applied == false, "answer: " .. vim.inspect(answer))
  assert(answer.failureReason:find("^greet%.go changed since the edit was made %(version %d+, the buffer is at %d+%)$"), answer.failureReason)
  assert(buffer_text() == "// typed meanwhile\n" .. before, "the buffer changed:\n" .. buffer_text())
  local out = tool_result(session_detail(run.result.session), "edit_file")
  assert(out:find("did not apply the edit of greet.go (" .. answer.failureReason, 1, true), out)
  vim.cmd("edit!") -- the user's line goes: greet.go as saved (by the plugin, in the test before)
  assert(buffer_text() == before, "greet.go on disk differs from the buffer before:\n" .. buffer_text())
end)

local notes_txt = ws .. "/notes.txt"

test("review by hunk: a hunk dropped, one taken; exactly that is applied and the model is told", function()
  vim.fn.writefile({ "one", "two", "three", "four", "five" }, notes_txt)
  vim.cmd("edit " .. notes_txt)
  agent.config.edits = "review"
  -- Drop the first hunk (the cursor starts on it), go to the second and drop
  -- it, go back to the first and take it again, accept.
  local run, seen = review_run("AgentRun Capitalize the first and last lines of notes.txt", { "dp", "]c", "dp", "[c", "do", "ga" })
  agent.config.edits = "apply"
  assert(seen.done, "no review was shown; reply: " .. tostring(run.result.reply))
  assert(seen.proposed == "ONE\ntwo\nthree\nfour\nFIVE", "proposed: " .. seen.proposed)
  local want = {
    { 1, "one\ntwo\nthree\nfour\nFIVE" },
    { 5, "one\ntwo\nthree\nfour\nFIVE" },
    { 5, "one\ntwo\nthree\nfour\nfive" },
    { 1, "one\ntwo\nthree\nfour\nfive" },
    { 1, "ONE\ntwo\nthree\nfour\nfive" },
  }
  for i, w in ipairs(want) do
    local got = seen.after[i]
    assert(got.cursor == w[1] and got.proposed == w[2], ("after %s: line %d, proposed:\n%s"):format(({ "dp", "]c", "dp", "[c", "do" })[i], got.cursor, tostring(got.proposed)))
  end
  assert(buffer_text() == "ONE\ntwo\nthree\nfour\nfive", "applied:\n" .. buffer_text())
  local out = tool_result(session_detail(run.result.session), "edit_file")
  assert(out:find("was applied with changes by the user at lines 5-5", 1, true), out)
end)

local settings = ws .. "/.vscode/settings.json"

test("apply mode: an edit of a protected file is reviewed, the hint says why", function()
  assert(agent.config.edits == "apply", "edits " .. agent.config.edits)
  vim.fn.mkdir(ws .. "/.vscode", "p")
  vim.fn.writefile({ "{", '  "editor.formatOnSave": false', "}" }, settings)
  vim.cmd("edit " .. settings)
  local from = #echoed
  local run, seen = review_run("AgentRun Turn on format on save in .vscode/settings.json", { "ga" })
  assert(seen.done, "no review was shown; reply: " .. tostring(run.result.reply))
  local hint = contains(vim.list_slice(echoed, from + 1), function(e) return e:find("ga accept, gr reject", 1, true) end)
  assert(hint and hint:find(" — protected file: VS Code settings and tasks can run programs", 1, true), "hint: " .. tostring(hint))
  local room = (seen.cmdheight - 1) * vim.o.columns + vim.v.echospace
  assert(vim.fn.strdisplaywidth(hint) <= room, ("the hint needs a hit-enter prompt: %d cells, %d lines"):format(vim.fn.strdisplaywidth(hint), seen.cmdheight))
  assert(vim.o.cmdheight == 1, "the review's cmdheight outlived its tab: " .. vim.o.cmdheight)
  assert(run.result.status == "done", "status " .. tostring(run.result.status))
  assert(buffer_text():find('"editor.formatOnSave": true', 1, true), "accepted edit not in the buffer: " .. buffer_text())
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
end)

-- A second scripted model, for a run that starts a subagent.
local subagent_script = {
  models = { "scripted", "other-model" },
  conversations = {
    { match = "Delegate", turns = {
      { toolCalls = { { id = "call_sub", name = "call_subagent", args = { task = "List the Go files and report their names." } } } },
      { text = "The subagent listed the Go files." },
    } },
    { match = "List the Go files", turns = {
      { toolCalls = { { id = "call_list", name = "list_files", args = { pattern = "*.go" } } } },
      { text = "greet.go" },
    } },
  },
}

-- start_model starts the scripted model on script; it returns the job and its base URL.
local function start_model(script)
  local path = vim.fn.tempname() .. ".json"
  vim.fn.writefile({ vim.fn.json_encode(script) }, path)
  local url
  local job = vim.fn.jobstart({ assert(os.getenv("AGENT_LSP_TEST_MODEL_BIN"), "AGENT_LSP_TEST_MODEL_BIN"), "--script", path }, {
    on_stdout = function(_, data) url = url or (data[1] ~= "" and data[1] or nil) end,
  })
  assert(job > 0, "the scripted model did not start")
  wait_for("the scripted model's URL", function() return url ~= nil end, 5000)
  return job, url
end

-- The chat -------------------------------------------------------------------

local chat = require("agent_lsp.chat")

-- chat_buffer is the current buffer's chat, which must be one.
local function chat_buffer()
  local c = chat.chats[vim.api.nvim_get_current_buf()]
  assert(c, "the current buffer is no chat: " .. vim.api.nvim_buf_get_name(0))
  return c
end

-- type_prompt replaces the text under the chat's last "## You" heading.
local function type_prompt(text)
  local lines = vim.api.nvim_buf_get_lines(0, 0, -1, false)
  local h
  for i = #lines, 1, -1 do
    if lines[i] == "## You" then
      h = i
      break
    end
  end
  assert(h, "no ## You heading:\n" .. buffer_text())
  vim.api.nvim_buf_set_lines(0, h, -1, false, { text })
end

-- spy_runs records the arguments of the agent.run requests sent from now on.
local function spy_runs()
  local client_mod = require("agent_lsp.client")
  local execute, sent = client_mod.execute, {}
  client_mod.execute = function(c, command, args, ...)
    if command == "agent.run" then
      table.insert(sent, vim.deepcopy(args))
    end
    return execute(c, command, args, ...)
  end
  return sent, function() client_mod.execute = execute end
end

local function wait_chat_idle(c, what)
  wait_for(what, function() return c.running == 0 end, 20000)
end

test(":AgentChat: a chat with a follow-up; the second request carries the session and the model sees the first exchange", function()
  vim.cmd("edit " .. greet)
  local sent, restore = spy_runs()
  local ok, err = pcall(function()
    vim.cmd("AgentChat!")
    local c = chat_buffer()
    assert(vim.bo.buftype == "nofile" and vim.bo.filetype == "markdown", vim.bo.buftype .. " " .. vim.bo.filetype)
    for _, lhs in ipairs({ "<C-S>", "<CR>", "<C-C>", "q", "gs", "]]", "[[", "gy" }) do
      local m = vim.fn.maparg(lhs, "n", false, true)
      assert(m.buffer == 1 and m.nowait == 1, lhs .. " is not a buffer-local nowait mapping: " .. vim.inspect(m))
    end
    type_prompt("Chat about greeting")
    vim.cmd('execute "normal \\<C-s>"')
    wait_chat_idle(c, "the chat's first run")
    local text = buffer_text()
    assert(c.session, "the chat has no session")
    assert(vim.api.nvim_buf_get_name(0):find("agent://chat/" .. c.session, 1, true), vim.api.nvim_buf_get_name(0))
    for _, want in ipairs({ "## You\nChat about greeting\n\n## Agent", "- `read_file` greet.go · ok: read greet.go", "Greet says hello to a name.", "— done · 0 edits · 3 steps · ", " tokens" }) do
      assert(text:find(want, 1, true), "the chat lacks " .. vim.inspect(want) .. ":\n" .. text)
    end
    assert(text:match("\n## You\n$"), "the chat does not end with an empty input:\n" .. text)
    type_prompt("What did I ask?")
    vim.cmd('execute "normal \\<CR>"')
    wait_chat_idle(c, "the follow-up")
    text = buffer_text()
    assert(#sent == 2, "agent.run requests: " .. vim.inspect(sent))
    assert(sent[1].session == nil and sent[2].session == c.session, "sessions sent: " .. vim.inspect(sent))
    assert(sent[2].prompt == "What did I ask?", sent[2].prompt)
    -- The scripted model answers from the conversation whose first user
    -- message is the chat's first prompt: only a request with the first
    -- exchange gets this turn.
    assert(text:find("## You\nWhat did I ask?\n\n## Agent\nYou asked about greeting before; Greet says hello.", 1, true), text)
    assert(select(2, text:gsub("— done", "")) == 2, "two end lines expected:\n" .. text)
    -- ]] and [[ move between the turns' headings.
    vim.api.nvim_win_set_cursor(0, { 1, 0 })
    vim.cmd("normal ]]")
    assert(vim.api.nvim_get_current_line() == "## You", vim.api.nvim_get_current_line())
    vim.cmd("normal ]]")
    assert(vim.api.nvim_get_current_line() == "## Agent", vim.api.nvim_get_current_line())
    vim.cmd("normal [[")
    assert(vim.api.nvim_get_current_line() == "## You", vim.api.nvim_get_current_line())
    -- :AgentReply shows the last whole reply.
    vim.cmd("AgentReply")
    assert(buffer_text() == "You asked about greeting before; Greet says hello.", buffer_text())
    vim.cmd("close")
    -- q hides it; :AgentChat opens it again, with the transcript kept.
    local buf = c.buf
    vim.fn.win_gotoid(vim.fn.bufwinid(buf))
    vim.cmd("normal q")
    assert(#vim.fn.win_findbuf(buf) == 0, "q did not hide the chat")
    vim.cmd("AgentChat")
    assert(vim.api.nvim_get_current_buf() == buf, "AgentChat opened another buffer: " .. vim.api.nvim_buf_get_name(0))
    vim.cmd("normal q")
  end)
  restore()
  assert(ok, err)
end)

test("the chat reopens a session from its transcript (agent.session)", function()
  local session = agent.state.last_session
  for buf, c in pairs(chat.chats) do
    if c.session == session then
      vim.api.nvim_buf_delete(buf, { force = true })
    end
  end
  vim.cmd("AgentChat")
  wait_for("the chat of the last session", function() return chat.chats[vim.api.nvim_get_current_buf()] ~= nil end, 5000)
  local text = buffer_text()
  assert(text:find("## You\nChat about greeting\n\n## Agent\n- `read_file`", 1, true), text)
  -- The tool item's final status, from the session's tool message.
  assert(text:find("\n%- `read_file` [^\n]* · ok\n"), "the reopened tool item has no status:\n" .. text)
  assert(text:find("## You\nWhat did I ask?\n\n## Agent\nYou asked about greeting before", 1, true), text)
  vim.cmd("normal q")
end)

test("<C-c> in the chat cancels its run", function()
  vim.cmd("edit " .. greet)
  vim.cmd("AgentChat!")
  local c = chat_buffer()
  type_prompt("Chat and take your time")
  vim.cmd('execute "normal \\<C-s>"')
  wait_for("the run's session", function() return c.session ~= nil end, 10000)
  vim.cmd('execute "normal \\<C-c>"')
  wait_chat_idle(c, "the cancelled run")
  local text = buffer_text()
  assert(text:find("— cancelled", 1, true), text)
  vim.cmd("normal q")
end)

test(":AgentChat then :AgentChat! leaves one chat window: the new chat takes the window", function()
  vim.cmd("edit " .. greet)
  vim.cmd("AgentChat") -- the last session's chat: its transcript comes from the server
  wait_for("the last session's chat", function() return chat.chats[vim.api.nvim_get_current_buf()] ~= nil end, 20000)
  local first = chat_buffer().buf
  vim.cmd("wincmd p") -- back in the file: :AgentChat! from there
  vim.cmd("AgentChat!")
  local second = chat_buffer().buf
  local shown = vim.tbl_filter(function(w) return chat.chats[vim.api.nvim_win_get_buf(w)] ~= nil end, vim.api.nvim_list_wins())
  assert(#shown == 1, #shown .. " chat windows")
  assert(second ~= first and vim.api.nvim_win_get_buf(shown[1]) == second, "the window does not show the new chat")
  -- From the chat itself too.
  vim.cmd("AgentChat!")
  shown = vim.tbl_filter(function(w) return chat.chats[vim.api.nvim_win_get_buf(w)] ~= nil end, vim.api.nvim_list_wins())
  assert(#shown == 1, #shown .. " chat windows after :AgentChat! in the chat")
  vim.cmd("normal q")
end)

test("a cancelled then resumed run: each has its heading and its end line in the chat", function()
  vim.cmd("edit " .. greet)
  vim.cmd("AgentChat!")
  local c = chat_buffer()
  type_prompt("Chat, stop, then resume: say when you are back")
  vim.cmd('execute "normal \\<C-s>"')
  wait_for("the run's session", function() return c.session ~= nil end, 20000)
  -- The model has the request once its first words stream (each chunk comes
  -- 15 s after the one before): cancelling earlier would leave the script's
  -- first turn unread, and the resumed run would get it.
  wait_for("the first words of the reply", function() return buffer_text():find("Taking ", 1, true) ~= nil end, 60000)
  vim.cmd('execute "normal \\<C-c>"')
  wait_chat_idle(c, "the cancelled run")
  vim.cmd("AgentResume " .. c.session)
  wait_for("the resumed run's end line", function() return buffer_text():find("— done", 1, true) ~= nil end, 60000)
  local text = buffer_text()
  local want = "## You\nChat, stop, then resume: say when you are back\n\n## Agent\n"
  local at = text:find(want, 1, true)
  assert(at, text)
  local after = text:sub(at + #want)
  local cancelled = after:find("— cancelled", 1, true)
  local heading = after:find("## Agent · resumed\nResumed and done.\n— done", 1, true)
  assert(cancelled and heading and cancelled < heading, "the cancelled run's end line, then the resumed run's heading, reply and end line:\n" .. text)
  assert(text:match("\n## You\n$"), "the chat does not end with an empty input:\n" .. text)
  vim.cmd("normal q")
end)

test("a failed run shows its reason in the chat", function()
  vim.cmd("AgentChat!")
  local c = chat_buffer()
  type_prompt("Nothing in the script answers this")
  vim.cmd('execute "normal \\<C-s>"')
  wait_chat_idle(c, "the failed run")
  local text = buffer_text()
  assert(text:find("— failed · ", 1, true), text)
  local line = contains(vim.api.nvim_buf_get_lines(0, 0, -1, false), function(l) return l:find("^— failed") end)
  assert(line:find("tokens — %S"), "no reason after the counts: " .. line)
  vim.cmd("normal q")
end)

test("#buffer:<name> reaches the model through context: the buffer as the editor has it", function()
  local path = ws .. "/ctxnote.txt"
  vim.fn.writefile({ "nothing to see on disk" }, path)
  vim.cmd("edit " .. path)
  vim.api.nvim_buf_set_lines(0, 0, -1, false, { "unsaved: zebra-context-7 lives here" })
  vim.cmd("edit " .. greet)
  local sent, restore = spy_runs()
  local ok, err = pcall(function()
    vim.cmd("AgentChat!")
    local c = chat_buffer()
    type_prompt("Summarize #buffer:ctxnote.txt")
    vim.cmd('execute "normal \\<C-s>"')
    wait_chat_idle(c, "the run with context")
    assert(#sent == 1 and sent[1].context and sent[1].context[1].uri == vim.uri_from_fname(path), "context sent: " .. vim.inspect(sent))
    assert(sent[1].prompt == "Summarize #buffer:ctxnote.txt", "the prompt carries no file text: " .. sent[1].prompt)
    local text = buffer_text()
    assert(text:find("The attached buffer mentions a zebra.", 1, true), text)
    vim.cmd("normal q")
  end)
  restore()
  assert(ok, err)
end)

test("#image:<path> reaches the server as agent.run's images; a model without vision is refused, naming model.vision", function()
  local shot = ws .. "/shot.png"
  -- The model (scripted) is not known to take images: the server refuses
  -- the run before it reads the file, so any bytes do.
  vim.fn.writefile({ "an image" }, shot)
  vim.cmd("edit " .. greet)
  local sent, restore = spy_runs()
  local ok, err = pcall(function()
    vim.cmd("AgentChat!")
    local c = chat_buffer()
    type_prompt("What is wrong in #image:" .. shot)
    vim.cmd('execute "normal \\<C-s>"')
    wait_chat_idle(c, "the run with an image")
    assert(#sent == 1 and vim.deep_equal(sent[1].images, { { path = shot } }), "images sent: " .. vim.inspect(sent))
    local text = buffer_text()
    assert(text:find("is not known to take images: set model.vision to true", 1, true), text)
    vim.cmd("normal q")
  end)
  restore()
  os.remove(shot)
  assert(ok, err)
end)

test("/ completes the slash commands in the chat (agent.commands); /help answers without a run", function()
  local dir = ws .. "/.agents/commands"
  vim.fn.mkdir(dir, "p")
  vim.fn.writefile({ "---", "description: Fix what is wrong", "argument-hint: <what>", "---", "Fix this: $ARGUMENTS" }, dir .. "/fix.md")
  local ok, err = pcall(function()
    vim.cmd("edit " .. greet)
    vim.cmd("AgentChat!")
    local c = chat_buffer()
    type_prompt("/fi")
    vim.api.nvim_win_set_cursor(0, { vim.api.nvim_buf_line_count(0), 3 })
    assert(chat.omnifunc(1, "") == 0, "completion does not start at the slash: " .. tostring(chat.omnifunc(1, "")))
    local items = chat.omnifunc(0, "/fi")
    local fix = contains(items, function(i) return i.word == "/fix " end)
    assert(fix and fix.menu == "<what>" and fix.info == "Fix what is wrong (project)", vim.inspect(items))
    assert(not contains(items, function(i) return i.word == "/help " end), vim.inspect(items))
    local all = chat.omnifunc(0, "/")
    for _, want in ipairs({ "/help ", "/model ", "/sessions ", "/fix " }) do
      assert(contains(all, function(i) return i.word == want end), want .. " missing: " .. vim.inspect(all))
    end
    -- #references still complete after the slash's line.
    assert(#chat.omnifunc(0, "#buf") > 0, "#references no longer complete")
    type_prompt("/help fix")
    vim.cmd('execute "normal \\<C-s>"')
    wait_chat_idle(c, "the built-in's answer")
    local text = buffer_text()
    assert(text:find("/fix <what>\nFix what is wrong\nsource: project (.agents/commands/fix.md)", 1, true), text)
    assert(c.session == nil, "a built-in started a session: " .. tostring(c.session))
    vim.cmd("normal q")
  end)
  vim.fn.delete(ws .. "/.agents", "rf")
  assert(ok, err)
end)

test("a plan run with a token budget ends with its plan and :AgentRunPlan, which runs it in agent mode in its session", function()
  vim.cmd("edit " .. greet)
  local sent, restore = spy_runs()
  agent.config.max_tokens = 50000
  local ok, err = pcall(function()
    vim.cmd("AgentMode plan")
    vim.cmd("AgentChat!")
    local c = chat_buffer()
    type_prompt("NVIM plan a goodbye for the greeter")
    vim.cmd('execute "normal \\<C-s>"')
    wait_chat_idle(c, "the plan run")
    local text = buffer_text()
    assert(sent[1] and sent[1].mode == "plan" and sent[1].maxTokens == 50000, "the plan run's request: " .. vim.inspect(sent[1]))
    for _, want in ipairs({ "## Agent · plan mode\n", "1. Add a Goodbye function to greet.go.", " of 50000 tokens left", "_:AgentRunPlan runs this plan in agent mode (same session)_" }) do
      assert(text:find(want, 1, true), "the chat lacks " .. vim.inspect(want) .. ":\n" .. text)
    end
    assert(contains(notes, function(n) return n:find(":AgentRunPlan runs this plan", 1, true) ~= nil end), "no notification offers :AgentRunPlan: " .. vim.inspect(notes))
    assert(vim.deep_equal(vim.fn.getcompletion("AgentRunPlan ", "cmdline"), { c.session }), vim.inspect(vim.fn.getcompletion("AgentRunPlan ", "cmdline")))
    vim.cmd("AgentRunPlan")
    wait_for("the plan's run", function() return buffer_text():find("Carried out the Neovim plan.\n— done", 1, true) ~= nil end, 60000)
    local run = sent[2]
    assert(run and run.mode == "agent" and run.session == c.session, "the plan's run: " .. vim.inspect(run))
    assert(run.prompt == "Carry out this plan:\n\n1. Add a Goodbye function to greet.go.\n2. Test it.", vim.inspect(run.prompt))
    text = buffer_text()
    assert(text:find("## You\nCarry out this plan:\n\n1. Add a Goodbye", 1, true), "the chat does not show the plan's run:\n" .. text)
    assert(agent.state.mode == "plan", "the next runs' mode changed: " .. tostring(agent.state.mode))
    -- The chat's end line comes with run.end; the run's result, which takes the offer back, follows it.
    wait_for("the plan's offer to go once it ran", function() return agent.state.plans[c.session] == nil end, 20000)
    vim.cmd("normal q")
  end)
  restore()
  agent.config.max_tokens = nil
  vim.cmd("AgentMode agent")
  assert(ok, err)
end)

-- health_report runs :checkhealth agent_lsp and returns the report's text.
local function health_report()
  vim.cmd("checkhealth agent_lsp")
  local text = buffer_text()
  vim.cmd("bwipeout!")
  return text
end

test(":checkhealth agent_lsp: a missing binary is an ERROR", function()
  local cmd = agent.config.cmd
  agent.config.cmd = { "/nonexistent/agent-lsp" }
  local ok, text = pcall(health_report)
  agent.config.cmd = cmd
  assert(ok, text)
  assert(text:find("ERROR: server binary not found: /nonexistent/agent-lsp", 1, true), text)
end)

test(":checkhealth agent_lsp: a server of another version than the plugin's is a WARNING naming both", function()
  local fake = vim.fn.tempname()
  vim.fn.writefile({ "#!/bin/sh", 'echo "agent-lsp 0.0.1 (go1.0 linux/amd64)"' }, fake)
  vim.fn.setfperm(fake, "rwx------")
  local cmd = agent.config.cmd
  agent.config.cmd = { fake }
  local ok, text = pcall(health_report)
  agent.config.cmd = cmd
  vim.fn.delete(fake)
  assert(ok, text)
  local want = ("WARNING: server: agent-lsp 0.0.1 (go1.0 linux/amd64) (%s) is not the plugin's version %s"):format(fake, require("agent_lsp.version"))
  assert(text:find(want, 1, true), "the report lacks " .. vim.inspect(want) .. ":\n" .. text)
end)

test(":checkhealth agent_lsp: a working setup is OK, with a live check of the endpoint and the MCP servers, and never shows the key", function()
  agent.config.allow = { "go test *", "*" }
  local mcp_bin = assert(os.getenv("AGENT_LSP_TEST_MCP_BIN"), "AGENT_LSP_TEST_MCP_BIN")
  agent.config.mcp_servers = { tools = { command = mcp_bin, args = { "--health" } } }
  local key = vim.env.OPENAI_API_KEY
  vim.env.OPENAI_API_KEY = "sk-test-5ecret-key" -- doctor's environment is Neovim's
  local ok, text = pcall(health_report)
  agent.config.allow, agent.config.mcp_servers, vim.env.OPENAI_API_KEY = {}, nil, key
  assert(ok, text)
  assert(not text:find("ERROR", 1, true), text)
  for _, want in ipairs({
    "OK: Neovim 0.7.2: the review of an edit reads its keys in a prompt",
    "OK: server: agent-lsp " .. require("agent_lsp.version") .. " (",
    "OK: plugin version " .. require("agent_lsp.version"),
    "OK: doctor: ready",
    "OK: API key: present in OPENAI_API_KEY",
    "OK: endpoint: " .. os.getenv("OPENAI_BASE_URL") .. "/models answered ok in ",
    "OK: store: " .. store,
    "OK: client ",
    "INFO: server binary: set by the cmd option: " .. bin,
    'WARNING: allow has a bare "*"',
    "(stdio, from mcp_servers): " .. mcp_bin .. " --health",
  }) do
    assert(text:find(want, 1, true), "the report lacks " .. vim.inspect(want) .. ":\n" .. text)
  end
  assert(not text:find("5ecret", 1, true), "the key is shown:\n" .. text)
end)

test("two roots, one client: the second project is a workspace folder of the same client; :AgentWorkspace lists, removes and adds it", function()
  local compat = require("agent_lsp.compat")
  local client_mod = require("agent_lsp.client")
  local other = vim.fn.fnamemodify(ws, ":h") .. "/other-root"
  vim.fn.mkdir(other, "p")
  vim.fn.writefile({ "module other", "", "go 1.22" }, other .. "/go.mod")
  vim.fn.writefile({ "package other" }, other .. "/other.go")
  vim.cmd("edit " .. greet)
  local first = contains(vim.tbl_values(vim.lsp.buf_get_clients(0)), function(c) return c.name == "agent-lsp" end)
  assert(first, "greet.go has no client")
  vim.cmd("edit " .. other .. "/other.go")
  wait_for("other.go to attach", function() return vim.lsp.buf_is_attached(0, first.id) end, 5000)
  assert(#compat.get_clients("agent-lsp") == 1, "clients: " .. #compat.get_clients("agent-lsp"))
  local folders = client_mod.folders(first.id)
  assert(vim.tbl_contains(folders, ws) and vim.tbl_contains(folders, other), vim.inspect(folders))
  local function project_names()
    local names
    agent.projects(function(list)
      names = vim.tbl_map(function(p) return p.name end, list)
    end)
    wait_for("agent.projects", function() return names ~= nil end, 5000)
    table.sort(names)
    return names
  end
  local names = project_names()
  assert(vim.deep_equal(names, { "other-root", "sample" }), vim.inspect(names))
  vim.cmd("AgentWorkspace remove " .. other)
  names = project_names()
  assert(vim.deep_equal(names, { "sample" }), "after remove: " .. vim.inspect(names))
  vim.cmd("AgentWorkspace add " .. other)
  names = project_names()
  assert(vim.deep_equal(names, { "other-root", "sample" }), "after add: " .. vim.inspect(names))
  vim.cmd("edit " .. greet)
end)

test("a crashed server is restarted, with its folders and buffers", function()
  local client_mod = require("agent_lsp.client")
  local backoff = client_mod.backoff
  client_mod.backoff = { 100, 100 }
  local ok, err = pcall(function()
    vim.cmd("edit " .. greet)
    local c = contains(vim.tbl_values(vim.lsp.buf_get_clients(0)), function(x) return x.name == "agent-lsp" end)
    local folders = client_mod.folders(c.id)
    assert(#folders == 2, vim.inspect(folders))
    vim.loop.kill(c.rpc.pid, 9)
    wait_for("the new client", function()
      local n = contains(vim.tbl_values(vim.lsp.buf_get_clients(0)), function(x) return x.name == "agent-lsp" and x.id ~= c.id end)
      return n and agent.state.initialized[n.id]
    end, 10000)
    local n = contains(vim.tbl_values(vim.lsp.buf_get_clients(0)), function(x) return x.name == "agent-lsp" and x.id ~= c.id end)
    wait_for("the folders", function() return #client_mod.folders(n.id) == 2 end, 5000)
    assert(contains(notes, function(m) return m:find("restarting the server", 1, true) end), vim.inspect(notes))
  end)
  client_mod.backoff = backoff
  agent.state.restarts = 0
  assert(ok, err)
end)

-- Whatever the chat tests left open, the next tests start from greet.go.
vim.cmd("silent! only")
vim.cmd("edit " .. greet)

test("context settings reach the server; a session's subagents are listed and <CR> opens one's transcript", function()
  local job, url = start_model(subagent_script)
  agent.config.cmd_env = { OPENAI_BASE_URL = url }
  agent.config.context_tokens, agent.config.window, agent.config.tool_output, agent.config.read_only_subagents = 16384, 50, 4096, true
  local ok, err = pcall(function()
    restart() -- a setting of the wrong shape fails initialize
    local from = #events
    local run = run_and_wait("AgentRun Delegate the listing to a subagent")
    assert(run.result.status == "done", "status " .. tostring(run.result.status) .. ": " .. tostring(run.result.error))
    -- :AgentModel completes the endpoint's models (agent.models, live).
    agent.state.models = nil
    local names = vim.fn.getcompletion("AgentModel ", "cmdline")
    table.sort(names)
    assert(vim.deep_equal(names, { "other-model", "scripted" }), ":AgentModel completes " .. vim.inspect(names))
    -- A model the endpoint does not offer: the run is refused, naming the offered ones, in the chat too.
    vim.cmd("AgentModel no-such-model")
    vim.cmd("AgentChat! Delegate the listing to a subagent")
    local chat_state = require("agent_lsp.chat").chats[vim.api.nvim_get_current_buf()]
    -- Generous: the Go tests may load the machine meanwhile (a hang still fails).
    wait_for("the refusal", function() return chat_state.running == 0 end, 60000)
    local refused = contains(vim.api.nvim_buf_get_lines(0, 0, -1, false), function(l) return l:find("^— refused: ") end)
    assert(refused and refused:find("other-model", 1, true), "no refusal naming the offered models:\n" .. buffer_text())
    vim.cmd("bwipeout!")
    local start = contains(vim.list_slice(events, from + 1), function(e) return e.type == "run.start" end)
    assert(start and start.contextTokens == 16384, "run.start: " .. vim.inspect(start))
    local session = run.result.session
    vim.cmd("AgentSession")
    wait_for("the transcript", function() return vim.api.nvim_buf_get_name(0):find("agent-session://" .. session, 1, true) ~= nil end, 5000)
    local lines = vim.api.nvim_buf_get_lines(0, 0, -1, false)
    local row, sub = 0, nil
    for i, l in ipairs(lines) do
      local id = l:match("^%- done · List the Go files and report their names%. %((subagent%-%x%x%x%x%x%x%x%x)%)$")
      if id then
        row, sub = i, id
      end
    end
    assert(row > 0, "no subagent line:\n" .. table.concat(lines, "\n"))
    vim.api.nvim_win_set_cursor(0, { row, 0 })
    vim.cmd('execute "normal \\<CR>"')
    wait_for("the subagent's transcript", function() return vim.api.nvim_buf_get_name(0):find("agent-session://" .. session .. "/" .. sub, 1, true) ~= nil end, 5000)
    local text = buffer_text()
    assert(text:find("# List the Go files and report their names.", 1, true) and text:find("context " .. sub, 1, true), text)
    assert(text:find("calls `list_files`", 1, true) and text:find("greet.go", 1, true), text)
    vim.cmd("close")
    vim.cmd("close")
    vim.cmd("AgentSession " .. session .. " " .. sub)
    wait_for("the subagent's transcript from :AgentSession", function() return vim.api.nvim_buf_get_name(0):find("/" .. sub, 1, true) ~= nil end, 5000)
    vim.cmd("close")
  end)
  agent.config.cmd_env = nil
  agent.state.model = nil -- also when the test failed: the next tests' runs use the endpoint's model
  agent.config.context_tokens, agent.config.window, agent.config.tool_output, agent.config.read_only_subagents = nil, nil, nil, nil
  vim.fn.jobstop(job)
  assert(ok, err)
end)

-- answer_questions answers the server's window/showMessageRequest the way a
-- user picks from Neovim's numbered list (vim.fn.inputlist, which the default
-- handler the plugin's calls shows): choose(message) names the action to
-- pick. It records each question with its actions; the returned function
-- restores inputlist.
local function answer_questions(choose, asked)
  local inputlist, real_print = vim.fn.inputlist, print
  print = function() end -- the handler prints the question too
  vim.fn.inputlist = function(items)
    local actions = {}
    for i = 3, #items do
      table.insert(actions, (items[i]:gsub("^%d+%. ", "")))
    end
    table.insert(asked, { message = items[1], actions = actions })
    local want = choose(items[1])
    for i, title in ipairs(actions) do
      if title == want then
        return i
      end
    end
    return 0
  end
  return function()
    vim.fn.inputlist, print = inputlist, real_print
  end
end

test("mcp_servers reach the server: the MCP tool is called once allowed, :AgentMcp lists it running with its tools and the repository's server denied", function()
  local mcp_bin = assert(os.getenv("AGENT_LSP_TEST_MCP_BIN"), "AGENT_LSP_TEST_MCP_BIN")
  local project_file = ws .. "/.mcp.json"
  vim.fn.writefile({ vim.fn.json_encode({ mcpServers = { repo = { command = mcp_bin, args = { "--from-the-repository" } } } }) }, project_file)
  agent.config.mcp_servers = { tools = { command = mcp_bin, env = {} } }
  -- Room for every tool: the built-in ones, the language tools (this client
  -- answers them) and the MCP server's, none left out to fit the context.
  agent.config.context_tokens = 32768
  local asked = {}
  local restore = answer_questions(function(message)
    if message:find("defines the MCP server repo", 1, true) then
      return "Deny"
    elseif message:find("mcp__tools__echo", 1, true) then
      return "Allow once"
    end
  end, asked)
  local client_mod = require("agent_lsp.client")
  local execute, listed = client_mod.execute, 0
  client_mod.execute = function(c, command, ...)
    listed = listed + (command == "agent.mcp" and 1 or 0)
    return execute(c, command, ...)
  end
  local ok, err = pcall(function()
    vim.cmd("silent! only")
    vim.cmd("edit " .. greet)
    restart() -- the server reads mcpServers when it starts
    local run = run_and_wait("AgentRun Call the MCP echo tool, please")
    assert(run.result.status == "done", "status " .. tostring(run.result.status) .. ": " .. tostring(run.result.error))
    assert(#asked == 2, "questions: " .. vim.inspect(asked))
    assert(vim.deep_equal(asked[1].actions, { "Allow", "Always for this project", "Deny" }), "the approval offers: " .. vim.inspect(asked[1]))
    assert(asked[1].message:find(mcp_bin .. " --from-the-repository", 1, true), asked[1].message)
    assert(vim.deep_equal(asked[2].actions, { "Allow once", "Always for this session", "Deny" }), "the call offers: " .. vim.inspect(asked[2]))
    local out = tool_result(session_detail(run.result.session), "mcp__tools__echo")
    assert(out == "zebra-mcp-echo-42", "the MCP tool's result: " .. out)
    vim.cmd("AgentMcp")
    wait_for("the MCP list", function() return vim.api.nvim_buf_get_name(0):find("agent-lsp://mcp", 1, true) ~= nil end, 5000)
    local lines = vim.api.nvim_buf_get_lines(0, 0, -1, false)
    local text = table.concat(lines, "\n")
    assert(text:find("sample — " .. ws, 1, true), text)
    local tools = contains(lines, function(l) return l:find("^  tools ") end)
    assert(tools and tools:find("editor%s+stdio%s+running%s+9 tools$"), "the editor's server:\n" .. text)
    local repo = contains(lines, function(l) return l:find("^  repo ") end)
    assert(repo and repo:find("project%s+stdio%s+denied%s+tools not listed yet — the user denied it"), "the repository's server:\n" .. text)
    assert(vim.bo.buftype == "nofile" and not vim.bo.modifiable, "the list should be a read-only scratch buffer")
    -- <CR> on the repository's server: where it is defined, why it does not run.
    vim.api.nvim_win_set_cursor(0, { vim.fn.index(lines, repo) + 1, 0 })
    local list_win = vim.api.nvim_get_current_win()
    vim.cmd('execute "normal \\<CR>"')
    local float = contains(vim.api.nvim_list_wins(), function(w) return vim.api.nvim_win_get_config(w).relative ~= "" end)
    assert(float, "no details float")
    local details = table.concat(vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(float), 0, -1, false), "\n")
    assert(details:find("defined in " .. project_file .. " (project)", 1, true) and details:find("reason: the user denied it in this window", 1, true), details)
    vim.api.nvim_win_close(float, true)
    vim.api.nvim_set_current_win(list_win)
    -- R lists them again, in place.
    local before = listed
    vim.cmd("normal R")
    wait_for("the refreshed list", function() return listed == before + 1 end, 5000)
    vim.wait(200)
    assert(vim.api.nvim_buf_get_name(0):find("agent-lsp://mcp", 1, true) and #vim.api.nvim_list_wins() == 2, "R opened another window")
    assert(contains(vim.api.nvim_buf_get_lines(0, 0, -1, false), function(l) return l:find("running%s+9 tools$") end), "after R:\n" .. buffer_text())
    vim.cmd("close")
  end)
  restore()
  client_mod.execute = execute
  agent.config.mcp_servers, agent.config.context_tokens = nil, nil
  vim.fn.delete(project_file)
  assert(ok, err)
end)

test(":checkhealth agent_lsp: missing help tags are a WARNING naming the :helptags to run; once made, OK", function()
  local doc = os.getenv("AGENT_LSP_TEST_PLUGIN") .. "/doc"
  local ok, text = pcall(health_report)
  assert(ok, text)
  for _, want in ipairs({ "WARNING: help tags are missing in " .. doc, "run :helptags " .. doc }) do
    assert(text:find(want, 1, true), "the report lacks " .. vim.inspect(want) .. ":\n" .. text)
  end
  vim.cmd("helptags " .. doc)
  ok, text = pcall(health_report)
  assert(ok, text)
  -- (the report makes ":help agent-lsp" a link: ":help |agent-lsp|")
  assert(text:find("OK: help: :help |agent-lsp| (tags in " .. doc .. ")", 1, true), text)
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

test("without a key for an endpoint that needs one, a run is refused at once, naming the Neovim options; the empty chat says so", function()
  agent.config.base_url, agent.config.api_key_env = "https://api.openai.com/v1", "AGENT_LSP_TEST_NO_SUCH_KEY"
  vim.cmd("edit " .. greet)
  local ok, err = pcall(restart)
  if not ok then
    agent.config.base_url, agent.config.api_key_env = nil, nil
    error(err)
  end
  local before = #notes
  local started = vim.loop.hrtime()
  local ran, run = pcall(run_and_wait, "AgentRun Fix the tests", 5000)
  local took = (vim.loop.hrtime() - started) / 1e9
  local new = { unpack(notes, before + 1) }
  vim.cmd("AgentChat!")
  local chat_lines
  pcall(wait_for, "the chat's endpoint line", function()
    chat_lines = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
    return chat_lines:find("this endpoint needs one", 1, true) ~= nil
  end, 5000)
  vim.cmd("bwipeout!")
  agent.config.base_url, agent.config.api_key_env = nil, nil
  restart()
  assert(ran, run)
  assert(run.result == false, "the run was not refused: " .. vim.inspect(run.result))
  assert(took < 5, "the refusal took " .. took .. " s")
  local refused = contains(new, function(n) return n:find("no API key", 1, true) ~= nil end)
  assert(refused, "no notification: " .. vim.inspect(new))
  for _, want in ipairs({ "AGENT_LSP_TEST_NO_SUCH_KEY", "api_key_env", "base_url", ":checkhealth agent_lsp" }) do
    assert(refused:find(want, 1, true), want .. " missing: " .. refused)
  end
  assert(#vim.tbl_filter(function(n) return n:find("no API key", 1, true) ~= nil end, new) == 1, "shown more than once: " .. vim.inspect(new))
  assert(chat_lines:find("no API key (AGENT_LSP_TEST_NO_SUCH_KEY)", 1, true), chat_lines)
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
