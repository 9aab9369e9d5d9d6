-- Headless end-to-end test of Rewind (docs/rewind.md) against the real
-- agent-lsp binary and a scripted model of its own: two prompts each edit
-- rewind.txt; :AgentFork from the picker opens a session whose history is
-- the first exchange; :AgentRewind from the picker (checkpoint 2, both)
-- puts the buffer back as it was before the second prompt and leaves one
-- prompt in the session and its chat; :AgentRewind undo brings both back
-- (and a second rewind takes them out again); :AgentRetry sends that prompt
-- again.
-- run.sh sets the environment; the exit code is the verdict.
local bin = assert(os.getenv("AGENT_LSP_TEST_BIN"), "AGENT_LSP_TEST_BIN")
local model_bin = assert(os.getenv("AGENT_LSP_TEST_MODEL_BIN"), "AGENT_LSP_TEST_MODEL_BIN")

local harness = dofile(debug.getinfo(1, "S").source:match("^@(.*)/") .. "/harness.lua")
local test = harness.test

local notes = {}
vim.notify = function(msg) table.insert(notes, msg) end

-- wait_for waits for fn; a timeout's error says the last notification (a server's refusal shows there).
local function wait_for(what, fn, ms)
  if not vim.wait(ms or 30000, fn, 20) then
    error(("timed out waiting for %s (last notification: %s)"):format(what, tostring(notes[#notes])), 2)
  end
end

local function has_note(text)
  for _, n in ipairs(notes) do
    if n:find(text, 1, true) then
      return n
    end
  end
end

-- The model's script: the first prompt adds "first", the second "second"; a retry answers again.
local edit = function(id, old, new) return { toolCalls = { { id = id, name = "edit_file", args = { path = "rewind.txt", old_text = old, new_text = new } } } } end
local script = {
  conversations = {
    {
      match = "NVIM rewind one",
      turns = {
        edit("call_first", "one\n", "one\nfirst\n"),
        { text = "Added first." },
        edit("call_second", "first\n", "first\nsecond\n"),
        { text = "Added second." },
        { text = "Retried: first is there." },
      },
    },
  },
}

-- The workspace: a git repository with rewind.txt.
local ws = vim.fn.tempname()
vim.fn.mkdir(ws, "p")
vim.fn.writefile({ "one" }, ws .. "/rewind.txt")
vim.fn.system({ "git", "-C", ws, "init", "-q" })

local script_path = vim.fn.tempname() .. ".json"
vim.fn.writefile({ vim.fn.json_encode(script) }, script_path)
local url
local job = vim.fn.jobstart({ model_bin, "--script", script_path }, { on_stdout = function(_, data) url = url or (data[1] ~= "" and data[1] or nil) end })
assert(job > 0, "the scripted model did not start")
wait_for("the scripted model's URL", function() return url ~= nil end, 5000)

vim.cmd("cd " .. ws)
vim.cmd("runtime plugin/agent_lsp.lua")
local agent = require("agent_lsp")
agent.setup({ cmd = { bin }, store = vim.fn.tempname() .. ".db", cmd_env = { OPENAI_BASE_URL = url } })

local function buffer_lines(buf) return vim.api.nvim_buf_get_lines(buf, 0, -1, false) end

local function run_and_wait(cmd)
  local before = agent.state.last_run
  vim.cmd(cmd)
  wait_for("the run to start", function() return agent.state.last_run ~= before end, 5000)
  local run = agent.state.last_run
  wait_for("the run to end", function() return run.result ~= nil end)
  assert(run.result and run.result.status == "done", "the run: " .. vim.inspect(run.result))
  return run
end

-- session_detail is agent.session's answer for session.
local function session_detail(session)
  local c = require("agent_lsp.client").for_session(session)
  local detail
  require("agent_lsp.client").execute(c, "agent.session", { session = session }, function(d) detail = d end)
  wait_for("agent.session", function() return detail ~= nil end, 10000)
  return detail
end

local function prompts(detail)
  local out = {}
  for _, m in ipairs(detail.messages or {}) do
    if m.role == "human" then
      table.insert(out, m.content)
    end
  end
  return out
end

-- with_picks answers the vim.ui.select pickers in turn with pick(items, opts), recording what they offered.
local function with_picks(picks, fn)
  local saved, offered = vim.ui.select, {}
  vim.ui.select = function(items, opts, on_choice)
    local lines = vim.tbl_map(opts.format_item or tostring, items)
    table.insert(offered, { prompt = opts.prompt, lines = lines })
    local pick = table.remove(picks, 1)
    vim.schedule(function() on_choice(pick and pick(items, lines) or nil) end)
  end
  local ok, err = pcall(fn, offered)
  vim.ui.select = saved
  if not ok then
    error(err, 0)
  end
end

local buf, session

test("two prompts each edit rewind.txt", function()
  vim.cmd("edit " .. ws .. "/rewind.txt")
  buf = vim.api.nvim_get_current_buf()
  wait_for("the agent-lsp client", function()
    for _, c in pairs(vim.lsp.buf_get_clients(buf)) do
      if c.name == "agent-lsp" and c.initialized ~= false then
        return true
      end
    end
  end)
  run_and_wait("AgentRun NVIM rewind one")
  session = agent.state.last_session
  run_and_wait("AgentRun! and two")
  assert(agent.state.last_session == session, "the follow-up went to another session")
  assert(vim.deep_equal(buffer_lines(buf), { "one", "first", "second" }), vim.inspect(buffer_lines(buf)))
end)

test(":AgentFork from the picker: a new session with the first exchange, opened in the chat; the file untouched", function()
  with_picks({ function(items) return items[2] end }, function(offered)
    vim.cmd("AgentFork")
    wait_for("the fork in the chat", function() return vim.api.nvim_buf_get_name(0):find("agent://chat/", 1, true) and agent.state.last_session ~= session end)
    assert(offered[1].lines[1]:find("^1%. NVIM rewind one — rewind%.txt %+1 −0"), vim.inspect(offered[1].lines))
    assert(offered[1].lines[2]:find("^2%. and two — rewind%.txt %+1 −0"), vim.inspect(offered[1].lines))
  end)
  local forked = agent.state.last_session
  assert(has_note(("session %s forked before prompt 2: the new session is %s"):format(session, forked)), vim.inspect(notes))
  assert(vim.deep_equal(prompts(session_detail(forked)), { "NVIM rewind one" }), vim.inspect(session_detail(forked)))
  assert(vim.deep_equal(buffer_lines(buf), { "one", "first", "second" }), vim.inspect(buffer_lines(buf)))
  vim.cmd("close")
  agent.state.last_session = session
end)

test(":AgentRewind from the picker: checkpoint 2, conversation and files; the buffer is back, the session has one prompt", function()
  vim.cmd("buffer " .. buf)
  with_picks({ function(items) return items[2] end, function(items) return items[1] end }, function(offered)
    vim.cmd("AgentRewind")
    wait_for("the rewind's note", function() return has_note("rewound to before prompt 2") end)
    assert(offered[2].prompt:find("files changed since: rewind.txt +1 −0", 1, true), offered[2].prompt)
  end)
  wait_for("the restored buffer", function() return vim.deep_equal(buffer_lines(buf), { "one", "first" }) end, 10000)
  assert(has_note("the prompt and later left the conversation") and has_note("restored rewind.txt"), vim.inspect(notes))
  assert(vim.deep_equal(prompts(session_detail(session)), { "NVIM rewind one" }), vim.inspect(session_detail(session)))
end)

test(":AgentRewind undo: the buffer and the second prompt are back; rewinding again takes them out", function()
  vim.cmd("AgentRewind undo")
  wait_for("the undo's note", function() return has_note("undid the rewind to before prompt 2") end)
  wait_for("the buffer as before the rewind", function() return vim.deep_equal(buffer_lines(buf), { "one", "first", "second" }) end, 10000)
  assert(has_note("put back rewind.txt"), vim.inspect(notes))
  assert(vim.deep_equal(prompts(session_detail(session)), { "NVIM rewind one", "and two" }), vim.inspect(session_detail(session)))
  local n = #notes
  vim.cmd("AgentRewind 2 both")
  wait_for("the second rewind's note", function() return #notes > n and notes[#notes]:find("rewound to before prompt 2", 1, true) ~= nil end)
  wait_for("the restored buffer", function() return vim.deep_equal(buffer_lines(buf), { "one", "first" }) end, 10000)
  assert(vim.deep_equal(prompts(session_detail(session)), { "NVIM rewind one" }), vim.inspect(session_detail(session)))
end)

test(":AgentRetry sends the last prompt again: one prompt, the new answer", function()
  local run = run_and_wait("AgentRetry")
  assert(run.prompt == "NVIM rewind one", tostring(run.prompt))
  local detail = session_detail(session)
  assert(vim.deep_equal(prompts(detail), { "NVIM rewind one" }), vim.inspect(detail))
  local last = detail.messages[#detail.messages]
  assert(last.role == "ai" and last.content == "Retried: first is there.", vim.inspect(last))
  assert(vim.deep_equal(buffer_lines(buf), { "one", "first" }), "a retry leaves the files: " .. vim.inspect(buffer_lines(buf)))
end)

vim.fn.jobstop(job)
harness.finish()
