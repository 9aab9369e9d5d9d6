-- Headless unit tests without a server: compat.lua's version shims, the
-- initializationOptions of config.lua and its checks, the review's hint, the
-- renderers' text beyond the fixtures (protocol.lua covers those), the event
-- log, and the commands against a stubbed connection (with_server: the
-- executeCommand requests are recorded and answered by the test, server
-- messages delivered through the client's handlers).
-- Then the edits: line hunks, the version check of workspace/applyEdit,
-- files an edit loads or creates, agent/saveDocuments, and the review by hunk
-- with mappings (run in a coroutine, as newer releases run the handler).
-- Only Neovim 0.7.2 (Debian's) installs here, so the paths of newer releases
-- (0.8's autocommand data and winbar, 0.10's get_clients, 0.11's
-- client:method() calls, str_utfindex(s, encoding), start{attach =
-- false} and attaching through vim.lsp.config/vim.lsp.enable, vim.lsp.start
-- from 0.8, 0.12's b:changedtick as the document
-- version) can only run against stubs of the vim APIs they call. Each case
-- stubs the release it claims, so the cases hold on any Neovim; the "real"
-- cases call this Neovim's own APIs.
local harness = dofile(debug.getinfo(1, "S").source:match("^@(.*)/") .. "/harness.lua")
local test = harness.test

local real_has = vim.fn.has

-- release(minor) stubs vim.fn.has to claim the releases up to 0.minor.
local function release(minor)
  return {
    vim.fn,
    "has",
    function(feature)
      local m = feature:match("^nvim%-0%.(%d+)$")
      if m then
        return tonumber(m) <= minor and 1 or 0
      end
      return real_has(feature)
    end,
  }
end

-- with_compat replaces the stubs' fields ({ table, key, value } each), loads
-- compat.lua afresh under them (it picks its paths at load time), calls
-- fn(compat) and restores the fields.
local function with_compat(stubs, fn)
  local saved = {}
  for i, s in ipairs(stubs) do
    saved[i] = s[1][s[2]]
    s[1][s[2]] = s[3]
  end
  package.loaded["agent_lsp.compat"] = nil
  local ok, err = pcall(fn, require("agent_lsp.compat"))
  for i, s in ipairs(stubs) do
    s[1][s[2]] = saved[i]
  end
  package.loaded["agent_lsp.compat"] = nil
  if not ok then
    error(err, 0)
  end
end

-- recorder returns a function that stores its arguments in calls and returns ret.
local function recorder(calls, ...)
  local ret = { n = select("#", ...), ... }
  return function(...)
    table.insert(calls, { n = select("#", ...), ... })
    return unpack(ret, 1, ret.n)
  end
end

-- compat.call ------------------------------------------------------------

test("call: client.method(...) before 0.11", function()
  with_compat({ release(10) }, function(compat)
    local calls = {}
    local c = { request = recorder(calls, true, 5) }
    local ok, id = compat.call(c, "request", "m", "p")
    assert(ok == true and id == 5, "results")
    assert(calls[1].n == 2 and calls[1][1] == "m" and calls[1][2] == "p", vim.inspect(calls))
  end)
end)

test("call: client:method(...) from 0.11 (stubbed)", function()
  with_compat({ release(11) }, function(compat)
    local calls = {}
    local c = {}
    c.request = recorder(calls, true, 5)
    compat.call(c, "request", "m", "p")
    assert(calls[1].n == 3 and calls[1][1] == c and calls[1][2] == "m", vim.inspect(calls))
  end)
end)

-- compat.get_clients -----------------------------------------------------

-- clients are a running agent-lsp client, another server and a stopped
-- agent-lsp client, in the style of the release (methods from 0.11).
local function clients(method_style)
  local function client(name, stopped)
    local c = { name = name }
    c.is_stopped = function(self)
      assert((self == c) == method_style, "is_stopped called in the wrong style")
      return stopped
    end
    return c
  end
  return { client("agent-lsp", false), client("other", false), client("agent-lsp", true) }
end

test("get_clients: get_active_clients on 0.7, without others and stopped ones", function()
  local all = clients(false)
  with_compat({ release(7), { vim.lsp, "get_clients", nil }, { vim.lsp, "get_active_clients", function() return all end } }, function(compat)
    local got = compat.get_clients("agent-lsp")
    assert(#got == 1 and got[1] == all[1], vim.inspect(got))
  end)
end)

test("get_clients: get_clients and client:is_stopped() on 0.11 (stubbed)", function()
  local all = clients(true)
  local old = function() error("get_active_clients is deprecated") end
  with_compat({ release(11), { vim.lsp, "get_clients", function() return all end }, { vim.lsp, "get_active_clients", old } }, function(compat)
    local got = compat.get_clients("agent-lsp")
    assert(#got == 1 and got[1] == all[1], vim.inspect(got))
  end)
end)

-- compat.start -----------------------------------------------------------

local cfg = { name = "agent-lsp", root_dir = "/src/sample" }

-- start_stubs stubs the client starts of a release: vim.lsp.start (nil
-- before 0.8) and start_client record their calls and return client 7,
-- whose is_stopped is false (a method from 0.11).
local function start_stubs(minor, calls)
  local function started(kind)
    return function(...)
      table.insert(calls, { kind, ... })
      return 7
    end
  end
  local seven = minor >= 11 and {
    is_stopped = function(self)
      assert(self.is_stopped)
      return false
    end,
  } or {
    is_stopped = function(...)
      assert(select("#", ...) == 0)
      return false
    end,
  }
  return {
    release(minor),
    { vim.lsp, "start", minor >= 8 and started("start") or nil },
    { vim.lsp, "start_client", started("start_client") },
    { vim.lsp, "get_client_by_id", function(id) return id == 7 and seven or nil end },
    { vim.lsp, "buf_attach_client", function(bufnr, id) table.insert(calls, { "attach", bufnr, id }) end },
  }
end

test("start on 0.7: one client, start_client then buf_attach_client; every later buffer attaches to it", function()
  local calls, known = {}, {}
  with_compat(start_stubs(7, calls), function(compat)
    assert(compat.start(cfg, 3, known) == 7)
    assert(compat.start(vim.tbl_extend("force", cfg, { root_dir = "/src/other" }), 4, known) == 7)
    assert(known.id == 7, vim.inspect(known))
  end)
  local want = { { "start_client", cfg }, { "attach", 3, 7 }, { "attach", 4, 7 } }
  assert(vim.deep_equal(calls, want), vim.inspect(calls))
end)

test("start on 0.8 to 0.10 (stubbed): vim.lsp.start with reuse_client by name for a buffer, then the known client; start_client for none", function()
  local calls, known = {}, {}
  with_compat(start_stubs(10, calls), function(compat)
    assert(compat.start(cfg, 3, known) == 7)
    assert(compat.start(cfg, 4, known) == 7)
    assert(compat.start(cfg, nil, {}) == 7)
  end)
  assert(calls[1][1] == "start" and calls[1][2] == cfg and calls[1][3].bufnr == 3, vim.inspect(calls[1]))
  local reuse = calls[1][3].reuse_client
  assert(reuse({ name = cfg.name }, cfg) and not reuse({ name = "other" }, cfg), "reuse_client matches by name")
  assert(vim.deep_equal({ calls[2], calls[3] }, { { "attach", 4, 7 }, { "start_client", cfg } }), vim.inspect(calls))
end)

test("start on 0.11 (stubbed): vim.lsp.start{attach = false} for no buffer, once, reusing the config's client", function()
  local calls, known = {}, {}
  local reuse = function() return true end
  local conf = vim.tbl_extend("force", cfg, { reuse_client = reuse })
  with_compat(start_stubs(11, calls), function(compat)
    assert(compat.start(conf, nil, known) == 7)
    assert(compat.start(conf, nil, known) == 7)
  end)
  local want = { { "start", conf, { attach = false, reuse_client = reuse } } }
  assert(vim.deep_equal(calls, want), vim.inspect(calls))
end)

-- compat.line_width ------------------------------------------------------

local line = "a😀é" -- 7 bytes, 4 UTF-16 units, 3 code points

-- lengths counts line's code points (UTF-32) and UTF-16 units by its bytes.
local function lengths(s)
  local utf32, utf16 = 0, 0
  for byte in s:gmatch(".") do
    local b = byte:byte()
    if b < 0x80 or b >= 0xC0 then -- not a continuation byte
      utf32 = utf32 + 1
      utf16 = utf16 + (b >= 0xF0 and 2 or 1)
    end
  end
  return utf32, utf16
end

test("line_width on 0.7: str_utfindex(s) returns both lengths", function()
  local function old(s, index)
    assert(index == nil, "an index was passed")
    return lengths(s)
  end
  with_compat({ release(7), { vim, "str_utfindex", old } }, function(compat)
    assert(compat.line_width(line, "utf-16") == 4)
    assert(compat.line_width(line, "utf-32") == 3)
    assert(compat.line_width(line) == 4, "the default is utf-16")
    assert(compat.line_width(line, "utf-8") == 7)
  end)
end)

test("line_width on 0.11 (stubbed): str_utfindex(s, encoding)", function()
  local function new(s, encoding)
    local utf32, utf16 = lengths(s)
    return ({ ["utf-16"] = utf16, ["utf-32"] = utf32 })[encoding] or error("encoding " .. tostring(encoding))
  end
  with_compat({ release(11), { vim, "str_utfindex", new } }, function(compat)
    assert(compat.line_width(line, "utf-16") == 4)
    assert(compat.line_width(line, "utf-32") == 3)
    assert(compat.line_width(line, "utf-8") == 7)
  end)
end)

test("line_width with this Neovim's str_utfindex (real)", function()
  with_compat({}, function(compat)
    assert(compat.line_width(line, "utf-16") == 4)
    assert(compat.line_width(line, "utf-32") == 3)
  end)
end)

-- compat.fire ------------------------------------------------------------

test("fire: data left out on 0.7, passed from 0.8 (stubbed)", function()
  for _, case in ipairs({ { 7, nil }, { 8, { x = 1 } } }) do
    local minor, want, calls = case[1], case[2], {}
    with_compat({ release(minor), { vim.api, "nvim_exec_autocmds", recorder(calls) } }, function(compat) compat.fire("AgentLspTest", { x = 1 }) end)
    local opts = calls[1][2]
    assert(calls[1][1] == "User" and opts.pattern == "AgentLspTest", vim.inspect(calls))
    assert(vim.deep_equal(opts.data, want), ("0.%d: data %s"):format(minor, vim.inspect(opts.data)))
  end
end)

test("fire runs the User autocommand once on this Neovim (real)", function()
  local runs = 0
  local id = vim.api.nvim_create_autocmd("User", { pattern = "AgentLspTest", callback = function() runs = runs + 1 end })
  with_compat({}, function(compat) compat.fire("AgentLspTest", { x = 1 }) end)
  vim.api.nvim_del_autocmd(id)
  assert(runs == 1, "ran " .. runs .. " times")
end)

-- compat.can_yield -------------------------------------------------------

test("can_yield: not on the main thread, yes in a coroutine", function()
  with_compat({}, function(compat)
    assert(compat.can_yield() == false, "main thread")
    assert(coroutine.wrap(compat.can_yield)() == true, "coroutine")
  end)
end)

-- compat.at_version -------------------------------------------------------

test("at_version up to 0.11: vim.lsp.util.buf_versions, as didOpen and didChange set it (real)", function()
  with_compat({}, function(compat)
    local b = vim.api.nvim_create_buf(false, true)
    local versions = vim.lsp.util.buf_versions
    versions[b] = 0 -- didOpen
    local current, at = compat.at_version(b, 0)
    assert(current == true and at == 0, "at didOpen's version")
    versions[b] = 5 -- a change since
    current, at = compat.at_version(b, 0)
    assert(current == false and at == 5, ("moved on: %s %s"):format(current, at))
    versions[b] = nil -- no client tracks it
    current, at = compat.at_version(b, 0)
    assert(current == false and at == nil, "untracked")
    current, at = compat.at_version(vim.fn.bufadd(vim.fn.tempname()), 0)
    assert(current == false and at == nil, "not loaded")
    vim.api.nvim_buf_delete(b, { force = true })
  end)
end)

test("at_version from 0.12 (stubbed): b:changedtick, one tick past it while unmodified (a write)", function()
  local deprecated = setmetatable({}, { __index = function() error("vim.lsp.util.buf_versions is deprecated") end })
  with_compat({ release(12), { vim.lsp.util, "buf_versions", deprecated } }, function(compat)
    local b = vim.api.nvim_create_buf(false, false)
    local tick = vim.b[b].changedtick
    assert(compat.at_version(b, tick) == true, "at its changedtick")
    assert(compat.at_version(b, tick - 1) == true, "unmodified, one tick past: a write raised it")
    local current, at = compat.at_version(b, tick - 2)
    assert(current == false and at == tick, "two ticks past")
    vim.api.nvim_buf_set_lines(b, 0, -1, false, { "typed" })
    local typed = vim.b[b].changedtick
    current, at = compat.at_version(b, typed - 1)
    assert(current == false and at == typed, "modified: one tick past is a change")
    vim.api.nvim_buf_delete(b, { force = true })
  end)
end)

-- compat.winbar ------------------------------------------------------------

test("winbar: none on 0.7 (the caller echoes); from 0.8 (stubbed) the window's, % escaped", function()
  with_compat({ release(7) }, function(compat) assert(compat.winbar(0, "x") == false) end)
  local set = {}
  local wo = setmetatable({}, {
    __index = function(_, win)
      set[win] = {}
      return set[win]
    end,
  })
  with_compat({ release(8), { vim, "wo", wo } }, function(compat) assert(compat.winbar(7, "review 100% — ga accept") == true) end)
  assert(set[7] and set[7].winbar == "review 100%% — ga accept", vim.inspect(set))
end)

-- config -----------------------------------------------------------------

local config = require("agent_lsp.config")

-- sent returns the initializationOptions of setup(opts) as the server gets
-- them: the JSON text the LSP client sends (vim.json.encode) and its decoding.
local function sent(opts)
  config.setup(opts)
  local json = vim.json.encode(config.init_options())
  config.setup()
  return json, vim.json.decode(json)
end

test("init_options: allow_edit is permissions.allowEdit and scrub_env is scrubEnv, lists of strings", function()
  local json, init = sent({ allow_edit = { ".vscode/settings.json", ".env" }, scrub_env = { "*_TOKEN", "SSH_AUTH_SOCK" } })
  assert(json:find('"allowEdit":[', 1, true) and json:find('"scrubEnv":[', 1, true), "not JSON arrays: " .. json)
  assert(vim.deep_equal(init.permissions, { allow = {}, deny = {}, allowEdit = { ".vscode/settings.json", ".env" } }), json)
  assert(vim.deep_equal(init.scrubEnv, { "*_TOKEN", "SSH_AUTH_SOCK" }), json)
end)

test("init_options: by default allowEdit is an empty list and scrubEnv is not sent", function()
  local json, init = sent()
  assert(json:find('"allowEdit":[]', 1, true), json)
  assert(init.scrubEnv == nil and not json:find("scrubEnv", 1, true), json)
end)

test("init_options: scrub_env = {} sends an empty list, which replaces the server's", function()
  local json = sent({ scrub_env = {} })
  assert(json:find('"scrubEnv":[]', 1, true), json)
end)

-- review -------------------------------------------------------------------

local review = require("agent_lsp.review")
local keys = config.defaults.review_keys
local keys_text = "]c [c hunks, do take, dp drop, ga accept, gr reject"

-- annotated is an ApplyWorkspaceEditParams whose annotations are given.
local function annotated(annotations) return { label = "agent: edit .env", edit = { changeAnnotations = annotations, documentChanges = {} } } end

test("review hint: the label, why the edit needs confirmation, the keys", function()
  local params = annotated({ ["agent-lsp.review"] = { label = "x", needsConfirmation = true, description = "protected file: environment files hold secrets; accept or reject" } })
  assert(review.wants_review(params.edit))
  local want = "agent: edit .env — protected file: environment files hold secrets; accept or reject — " .. keys_text
  assert(review.hint(params, keys) == want, review.hint(params, keys))
  assert(review.queue(params) == nil, "no queue")
end)

test('review hint: the place in the queue, from the description\'s "(1 of N)", shown apart', function()
  local params = annotated({ ["agent-lsp.review"] = { label = "x", needsConfirmation = true, description = "proposed by agent-lsp; accept or reject (1 of 3)" } })
  assert(review.queue(params) == "1 of 3", tostring(review.queue(params)))
  local want = "agent: edit .env — proposed by agent-lsp; accept or reject — 1 of 3 — " .. keys_text
  assert(review.hint(params, keys) == want, review.hint(params, keys))
end)

test("review hint: only descriptions of annotations that need confirmation, each once", function()
  local params = annotated({
    a = { label = "a", needsConfirmation = true, description = "why" },
    b = { label = "b", needsConfirmation = true, description = "why" },
    c = { label = "c", description = "not asked" },
    d = { label = "d", needsConfirmation = true },
  })
  assert(review.hint(params, keys) == "agent: edit .env — why — " .. keys_text, review.hint(params, keys))
  params = annotated({ c = { label = "c", description = "not asked" } })
  assert(not review.wants_review(params.edit))
end)

-- render -----------------------------------------------------------------

local render = require("agent_lsp.render")

test("project_line shows the techStack object", function()
  local p = {
    name = "sample",
    path = "/src/sample",
    type = "go",
    gitBranch = "main",
    techStack = {
      language = "go",
      languageVersion = "1.22",
      packageManager = "go modules",
      buildCommand = "go build ./...",
      testCommand = "go test ./...",
      manifests = { "go.mod" },
      others = { "javascript" },
    },
  }
  local want = "sample (go) [go 1.22, go modules; build: go build ./..., test: go test ./...; also javascript] on main — /src/sample (go.mod)"
  assert(render.project_line(p) == want, render.project_line(p))
  p.techStack = { language = "go", testCommand = "go test ./..." }
  p.gitBranch = nil
  assert(render.project_line(p) == "sample (go) [test: go test ./...] — /src/sample", render.project_line(p))
  p.techStack = { language = "go" }
  assert(render.project_line(p) == "sample (go) — /src/sample", render.project_line(p))
end)

test("project_context: build and test outcomes, files, errors", function()
  local lines = render.project_context({
    openFiles = { "a.go", "b.go" },
    pendingChanges = { "a.go" },
    lastBuild = { status = "success", command = "go build ./...", at = "2026-01-02T03:04:05.678+01:00" },
    lastTest = { status = "failed", summary = "1 test\nfailed" },
    recentErrors = { "a.go:3: undefined: x" },
  })
  local want = {
    "    last build: success (go build ./..., 2026-01-02 03:04:05) · last test: failed: 1 test failed",
    "    open: a.go, b.go · unsaved edits: a.go",
    "    error: a.go:3: undefined: x",
  }
  assert(vim.deep_equal(lines, want), vim.inspect(lines))
end)

test("project_sandbox: mode, ABI, network, writable, enforced and not", function()
  local lines = render.project_sandbox({
    mode = "workspace-write",
    landlockABI = 6,
    enforced = {
      "files: read everywhere, write only in /tmp, /work/x, /home/u/.cache/go-build",
      "network: TCP bind and connect denied",
      "IPC: abstract Unix sockets and signals scoped to the sandbox",
    },
    notEnforced = { "UDP (needs Landlock ABI 10)", "pathname Unix sockets" },
    writable = { "/tmp", "/work/x", "/home/u/.cache/go-build" },
    network = false,
  })
  local want = {
    "    sandbox: workspace-write · Landlock ABI 6 · no network",
    "    writable: /tmp, /work/x, /home/u/.cache/go-build",
    "    enforced: files: read everywhere, write only in /tmp, /work/x, /home/u/.cache/go-build",
    "    enforced: network: TCP bind and connect denied",
    "    enforced: IPC: abstract Unix sockets and signals scoped to the sandbox",
    "    not enforced: UDP (needs Landlock ABI 10)",
    "    not enforced: pathname Unix sockets",
  }
  assert(vim.deep_equal(lines, want), vim.inspect(lines))
  lines = render.project_sandbox({ mode = "off", landlockABI = 0, enforced = {}, notEnforced = { "the sandbox is off: commands run with the user's full rights" }, network = true })
  want = { "    sandbox: off · Landlock ABI 0 · network allowed", "    not enforced: the sandbox is off: commands run with the user's full rights" }
  assert(vim.deep_equal(lines, want), vim.inspect(lines))
end)

test("time: RFC 3339 to the second, other text unchanged", function()
  assert(render.time("2026-01-02T03:04:05.123456789Z") == "2026-01-02 03:04:05")
  assert(render.time("2026-01-02T03:04:05+02:00") == "2026-01-02 03:04:05")
  assert(render.time("yesterday") == "yesterday" and render.time(nil) == "?")
end)

test("run_summary: counts and the reply's first line, or the error", function()
  local usage = { promptTokens = 70, completionTokens = 35, totalTokens = 105 }
  local summary, reply = render.run_summary({ status = "done", edits = 1, steps = 3, usage = usage, reply = "Added Farewell.\nDetails.\n\n" })
  assert(summary == "done · 1 edit · 3 steps · 105 tokens — Added Farewell.", summary)
  assert(reply == "Added Farewell.\nDetails.", reply)
  summary = render.run_summary({ status = "failed", edits = 0, steps = 0, usage = usage, reply = "", error = "model call failed" })
  assert(summary == "failed · 0 edits · 0 steps · 105 tokens — model call failed", summary)
end)

-- log ----------------------------------------------------------------------

local log = require("agent_lsp.log")

-- ev makes an event of session s-1.
local function ev(seq, type, fields) return vim.tbl_extend("force", { session = "s-1", seq = seq, type = type }, fields or {}) end

test("log: deltas stream on their lines, the complete message replaces them", function()
  log.lines = {}
  log.event(ev(1, "run.start", { project = "sample", contextTokens = 8192 }))
  log.event(ev(2, "message.delta", { text = "Hel" }))
  log.event(ev(3, "message.delta", { text = "lo\nthere" }))
  local want = { "s-1 #1 run.start project sample · context 8192 tokens", "s-1 #2 message.delta Hello", "    there" }
  assert(vim.deep_equal(log.lines, want), vim.inspect(log.lines))
  log.event(ev(4, "message", { message = { id = "m1", role = "ai", content = "Hello\nthere" } }))
  log.event(ev(5, "future.kind", { detail = "x" }))
  want = { "s-1 #1 run.start project sample · context 8192 tokens", "s-1 #4 message Agent · m1: Hello", "    there", "s-1 #5 future.kind detail=x" }
  assert(vim.deep_equal(log.lines, want), vim.inspect(log.lines))
end)

test("log: an event in between ends the stream; the message is then added", function()
  log.lines = {}
  log.event(ev(1, "message.delta", { text = "Hi" }))
  log.event({ session = "s-2", seq = 1, type = "run.start", project = "other", contextTokens = 4096 })
  log.event(ev(2, "message", { message = { id = "m1", role = "ai", content = "Hi" } }))
  local want = { "s-1 #1 message.delta Hi", "s-2 #1 run.start project other · context 4096 tokens", "s-1 #2 message Agent · m1: Hi" }
  assert(vim.deep_equal(log.lines, want), vim.inspect(log.lines))
end)

test("log: :AgentLog's buffer shows the lines and follows new ones", function()
  log.lines = { "old" }
  require("agent_lsp.commands").define()
  vim.cmd("AgentLog")
  local b = vim.api.nvim_get_current_buf()
  assert(vim.api.nvim_buf_get_name(b):find("agent-lsp://log", 1, true), vim.api.nvim_buf_get_name(b))
  assert(not vim.bo[b].modifiable and vim.bo[b].buftype == "nofile")
  log.event(ev(1, "edit", { uri = "file:///a.go", applied = false }))
  log.add({ "s-1 result: done" })
  local want = { "old", "s-1 #1 edit refused file:///a.go", "s-1 result: done" }
  assert(vim.deep_equal(vim.api.nvim_buf_get_lines(b, 0, -1, false), want), vim.inspect(vim.api.nvim_buf_get_lines(b, 0, -1, false)))
  assert(vim.api.nvim_win_get_cursor(0)[1] == 3, "the window did not follow")
  vim.cmd("close")
  log.add({ "while hidden" })
  vim.cmd("AgentLog")
  assert(vim.api.nvim_get_current_buf() == b and vim.api.nvim_buf_get_lines(b, -2, -1, false)[1] == "while hidden")
  vim.cmd("close")
end)

test("log: a queued prompt the run reads while a reply streams is added, not put in the reply's place", function()
  log.lines = {}
  log.event(ev(1, "message.delta", { text = "Working" }))
  log.event(ev(2, "message", { message = { id = "m2", role = "human", content = "Also say hi" } }))
  local want = { "s-1 #1 message.delta Working", "s-1 #2 message You · m2: Also say hi" }
  assert(vim.deep_equal(log.lines, want), vim.inspect(log.lines))
end)

-- config: the context settings ---------------------------------------------

-- notified runs fn with vim.notify recorded; it returns the messages.
local function notified(fn)
  local msgs, real = {}, vim.notify
  vim.notify = function(msg, level) table.insert(msgs, { msg = msg, level = level }) end
  local ok, err = pcall(fn)
  vim.notify = real
  assert(ok, err)
  return msgs
end

test("init_options: context_tokens, window, tool_output, read_only_subagents are model.contextTokens, window, toolOutput, subagents.readOnly", function()
  local json, init = sent({ context_tokens = 32768, window = 50, tool_output = 4096, read_only_subagents = true })
  assert(init.model.contextTokens == 32768 and json:find('"contextTokens":32768', 1, true), json)
  assert(init.window == 50 and init.toolOutput == 4096, json)
  assert(vim.deep_equal(init.subagents, { readOnly = true }), json)
  json, init = sent({ context_tokens = "auto", read_only_subagents = false })
  assert(init.model.contextTokens == "auto" and json:find('"contextTokens":"auto"', 1, true), json)
  assert(vim.deep_equal(init.subagents, { readOnly = false }), "false is sent, not dropped: " .. json)
end)

test("init_options: by default the context settings are not sent (the server's defaults apply)", function()
  local json, init = sent()
  assert(init.model == nil and init.window == nil and init.toolOutput == nil and init.subagents == nil, json)
  for _, key in ipairs({ "contextTokens", "window", "toolOutput", "subagents" }) do
    assert(not json:find(key, 1, true), key .. " in " .. json)
  end
end)

test("setup: a wrong context setting is reported by name and left out, the others are kept", function()
  local msgs = notified(function() config.setup({ context_tokens = 512, window = 5, tool_output = "16k", read_only_subagents = "yes", model = "m" }) end)
  local text = table.concat(vim.tbl_map(function(m) return m.msg end, msgs), "\n")
  assert(#msgs == 4, text)
  for _, m in ipairs(msgs) do
    assert(m.level == vim.log.levels.ERROR and m.msg:find("^agent%-lsp: ") and m.msg:find("the server's default is used", 1, true), m.msg)
  end
  local want = {
    [[context_tokens must be an integer from 1024 to 10000000 (your model server's context size: Ollama's num_ctx, llama.cpp's -c) or "auto", not 512]],
    'read_only_subagents must be true or false, not "yes"',
    'tool_output must be an integer from 1024 to 1048576 (bytes), not "16k"',
    "window must be an integer from 10 to 1000 (messages), not 5",
  }
  for _, w in ipairs(want) do
    assert(text:find(w, 1, true), "missing: " .. w .. "\nin:\n" .. text)
  end
  local init = config.init_options()
  assert(vim.deep_equal(init.model, { model = "m" }) and init.window == nil and init.toolOutput == nil and init.subagents == nil, vim.inspect(init))
  assert(#notified(function() config.setup({ context_tokens = 1024, window = 1000, tool_output = 1048576 }) end) == 0, "bounds are allowed")
  assert(#notified(function() config.setup({ window = 20.5 }) end) == 1, "a fraction is not an integer")
  config.setup()
end)

test("init_options: a wrong value set on the options after setup() is reported too, and not sent", function()
  config.setup()
  config.options.window = 5000
  local init
  local msgs = notified(function() init = config.init_options() end)
  assert(#msgs == 1 and msgs[1].msg:find("window must be an integer from 10 to 1000", 1, true), vim.inspect(msgs))
  assert(init.window == nil and config.options.window == nil, vim.inspect(init))
  config.setup()
end)

-- render: the context events, queued results, subagents ----------------------

local events = require("agent_lsp.events")

test("events: context.compacted summarized and dropped, in short lines", function()
  local base = { session = "s-1", seq = 4, type = "context.compacted", before = 9000, after = 2500, messages = 12 }
  local lines = events.render(vim.tbl_extend("force", base, { summarized = true, reason = "budget" }))
  assert(vim.deep_equal(lines, { "s-1 #4 context.compacted ⋯ 12 older messages summarized to fit the context (9000 → 2500 tokens)" }), vim.inspect(lines))
  lines = events.render(vim.tbl_extend("force", base, { messages = 1, summarized = false, reason = "overflow", error = "the summary\nfailed" }))
  local want = "s-1 #4 context.compacted ⋯ 1 older message dropped after the model's context overflowed (9000 → 2500 tokens): the summary failed"
  assert(vim.deep_equal(lines, { want }), vim.inspect(lines))
end)

test("events: run.start shows the context size, and the withheld tools when there are any", function()
  local base = { session = "s-1", seq = 1, type = "run.start", project = "sample", contextTokens = 4096 }
  assert(events.render(base)[1] == "s-1 #1 run.start project sample · context 4096 tokens", events.render(base)[1])
  local lines = events.render(vim.tbl_extend("force", base, { withheld = {} }))
  assert(lines[1] == "s-1 #1 run.start project sample · context 4096 tokens", lines[1])
  lines = events.render(vim.tbl_extend("force", base, { withheld = { "search", "call_subagent" } }))
  assert(lines[1] == "s-1 #1 run.start project sample · context 4096 tokens · tools left out to fit it: search, call_subagent", lines[1])
end)

test("events: message.queued shows its position and the prompt", function()
  local lines = events.render({ session = "s-1", seq = 5, type = "message.queued", position = 2, message = { id = "m9", role = "human", content = "Also\nthis" } })
  assert(vim.deep_equal(lines, { "s-1 #5 message.queued (position 2) You · m9: Also", "    this" }), vim.inspect(lines))
end)

local usage0 = { promptTokens = 0, completionTokens = 0, totalTokens = 0 }

test("run_result and run_summary: a queued result says where the prompt waits; a cancelled one what it never read", function()
  local queued = { session = "s-4", status = "queued", position = 2, reply = "", edits = 0, steps = 0, usage = usage0 }
  local lines = render.run_result(queued, { prompt = "Also say hi", session = "s-4" })
  assert(vim.deep_equal(lines, { "s-4 result: queued · 0 edits · 0 steps · 0 tokens (0 prompt + 0 completion)", "    queued (position 2): Also say hi" }), vim.inspect(lines))
  assert(render.run_summary(queued, "Also say hi") == "queued (position 2): Also say hi", render.run_summary(queued, "Also say hi"))
  local cancelled = { session = "s-4", status = "cancelled", reply = "", edits = 0, steps = 1, usage = usage0, queued = { "Also say hi", "And\nbye" } }
  lines = render.run_result(cancelled, { prompt = "Sleep" })
  local want = { "s-4 result: cancelled · 0 edits · 1 step · 0 tokens (0 prompt + 0 completion)", "    not sent: Also say hi", "    not sent: And", "        bye" }
  assert(vim.deep_equal(lines, want), vim.inspect(lines))
  local summary = render.run_summary(cancelled)
  assert(summary == "cancelled · 0 edits · 1 step · 0 tokens\nnot sent: Also say hi\nnot sent: And bye", summary)
end)

local detail = {
  session = "s-1",
  project = "sample",
  status = "done",
  title = "Delegate",
  messages = { { id = "m1", role = "human", content = "Delegate" } },
  subagents = {
    { contextId = "subagent-a", task = "List the files", status = "done" },
    { contextId = "subagent-b", task = "Never\nstarted", status = "" },
  },
}

test("transcript: the subagents with their status and context, each line mapped to its context", function()
  local lines, contexts = render.transcript(detail)
  local ia, ib = vim.fn.index(lines, "- done · List the files (subagent-a)") + 1, vim.fn.index(lines, "- not started · Never started (subagent-b)") + 1
  assert(ia > 0 and ib == ia + 1, table.concat(lines, "\n"))
  assert(vim.deep_equal(contexts, { [ia] = "subagent-a", [ib] = "subagent-b" }), vim.inspect(contexts))
  assert(vim.tbl_contains(lines, "## Subagents") and lines[3] == "session s-1 · project sample · status done", table.concat(lines, "\n"))
  local sub = { session = "s-1", context = "subagent-a", project = "sample", status = "", title = "List the files", messages = {}, subagents = {} }
  lines, contexts = render.transcript(sub)
  assert(lines[1] == "# List the files" and lines[3] == "session s-1 · context subagent-a · project sample · status not started", table.concat(lines, "\n"))
  assert(not vim.tbl_contains(lines, "## Subagents") and next(contexts) == nil, "no subagents, no section")
end)

-- commands against a stubbed server -------------------------------------------

local client = require("agent_lsp.client")
local commands = require("agent_lsp.commands")
local state = require("agent_lsp.state")

-- with_server replaces the client's connection by a recorder: fn(calls, notes)
-- runs with every executeCommand recorded (command, args, on_result,
-- extra, on_error) and every notification; nothing is answered unless fn
-- answers.
local function with_server(fn)
  local fake = { id = 99, offset_encoding = "utf-16" }
  local calls, notes = {}, {}
  local saved = { current = client.current, execute = client.execute, notify = vim.notify, input = vim.ui.input, progress = vim.lsp.handlers["$/progress"], echo = config.options.echo_progress }
  vim.lsp.handlers["$/progress"] = function() end -- Neovim's would look for client 99
  config.options.echo_progress = false
  client.current = function() return fake end
  client.execute = function(c, command, args, on_result, extra, on_error)
    table.insert(calls, { client = c, command = command, args = args, on_result = on_result, extra = extra, on_error = on_error })
    return true, #calls
  end
  vim.notify = function(msg, level) table.insert(notes, { msg = msg, level = level or vim.log.levels.INFO }) end
  for k in pairs(state.runs) do
    state.runs[k] = nil
  end
  state.last_run, state.last_session, state.last_result, state.unsent, state.status = nil, nil, nil, nil, ""
  state.withheld_seen, state.subagents, state.session_clients = {}, {}, {}
  log.lines = {}
  local ok, err = xpcall(fn, debug.traceback, calls, notes)
  client.current, client.execute, vim.notify, vim.ui.input = saved.current, saved.execute, saved.notify, saved.input
  vim.lsp.handlers["$/progress"], config.options.echo_progress = saved.progress, saved.echo
  if not ok then
    error(err, 0)
  end
end

local function event(fields) client.handlers["agent/event"](nil, fields, { client_id = 99 }) end

local function progress(token, value) client.handlers["$/progress"](nil, { token = token, value = value }, { client_id = 99 }) end

local function result(fields) return vim.tbl_extend("force", { reply = "", edits = 0, steps = 0, usage = usage0 }, fields) end

local function has_note(notes, text)
  for _, n in ipairs(notes) do
    if n.msg:find(text, 1, true) then
      return n
    end
  end
end

commands.define()

test(":AgentRun! while the last run goes: sent with its session, shown as queued; the run goes on", function()
  with_server(function(calls, notes)
    vim.cmd("AgentRun Sleep a while")
    assert(#calls == 1 and calls[1].args.session == nil, vim.inspect(calls))
    local token = calls[1].extra.workDoneToken
    event({ session = "s-4", seq = 1, type = "run.start", project = "other", contextTokens = 8192 })
    progress(token, { kind = "begin", title = "agent: Sleep a while" })
    progress(token, { kind = "report", message = "model answering" })
    vim.cmd("AgentRun! Also say hi when you are back")
    assert(#calls == 2 and calls[2].command == "agent.run", vim.inspect(calls))
    assert(calls[2].args.session == "s-4" and calls[2].args.prompt == "Also say hi when you are back", vim.inspect(calls[2].args))
    local queued_token = calls[2].extra.workDoneToken
    progress(queued_token, { kind = "begin", title = "agent: Also say hi when you" })
    progress(queued_token, { kind = "end", message = "queued for the running session (position 1)" })
    assert(state.status == "agent: model answering", "the running run's progress is gone: " .. state.status)
    calls[2].on_result(result({ session = "s-4", status = "queued", position = 1 }))
    event({ session = "s-4", seq = 5, type = "message.queued", position = 1, message = { id = "m5", role = "human", content = "Also say hi when you are back" } })
    local note = has_note(notes, "queued (position 1): Also say hi when you are back")
    assert(note and note.level == vim.log.levels.INFO, vim.inspect(notes))
    assert(not has_note(notes, "queued ·"), "a queued result is not a run's end: " .. vim.inspect(notes))
    assert(vim.tbl_contains(log.lines, "    queued (position 1): Also say hi when you are back"), table.concat(log.lines, "\n"))
    assert(state.runs[token] and state.runs[queued_token] == nil, "in flight: " .. vim.inspect(vim.tbl_keys(state.runs)))
    assert(state.status == "agent: model answering", "status " .. state.status)
    assert(state.last_result == nil, "the queued result is no run's result")
    -- A second follow-up goes to the same session.
    vim.cmd("AgentRun! And then bye")
    assert(calls[3].args.session == "s-4", vim.inspect(calls[3].args))
  end)
end)

test("a plan run's result offers :AgentRunPlan, which runs the plan in agent mode in its session; max_tokens and max_cost go with each run", function()
  with_server(function(calls, notes)
    state.plans, state.last_plan, state.mode = {}, nil, "plan"
    config.options.max_tokens, config.options.max_cost = 50000, 0.5
    vim.cmd("AgentRun Plan a goodbye")
    assert(calls[1].args.mode == "plan" and calls[1].args.maxTokens == 50000 and calls[1].args.maxCost == 0.5, vim.inspect(calls[1].args))
    calls[1].on_result(result({ session = "s-7", status = "done", steps = 1, reply = "1. Add Goodbye.", plan = "1. Add Goodbye.\n" }))
    local note = has_note(notes, ":AgentRunPlan runs this plan in agent mode (same session)")
    assert(note, vim.inspect(notes))
    assert(vim.deep_equal(require("agent_lsp.chat").end_lines(result({ session = "s-7", status = "done", plan = "1. Add Goodbye." }))[2], "_:AgentRunPlan runs this plan in agent mode (same session)_"), "the chat's end line offers it")
    assert(vim.deep_equal(vim.fn.getcompletion("AgentRunPlan ", "cmdline"), { "s-7" }), vim.inspect(vim.fn.getcompletion("AgentRunPlan ", "cmdline")))
    vim.cmd("AgentRunPlan")
    local run = calls[2] and calls[2].args
    assert(run and run.mode == "agent" and run.session == "s-7" and run.prompt == "Carry out this plan:\n\n1. Add Goodbye.", vim.inspect(run))
    assert(run.maxTokens == 50000, vim.inspect(run))
    assert(state.mode == "plan", "the next runs' mode stays plan")
    calls[2].on_result(result({ session = "s-7", status = "done", steps = 3, reply = "Done." }))
    assert(state.plans["s-7"] == nil and state.last_plan == nil, "the plan ran: no longer offered")
    vim.cmd("AgentRunPlan")
    assert(#calls == 2 and has_note(notes, "no plan to run"), vim.inspect(notes))
    -- A wrong budget is reported and not sent.
    config.options.max_tokens, config.options.max_cost = 0, -1
    vim.cmd("AgentRun Plan again")
    assert(calls[3].args.maxTokens == nil and calls[3].args.maxCost == nil, vim.inspect(calls[3].args))
    assert(has_note(notes, "max_tokens must be an integer from 1 to 1000000000") and has_note(notes, "max_cost must be a number of USD above 0"), vim.inspect(notes))
  end)
  state.mode, config.options.max_tokens, config.options.max_cost = nil, nil, nil
end)

test("a cancelled result with queued prompts shows them as not sent; :AgentRun! offers them again", function()
  with_server(function(calls, notes)
    vim.cmd("AgentRun Sleep a while")
    event({ session = "s-4", seq = 1, type = "run.start", project = "other", contextTokens = 8192 })
    calls[1].on_result(result({ session = "s-4", status = "cancelled", steps = 1, queued = { "Also say hi when you are back" } }))
    local note = has_note(notes, "not sent: Also say hi when you are back")
    assert(note and note.level == vim.log.levels.WARN, vim.inspect(notes))
    assert(note.msg:find("cancelled · 0 edits · 1 step", 1, true) and note.msg:find(":AgentRun! without a prompt offers it again", 1, true), note.msg)
    assert(vim.tbl_contains(log.lines, "    not sent: Also say hi when you are back"), table.concat(log.lines, "\n"))
    assert(state.status == "" and next(state.runs) == nil, "still running: " .. state.status)
    local asked
    vim.ui.input = function(opts, on_confirm)
      asked = opts
      on_confirm(opts.default)
    end
    vim.cmd("AgentRun!")
    assert(asked and asked.default == "Also say hi when you are back", vim.inspect(asked))
    assert(#calls == 2 and calls[2].args.session == "s-4" and calls[2].args.prompt == "Also say hi when you are back", vim.inspect(calls[2] and calls[2].args))
    assert(state.unsent == nil, "offered once")
  end)
end)

test(":AgentRun without ! starts a new session even while a run goes", function()
  with_server(function(calls)
    vim.cmd("AgentRun Sleep a while")
    event({ session = "s-4", seq = 1, type = "run.start", project = "other", contextTokens = 8192 })
    vim.cmd("AgentRun Something else")
    assert(#calls == 2 and calls[2].args.session == nil, vim.inspect(calls[2].args))
  end)
end)

test("a follow-up before the run has a session waits for run.start, then goes to that session", function()
  with_server(function(calls, notes)
    vim.cmd("AgentRun Sleep a while")
    vim.cmd("AgentRun! Also say hi")
    assert(#calls == 1, "sent before the session was known")
    assert(has_note(notes, "this follow-up goes to it once it has: Also say hi"), vim.inspect(notes))
    event({ session = "s-7", seq = 1, type = "run.start", project = "other", contextTokens = 8192 })
    assert(#calls == 2 and calls[2].args.session == "s-7" and calls[2].args.prompt == "Also say hi", vim.inspect(calls[2] and calls[2].args))
  end)
end)

test("a follow-up waiting for a run whose request fails is reported as not sent; nothing stays in flight", function()
  with_server(function(calls, notes)
    vim.cmd("AgentRun Sleep a while")
    vim.cmd("AgentRun! Also say hi")
    calls[1].on_error({ code = -32602, message = "agent.run: no such project" })
    assert(#calls == 1, "sent without a session")
    local note = has_note(notes, "not sent: Also say hi")
    assert(note and note.level == vim.log.levels.WARN, vim.inspect(notes))
    assert(next(state.runs) == nil and state.status == "", "left in flight: " .. vim.inspect(state.runs))
    assert(state.last_run.result == false, "the failed run has no result")
  end)
end)

test("one run's end leaves another run's progress in the statusline", function()
  with_server(function(calls)
    vim.cmd("AgentRun one")
    vim.cmd("AgentRun two")
    local t1, t2 = calls[1].extra.workDoneToken, calls[2].extra.workDoneToken
    progress(t1, { kind = "report", message = "read_file a.go" })
    progress(t2, { kind = "report", message = "search x" })
    progress(t2, { kind = "end", message = "done" })
    assert(state.status == "agent: read_file a.go", state.status)
    calls[2].on_result(result({ session = "s-2", status = "done" }))
    assert(state.status == "agent: read_file a.go", state.status)
    progress(t1, { kind = "end", message = "done" })
    calls[1].on_result(result({ session = "s-1", status = "done" }))
    assert(state.status == "", state.status)
  end)
end)

test("tools withheld at run.start are reported once per list", function()
  with_server(function(_, notes)
    local start = { session = "s-1", seq = 1, type = "run.start", project = "p", contextTokens = 2048 }
    event(start)
    event(vim.tbl_extend("force", start, { withheld = {} }))
    assert(#notes == 0, vim.inspect(notes))
    event(vim.tbl_extend("force", start, { withheld = { "search", "call_subagent" } }))
    event(vim.tbl_extend("force", start, { seq = 9, withheld = { "search", "call_subagent" } }))
    assert(#notes == 1 and notes[1].level == vim.log.levels.WARN, vim.inspect(notes))
    assert(notes[1].msg:find("tools left out to fit the model's context of 2048 tokens: search, call_subagent", 1, true), notes[1].msg)
    event(vim.tbl_extend("force", start, { withheld = { "call_subagent" } }))
    assert(#notes == 2, vim.inspect(notes))
  end)
end)

-- transcript_buffers lists the loaded agent-session:// buffers by name.
local function transcript_buffer(name)
  local b = vim.fn.bufnr(name)
  return b ~= -1 and b or nil
end

test(":AgentSession {session} {context} asks for the subagent's transcript; <CR> on a subagent opens it", function()
  with_server(function(calls)
    vim.cmd("AgentSession s-1")
    assert(#calls == 1 and vim.deep_equal(calls[1].args, { session = "s-1" }), vim.inspect(calls[1].args))
    calls[1].on_result(detail)
    local b = assert(transcript_buffer("agent-session://s-1"), "no transcript buffer")
    assert(vim.api.nvim_get_current_buf() == b)
    local lines = vim.api.nvim_buf_get_lines(b, 0, -1, false)
    local row = vim.fn.index(lines, "- not started · Never started (subagent-b)") + 1
    assert(row > 0, table.concat(lines, "\n"))
    -- <CR> elsewhere moves down as usual.
    vim.api.nvim_win_set_cursor(0, { 1, 0 })
    vim.cmd('execute "normal \\<CR>"')
    assert(vim.api.nvim_win_get_cursor(0)[1] == 2 and #calls == 1, "moved to " .. vim.api.nvim_win_get_cursor(0)[1])
    vim.api.nvim_win_set_cursor(0, { row, 0 })
    vim.cmd('execute "normal \\<CR>"')
    assert(#calls == 2 and vim.deep_equal(calls[2].args, { session = "s-1", context = "subagent-b" }), vim.inspect(calls[2] and calls[2].args))
    calls[2].on_result({ session = "s-1", context = "subagent-b", project = "sample", status = "", title = "Never\nstarted", messages = { { id = "subagent-b-task", role = "human", content = "Never\nstarted" } }, subagents = {} })
    local sb = assert(transcript_buffer("agent-session://s-1/subagent-b"), "no subagent transcript buffer")
    lines = vim.api.nvim_buf_get_lines(sb, 0, -1, false)
    assert(lines[1] == "# Never started" and lines[3] == "session s-1 · context subagent-b · project sample · status not started", table.concat(lines, "\n"))
    vim.cmd("close")
    vim.cmd("AgentSession s-1 subagent-a")
    assert(vim.deep_equal(calls[3].args, { session = "s-1", context = "subagent-a" }), vim.inspect(calls[3].args))
    -- Completion: the session, then the subagents seen of it.
    local got = vim.fn.getcompletion("AgentSession s-1 subagent-", "cmdline")
    assert(vim.deep_equal(got, { "subagent-a", "subagent-b" }), vim.inspect(got))
    state.last_session = "s-1"
    got = vim.fn.getcompletion("AgentSession ", "cmdline")
    assert(vim.deep_equal(got, { "s-1" }), vim.inspect(got))
    vim.cmd("close")
  end)
end)

test("subagent.start events make their contexts complete for :AgentSession", function()
  with_server(function()
    event({ session = "s-3", seq = 9, type = "subagent.start", contextId = "subagent-x", parentId = "s-3", task = "t" })
    local got = vim.fn.getcompletion("AgentSession s-3 ", "cmdline")
    assert(vim.deep_equal(got, { "subagent-x" }), vim.inspect(got))
  end)
end)

-- MCP servers: the options, :AgentMcp, the approval question ---------------------

-- mcp_fixture is the result of the agent.mcp fixture (testdata/protocol), with
-- a third project whose servers run, failed and were denied.
local function mcp_fixture()
  local path = vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h:h:h") .. "/testdata/protocol/commands/agent.mcp.json"
  local list = vim.fn.json_decode(table.concat(vim.fn.readfile(path), "\n"))[1].result
  table.insert(list, {
    project = "web",
    root = "/work/web",
    servers = {
      { name = "files", source = "user", origin = "/home/u/.config/agent-lsp/mcp.json", transport = "stdio", status = "running", tools = 3, withheld = { "mcp__files__move", "mcp__files__tree" } },
      { name = "issues", source = "flag", origin = "/etc/mcp.json", transport = "http", status = "failed", tools = -1, reason = "connect: connection refused\nat https://mcp.example.com/mcp" },
      {
        name = "repo-tools",
        source = "project",
        origin = "/work/web/.mcp.json",
        transport = "stdio",
        status = "denied",
        tools = -1,
        reason = "the user denied it in this window, and this reason goes on well past the sixty characters the list shows",
      },
    },
  })
  table.insert(list, { project = "empty", root = "/work/empty", servers = {} })
  return list
end

test("mcp_lines: the fixture's projects and servers, aligned; -1 tools as words, a reason's first line cut", function()
  local lines, at = render.mcp_lines(mcp_fixture())
  local want = {
    "other — /work/other",
    "  docs        editor   stdio  stopped               tools not listed yet",
    "",
    "sample — /work/sample",
    "  docs        editor   stdio  stopped               tools not listed yet",
    "",
    "web — /work/web",
    "  files       user     stdio  running               3 tools — 2 left out to fit the context",
    "  issues      flag     http   failed                tools not listed yet — connect: connection refused…",
    "  repo-tools  project  stdio  denied                tools not listed yet — the user denied it in this window, and this reason goes on…",
    "",
    "empty — /work/empty",
    "  no MCP servers",
  }
  assert(vim.deep_equal(lines, want), vim.inspect(lines))
  local rows = vim.tbl_keys(at)
  table.sort(rows)
  assert(vim.deep_equal(rows, { 2, 5, 8, 9, 10 }), vim.inspect(rows))
  assert(at[9].server.name == "issues" and at[9].project.project == "web" and at[2].project.project == "other", vim.inspect(at[9]))
  assert(vim.deep_equal(render.mcp_lines({}), { "no projects" }))
  local details = render.mcp_details(at[9].project, at[9].server)
  assert(
    vim.deep_equal(details, { "MCP server issues of project web", "defined in /etc/mcp.json (flag)", "http · failed · tools not listed yet", "reason: connect: connection refused", "    at https://mcp.example.com/mcp" }),
    vim.inspect(details)
  )
  assert(render.mcp_tools(0) == "0 tools" and render.mcp_tools(1) == "1 tool")
  details = render.mcp_details(at[8].project, at[8].server)
  assert(details[#details] == "left out to fit the context: mcp__files__move, mcp__files__tree", vim.inspect(details))
end)

test("init_options: mcp_config_files is mcp.configFiles (~ expanded), mcp_timeout and mcp_idle are mcpTimeout and mcpIdle; wrong ones are reported and left out", function()
  local json, init = sent({ mcp_config_files = { "~/mcp/extra.json" }, mcp_timeout = 30, mcp_idle = 120 })
  assert(vim.deep_equal(init.mcp, { configFiles = { vim.fn.expand("~/mcp/extra.json") } }), json)
  assert(init.mcpTimeout == 30 and init.mcpIdle == 120, json)
  local msgs = notified(function()
    json, init = sent({ mcp_timeout = 0, mcp_idle = 1.5, mcp_config_files = "extra.json" })
  end)
  assert(init.mcpTimeout == nil and init.mcpIdle == nil and init.mcp == nil, json)
  local text = table.concat(vim.tbl_map(function(m) return m.msg end, msgs), "\n")
  for _, want in ipairs({ "mcp_timeout must be an integer from 1 to 3600", "mcp_idle must be an integer from 1 to 86400", "mcp_config_files must be a list of file names" }) do
    assert(text:find(want, 1, true), text)
  end
end)

test("init_options: mcp_servers is mcpServers (an empty env or headers left out), mcp_allow is mcp.allow; neither is sent by default", function()
  local servers = {
    files = { command = "npx", args = { "-y", "@modelcontextprotocol/server-filesystem", "." }, env = {}, cwd = "/src" },
    issues = { type = "http", url = "https://mcp.example.com/mcp", headers = { Authorization = "Bearer ${ISSUES_TOKEN}" } },
    plain = { command = "plain-mcp", sandbox = false },
  }
  local json, init = sent({ mcp_servers = servers, mcp_allow = { "lint", "*" } })
  assert(
    vim.deep_equal(init.mcpServers, {
      files = { command = "npx", args = { "-y", "@modelcontextprotocol/server-filesystem", "." }, cwd = "/src" },
      issues = { type = "http", url = "https://mcp.example.com/mcp", headers = { Authorization = "Bearer ${ISSUES_TOKEN}" } },
      plain = { command = "plain-mcp", sandbox = false },
    }),
    json
  )
  assert(not json:find('"env"', 1, true) and json:find('"args":["-y"', 1, true), json)
  assert(vim.deep_equal(init.mcp, { allow = { "lint", "*" } }), json)
  json = sent()
  assert(not json:find("mcp", 1, true), json)
  json = sent({ mcp_servers = {}, mcp_allow = {} })
  assert(not json:find("mcpServers", 1, true) and json:find('"mcp":{"allow":[]}', 1, true), json)
end)

test("setup: a wrong MCP server is reported by name and left out, the others are kept; no value is quoted", function()
  local msgs = notified(
    function()
      config.setup({
        mcp_servers = {
          good = { command = "good-mcp" },
          nocmd = { args = { "x" } },
          both = { command = "x", url = "https://x" },
          web = { type = "http", url = "https://x", env = { TOKEN = "s3cret-value" } },
          badtype = { type = "sse", url = "https://x" },
          badargs = { command = "x", args = "--flag" },
          badenv = { command = "x", env = { "s3cret-value" } },
          notable = "npx server",
          mcpServers = { good = { command = "x" } },
        },
        mcp_allow = "docs",
      })
    end
  )
  local text = table.concat(vim.tbl_map(function(m) return m.msg end, msgs), "\n")
  local want = {
    "mcp_servers.badargs: args must be a list of strings; this server is left out",
    "mcp_servers.badenv: env must be a table of strings by name; this server is left out",
    'mcp_servers.badtype: type must be "stdio" or "http", not "sse"; this server is left out',
    "mcp_servers.both: a stdio server has no url or headers; this server is left out",
    "mcp_servers.mcpServers: give the servers themselves, mcp_servers = { NAME = { command = ... } }, not the whole .mcp.json; this server is left out",
    "mcp_servers.nocmd: a stdio server needs a command; this server is left out",
    "mcp_servers.notable: must be a table with command (stdio) or url (http); this server is left out",
    "mcp_servers.web: an http server has no command, args or env; this server is left out",
    'mcp_allow must be a list of server names (strings), "*" for all, not "docs"',
  }
  assert(#msgs == #want, text)
  for _, w in ipairs(want) do
    assert(text:find(w, 1, true), "missing: " .. w .. "\nin:\n" .. text)
  end
  assert(not text:find("s3cret", 1, true), "a value is shown:\n" .. text)
  local init = config.init_options()
  assert(vim.deep_equal(init.mcpServers, { good = { command = "good-mcp" } }) and init.mcp == nil, vim.inspect(init))
  msgs = notified(function() config.setup({ mcp_servers = { "npx" } }) end)
  assert(#msgs == 1 and msgs[1].msg:find("mcp_servers must be a table of servers by name", 1, true), vim.inspect(msgs))
  assert(config.init_options().mcpServers == nil)
  assert(
    #notified(function() config.setup({ mcp_servers = { h = { url = "http://localhost:9/mcp" }, s = { type = "stdio", command = "x", args = {}, env = {} } } }) end) == 0,
    "an http server given by its url alone, and empty lists, are fine"
  )
  config.setup()
end)

test(":AgentMcp lists agent.mcp's result in a scratch buffer; <CR> shows a server's details, R asks again in place", function()
  with_server(function(calls)
    local wins = #vim.api.nvim_list_wins()
    vim.cmd("AgentMcp")
    assert(#calls == 1 and calls[1].command == "agent.mcp", vim.inspect(calls))
    calls[1].on_result(mcp_fixture())
    local b = vim.api.nvim_get_current_buf()
    assert(vim.api.nvim_buf_get_name(b) == "agent-lsp://mcp", vim.api.nvim_buf_get_name(b))
    assert(vim.bo[b].buftype == "nofile" and not vim.bo[b].modifiable and #vim.api.nvim_list_wins() == wins + 1)
    local lines = vim.api.nvim_buf_get_lines(b, 0, -1, false)
    assert(lines[1]:find("<CR>", 1, true) and lines[1]:find("R: refresh", 1, true), lines[1])
    assert(vim.deep_equal(vim.list_slice(lines, 3), (render.mcp_lines(mcp_fixture()))), table.concat(lines, "\n"))
    assert(vim.api.nvim_get_current_line():find("^  docs "), "the cursor starts on the first server: " .. vim.api.nvim_get_current_line())
    local row = vim.fn.index(lines, "  issues      flag     http   failed                tools not listed yet — connect: connection refused…") + 1
    assert(row > 0, table.concat(lines, "\n"))
    vim.api.nvim_win_set_cursor(0, { row, 0 })
    vim.cmd('execute "normal \\<CR>"')
    local float = vim.tbl_filter(function(w) return vim.api.nvim_win_get_config(w).relative ~= "" end, vim.api.nvim_list_wins())[1]
    assert(float, "no float")
    local shown = vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(float), 0, -1, false)
    assert(vim.tbl_contains(shown, "defined in /etc/mcp.json (flag)") and vim.tbl_contains(shown, "    at https://mcp.example.com/mcp"), vim.inspect(shown))
    vim.api.nvim_win_close(float, true)
    -- <CR> on a project's line says what it does.
    vim.api.nvim_win_set_cursor(0, { 3, 0 })
    assert(require("agent_lsp.mcp").details() == nil)
    -- R: agent.mcp again, shown in the same buffer and window, the cursor kept.
    vim.api.nvim_win_set_cursor(0, { row, 0 })
    vim.cmd("normal R")
    assert(#calls == 2 and calls[2].command == "agent.mcp", vim.inspect(calls))
    local again = mcp_fixture()
    again[3].servers[2].status, again[3].servers[2].reason, again[3].servers[2].tools = "running", nil, 3
    calls[2].on_result(again)
    assert(vim.api.nvim_get_current_buf() == b and #vim.api.nvim_list_wins() == wins + 1, "R opened another buffer or window")
    assert(vim.api.nvim_win_get_cursor(0)[1] == row and vim.api.nvim_get_current_line():find("^  issues .* running %s+3 tools$"), vim.api.nvim_get_current_line())
    -- The list passed to a function instead.
    local got
    require("agent_lsp").mcp(function(list) got = list end)
    calls[3].on_result({})
    assert(vim.deep_equal(got, {}), vim.inspect(got))
    vim.cmd("close")
  end)
end)

test("the approval of a repository's MCP server offers its own actions through Neovim's list; the statusline waits meanwhile", function()
  local ui = require("agent_lsp.ui")
  local inputlist, real_print, shown, during = vim.fn.inputlist, print, nil, nil
  vim.fn.inputlist = function(items)
    shown, during = items, ui.statusline()
    return 3
  end
  print = function() end
  local ok, answer = pcall(
    client.handlers["window/showMessageRequest"],
    nil,
    { type = 2, message = "The repository /src/web defines the MCP server repo (/src/web/.mcp.json). Start it?\n  repo-mcp --serve", actions = { { title = "Allow" }, { title = "Always for this project" }, { title = "Deny" } } },
    { client_id = 99 }
  )
  vim.fn.inputlist, print = inputlist, real_print
  assert(ok, answer)
  assert(vim.deep_equal(answer, { title = "Deny" }), vim.inspect(answer))
  assert(vim.deep_equal(vim.list_slice(shown, 3), { "1. Allow", "2. Always for this project", "3. Deny" }), vim.inspect(shown))
  assert(shown[1]:find("defines the MCP server repo", 1, true), shown[1])
  assert(during == ui.PERMISSION_WAITING and ui.statusline() ~= ui.PERMISSION_WAITING, tostring(during))
end)

-- hunks ----------------------------------------------------------------------

local hunks = require("agent_lsp.hunks")

local function lines(b) return vim.api.nvim_buf_get_lines(b, 0, -1, false) end

test("hunks: between and apply turn one text into the other", function()
  local cases = {
    { { "one", "two", "three", "four", "five" }, { "ONE", "two", "three", "four", "FIVE" } },
    { { "a", "b" }, { "x", "a", "b", "y" } }, -- insertions at both ends
    { { "a", "b", "c" }, { "a", "c" } }, -- a deletion
    { { "" }, { "package x", "", "func F() {}" } }, -- into an empty buffer
    { { "a", "b" }, { "" } },
  }
  for i, c in ipairs(cases) do
    local b = vim.api.nvim_create_buf(false, true)
    vim.api.nvim_buf_set_lines(b, 0, -1, false, c[1])
    hunks.apply(b, hunks.between(c[1], c[2]))
    assert(vim.deep_equal(lines(b), c[2]), ("case %d: %s"):format(i, vim.inspect(lines(b))))
    vim.api.nvim_buf_delete(b, { force = true })
  end
  local got = hunks.between(cases[1][1], cases[1][2])
  assert(vim.deep_equal(got, { { from = 0, to = 1, lines = { "ONE" } }, { from = 4, to = 5, lines = { "FIVE" } } }), vim.inspect(got))
  got = hunks.between({ "a", "b" }, { "a", "x", "b" })
  assert(vim.deep_equal(got, { { from = 1, to = 1, lines = { "x" } } }), vim.inspect(got))
end)

-- edit: the version check, buffers the edit loads ---------------------------

local edit = require("agent_lsp.edit")
local r0 = { start = { line = 0, character = 0 }, ["end"] = { line = 0, character = 0 } }

-- doc_edit is a WorkspaceEdit of one TextDocumentEdit of uri at version
-- (nil or vim.NIL: null) inserting text at its start.
local function doc_edit(uri, version, text) return { documentChanges = { { textDocument = { uri = uri, version = version }, edits = { { range = r0, newText = text or "new " } } } } } end

-- file_buf loads a new temporary file holding lines; it returns the buffer,
-- the path and the URI.
local function file_buf(lines_, ext)
  local path = vim.fn.tempname() .. (ext or ".txt")
  vim.fn.writefile(lines_ or { "x" }, path)
  local b = vim.fn.bufadd(path)
  vim.fn.bufload(b)
  return b, path, vim.uri_from_fname(path)
end

-- with_lsp stubs the client lookups of the handlers: client 99 (utf-16),
-- and attaching (recorded in attached: {bufnr, client_id, lines}).
local function with_lsp(fn)
  local attached = {}
  local saved = { vim.lsp.get_client_by_id, vim.lsp.buf_attach_client, vim.lsp.buf_is_attached }
  vim.lsp.get_client_by_id = function(id) return id == 99 and { id = 99, offset_encoding = "utf-16" } or nil end
  vim.lsp.buf_attach_client = function(b, id) table.insert(attached, { b, id, lines(b) }) end
  vim.lsp.buf_is_attached = function() return false end
  local ok, err = xpcall(fn, debug.traceback, attached)
  vim.lsp.get_client_by_id, vim.lsp.buf_attach_client, vim.lsp.buf_is_attached = unpack(saved)
  if not ok then
    error(err, 0)
  end
end

test("stale: a version the buffer moved past is refused, version 0 too (Neovim's own check skips it); null and the current version pass", function()
  local b, path, uri = file_buf()
  local name = vim.fn.fnamemodify(path, ":~:.")
  vim.lsp.util.buf_versions[b] = 3
  assert(edit.stale(doc_edit(uri, 3)) == nil, "the current version")
  assert(edit.stale(doc_edit(uri, nil)) == nil and edit.stale(doc_edit(uri, vim.NIL)) == nil, "null")
  assert(edit.stale(doc_edit(uri, 0)) == name .. " changed since the edit was made (version 0, the buffer is at 3)", edit.stale(doc_edit(uri, 0)))
  vim.lsp.util.buf_versions[b] = nil
  assert(edit.stale(doc_edit(uri, 3)) == name .. " is no longer open in the editor (the edit was made for version 3)", edit.stale(doc_edit(uri, 3)))
  vim.api.nvim_buf_delete(b, { force = true })
end)

test("workspace/applyEdit handler: an edit for version 0 of a buffer now at 2 is refused, the buffer untouched; at 2 it applies", function()
  local b, _, uri = file_buf({ "x" })
  vim.lsp.util.buf_versions[b] = 2
  with_lsp(function()
    local handler = client.handlers["workspace/applyEdit"]
    local res = handler(nil, { label = "agent: edit x", edit = doc_edit(uri, 0) }, { client_id = 99 })
    assert(res.applied == false and res.failureReason:find("changed since the edit was made (version 0, the buffer is at 2)", 1, true), vim.inspect(res))
    assert(vim.deep_equal(lines(b), { "x" }), "the refused edit was applied: " .. vim.inspect(lines(b)))
    res = handler(nil, { label = "agent: edit x", edit = doc_edit(uri, 2) }, { client_id = 99 })
    assert(res.applied == true, vim.inspect(res))
    assert(vim.deep_equal(lines(b), { "new x" }), vim.inspect(lines(b)))
  end)
  vim.lsp.util.buf_versions[b] = nil
  vim.api.nvim_buf_delete(b, { force = true })
end)

test("apply: a file the edit creates is attached once the edit is applied, not as it loads, holding the text as sent", function()
  local path = vim.fn.tempname() .. ".go"
  local uri = vim.uri_from_fname(path)
  local text = "package x\n\nfunc F() {}\n"
  local we = { documentChanges = {
    { kind = "create", uri = uri, options = { overwrite = false, ignoreIfExists = false } },
    { textDocument = { uri = uri, version = vim.NIL }, edits = { { range = r0, newText = text } } },
  } }
  with_lsp(function(attached)
    local loading
    local res = edit.apply(we, 99, function()
      loading = state.loading[vim.uri_to_bufnr(uri)]
      return edit.as_sent(we, "utf-16")
    end)
    local b = vim.fn.bufnr(path)
    assert(res.applied == true, vim.inspect(res))
    assert(loading == true and state.loading[b] == nil, "not held off while the edit loads it")
    assert(#attached == 1 and attached[1][1] == b and attached[1][2] == 99, vim.inspect(attached))
    assert(vim.deep_equal(attached[1][3], { "package x", "", "func F() {}" }), "attached with: " .. vim.inspect(attached[1][3]))
    res = edit.apply(we, 99, function() error("boom", 0) end)
    assert(res.applied == false and res.failureReason == "boom", vim.inspect(res))
    vim.api.nvim_buf_delete(b, { force = true })
  end)
  os.remove(path)
end)

-- save: agent/saveDocuments -----------------------------------------------------

local save = require("agent_lsp.save")

-- changed returns a loaded buffer of a new file ("old" on disk) changed to "new".
local function changed()
  local b, path, uri = file_buf({ "old" })
  vim.api.nvim_buf_set_lines(b, 0, -1, false, { "new" })
  return b, path, uri
end

test("saveDocuments: modified buffers are written (:update); unloaded and unmodified ones count as saved", function()
  local b, path, uri = changed()
  local clean, _, clean_uri = file_buf({ "same" })
  local unloaded = vim.uri_from_fname(vim.fn.tempname() .. ".txt")
  local res = client.handlers["agent/saveDocuments"](nil, { uris = { uri, clean_uri, unloaded } }, { client_id = 99 })
  assert(vim.deep_equal(res, { saved = { uri, clean_uri, unloaded }, failed = {} }), vim.inspect(res))
  assert(vim.deep_equal(vim.fn.readfile(path), { "new" }) and not vim.bo[b].modified, "not written")
  local json = vim.json.encode(save.documents({}, true))
  assert(json:find('"failed":[]', 1, true) and json:find('"saved":[]', 1, true), "not JSON arrays: " .. json)
  for _, x in ipairs({ b, clean }) do
    vim.api.nvim_buf_delete(x, { force = true })
  end
end)

test("saveDocuments: what cannot be written fails with the reason, and stays unwritten", function()
  local cases = {
    { function(b) vim.bo[b].readonly = true end, "E45: 'readonly' option is set (add ! to override)" },
    { function(b) vim.bo[b].buftype = "nofile" end, "not a file buffer (buftype=nofile)" },
    { function(b) vim.bo[b].modifiable = false end, "the buffer is not modifiable" },
    { function(b) vim.cmd(("autocmd BufWritePre <buffer=%d> throw 'formatter crashed'"):format(b)) end, "formatter crashed" },
    {
      function(b)
        vim.api.nvim_create_autocmd("BufWritePre", { buffer = b, callback = function() error("gofmt failed", 0) end })
      end,
      "Error executing lua callback: gofmt failed",
    },
    { function(b) vim.cmd(("autocmd BufWriteCmd <buffer=%d> let g:agent_lsp_test = 1"):format(b)) end, "not written: the buffer is still modified after :update (a BufWriteCmd that did not write?)" },
  }
  local uris, want, made = {}, {}, {}
  for _, c in ipairs(cases) do
    local b, path, uri = changed()
    c[1](b)
    table.insert(uris, uri)
    table.insert(want, { uri = uri, reason = c[2] })
    table.insert(made, { b, path })
  end
  local res = save.documents(uris, true)
  assert(vim.deep_equal(res, { saved = {}, failed = want }), vim.inspect(res))
  for _, m in ipairs(made) do
    assert(vim.deep_equal(vim.fn.readfile(m[2]), { "old" }), m[2] .. " was written")
    vim.api.nvim_buf_delete(m[1], { force = true })
  end
end)

test("saveDocuments with save_before_commands off: every document fails with that reason, none is written", function()
  local b, path, uri = changed()
  config.options.save_before_commands = false
  local res = client.handlers["agent/saveDocuments"](nil, { uris = { uri } }, { client_id = 99 })
  config.options.save_before_commands = true
  assert(vim.deep_equal(res, { saved = {}, failed = { { uri = uri, reason = "save_before_commands is off" } } }), vim.inspect(res))
  assert(vim.deep_equal(vim.fn.readfile(path), { "old" }) and vim.bo[b].modified, "written")
  vim.api.nvim_buf_delete(b, { force = true })
end)

test("the client announces experimental.saveDocuments", function() assert(client.capabilities().experimental.saveDocuments == true) end)

-- review by hunk, with mappings -------------------------------------------------

local five = { "one", "two", "three", "four", "five" }

-- review_params is the review of an edit of uri (not open for the server:
-- version null) capitalizing the first and last of five lines.
local function review_params(uri, description)
  return {
    label = "agent: edit notes.txt",
    edit = {
      changeAnnotations = { ["agent-lsp.review"] = { label = "agent: edit notes.txt", needsConfirmation = true, description = description or "proposed by agent-lsp; accept or reject" } },
      documentChanges = {
        {
          textDocument = { uri = uri, version = vim.NIL },
          edits = {
            { range = { start = { line = 0, character = 0 }, ["end"] = { line = 5, character = 0 } }, newText = "ONE\ntwo\nthree\nfour\nFIVE\n", annotationId = "agent-lsp.review" },
          },
        },
      },
    },
  }
end

-- in_review runs the review of params the way newer releases do, in a
-- coroutine (so with mappings, on this Neovim's own keymaps), then calls
-- user(view) while it waits; it returns the review's answer.
local function in_review(params, user, rev)
  rev = rev or review
  local result
  local co = coroutine.create(function() result = rev.ask(params, "utf-16", keys, 99) end)
  assert(coroutine.resume(co))
  local view = assert(rev.current(), "no review open")
  local ok, err = xpcall(user, debug.traceback, view)
  if not ok then
    rev.current().decision = false -- close it
    if rev.current().resume then
      rev.current().resume()
    end
    vim.wait(1000, function() return result ~= nil end)
    error(err, 0)
  end
  assert(vim.wait(2000, function() return result ~= nil end), "the review did not end")
  return result
end

local function press(keys_) vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes(keys_, true, false, true), "mx", false) end

-- echoes records what fn echoes (and keeps it off the test's output).
local function echoes(fn)
  local echoed, echo = {}, vim.api.nvim_echo
  vim.api.nvim_echo = function(chunks) table.insert(echoed, chunks[1][1]) end
  local ok, err = xpcall(fn, debug.traceback)
  vim.api.nvim_echo = echo
  if not ok then
    error(err, 0)
  end
  return echoed
end

test("review with mappings: nowait keys, hunks dropped and taken, the proposed side edited; ga applies exactly that", function()
  local b, _, uri = file_buf(five)
  local echoed = echoes(function()
    with_lsp(function(attached)
      local res = in_review(review_params(uri), function(view)
        local f = view.files[1]
        assert(require("agent_lsp").statusline() == "agent: waiting for review", require("agent_lsp").statusline())
        assert(vim.api.nvim_get_current_buf() == f.proposed and vim.bo[f.proposed].modifiable, "the proposed side is current and editable")
        local mapped = {}
        for _, m in ipairs(vim.api.nvim_buf_get_keymap(f.proposed, "n")) do
          mapped[m.lhs] = m.nowait
        end
        for _, k in pairs(keys) do
          assert(mapped[k] == 1, k .. " is not mapped nowait: " .. vim.inspect(mapped))
        end
        press("dp")
        assert(vim.deep_equal(lines(f.proposed), { "one", "two", "three", "four", "FIVE" }), "dp: " .. vim.inspect(lines(f.proposed)))
        press("]c")
        assert(vim.api.nvim_win_get_cursor(0)[1] == 5, "]c")
        press("dp")
        press("do")
        press("[c")
        assert(vim.api.nvim_win_get_cursor(0)[1] == 1, "[c")
        -- The user edits the proposal between the hunks, then drops and takes
        -- the first hunk again: the marks follow the edit.
        vim.api.nvim_buf_set_lines(f.proposed, 2, 3, false, { "three and a half", "3.5" })
        press("do")
        assert(vim.deep_equal(lines(f.proposed), { "ONE", "two", "three and a half", "3.5", "four", "FIVE" }), vim.inspect(lines(f.proposed)))
        -- On the current side, the hunk under the cursor too.
        vim.cmd("wincmd h")
        assert(vim.api.nvim_get_current_buf() == f.original, "the current side")
        vim.api.nvim_win_set_cursor(0, { 5, 0 })
        press("dp")
        press("ga")
      end)
      assert(res.applied == true, vim.inspect(res))
      assert(vim.deep_equal(lines(b), { "ONE", "two", "three and a half", "3.5", "four", "five" }), "applied: " .. vim.inspect(lines(b)))
      assert(#attached == 1 and attached[1][1] == b, "the file's buffer is not attached: " .. vim.inspect(attached))
    end)
  end)
  assert(echoed[1] == "agent: edit notes.txt — proposed by agent-lsp; accept or reject — " .. keys_text, "no winbar on 0.7: the hint is echoed; " .. vim.inspect(echoed))
  assert(review.current() == nil and require("agent_lsp").statusline() ~= "agent: waiting for review", "the review stayed open")
  assert(#vim.api.nvim_list_tabpages() == 1, "the review tab was not closed")
  vim.api.nvim_buf_delete(b, { force = true })
end)

test("review: accepting with every hunk dropped, or after the file changed meanwhile, is refused; gr rejects", function()
  local b, path, uri = file_buf(five)
  local name = vim.fn.fnamemodify(path, ":~:.")
  echoes(function()
    with_lsp(function()
      local res = in_review(review_params(uri), function() press("dp]cdpga") end)
      assert(vim.deep_equal(res, { applied = false, failureReason = "every hunk was dropped in the review" }), vim.inspect(res))
      res = in_review(review_params(uri), function()
        vim.api.nvim_buf_set_lines(b, 2, 3, false, { "typed meanwhile" })
        press("ga")
      end)
      assert(vim.deep_equal(res, { applied = false, failureReason = name .. " changed during the review" }), vim.inspect(res))
      res = in_review(review_params(uri), function() press("gr") end)
      assert(vim.deep_equal(res, { applied = false, failureReason = "rejected by the user in review" }), vim.inspect(res))
    end)
  end)
  assert(vim.deep_equal(lines(b), { "one", "two", "typed meanwhile", "four", "five" }), vim.inspect(lines(b)))
  vim.api.nvim_buf_delete(b, { force = true })
end)

test("review on 0.8+ (stubbed winbar): the hint, with the place in the queue, is in the winbars, not echoed", function()
  local b, _, uri = file_buf(five)
  local bars, echoed = {}, {}
  local wo = setmetatable({}, {
    __index = function(_, win)
      bars[win] = bars[win] or {}
      return bars[win]
    end,
  })
  local echo = vim.api.nvim_echo
  vim.api.nvim_echo = function(chunks) table.insert(echoed, chunks[1][1]) end
  with_compat({ release(8), { vim, "wo", wo } }, function()
    package.loaded["agent_lsp.review"] = nil
    local rev = require("agent_lsp.review")
    with_lsp(function()
      in_review(review_params(uri, "proposed by agent-lsp; accept or reject (1 of 3)"), function(view)
        local want = "agent: edit notes.txt — proposed by agent-lsp; accept or reject — 1 of 3 — " .. keys_text
        for _, w in ipairs(view.files[1].wins) do
          assert(bars[w] and bars[w].winbar == want, ("window %d: %s"):format(w, vim.inspect(bars[w])))
        end
        press("gr")
      end, rev)
    end)
  end)
  package.loaded["agent_lsp.review"] = review
  vim.api.nvim_echo = echo
  assert(#echoed == 0, "echoed: " .. vim.inspect(echoed))
  vim.api.nvim_buf_delete(b, { force = true })
end)

-- Conversations 2: health, models, statusline, chat helpers ---------------------

test("health: the health module's report_* on 0.7 (real)", function()
  local h = require("agent_lsp.compat").health()
  local legacy = require("health")
  assert(h.start == legacy.report_start and h.ok == legacy.report_ok and h.error == legacy.report_error, "not the health module's reporters")
end)

test("health: vim.health.start/ok/... from 0.10 (stubbed), vim.health.report_* on 0.8 (stubbed)", function()
  local new = { start = function() end, ok = function() end, info = function() end, warn = function() end, error = function() end }
  with_compat({ release(10), { vim, "health", new } }, function(compat)
    local h = compat.health()
    assert(h.start == new.start and h.ok == new.ok and h.warn == new.warn and h.error == new.error and h.info == new.info)
    assert(compat.requests_in_coroutine(), "0.10 runs server requests in a coroutine")
  end)
  local old = { report_start = function() end, report_ok = function() end, report_info = function() end, report_warn = function() end, report_error = function() end }
  with_compat({ release(8), { vim, "health", old } }, function(compat)
    local h = compat.health()
    assert(h.start == old.report_start and h.ok == old.report_ok and h.error == old.report_error)
    assert(not compat.requests_in_coroutine())
  end)
end)

test("health: a bare * allow rule and a review key that prefixes a global mapping are reported", function()
  local health = require("agent_lsp.health")
  vim.api.nvim_set_keymap("n", "grn", "<Nop>", {})
  local problems = health.setting_problems({ allow = { "go test *", " * " }, review_keys = { reject = "gr", accept = "ga" } })
  vim.api.nvim_del_keymap("n", "grn")
  assert(#problems == 2, vim.inspect(problems))
  assert(problems[1]:find('bare "*"', 1, true), problems[1])
  assert(problems[2]:find("review key gr (reject) is the prefix of the global mappings grn", 1, true), problems[2])
  assert(#health.setting_problems({ allow = { "go *" }, review_keys = { reject = "gr" } }) == 0)
end)

test(":AgentModel lists agent.models, the choice is each next run's model; :AgentModel {name} sets it; completion", function()
  with_server(function(calls, notes)
    local select = vim.ui.select
    local shown
    vim.ui.select = function(items, opts, on_choice)
      shown = { items = items, opts = opts }
      on_choice(items[2])
    end
    local ok, err = pcall(function()
      vim.cmd("AgentModel")
      assert(calls[1].command == "agent.models", vim.inspect(calls))
      calls[1].on_result({ baseURL = "http://m/v1", current = "a", models = { { id = "a", ownedBy = "me" }, { id = "b" } } })
      assert(shown.opts.format_item(shown.items[1]) == "a (me)" and shown.opts.prompt:find("http://m/v1", 1, true), vim.inspect(shown))
      assert(state.model == "b" and has_note(notes, "the next runs use model b"), vim.inspect(notes))
      vim.cmd("AgentRun hello")
      assert(calls[2].command == "agent.run" and calls[2].args.model == "b", vim.inspect(calls[2].args))
      vim.cmd("AgentModel c")
      vim.cmd("AgentResume s-1")
      assert(calls[3].command == "agent.sessions", vim.inspect(calls[3]))
      calls[3].on_result({ { session = "s-1", project = "p", title = "t", status = "interrupted", created = "", updated = "", messages = 1 } })
      assert(calls[4].command == "agent.resume" and calls[4].args.model == "c", vim.inspect(calls[4]))
      assert(vim.deep_equal(vim.fn.getcompletion("AgentModel ", "cmdline"), { "a", "b" }), vim.inspect(vim.fn.getcompletion("AgentModel ", "cmdline")))
    end)
    vim.ui.select = select
    state.model, state.models = nil, nil
    assert(ok, err)
  end)
end)

test(":AgentMode picks agent, plan or ask; each next run names it; the statusline says what the budget leaves; the end line names the limit", function()
  with_server(function(calls, notes)
    local select = vim.ui.select
    local shown
    vim.ui.select = function(items, opts, on_choice)
      shown = { items = items, opts = opts }
      on_choice(items[2])
    end
    local ok, err = pcall(function()
      vim.cmd("AgentMode")
      assert(shown.opts.format_item(shown.items[2]):find("^plan: only reads"), vim.inspect(shown.items))
      assert(state.mode == "plan" and has_note(notes, "the next runs are in plan mode"), vim.inspect(notes))
      vim.cmd("AgentRun how would you split it")
      assert(calls[1].command == "agent.run" and calls[1].args.mode == "plan", vim.inspect(calls[1].args))
      local token = calls[1].extra.workDoneToken
      progress(token, { kind = "begin", title = "agent: how" })
      progress(token, { kind = "report", message = "model answering" })
      event({ session = "s-m", seq = 2, type = "usage", model = "m", prompt = 10, completion = 2, total = 12, contextTokens = 8192, run = { prompt = 10, completion = 2, total = 12 }, budget = { maxTokens = 100, tokens = 12 } })
      local ui = require("agent_lsp.ui")
      assert(ui.statusline() == "agent: model answering · 12 tokens · 88 of 100 tokens left", ui.statusline())
      assert(require("agent_lsp.render").counts({ status = "limit", limit = "tokens", edits = 0, steps = 1, usage = {} }):find("^limit %(tokens%)"))
      calls[1].on_result(result({ session = "s-m", status = "done" }))
      vim.cmd("AgentMode yolo")
      assert(state.mode == "plan" and has_note(notes, 'unknown mode "yolo"'), vim.inspect(notes))
      vim.cmd("AgentMode agent")
      assert(state.mode == "agent")
      assert(vim.deep_equal(vim.fn.getcompletion("AgentMode ", "cmdline"), { "agent", "plan", "ask" }), vim.inspect(vim.fn.getcompletion("AgentMode ", "cmdline")))
    end)
    vim.ui.select = select
    state.mode, state.usage, state.budget = nil, nil, nil
    assert(ok, err)
  end)
end)

test("statusline: the run's tokens and cost from usage events; waiting for permission while the server asks", function()
  with_server(function(calls)
    vim.cmd("AgentRun count tokens")
    local token = calls[1].extra.workDoneToken
    progress(token, { kind = "begin", title = "agent: count tokens" })
    progress(token, { kind = "report", message = "model answering" })
    event({ session = "s-9", seq = 2, type = "usage", model = "m", prompt = 10, completion = 2, total = 12, contextTokens = 8192, cost = 0.5, run = { prompt = 100, completion = 20, total = 120, cost = 1.25 } })
    local ui = require("agent_lsp.ui")
    assert(ui.statusline() == "agent: model answering · 120 tokens · $1.25", ui.statusline())
    -- A subagent's usage does not replace the run's totals.
    event({ session = "s-9", seq = 3, type = "usage", contextId = "subagent-x", parentId = "s-9", model = "m", prompt = 1, completion = 1, total = 2, contextTokens = 8192, run = { prompt = 1, completion = 1, total = 2 } })
    assert(ui.statusline() == "agent: model answering · 120 tokens · $1.25", ui.statusline())
    local default = vim.lsp.handlers["window/showMessageRequest"]
    local during
    vim.lsp.handlers["window/showMessageRequest"] = function()
      during = ui.statusline()
      return { title = "Allow once" }
    end
    local answer = client.handlers["window/showMessageRequest"](nil, { type = 2, message = "run go test?", actions = { { title = "Allow once" } } }, { client_id = 99 })
    vim.lsp.handlers["window/showMessageRequest"] = default
    assert(during == "agent: waiting for permission", tostring(during))
    assert(answer.title == "Allow once" and ui.statusline():find("^agent: model answering"), ui.statusline())
    calls[1].on_result(result({ session = "s-9", status = "done" }))
    assert(ui.statusline() == "", "after the run: " .. ui.statusline())
    state.usage = nil
  end)
end)

test("chat: a transcript in the chat's shape, end lines with cost and the failure's reason", function()
  local chat = require("agent_lsp.chat")
  local lines = chat.transcript_lines({
    session = "s-1",
    project = "p",
    status = "done",
    title = "Hi",
    subagents = {},
    messages = {
      { id = "1", role = "human", content = "Hi" },
      { id = "2", role = "ai", content = "", toolCalls = { { id = "c", name = "read_file", args = '{"path":"a.go"}' } } },
      { id = "3", role = "tool", content = "package a", toolCallId = "c" },
      { id = "4", role = "ai", content = "Hello." },
    },
  })
  local want = { "# Hi", "", "project p · done", "", "## You", "Hi", "", "## Agent", "- `read_file` a.go · ok", '    args: {"path":"a.go"}', "    package a", "Hello.", "— done" }
  assert(vim.deep_equal(lines, want), vim.inspect(lines))
  local done = chat.end_lines(result({ status = "done", edits = 1, steps = 2, usage = { promptTokens = 90, completionTokens = 10, totalTokens = 100, cost = 0.0021 } }))
  assert(done[1] == "— done · 1 edit · 2 steps · 100 tokens · $0.0021", done[1])
  local failed = chat.end_lines(result({ status = "failed", error = "the endpoint refused the key: check OPENAI_API_KEY" }))
  assert(failed[1] == "— failed · 0 edits · 0 steps · 0 tokens — the endpoint refused the key: check OPENAI_API_KEY", failed[1])
end)

test("chat: gy's code block is the one around the cursor, else the nearest", function()
  local chat = require("agent_lsp.chat")
  local text = { "a", "```go", "x := 1", "```", "b", "c", "d", "```", "y", "z", "```" }
  assert(vim.deep_equal(chat.code_block(text, 3), { "x := 1" }))
  assert(vim.deep_equal(chat.code_block(text, 7), { "y", "z" }))
  assert(vim.deep_equal(chat.code_block(text, 1), { "x := 1" }))
  assert(chat.code_block({ "no code" }, 1) == nil)
end)

test("context: #buffer:<name>, #buffer and #selection become references; what names nothing is a problem", function()
  local context = require("agent_lsp.context")
  local dir = vim.fn.tempname()
  vim.fn.mkdir(dir .. "/a", "p")
  vim.fn.mkdir(dir .. "/b", "p")
  local bufs = {}
  for _, rel in ipairs({ "a/x.go", "b/x.go", "a/only.go" }) do
    vim.cmd("edit " .. dir .. "/" .. rel)
    vim.api.nvim_buf_set_lines(0, 0, -1, false, { "line one", "line two" })
    bufs[rel] = vim.api.nvim_get_current_buf()
  end
  local attached = {}
  local attach = context.attach
  context.attach = function(b) table.insert(attached, b) end
  local ok, err = pcall(function()
    local c = { id = 99, offset_encoding = "utf-16" }
    local out, problems = context.resolve("look at #buffer:only.go and #buffer:a/x.go", nil, c)
    assert(#problems == 0, vim.inspect(problems))
    assert(vim.deep_equal(out.context, { { uri = vim.uri_from_bufnr(bufs["a/only.go"]) }, { uri = vim.uri_from_bufnr(bufs["a/x.go"]) } }), vim.inspect(out.context))
    assert(out.prompt == "look at #buffer:only.go and #buffer:a/x.go" and #attached == 2)
    problems = select(2, context.resolve("#buffer:x.go #buffer:nope.go #buffer", nil, c))
    assert(#problems == 3, vim.inspect(problems))
    assert(problems[1]:find("names several buffers", 1, true) and problems[2]:find("no loaded file buffer", 1, true), vim.inspect(problems))
    vim.api.nvim_buf_set_mark(bufs["a/only.go"], "<", 1, 5, {})
    vim.api.nvim_buf_set_mark(bufs["a/only.go"], ">", 2, 3, {})
    out = context.resolve("explain #selection", bufs["a/only.go"], c)
    local want = { uri = vim.uri_from_bufnr(bufs["a/only.go"]), range = { start = { line = 0, character = 5 }, ["end"] = { line = 1, character = 4 } } }
    assert(vim.deep_equal(out.context, { want }), vim.inspect(out.context))
    vim.diagnostic.set(vim.api.nvim_create_namespace("agent-lsp-test"), bufs["a/only.go"], { { lnum = 1, col = 0, message = "unused x", severity = 1 } })
    out = context.resolve("fix #diagnostics", bufs["a/only.go"], c)
    assert(#out.context == 0 and out.prompt:find("fix #diagnostics\n\nDiagnostics:\n.*only.go:2: unused x$"), out.prompt)
    assert(vim.tbl_contains(context.candidates(), "#buffer:" .. vim.fn.fnamemodify(dir .. "/a/only.go", ":.")), vim.inspect(context.candidates()))
    vim.fn.writefile({ "not really a png" }, dir .. "/shot.png")
    out, problems = context.resolve("what is wrong in #image:" .. dir .. "/shot.png", nil, c)
    assert(#problems == 0 and vim.deep_equal(out.images, { { path = dir .. "/shot.png" } }), vim.inspect({ out, problems }))
    problems = select(2, context.resolve("#image:" .. dir .. "/nope.png and #image", nil, c))
    assert(#problems == 2 and problems[1]:find("no readable file", 1, true) and problems[2]:find("names no file", 1, true), vim.inspect(problems))
  end)
  context.attach = attach
  for _, b in pairs(bufs) do
    vim.api.nvim_buf_delete(b, { force = true })
  end
  assert(ok, err)
end)

test("find_root: the nearest manifest folder; the outermost .git only where there is none", function()
  local client_mod = require("agent_lsp.client")
  local top = vim.fn.tempname()
  for _, d in ipairs({ "/.git", "/pkg/a/.git", "/pkg/a/src", "/pkg/b/src", "/docs" }) do
    vim.fn.mkdir(top .. d, "p")
  end
  vim.fn.writefile({ "{}" }, top .. "/pkg/b/package.json")
  assert(client_mod.find_root(top .. "/pkg/b/src/x.js") == top .. "/pkg/b", client_mod.find_root(top .. "/pkg/b/src/x.js"))
  -- No manifest: the outermost .git, not the nearer one of pkg/a.
  assert(client_mod.find_root(top .. "/pkg/a/src/x.txt") == top, client_mod.find_root(top .. "/pkg/a/src/x.txt"))
  assert(client_mod.find_root(top .. "/docs/x.md") == top)
end)

test("chat (stubbed server): a send, a prompt queued while it runs, the stream, tool items, the end line; <C-c> cancels; gs switches", function()
  local chat = require("agent_lsp.chat")
  with_server(function(calls)
    vim.cmd("AgentChat!")
    -- The new chat asks what the next runs use, for its first line.
    assert(calls[1] and calls[1].command == "agent.endpoint", vim.inspect(calls))
    table.remove(calls, 1)
    local buf = vim.api.nvim_get_current_buf()
    local function text() return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n") end
    local function type_prompt(p)
      local n = vim.api.nvim_buf_line_count(buf)
      vim.api.nvim_buf_set_lines(buf, n - 1, n, false, { p })
    end
    type_prompt("Explain greet")
    chat.send(buf)
    assert(#calls == 1 and calls[1].command == "agent.run" and calls[1].args.session == nil, vim.inspect(calls))
    event({ session = "s-7", seq = 1, type = "run.start", project = "p", contextTokens = 8192 })
    assert(chat.chats[buf].session == "s-7" and vim.api.nvim_buf_get_name(buf):find("agent://chat/s-7", 1, true), vim.api.nvim_buf_get_name(buf))
    event({ session = "s-7", seq = 2, type = "message.delta", text = "Let me " })
    event({ session = "s-7", seq = 3, type = "message.delta", text = "look.\nFirst" })
    event({ session = "s-7", seq = 4, type = "tool.start", name = "read_file", args = '{"path":"greet.go"}', callId = "c1" })
    event({ session = "s-8", seq = 1, type = "message.delta", text = "another session's text" })
    type_prompt("And the tests?")
    chat.send(buf)
    assert(calls[2].args.session == "s-7" and calls[2].args.prompt == "And the tests?", vim.inspect(calls[2].args))
    calls[2].on_result(result({ session = "s-7", status = "queued", position = 1 }))
    event({ session = "s-7", seq = 5, type = "tool.end", name = "read_file", callId = "c1", ok = true, summary = "12 lines" })
    event({ session = "s-7", seq = 6, type = "message", message = { id = "m6", role = "human", content = "And the tests?" } })
    event({ session = "s-7", seq = 7, type = "message.delta", text = "They pass." })
    calls[1].on_result(result({ session = "s-7", status = "done", steps = 3, usage = { promptTokens = 10, completionTokens = 5, totalTokens = 15, cost = 0.25 } }))
    local want = table.concat({
      "## You",
      "Explain greet",
      "",
      "## Agent",
      "Let me look.",
      "First",
      "- `read_file` greet.go · ok: 12 lines",
      '    args: {"path":"greet.go"}',
      "",
      "## You",
      "And the tests?",
      "_queued (position 1): the running run reads it at its next step_",
      "",
      "## Agent",
      "They pass.",
      "— done · 0 edits · 3 steps · 15 tokens · $0.25",
      "",
      "## You",
      "",
    }, "\n")
    assert(text():find(want, 1, true), "got:\n" .. text() .. "\nwant the end:\n" .. want)
    assert(not text():find("another session", 1, true), text())
    -- <C-c> sends agent.cancel for the chat's session.
    chat.cancel(buf)
    assert(calls[3].command == "agent.cancel" and calls[3].args.session == "s-7", vim.inspect(calls[3]))
    table.remove(calls, 3)
    -- A run the chat did not send (:AgentResume) gets its heading, its rows and its end line.
    vim.cmd("AgentResume s-7")
    calls[3].on_result({ { session = "s-7", project = "p", title = "Explain greet", status = "cancelled", created = "", updated = "", messages = 4 } })
    assert(calls[4].command == "agent.resume", vim.inspect(calls[4]))
    table.remove(calls, 4)
    table.remove(calls, 3)
    event({ session = "s-7", seq = 20, type = "run.start", project = "p", contextTokens = 8192 })
    event({ session = "s-7", seq = 21, type = "tool.start", name = "run_command", args = '{"command":"go test"}', callId = "c9" })
    event({ session = "s-7", seq = 22, type = "tool.end", name = "run_command", callId = "c9", ok = false, summary = "go test: exit status 1", output = "exit status 1\n$ go test\nFAIL" })
    event({ session = "s-7", seq = 23, type = "edit", uri = "file:///w/a.go", applied = true })
    event({ session = "s-7", seq = 24, type = "usage", model = "m", prompt = 9, completion = 1, total = 10, contextTokens = 8192, run = { prompt = 18, completion = 2, total = 20 } })
    event({ session = "s-7", seq = 25, type = "message.delta", text = "Back." })
    event({ session = "s-7", seq = 26, type = "run.end", status = "done" })
    local resumed = table.concat({ "## Agent · resumed", "- `run_command` $ go test · exit 1", "    FAIL", "Back.", "— done · 1 edit · 20 tokens", "", "## You", "" }, "\n")
    assert(text():sub(-#resumed) == resumed, "got:\n" .. text() .. "\nwant the end:\n" .. resumed)
    -- gs picks a session and opens its chat from agent.session.
    local select = vim.ui.select
    vim.ui.select = function(items, _, on_choice) on_choice(items[1]) end
    chat.switch()
    assert(calls[3].command == "agent.sessions", vim.inspect(calls[3]))
    calls[3].on_result({ { session = "s-1", project = "p", title = "Old", status = "done", created = "", updated = "", messages = 2 } })
    vim.ui.select = select
    assert(calls[4].command == "agent.session" and calls[4].args.session == "s-1", vim.inspect(calls[4]))
    calls[4].on_result({ session = "s-1", project = "p", status = "done", title = "Old", subagents = {}, messages = { { id = "1", role = "human", content = "Old question" }, { id = "2", role = "ai", content = "Old answer" } } })
    local other = vim.api.nvim_get_current_buf()
    assert(other ~= buf and chat.chats[other].session == "s-1", vim.api.nvim_buf_get_name(other))
    assert(table.concat(vim.api.nvim_buf_get_lines(other, 0, -1, false), "\n"):find("## You\nOld question\n\n## Agent\nOld answer\n— done\n\n## You\n", 1, true))
    local shown = vim.tbl_filter(function(w) return chat.chats[vim.api.nvim_win_get_buf(w)] ~= nil end, vim.api.nvim_list_wins())
    assert(#shown == 1, "the session opened in the chat's window: " .. #shown .. " chat windows")
    vim.cmd("silent! only")
    vim.api.nvim_buf_delete(other, { force = true })
    vim.api.nvim_buf_delete(buf, { force = true })
  end)
end)

test("chat (stubbed server): events.dropped reads the session again (agent.session); a running call's row takes its tool.end; the input stays", function()
  local chat = require("agent_lsp.chat")
  with_server(function(calls)
    vim.cmd("AgentChat!")
    local buf = vim.api.nvim_get_current_buf()
    local function text() return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n") end
    vim.api.nvim_buf_set_lines(buf, -2, -1, false, { "Count to three" })
    chat.send(buf)
    event({ session = "s-d", seq = 1, type = "run.start", project = "p", contextTokens = 8192 })
    event({ session = "s-d", seq = 2, type = "message.delta", text = "One" })
    local n = vim.api.nvim_buf_line_count(buf)
    vim.api.nvim_buf_set_lines(buf, n - 1, n, false, { "half-typed next prompt" })
    -- The window missed #3 to #6; the server stored the reply and a call still running.
    event({ session = "s-d", seq = 6, type = "events.dropped", count = 4, fromSeq = 3, toSeq = 6 })
    local read = calls[#calls]
    assert(read.command == "agent.session" and read.args.session == "s-d", vim.inspect(read))
    event({ session = "s-d", seq = 7, type = "tool.end", name = "run_command", callId = "c3", ok = true, summary = "go test: exit status 0", output = "exit status 0\n$ go test\nok" }) -- held until the transcript is shown
    read.on_result({
      session = "s-d",
      project = "p",
      status = "running",
      title = "Count to three",
      subagents = {},
      messages = {
        { id = "1", role = "human", content = "Count to three" },
        { id = "2", role = "ai", content = "One, two.", toolCalls = { { id = "c3", name = "run_command", args = '{"command":"go test"}' } } },
      },
    })
    local want = table.concat({ "# Count to three", "", "project p · running", "", "## You", "Count to three", "", "## Agent", "One, two.", "- `run_command` $ go test · exit 0", "    ok", "", "## You", "half-typed next prompt" }, "\n")
    assert(text() == want, "got:\n" .. text() .. "\nwant:\n" .. want)
    assert(chat.chats[buf].reloading == nil)
    vim.cmd("silent! only")
    vim.api.nvim_buf_delete(buf, { force = true })
  end)
end)

test("register: vim.lsp.config(name, config) from 0.11 (stubbed), nothing before", function()
  local calls = {}
  local lsp_config = setmetatable({}, { __call = function(_, ...) table.insert(calls, { ... }) end })
  with_compat({ release(11), { vim.lsp, "config", lsp_config }, { vim.lsp, "enable", function() error("enabled by register") end } }, function(compat)
    assert(compat.register("agent-lsp", function() return cfg end) == true)
  end)
  assert(#calls == 1 and calls[1][1] == "agent-lsp" and calls[1][2] == cfg, vim.inspect(calls))
  with_compat({ release(10), { vim.lsp, "config", lsp_config } }, function(compat)
    assert(compat.register("agent-lsp", function() error("made before 0.11") end) == false)
  end)
  assert(#calls == 1, vim.inspect(calls))
end)

test("the client config reuses a client of its name, and a buffer it attaches adds its project as a folder", function()
  local client_mod = require("agent_lsp.client")
  local conf = client_mod.config("/src/a")
  assert(conf.reuse_client({ name = "agent-lsp" }, conf) and not conf.reuse_client({ name = "gopls" }, conf))
  local added = {}
  local add_folder = client_mod.add_folder
  client_mod.add_folder = function(id, root) table.insert(added, { id, root }) end
  local dir = vim.fn.tempname()
  vim.fn.mkdir(dir .. "/pkg", "p")
  vim.fn.writefile({ "module m" }, dir .. "/pkg/go.mod")
  vim.cmd("edit " .. dir .. "/pkg/main.go")
  local ok, err = pcall(conf.on_attach, { id = 5 }, vim.api.nvim_get_current_buf())
  client_mod.add_folder = add_folder
  vim.cmd("bwipeout!")
  assert(ok, err)
  assert(vim.deep_equal(added, { { 5, dir .. "/pkg" } }), vim.inspect(added))
end)

-- with_client loads compat.lua and client.lua afresh under stubs (client.lua
-- takes compat's paths at its load), calls fn(client) and restores both.
local function with_client(stubs, fn)
  local saved = package.loaded["agent_lsp.client"]
  with_compat(stubs, function()
    package.loaded["agent_lsp.client"] = nil
    local ok, err = xpcall(fn, debug.traceback, require("agent_lsp.client"))
    package.loaded["agent_lsp.client"] = saved
    if not ok then
      error(err, 0)
    end
  end)
end

-- project_file opens a new file main.go in a folder pkg with a go.mod; it
-- returns the buffer and the folder.
local function project_file()
  local dir = vim.fn.tempname() .. "/pkg"
  vim.fn.mkdir(dir, "p")
  vim.fn.writefile({ "module m" }, dir .. "/go.mod")
  vim.cmd("edit " .. dir .. "/main.go")
  return vim.api.nvim_get_current_buf(), dir
end

test("autostart on 0.11 (stubbed): vim.lsp.config and vim.lsp.enable (once) attach, with the plugin's root_dir; no autocommand of the plugin's", function()
  local configs, enables, notes = {}, {}, {}
  local lsp_config = setmetatable({}, { __call = function(_, name, c) table.insert(configs, { name, c }) end })
  local five = { id = 5, name = "agent-lsp" }
  five.is_stopped = function(self)
    assert(self == five, "is_stopped not called as a method")
    return false
  end
  local group = vim.api.nvim_create_augroup("agent_lsp", { clear = true })
  vim.api.nvim_create_autocmd("BufReadPost", { group = group, callback = function() end }) -- an earlier setup()'s
  local saved = { cmd = config.options.cmd, notify = vim.notify, roots = state.roots.id, failed = state.start_failed }
  config.options.cmd = { "agent-lsp-not-installed-for-this-test" }
  state.start_failed = nil
  vim.notify = function(msg, level) table.insert(notes, { msg = msg, level = level }) end
  local buf, dir, scratch
  local ok, err = pcall(with_client, { release(11), { vim.lsp, "config", lsp_config }, { vim.lsp, "enable", recorder(enables) }, { vim.lsp, "get_client_by_id", function(id) return id == 5 and five or nil end } }, function(client_mod)
    local attached = {}
    client_mod.attach = function(b) table.insert(attached, b) end
    client_mod.autostart(true)
    assert(#enables == 1 and enables[1].n == 1 and enables[1][1] == "agent-lsp", vim.inspect(enables))
    assert(#configs == 1 and configs[1][1] == "agent-lsp", vim.inspect(configs))
    local c = configs[1][2]
    assert(c.name == "agent-lsp" and c.cmd == config.options.cmd, vim.inspect(c.cmd))
    assert(c.handlers == client_mod.handlers and c.handlers["agent/event"] and c.handlers["workspace/applyEdit"], "handlers")
    assert(c.capabilities.experimental.saveDocuments == true and c.capabilities.workspace, "capabilities")
    assert(c.root_dir == client_mod.root_dir and c.workspace_folders == nil, "root_dir is the plugin's function")
    assert(c.reuse_client({ name = "agent-lsp" }, c) and not c.reuse_client({ name = "gopls" }, c), "one client")
    assert(type(c.on_attach) == "function" and type(c.init_options) == "table")
    assert(#vim.api.nvim_get_autocmds({ group = "agent_lsp" }) == 0, vim.inspect(vim.api.nvim_get_autocmds({ group = "agent_lsp" })))
    -- vim.lsp.enable skips a command that is not executable silently: the plugin says so, once.
    assert(#notes == 1 and notes[1].level == vim.log.levels.ERROR and notes[1].msg:find("agent-lsp-not-installed-for-this-test: not found", 1, true), vim.inspect(notes))
    -- root_dir: the project of a file; nothing for a scratch buffer or a
    -- buffer an edit is loading (attached once the edit is applied).
    buf, dir = project_file()
    local roots = {}
    local on_dir = function(r) table.insert(roots, r) end
    c.root_dir(buf, on_dir)
    state.loading[buf] = true
    c.root_dir(buf, on_dir)
    state.loading[buf] = nil
    scratch = vim.api.nvim_create_buf(false, true)
    c.root_dir(scratch, on_dir)
    assert(vim.deep_equal(roots, { dir }), vim.inspect(roots))
    assert(#attached == 0, "the plugin attached buffers itself: " .. vim.inspect(attached))
    -- A client vim.lsp.enable started becomes the one client (restarts, :AgentWorkspace).
    state.roots.id = nil
    c.on_init(five)
    assert(state.roots.id == 5, vim.inspect(state.roots))
    state.initialized[5] = nil
    -- setup({ autostart = false }) disables what setup() enabled; a second one does nothing.
    client_mod.autostart(false)
    client_mod.autostart(false)
    assert(#enables == 2 and enables[2].n == 2 and enables[2][1] == "agent-lsp" and enables[2][2] == false, vim.inspect(enables))
  end)
  config.options.cmd, vim.notify, state.roots.id, state.start_failed = saved.cmd, saved.notify, saved.roots, saved.failed
  vim.api.nvim_create_augroup("agent_lsp", { clear = true })
  for _, b in ipairs({ buf, scratch }) do
    if b then
      vim.api.nvim_buf_delete(b, { force = true })
    end
  end
  assert(ok, err)
end)

test("autostart before 0.11 (stubbed 0.10; 0.7 in e2e.lua): the plugin's autocommand attaches, vim.lsp.config and enable are not called", function()
  local configs, enables, attached = {}, {}, {}
  local lsp_config = setmetatable({}, { __call = function(_, ...) table.insert(configs, { ... }) end })
  local buf
  local ok, err = pcall(with_client, { release(10), { vim.lsp, "config", lsp_config }, { vim.lsp, "enable", recorder(enables) } }, function(client_mod)
    client_mod.attach = function(b) table.insert(attached, b) end
    client_mod.autostart(true)
    assert(#configs == 0 and #enables == 0, vim.inspect({ configs, enables }))
    assert(#vim.api.nvim_get_autocmds({ group = "agent_lsp", event = "BufReadPost" }) == 1, "no BufReadPost autocommand")
    buf = project_file()
    assert(vim.tbl_contains(attached, buf), vim.inspect(attached))
  end)
  vim.api.nvim_create_augroup("agent_lsp", { clear = true })
  if buf then
    vim.api.nvim_buf_delete(buf, { force = true })
  end
  assert(ok, err)
end)

test("per-session commands go to the client that ran the session (two stubbed clients); unknown sessions to the current one", function()
  local a = { id = 41, name = "agent-lsp", offset_encoding = "utf-16", is_stopped = function() return false end }
  local b = { id = 42, name = "agent-lsp", offset_encoding = "utf-16", stopped = false }
  b.is_stopped = function() return b.stopped end
  local get = vim.lsp.get_client_by_id
  vim.lsp.get_client_by_id = function(id) return ({ [41] = a, [42] = b })[id] end
  local ok, err = pcall(with_server, function(calls)
    local function last(command)
      for i = #calls, 1, -1 do
        if calls[i].command == command then
          return calls[i]
        end
      end
    end
    -- s-b ran on b: its result names it.
    commands.run("a task for b", { client = b })
    assert(calls[1].client == b, "sent to " .. vim.inspect(calls[1].client))
    calls[1].on_result(result({ session = "s-b", status = "done" }))
    -- s-a runs on a: its run.start (sent by a) names it.
    commands.run("a task for a", { client = a })
    client.handlers["agent/event"](nil, { session = "s-a", seq = 1, type = "run.start", project = "p", contextTokens = 8192 }, { client_id = 41 })
    assert(state.session_clients["s-a"] == 41 and state.session_clients["s-b"] == 42, vim.inspect(state.session_clients))
    vim.cmd("AgentCancel s-b")
    assert(last("agent.cancel").client == b and last("agent.cancel").args.session == "s-b", vim.inspect(last("agent.cancel")))
    local resumable = { { session = "s-b", project = "p", title = "t", status = "cancelled", created = "", updated = "", messages = 1 } }
    vim.cmd("AgentResume s-b")
    assert(last("agent.sessions").client == b, "the session's status is asked of its client")
    last("agent.sessions").on_result(resumable)
    assert(last("agent.resume").client == b and last("agent.resume").args.session == "s-b", vim.inspect(last("agent.resume")))
    vim.cmd("AgentSession s-a")
    assert(last("agent.session").client == a and last("agent.session").args.session == "s-a")
    -- :AgentRun! follows up in the session of the run started last (s-b's resume): on b.
    vim.cmd("AgentRun! and then?")
    assert(last("agent.run").client == b and last("agent.run").args.session == "s-b", vim.inspect(last("agent.run").args))
    -- :AgentCancel without a session: every run going, each on its own client.
    local before = #calls
    vim.cmd("AgentCancel")
    local cancels = {}
    for i = before + 1, #calls do
      cancels[calls[i].args.session] = calls[i].client
    end
    assert(cancels["s-a"] == a and cancels["s-b"] == b and #calls == before + 2, vim.inspect(cancels))
    -- :AgentSwitch moves the last session on its client.
    state.last_session = "s-a"
    vim.cmd("AgentSwitch other")
    assert(last("agent.switchProject").client == a, "switch")
    -- A session no client is known for, or whose client stopped: the current client.
    vim.cmd("AgentCancel s-unknown")
    assert(last("agent.cancel").client.id == 99, vim.inspect(last("agent.cancel").client))
    b.stopped = true
    vim.cmd("AgentResume s-b")
    last("agent.sessions").on_result(resumable)
    assert(last("agent.resume").client.id == 99, vim.inspect(last("agent.resume").client))
    -- The chat's <C-c> goes to its session's client too.
    local chat = require("agent_lsp.chat")
    local cbuf = vim.api.nvim_create_buf(false, true)
    chat.chats[cbuf] = { buf = cbuf, session = "s-a", tools = {}, running = 1, expecting = {} }
    chat.cancel(cbuf)
    chat.chats[cbuf] = nil
    vim.api.nvim_buf_delete(cbuf, { force = true })
    assert(last("agent.cancel").client == a and last("agent.cancel").args.session == "s-a", vim.inspect(last("agent.cancel")))
    for k in pairs(state.runs) do
      state.runs[k] = nil
    end
  end)
  vim.lsp.get_client_by_id = get
  assert(ok, err)
end)

test("chat: tool rows of a reopened transcript: status and details from the tool messages, no ids; a call without a result was interrupted", function()
  local chat = require("agent_lsp.chat")
  local edit = vim.fn.json_encode({ path = "a.go", old_text = "a\nb\nc\n", new_text = "a\nB\nc\n" })
  local lines = chat.transcript_lines({
    session = "s-2",
    project = "p",
    status = "cancelled",
    title = "Tools",
    subagents = {},
    messages = {
      { id = "1", role = "human", content = "Do it" },
      {
        id = "2",
        role = "ai",
        content = "",
        toolCalls = {
          { id = "c1", name = "read_file", args = '{"path":"a.go"}' },
          { id = "c2", name = "edit_file", args = edit },
          { id = "c3", name = "run_command", args = '{"command":"go test"}' },
          { id = "c4", name = "run_command", args = '{"command":"go vet"}' },
        },
      },
      { id = "3", role = "tool", content = "package a", toolCallId = "c1" },
      { id = "4", role = "tool", content = "error: the editor did not apply the edit of a.go (rejected by the user in review); the file is unchanged.", toolCallId = "c2" },
      { id = "5", role = "tool", content = "exit status 1\n$ go test\n--- FAIL: TestA\nFAIL", toolCallId = "c3" },
    },
  })
  local want = {
    "# Tools",
    "",
    "project p · cancelled",
    "",
    "## You",
    "Do it",
    "",
    "## Agent",
    "- `read_file` a.go · ok",
    '    args: {"path":"a.go"}',
    "    package a",
    "- `edit_file` a.go · rejected",
    "     a",
    "    -b",
    "    +B",
    "     c",
    "- `run_command` $ go test · exit 1",
    "    --- FAIL: TestA",
    "    FAIL",
    "- `run_command` $ go vet · interrupted",
    "— cancelled",
  }
  assert(vim.deep_equal(lines, want), vim.inspect(lines))
  assert(not table.concat(lines, "\n"):find("s%-2") and not table.concat(lines, "\n"):find("c%d"), "no ids")
end)

test("chat rows: a command's exit code, an edit rejected, changed or failed, the diff of a new file and of a line range", function()
  local rows = require("agent_lsp.toolrows")
  local cmd = '{"command":"make"}'
  assert(rows.status("run_command", { ok = false, summary = "make: exit status 2", output = "cut output" }) == "exit 2")
  assert(rows.status("run_command", { ok = true, summary = "make: exit status 0", output = "" }) == "exit 0")
  assert(rows.status("run_command", { ok = false, summary = "make: timed out after 1s", output = "timed out after 1s\n$ make" }) == "failed: make: timed out after 1s")
  assert(rows.status("edit_file", { ok = false, summary = "edit of a refused", output = "error: ... (every hunk was dropped in the review); ..." }) == "rejected")
  assert(rows.status("edit_file", { ok = false, summary = "edit of a changed", output = "error: the edit of a was applied with changes by the user at lines 2-2" }) == "applied with your changes")
  assert(rows.status("edit_file", { ok = false, summary = "edit of a refused", output = "error: ... (a changed during the review); ..." }) == "failed: edit of a refused")
  local many = {}
  for i = 1, 30 do
    table.insert(many, "line " .. i)
  end
  local out = rows.details("run_command", cmd, { ok = false, summary = "make: exit status 2", output = "exit status 2\n$ make\n" .. table.concat(many, "\n") })
  assert(#out == rows.OUTPUT_LINES + 1 and out[1] == "    ⋯" and out[#out] == "    line 30", vim.inspect(out))
  local created = rows.lines("create_file", vim.fn.json_encode({ path = "n.go", content = "package n\n" }))
  assert(vim.deep_equal(created, { "- `create_file` n.go · running", "    new file", "    +package n" }), vim.inspect(created))
  local ranged = rows.details("edit_file", vim.fn.json_encode({ path = "a", start_line = 2, end_line = 3, new_text = "x\n" }))
  assert(vim.deep_equal(ranged, { "    replaces lines 2-3", "    +x" }), vim.inspect(ranged))
end)

test("chat: tool details fold under their item ('foldexpr'), nothing else does", function()
  local rows = require("agent_lsp.toolrows")
  local b = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(b, 0, -1, false, { "## Agent", "    indented text", "- `run_command` $ make · exit 1", "    out 1", "    out 2", "after", "- `read_file` a · running" })
  local levels = {}
  for i = 1, 7 do
    table.insert(levels, rows.foldlevel(b, i))
  end
  assert(table.concat(levels, " ") == "0 0 >1 1 1 0 0", table.concat(levels, " "))
  vim.api.nvim_buf_delete(b, { force = true })
end)

test("the sessions menu offers Resume only where it applies; :AgentResume of a done session says so and offers the chat", function()
  local s = function(status) return { session = "s-x", project = "p", title = "Add Farewell", status = status, created = "", updated = "", messages = 2 } end
  assert(vim.deep_equal(commands.session_actions(s("done")), { "Open in the chat", "Show transcript", "Delete" }))
  assert(vim.deep_equal(commands.session_actions(s("running")), { "Open in the chat", "Show transcript" }))
  for _, status in ipairs({ "interrupted", "cancelled", "failed", "limit" }) do
    assert(vim.tbl_contains(commands.session_actions(s(status)), "Resume"), status)
  end
  with_server(function(calls)
    local select, asked = vim.ui.select, nil
    vim.ui.select = function(items, opts, on_choice)
      asked = { items = items, prompt = opts.prompt }
      on_choice(items[1])
    end
    local ok, err = pcall(function()
      vim.cmd("AgentResume s-x")
      calls[1].on_result({ s("done") })
      assert(asked and asked.prompt:find("“Add Farewell” is done: nothing to resume", 1, true) and asked.prompt:find(":AgentChat", 1, true), vim.inspect(asked))
      assert(asked.items[1] == "Continue in the chat", vim.inspect(asked))
      for _, c in ipairs(calls) do
        assert(c.command ~= "agent.resume", "a done session is not resumed")
      end
      assert(calls[2].command == "agent.session" and calls[2].args.session == "s-x", "the chat of the session opens: " .. vim.inspect(calls[2]))
    end)
    vim.ui.select = select
    assert(ok, err)
  end)
end)

test("session_item: a session kept in the server's memory only says it is NOT stored", function()
  local s = { session = "s-1", project = "api", title = "t", status = "done", created = "", updated = "", messages = 1 }
  assert(not render.session_item(s):find("stored", 1, true), render.session_item(s))
  s.notStored = true
  assert(render.session_item(s):find("· NOT stored)", 1, true), render.session_item(s))
end)

-- Language intelligence: agent/diagnostics and agent/languageRequest -------

test("language: diagnostics settle on DiagnosticChanged after the buffer's last change and a quiet period; a buffer no server serves is not waited for", function()
  local language = require("agent_lsp.language")
  language.setup()
  local b = vim.api.nvim_create_buf(true, false)
  vim.api.nvim_buf_set_name(b, vim.fn.tempname() .. ".go")
  local uri = vim.uri_from_bufnr(b)
  local ns = vim.api.nvim_create_namespace("agent_lsp_unit_language")
  local lsp = { range = { start = { line = 2, character = 1 }, ["end"] = { line = 2, character = 4 } }, severity = 1, message = "undefined: x", source = "compiler", code = "UndeclaredName" }
  vim.diagnostic.set(ns, b, { { lnum = 2, col = 1, end_lnum = 2, end_col = 4, severity = 1, message = "undefined: x", user_data = { lsp = lsp } } })
  assert(language.settled(b), "set after the last change: settled")
  vim.api.nvim_buf_set_lines(b, 0, -1, false, { "package main" }) -- the agent's edit
  assert(not language.settled(b), "changed since")
  -- No language server is attached to it: nothing to wait for, answered at once.
  local start = vim.loop.hrtime()
  local r = language.diagnostics({ uris = { uri }, settle = 5000 })
  assert((vim.loop.hrtime() - start) / 1e6 < 1000, "waited for a buffer no server serves")
  assert(r.settled == nil and #r.items == 1 and vim.deep_equal(r.items[1].diagnostics, { lsp }), vim.inspect(r))
  -- A served buffer: the wait ends with the change event.
  local clients = language.clients
  language.clients = function() return { { id = 99, name = "gopls" } } end
  vim.defer_fn(function() vim.diagnostic.set(ns, b, {}) end, 50)
  r = language.diagnostics({ uris = { uri }, settle = 5000 })
  assert(r.settled == true and #r.items[1].diagnostics == 0, vim.inspect(r))
  vim.api.nvim_buf_set_lines(b, 0, -1, false, { "package main", "" })
  r = language.diagnostics({ uris = { uri }, settle = 100 })
  assert(r.settled == false, "no event: not settled " .. vim.inspect(r))
  -- Reported in parts: the stale error again with the first part, the answer is the last part's.
  vim.api.nvim_buf_set_lines(b, 0, -1, false, { "package main", "", "" })
  vim.defer_fn(function() vim.diagnostic.set(ns, b, { { lnum = 0, col = 0, severity = 1, message = "stale", source = "ts" } }) end, 20)
  vim.defer_fn(function() vim.diagnostic.set(ns, b, {}) end, 20 + language.quiet.min / 2)
  r = language.diagnostics({ uris = { uri }, settle = 5000 })
  assert(r.settled == true and #r.items[1].diagnostics == 0, "the last part: " .. vim.inspect(r))
  language.clients = clients
  -- Every buffer's, without uris: those with diagnostics.
  vim.diagnostic.set(ns, b, { { lnum = 0, col = 0, severity = 2, message = "w", source = "vet" } })
  r = language.diagnostics({ uris = {} })
  local mine = vim.tbl_filter(function(it) return it.uri == uri end, r.items)
  assert(#mine == 1 and mine[1].diagnostics[1].message == "w" and mine[1].diagnostics[1].range.start.line == 0, vim.inspect(r))
  vim.diagnostic.reset(ns, b)
  vim.api.nvim_buf_delete(b, { force = true })
end)

test("language: a request no attached server answers is null, without Neovim's complaint; an unknown method is an error", function()
  local language = require("agent_lsp.language")
  local b = vim.api.nvim_create_buf(true, false)
  vim.api.nvim_buf_set_name(b, vim.fn.tempname() .. ".txt")
  local notified = {}
  local notify = vim.notify
  vim.notify = function(msg) table.insert(notified, msg) end
  local got = language.request({ method = "textDocument/definition", params = { textDocument = { uri = vim.uri_from_bufnr(b) }, position = { line = 0, character = 0 } } })
  vim.notify = notify
  assert(got == vim.NIL and #notified == 0, vim.inspect({ got, notified }))
  assert(not pcall(language.request, { method = "textDocument/rename", params = {} }), "rename is not a language tool's request")
  vim.api.nvim_buf_delete(b, { force = true })
end)

test("language: the client declares experimental.language; diagnostics_wait and language_servers reach initializationOptions, checked", function()
  local caps = require("agent_lsp.client").capabilities()
  assert(caps.experimental.language == true and caps.experimental.saveDocuments == true, vim.inspect(caps.experimental))
  local o = vim.deepcopy(config.options)
  config.options.diagnostics_wait = 4000
  config.options.language_servers = { go = { command = "gopls", args = { "-remote=auto" } }, rust = false }
  local init = config.init_options()
  assert(init.diagnosticsWait == 4000, vim.inspect(init))
  assert(init.languageServers.go.command == "gopls" and init.languageServers.rust == vim.NIL, vim.inspect(init.languageServers))
  local problems = config.validate({ diagnostics_wait = 5, language_servers = { go = { cmd = "gopls" } } })
  assert(#problems == 2, vim.inspect(problems))
  config.options = o
end)

test("health: the language servers agent-lsp would start headless, from doctor's report", function()
  local lines = {}
  local h = { info = function(s) table.insert(lines, s) end }
  require("agent_lsp.health").language_report(h, { name = "api", languageServers = {
    { found = true, command = "gopls", path = "/usr/bin/gopls", source = "built-in" },
  } })
  require("agent_lsp.health").language_report(h, { name = "web", languageServers = {
    { found = false, name = "typescript-language-server", note = "typescript-language-server not found on PATH" },
  } })
  assert(lines[1] == "language server of api for headless runs: gopls (/usr/bin/gopls, built-in)", lines[1])
  assert(lines[2] == "language server of web for headless runs: none — typescript-language-server not found on PATH", lines[2])
end)

test("a refused run names the Neovim options that fix it, never resume", function()
  local reasons = require("agent_lsp.reasons")
  local err = { code = -32602, message = "agent.run: no API key", data = { reason = "no-api-key", setting = "model.apiKeyEnv", baseURL = "https://api.openai.com/v1", model = "gpt-4o-mini", apiKeyEnv = "OPENAI_API_KEY" } }
  local d = assert(reasons.of(err), "no reason in the error")
  local msg = reasons.message(d)
  for _, want in ipairs({ "https://api.openai.com/v1", "OPENAI_API_KEY", "api_key_env", "base_url", ":checkhealth agent_lsp" }) do
    assert(msg:find(want, 1, true), want .. " missing: " .. msg)
  end
  assert(reasons.of({ code = -32602, message = "x" }) == nil, "an error without data has a reason")
  assert(reasons.of({ data = { reason = "other" } }) == nil, "an unknown reason is taken")
  local hint = assert(reasons.hint({ status = "failed", reason = "key-refused" }))
  assert(hint:find("api_key_env", 1, true) and not hint:lower():find("resume", 1, true), hint)
  assert(reasons.hint({ status = "failed" }) == nil, "a failure without a reason has a hint")
  local models = reasons.message({ reason = "model-unknown", baseURL = "http://x/v1", model = "gpt-9", models = { "a", "b" } })
  assert(models:find(":AgentModel", 1, true) and models:find("a, b", 1, true), models)
end)

test("an empty chat shows the model, the endpoint and whether a key is set", function()
  local chat = require("agent_lsp.chat")
  local ok = chat.endpoint_line({ model = "qwen", baseURL = "http://localhost:11434/v1", apiKeyEnv = "OPENAI_API_KEY", keySet = false, needsKey = false })
  assert(ok == "_Model qwen at http://localhost:11434/v1 · no API key (OPENAI_API_KEY)_", ok)
  local set = chat.endpoint_line({ model = "gpt-4o", baseURL = "https://api.openai.com/v1", apiKeyEnv = "OPENAI_API_KEY", keySet = true, needsKey = false })
  assert(set:find("· API key set_", 1, true), set)
  local missing = chat.endpoint_line({ model = "gpt-4o", baseURL = "https://api.openai.com/v1", apiKeyEnv = "MY_KEY", keySet = false, needsKey = true })
  for _, want in ipairs({ "needs one", "MY_KEY", "api_key_env", "base_url", ":checkhealth agent_lsp" }) do
    assert(missing:find(want, 1, true), want .. " missing: " .. missing)
  end
end)

test(":AgentProcesses lists the running background processes; stop ID finds its session and stops it", function()
  with_server(function(calls)
    commands.processes({})
    assert(calls[1].command == "agent.processes", calls[1].command)
    local lines = render.results["agent.processes"]({ { session = "s-1", id = "p1", command = "npm run dev", project = "web", started = "2026-01-01T10:20:30Z" } })
    assert(lines[1]:find("p1  npm run dev  (web · session s-1 · since 2026-01-01 10:20:30)", 1, true), lines[1])
    assert(render.results["agent.processes"]({})[1] == "no background processes running")
    commands.processes({ "stop", "p2" })
    calls[2].on_result({ { session = "s-1", id = "p1", command = "a", project = "web", started = "" }, { session = "s-2", id = "p2", command = "b", project = "web", started = "" } })
    assert(calls[3] and calls[3].command == "agent.stopProcess", vim.inspect(calls[3]))
    assert(calls[3].args.session == "s-2" and calls[3].args.id == "p2", vim.inspect(calls[3].args))
    local stopped = render.results["agent.stopProcess"]({ stopped = true }, calls[3].args)[1]
    assert(stopped == "background process p2 of session s-2 stopped", stopped)
  end)
end)

test("install: the release's platform names, SHA256SUMS lines and the URLs it accepts", function()
  local install = require("agent_lsp.install")
  local cases = {
    { "Linux", "x86_64", "linux-x64", "agent-lsp-linux-x64" },
    { "Linux", "aarch64", "linux-arm64", "agent-lsp-linux-arm64" },
    { "Darwin", "arm64", "darwin-arm64", "agent-lsp-darwin-arm64" },
    { "Darwin", "x86_64", "darwin-x64", "agent-lsp-darwin-x64" },
    { "Windows_NT", "x86_64", "win32-x64", "agent-lsp-win32-x64.exe" },
    { "Windows_NT", "arm64", "win32-arm64", "agent-lsp-win32-arm64.exe" },
  }
  for _, c in ipairs(cases) do
    local p = install.platform({ sysname = c[1], machine = c[2] })
    assert(p == c[3] and install.asset(p) == c[4], vim.inspect({ c, p }))
  end
  assert(install.platform({ sysname = "FreeBSD", machine = "amd64" }) == nil)
  assert(install.platform({ sysname = "Linux", machine = "riscv64" }) == nil)
  local a, b = ("a"):rep(64), ("B"):rep(64)
  local sums = table.concat({ a .. "  agent-lsp-linux-x64.vsix", b .. " *agent-lsp-linux-x64", "garbage", ("c"):rep(63) .. "  agent-lsp-darwin-x64" }, "\n")
  assert(install.expected(sums, "agent-lsp-linux-x64") == b:lower())
  assert(install.expected(sums, "agent-lsp-linux-x64.vsix") == a)
  assert(install.expected(sums, "agent-lsp-darwin-x64") == nil, "a short checksum")
  assert(install.expected(sums, "agent-lsp") == nil)
  for _, ok in ipairs({ "https://github.com/x/y/releases/download/v1", "file:///srv/release", "http://127.0.0.1:8080/r", "http://localhost/r", "http://[::1]:9/r" }) do
    assert(install.url_problem(ok) == nil, ok)
  end
  for _, bad in ipairs({ "http://example.com/r", "http://127.0.0.1.example.com/r", "http://localhost.example.com/r", "ftp://host/r", "/srv/release" }) do
    assert(install.url_problem(bad), bad)
  end
end)

-- Rewind (rewind.lua) against a stubbed connection: the picker of checkpoints
-- with their files, then the scope; a running session refused; :AgentFork
-- opens the new session in the chat; :AgentRetry sends agent.run with retry.
local rewind_checkpoints = {
  checkpoints = {
    { checkpoint = 1, prompt = "Add Farewell", time = "2026-01-01T00:00:00Z", model = "scripted", files = { { path = "greet.go", uri = "file:///w/greet.go", added = 3, removed = 0, restorable = true } } },
    {
      checkpoint = 2,
      prompt = "Add Sub and test it",
      time = "2026-01-01T00:01:00Z",
      model = "scripted",
      files = {
        { path = "greet.go", uri = "file:///w/greet.go", added = 2, removed = 1, restorable = true },
        { path = "out.txt", uri = "file:///w/out.txt", added = 1, removed = 0, restorable = false, reason = "changed by a command, not restorable" },
      },
      notes = { "make's files not looked for: over rewind.scanLimit" },
    },
  },
}

-- with_select answers each vim.ui.select with answer(items, opts) in turn, recording what was offered.
local function with_select(answers, fn)
  local saved, offered = vim.ui.select, {}
  vim.ui.select = function(items, opts, on_choice)
    local answer = table.remove(answers, 1)
    table.insert(offered, { items = items, opts = opts, lines = vim.tbl_map(opts.format_item or tostring, items) })
    on_choice(answer and answer(items) or nil)
  end
  local ok, err = pcall(fn, offered)
  vim.ui.select = saved
  if not ok then
    error(err, 0)
  end
end

test(":AgentRewind: a picker of the checkpoints with their files and notes, then the scope with the files since; agent.rewind; its summary", function()
  with_server(function(calls, notes)
    state.last_session = "s-1"
    with_select({ function(items) return items[2] end, function(items) return items[3] end }, function(offered)
      vim.cmd("AgentRewind")
      assert(calls[1].command == "agent.checkpoints" and calls[1].args.session == "s-1", vim.inspect(calls[1]))
      calls[1].on_result(rewind_checkpoints)
      assert(
        vim.deep_equal(offered[1].lines, { "1. Add Farewell — greet.go +3 −0", "2. Add Sub and test it — greet.go +2 −1, out.txt +1 −0 (changed by a command, not restorable); make's files not looked for: over rewind.scanLimit" }),
        vim.inspect(offered[1].lines)
      )
      local scope = offered[2].opts.prompt
      assert(
        scope:find(
          "Rewind to before prompt 2 (Add Sub and test it); files changed since: greet.go +2 −1, out.txt +1 −0 (changed by a command, not restorable); make's files not looked for: over rewind.scanLimit. What goes back?",
          1,
          true
        ),
        scope
      )
      assert(vim.deep_equal(offered[2].lines, { "the conversation and the files", "the conversation only (the files stay as they are)", "the files only (the conversation stays)" }), vim.inspect(offered[2].lines))
    end)
    assert(calls[2].command == "agent.rewind" and vim.deep_equal(calls[2].args, { session = "s-1", checkpoint = 2, restore = "files" }), vim.inspect(calls[2]))
    calls[2].on_result({
      checkpoint = 2,
      conversation = false,
      restored = { { path = "greet.go", uri = "file:///w/greet.go" } },
      conflicts = {},
      notRestorable = { { path = "out.txt", uri = "file:///w/out.txt", reason = "changed by a command, not restorable" } },
    })
    local note = has_note(notes, "rewound to before prompt 2: restored greet.go; not restorable: out.txt (changed by a command, not restorable)")
    assert(note and note.level == vim.log.levels.WARN, vim.inspect(notes))
  end)
end)

test(":AgentRewind N scope goes straight to agent.rewind; an unknown N or scope is refused; a running session is refused", function()
  with_server(function(calls, notes)
    state.last_session = "s-1"
    vim.cmd("AgentRewind 1 conversation")
    calls[1].on_result(rewind_checkpoints)
    assert(calls[2] and vim.deep_equal(calls[2].args, { session = "s-1", checkpoint = 1, restore = "conversation" }), vim.inspect(calls[2]))
    calls[2].on_result({ checkpoint = 1, conversation = true, restored = {}, conflicts = {}, notRestorable = {} })
    assert(has_note(notes, "rewound to before prompt 1: the prompt and later left the conversation (kept as a branch)"), vim.inspect(notes))
    vim.cmd("AgentRewind 7")
    calls[3].on_result(rewind_checkpoints)
    assert(#calls == 3 and has_note(notes, "session s-1 has no checkpoint 7 (it has 1 to 2)"), vim.inspect(notes))
    vim.cmd("AgentRewind 1 everything")
    assert(#calls == 3 and has_note(notes, 'unknown scope "everything": both, conversation or files'), vim.inspect(notes))
    state.runs["t"] = { session = "s-1", client_id = 99, progress = {} }
    vim.cmd("AgentRewind")
    assert(#calls == 3, "nothing sent for a running session")
    assert(has_note(notes, "session s-1 is running: :AgentCancel it first, then rewind"), vim.inspect(notes))
  end)
end)

test(":AgentRewind undo sends agent.rewind with undo and says what came back; a kept file is a warning", function()
  with_server(function(calls, notes)
    state.last_session = "s-1"
    vim.cmd("AgentRewind undo")
    assert(calls[1] and calls[1].command == "agent.rewind" and vim.deep_equal(calls[1].args, { session = "s-1", undo = true }), vim.inspect(calls[1]))
    calls[1].on_result({ checkpoint = 2, rewind = "01R", undone = true, conversation = true, restored = { { path = "greet.go", uri = "file:///w/greet.go" } }, conflicts = {}, notRestorable = {} })
    local note = has_note(notes, "undid the rewind to before prompt 2 (the prompt and later left the conversation (kept as a branch)): the conversation is back; put back greet.go")
    assert(note and note.level == vim.log.levels.INFO, vim.inspect(notes))
    vim.cmd("AgentRewind undo")
    calls[2].on_result({ checkpoint = 2, rewind = "01S", undone = true, conversation = false, restored = {}, conflicts = { { path = "a.txt", uri = "file:///w/a.txt", kept = true } }, notRestorable = {} })
    note = has_note(notes, "undid the rewind to before prompt 2 (the conversation did not change): no file needed putting back; changed by you since: a.txt (kept yours)")
    assert(note and note.level == vim.log.levels.WARN, vim.inspect(notes))
  end)
end)

test(":AgentFork picks a checkpoint, forks and opens the new session in the chat; :AgentRetry sends agent.run with retry", function()
  with_server(function(calls, notes)
    state.last_session = "s-1"
    local chat = require("agent_lsp.chat")
    local open, opened = chat.open_session, nil
    chat.open_session = function(session) opened = session end
    with_select({ function(items) return items[2] end }, function()
      vim.cmd("AgentFork")
      calls[1].on_result(rewind_checkpoints)
    end)
    assert(calls[2].command == "agent.fork" and vim.deep_equal(calls[2].args, { session = "s-1", checkpoint = 2 }), vim.inspect(calls[2]))
    calls[2].on_result({ session = "s-2" })
    chat.open_session = open
    assert(opened == "s-2" and state.last_session == "s-2", tostring(opened))
    assert(has_note(notes, "session s-1 forked before prompt 2: the new session is s-2"), vim.inspect(notes))
    vim.cmd("AgentRetry")
    assert(calls[3].command == "agent.checkpoints" and calls[3].args.session == "s-2")
    calls[3].on_result(rewind_checkpoints)
    assert(calls[4].command == "agent.run", calls[4].command)
    local a = calls[4].args
    assert(a.session == "s-2" and a.retry == true and a.prompt == nil, vim.inspect(a))
    assert(state.last_run.prompt == "Add Sub and test it", vim.inspect(state.last_run))
  end)
end)

test(":AgentBranch: a reported branch's diff, merge and deletion, in a real repository", function()
  local branches = require("agent_lsp.branches")
  local dir = vim.fn.tempname()
  vim.fn.mkdir(dir, "p")
  local function sh(args)
    local out = vim.fn.systemlist(args)
    assert(vim.v.shell_error == 0, table.concat(args, " ") .. ": " .. table.concat(out, "\n"))
    return out
  end
  local g = { "git", "-C", dir, "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgSign=false" }
  local function git(...) return sh(vim.list_extend(vim.deepcopy(g), { ... })) end
  git("init", "-q")
  vim.fn.writefile({ "one" }, dir .. "/a.txt")
  git("add", "-A")
  git("commit", "-q", "-m", "one")
  git("checkout", "-q", "-b", "agent-lsp/abcd1234-1")
  vim.fn.writefile({ "two" }, dir .. "/a.txt")
  git("commit", "-q", "-am", "two")
  git("checkout", "-q", "-")
  local notes, picks = {}, {}
  local saved_notify, saved_select = vim.notify, vim.ui.select
  vim.notify = function(msg) table.insert(notes, msg) end
  vim.ui.select = function(items, opts, on_choice)
    local want = table.remove(picks, 1)
    for _, it in ipairs(items) do
      if (opts.format_item and opts.format_item(it) or it) == want then
        return on_choice(it)
      end
    end
    on_choice(nil)
  end
  local ok, err = pcall(function()
    branches.reported = {}
    client.handlers["agent/event"](nil, { session = "s-1", seq = 9, type = "subagent.end", contextId = "subagent-1", ok = true, status = "done", branch = "agent-lsp/abcd1234-1" }, { client_id = 99 })
    branches.note({ branch = "agent-lsp/abcd1234-1" }, { dir }) -- the client has no folders here: found in dir
    branches.note({ branch = "agent-lsp/abcd1234-1" }, { dir }) -- told once
    assert(#branches.reported == 1 and branches.reported[1].dir == dir, vim.inspect(branches.reported))
    assert(#notes == 1 and notes[1]:find("changes on branch agent-lsp/abcd1234-1", 1, true), vim.inspect(notes))
    picks = { "Show the diff" }
    branches.command("", {})
    local lines = vim.api.nvim_buf_get_lines(0, 0, -1, false)
    assert(vim.tbl_contains(lines, "-one") and vim.tbl_contains(lines, "+two"), vim.inspect(lines))
    assert(vim.bo.filetype == "diff")
    vim.cmd("bwipe!")
    picks = { "Merge it into the current branch" }
    branches.command("agent-lsp/abcd1234-1", {})
    assert(vim.fn.readfile(dir .. "/a.txt")[1] == "two", "merged")
    assert(#branches.reported == 0, "a merged branch is no longer offered")
    picks = { "Delete it" }
    branches.command("agent-lsp/abcd1234-1", { dir })
    assert(#git("branch", "--list", "agent-lsp/*") == 0, "deleted")
    branches.command("agent-lsp/nope", { dir })
    assert(notes[#notes]:find("no branch agent-lsp/nope", 1, true), notes[#notes])
  end)
  vim.notify, vim.ui.select = saved_notify, saved_select
  vim.fn.delete(dir, "rf")
  assert(ok, err)
end)

harness.finish()
