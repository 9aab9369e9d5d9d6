-- Headless unit tests without a server: compat.lua's version shims, the
-- initializationOptions of config.lua, the review's hint, the renderers'
-- text beyond the fixtures (protocol.lua covers those) and the event log.
-- Only Neovim 0.7.2 (Debian's) installs here, so the paths of newer releases
-- (0.8's autocommand data, 0.10's get_clients, 0.11's client:method() calls,
-- str_utfindex(s, encoding) and start{attach = false}, and vim.lsp.start
-- from 0.8) can only run against stubs of the vim APIs they call. Each case
-- stubs the release it claims, so the cases hold on any Neovim; the "real"
-- cases call this Neovim's own APIs.
local harness = dofile(debug.getinfo(1, "S").source:match("^@(.*)/") .. "/harness.lua")
local test = harness.test

local real_has = vim.fn.has

-- release(minor) stubs vim.fn.has to claim the releases up to 0.minor.
local function release(minor)
  return { vim.fn, "has", function(feature)
    local m = feature:match("^nvim%-0%.(%d+)$")
    if m then
      return tonumber(m) <= minor and 1 or 0
    end
    return real_has(feature)
  end }
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
-- before 0.8) and start_client record their calls and return client 7.
local function start_stubs(minor, calls)
  local function started(kind)
    return function(...)
      table.insert(calls, { kind, ... })
      return 7
    end
  end
  return {
    release(minor),
    { vim.lsp, "start", minor >= 8 and started("start") or nil },
    { vim.lsp, "start_client", started("start_client") },
    { vim.lsp, "get_client_by_id", function(id) return id == 7 and {} or nil end },
    { vim.lsp, "buf_attach_client", function(bufnr, id) table.insert(calls, { "attach", bufnr, id }) end },
  }
end

test("start on 0.7: start_client and buf_attach_client, reused through known", function()
  local calls, known = {}, {}
  with_compat(start_stubs(7, calls), function(compat)
    assert(compat.start(cfg, 3, known) == 7)
    assert(compat.start(cfg, 4, known) == 7)
    assert(known["/src/sample"] == 7, vim.inspect(known))
  end)
  local want = { { "start_client", cfg }, { "attach", 3, 7 }, { "attach", 4, 7 } }
  assert(vim.deep_equal(calls, want), vim.inspect(calls))
end)

test("start on 0.8 to 0.10 (stubbed): vim.lsp.start for a buffer, start_client for none", function()
  local calls, known = {}, {}
  with_compat(start_stubs(10, calls), function(compat)
    assert(compat.start(cfg, 3, known) == 7)
    assert(compat.start(cfg, nil, known) == 7)
  end)
  local want = { { "start", cfg, { bufnr = 3 } }, { "start_client", cfg } }
  assert(vim.deep_equal(calls, want), vim.inspect(calls))
end)

test("start on 0.11 (stubbed): vim.lsp.start{attach = false} for no buffer", function()
  local calls, known = {}, {}
  with_compat(start_stubs(11, calls), function(compat)
    assert(compat.start(cfg, nil, known) == 7)
    assert(compat.start(cfg, nil, known) == 7)
  end)
  local want = { { "start", cfg, { attach = false } } }
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
    with_compat({ release(minor), { vim.api, "nvim_exec_autocmds", recorder(calls) } }, function(compat)
      compat.fire("AgentLspTest", { x = 1 })
    end)
    local opts = calls[1][2]
    assert(calls[1][1] == "User" and opts.pattern == "AgentLspTest", vim.inspect(calls))
    assert(vim.deep_equal(opts.data, want), ("0.%d: data %s"):format(minor, vim.inspect(opts.data)))
  end
end)

test("fire runs the User autocommand once on this Neovim (real)", function()
  local runs = 0
  local id = vim.api.nvim_create_autocmd("User", { pattern = "AgentLspTest", callback = function() runs = runs + 1 end })
  with_compat({}, function(compat)
    compat.fire("AgentLspTest", { x = 1 })
  end)
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
local keys = { accept = "ga", reject = "gr" }

-- annotated is an ApplyWorkspaceEditParams whose annotations are given.
local function annotated(annotations)
  return { label = "agent: edit .env", edit = { changeAnnotations = annotations, documentChanges = {} } }
end

test("review hint: the label, why the edit needs confirmation, the keys", function()
  local params = annotated({ ["agent-lsp.review"] = { label = "x", needsConfirmation = true, description = "protected file: environment files hold secrets; accept or reject" } })
  assert(review.wants_review(params.edit))
  local want = "agent: edit .env — protected file: environment files hold secrets; accept or reject — ga accept, gr reject"
  assert(review.hint(params, keys) == want, review.hint(params, keys))
end)

test("review hint: only descriptions of annotations that need confirmation, each once", function()
  local params = annotated({
    a = { label = "a", needsConfirmation = true, description = "why" },
    b = { label = "b", needsConfirmation = true, description = "why" },
    c = { label = "c", description = "not asked" },
    d = { label = "d", needsConfirmation = true },
  })
  assert(review.hint(params, keys) == "agent: edit .env — why — ga accept, gr reject", review.hint(params, keys))
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
local function ev(seq, type, fields)
  return vim.tbl_extend("force", { session = "s-1", seq = seq, type = type }, fields or {})
end

test("log: deltas stream on their lines, the complete message replaces them", function()
  log.lines = {}
  log.event(ev(1, "run.start", { project = "sample" }))
  log.event(ev(2, "message.delta", { text = "Hel" }))
  log.event(ev(3, "message.delta", { text = "lo\nthere" }))
  local want = { "s-1 #1 run.start project sample", "s-1 #2 message.delta Hello", "    there" }
  assert(vim.deep_equal(log.lines, want), vim.inspect(log.lines))
  log.event(ev(4, "message", { message = { id = "m1", role = "ai", content = "Hello\nthere" } }))
  log.event(ev(5, "future.kind", { detail = "x" }))
  want = { "s-1 #1 run.start project sample", "s-1 #4 message Agent · m1: Hello", "    there", "s-1 #5 future.kind detail=x" }
  assert(vim.deep_equal(log.lines, want), vim.inspect(log.lines))
end)

test("log: an event in between ends the stream; the message is then added", function()
  log.lines = {}
  log.event(ev(1, "message.delta", { text = "Hi" }))
  log.event({ session = "s-2", seq = 1, type = "run.start", project = "other" })
  log.event(ev(2, "message", { message = { id = "m1", role = "ai", content = "Hi" } }))
  local want = { "s-1 #1 message.delta Hi", "s-2 #1 run.start project other", "s-1 #2 message Agent · m1: Hi" }
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

harness.finish()
