-- The wire contract's fixtures, read by the plugin. testdata/protocol holds
-- golden examples the Go tests record from the real server: each command's
-- arguments and result (commands/<command>.json) and each agent/event kind
-- (events/<type>.json). Here:
--   * names: the commands render.results renders and the event types
--     events.kinds renders are exactly the fixtures' file names, and so are
--     the commands (AgentLsp.Call) and event types (AgentLsp.AgentEvent) of
--     types.lua;
--   * types: every example checks against its class in types.lua, both ways:
--     no field the class lacks, no required field missing, each value of its
--     type (tests/luacats.lua reads the annotations);
--   * rendering: every result is rendered with render.results[command]
--     (with the example's arguments), every event with events.render, and
--     every string, number and boolean in it (seq included) must show in the
--     text: numbers as a whole word; strings as they are, a multi-line one
--     line by line in order (spaces at the ends of lines aside), an RFC 3339
--     timestamp as render.time shortens it; a boolean, and a value
--     render.words has a word for (roles), as that word (every boolean field
--     of types.lua must have words). Then each value must be read from its
--     own field: replaced by a probe (a unique string or number), the probe
--     shows; a boolean flipped changes the text to the other word. That
--     second pass catches a renamed field whose value happens to appear
--     anyway (a 0, a status, a session id).
-- The arguments are what the plugin sends, not what it shows: the type check
-- covers them. The requests the server sends the client
-- (requests/<method>.json, "/" written "."): their names are types.lua's
-- AgentLsp.ServerRequest, each example checks against its class, and the
-- plugin's handler answers the example's params with the example's result. Last, every initializationOptions key config.lua sends must be
-- a setting of the contract's settings table (docs/protocol.md).
local here = debug.getinfo(1, "S").source:match("^@(.*)/")
local harness = dofile(here .. "/harness.lua")
local luacats = dofile(here .. "/luacats.lua")
local test = harness.test

local render = require("agent_lsp.render")
local events = require("agent_lsp.events")

local plugin = vim.fn.fnamemodify(here, ":h")
local repo = vim.fn.fnamemodify(here, ":h:h:h")
local fixtures = repo .. "/testdata/protocol"
local types = luacats.read(plugin .. "/lua/agent_lsp/types.lua")

-- load reads the fixtures of a directory: name (the file's, without .json) -> examples.
local function load(dir)
  local out = {}
  for _, path in ipairs(vim.fn.glob(fixtures .. "/" .. dir .. "/*.json", false, true)) do
    out[vim.fn.fnamemodify(path, ":t:r")] = vim.fn.json_decode(table.concat(vim.fn.readfile(path), "\n"))
  end
  assert(next(out), "no fixtures in " .. fixtures .. "/" .. dir)
  return out
end

local commands, kinds, requests = load("commands"), load("events"), {}
for name, examples in pairs(load("requests")) do
  requests[(name:gsub("%.", "/", 1))] = examples
end

-- declared maps the literal each class of a union alias gives field (its
-- command or event type) to the class: the names types.lua declares.
local function declared(alias, field)
  local out = {}
  for _, class in ipairs(luacats.members(assert(types.aliases[alias], "no alias " .. alias))) do
    local f = luacats.fields(types, class)[field]
    local literal = f and f.type:match('^"(.*)"$')
    if literal then
      out[literal] = class
    end
  end
  return out
end

local calls, event_classes = declared("AgentLsp.Call", "command"), declared("AgentLsp.AgentEvent", "type")
local request_classes = declared("AgentLsp.ServerRequest", "method")

local function same_names(got, what, want)
  local g, w = vim.tbl_keys(got), vim.tbl_keys(want)
  table.sort(g)
  table.sort(w)
  assert(vim.deep_equal(g, w), ("%s: %s\nthe fixtures: %s"):format(what, table.concat(g, ", "), table.concat(w, ", ")))
end

test("the commands are the fixtures': render.results and types.lua's AgentLsp.Call", function()
  same_names(render.results, "render.results", commands)
  same_names(calls, "types.lua", commands)
end)

test("the event types are the fixtures': events.kinds and types.lua's AgentLsp.AgentEvent", function()
  same_names(events.kinds, "events.kinds", kinds)
  same_names(event_classes, "types.lua", kinds)
end)

test("the server's requests are the fixtures': types.lua's AgentLsp.ServerRequest and the client's handlers", function()
  same_names(request_classes, "types.lua", requests)
  local handlers = require("agent_lsp.client").handlers
  for method in pairs(requests) do
    assert(handlers[method], "no handler of " .. method)
  end
end)

test("every boolean of types.lua, and every role, has its words in render.words", function()
  for name in pairs(types.classes) do
    for field, f in pairs(luacats.fields(types, name)) do
      if f.type == "boolean" then
        local w = render.words[field]
        assert(w and w[true] and w[false] and w[true] ~= w[false], ("%s.%s: no words for true and false"):format(name, field))
      end
    end
  end
  for _, role in ipairs(luacats.members(types.aliases["AgentLsp.Role"])) do
    assert(render.words.role[role:match('^"(.*)"$')], "no word for role " .. role)
  end
  local want = {
    ok = { "ok", "failed" },
    applied = { "applied", "refused" },
    cancelled = { "run cancelled", "no run was going" },
    deleted = { "deleted", "was already gone" },
    network = { "network allowed", "no network" },
  }
  for field, w in pairs(want) do
    assert(render.word(field, true) == w[1] and render.word(field, false) == w[2], field)
  end
  assert(render.word("role", "ai") == "Agent" and render.word("role", "new-role") == "new-role")
end)

-- leaves calls fn(path, key, value) for every string, number and boolean in
-- v, in a stable order; key is the last field name on the path (list indexes
-- aside), which render.words is keyed by.
local function leaves(v, fn, path, key)
  path = path or {}
  if type(v) ~= "table" then
    if type(v) ~= "userdata" then -- vim.NIL: the type check reports a null
      fn(path, key, v)
    end
    return
  end
  local ks = vim.tbl_keys(v)
  table.sort(ks, function(a, b) return tostring(a) < tostring(b) end)
  for _, k in ipairs(ks) do
    local sub = vim.deepcopy(path)
    table.insert(sub, k)
    leaves(v[k], fn, sub, type(k) == "string" and k or key)
  end
end

local function set_at(t, path, value)
  for i = 1, #path - 1 do
    t = t[path[i]]
  end
  t[path[#path]] = value
end

-- shown tells whether text shows value (of field key), and if not, what it looked for.
local function shown(text, key, value)
  local word = render.words[key] and render.words[key][value]
  if type(value) == "boolean" and not word then
    return false, "no word for it in render.words"
  elseif word then
    return text:find(word, 1, true) ~= nil, ("the word %q"):format(word)
  elseif type(value) == "number" then
    return text:find("%f[%w]" .. vim.pesc(tostring(value)) .. "%f[%W]") ~= nil, "the number as a word"
  end
  if value:match("^%d%d%d%d%-%d%d%-%d%dT") then
    value = render.time(value)
  end
  local from = 1
  for _, line in ipairs(vim.split(value, "\n", { plain = true })) do
    line = vim.trim(line)
    if line ~= "" then
      local _, e = text:find(line, from, true)
      if not e then
        return false, vim.inspect(line)
      end
      from = e + 1
    end
  end
  return true
end

-- rendering_problems renders subject with fn (subject -> text) and checks that
-- every value in it shows, and shows because of its own field (the probes).
local function rendering_problems(subject, fn)
  local problems = {}
  local text = fn(subject)
  local n = 0
  leaves(subject, function(path, key, value)
    n = n + 1
    local where = table.concat(vim.tbl_map(tostring, path), ".")
    local ok, looked_for = shown(text, key, value)
    if not ok then
      table.insert(problems, ("%s = %s is not shown (looked for %s)"):format(where, vim.inspect(value), looked_for))
    end
    local probe = ({ boolean = not value, number = 900000 + n, string = ("zqx%dq"):format(n) })[type(value)]
    local copy = vim.deepcopy(subject)
    set_at(copy, path, probe)
    local rendered, probed = pcall(fn, copy)
    if not rendered then
      table.insert(problems, ("%s = %s: the renderer raised %s"):format(where, vim.inspect(probe), probed))
    elseif not shown(probed, key, probe) or probed == text then
      table.insert(problems, ("%s is not read from its field: set to %s, the text does not show it:\n%s"):format(where, vim.inspect(probe), probed))
    end
  end)
  return problems, text
end

-- fixture_test checks the examples of one fixture file: each against class
-- (types) and its rendering (fn renders an example's subject).
local function fixture_test(label, examples, class, subject_of, fn)
  test(label, function()
    assert(class, "types.lua declares no class for it")
    local problems = {}
    for i, example in ipairs(examples) do
      for _, p in ipairs(luacats.check(types, example, class, ("[%d]"):format(i))) do
        table.insert(problems, "type: " .. p)
      end
      local found, text = rendering_problems(subject_of(example), function(subject) return table.concat(fn(subject, example), "\n") end)
      for _, p in ipairs(found) do
        table.insert(problems, ("[%d] %s\n  rendered:\n%s"):format(i, p, text))
      end
    end
    assert(#problems == 0, table.concat(problems, "\n"))
  end)
end

local names = vim.tbl_keys(commands)
table.sort(names)
for _, name in ipairs(names) do
  -- The fixture has no command field: it is the file's name.
  local examples = vim.tbl_map(function(e) return vim.tbl_extend("force", { command = name }, e) end, commands[name])
  fixture_test(
    "commands/" .. name .. ".json: types, and render.results shows every value",
    examples,
    calls[name],
    function(e) return e.result end,
    function(result, e) return (render.results[name] or error("no renderer"))(result, e.arguments) end
  )
end

names = vim.tbl_keys(kinds)
table.sort(names)
for _, name in ipairs(names) do
  fixture_test("events/" .. name .. ".json: types, and events.render shows every value", kinds[name], event_classes[name], function(ev) return ev end, function(ev) return events.render(ev) end)
end

-- prepare makes the editor hold what a request's example answers: the
-- diagnostics of agent/diagnostics' documents (set, so settled), a language
-- server answering agent/languageRequest with its result. It returns what
-- undoes it.
local prepare = {
  ["agent/diagnostics"] = function(example)
    local language = require("agent_lsp.language")
    language.setup()
    local clients = language.clients
    language.clients = function() return { { id = 99, name = "gopls" } } end -- a language server serves the documents
    local ns = vim.api.nvim_create_namespace("agent_lsp_protocol_test")
    for _, it in ipairs(example.result.items) do
      local b = vim.uri_to_bufnr(it.uri)
      vim.fn.bufload(b) -- as an editor holds a document it has diagnostics for
      vim.diagnostic.set(
        ns,
        b,
        vim.tbl_map(
          function(d)
            return {
              lnum = d.range.start.line,
              col = d.range.start.character,
              end_lnum = d.range["end"].line,
              end_col = d.range["end"].character,
              severity = d.severity,
              message = d.message,
              source = d.source,
              user_data = { lsp = d },
            }
          end,
          it.diagnostics
        )
      )
    end
    return function()
      vim.diagnostic.reset(ns)
      language.clients = clients
    end
  end,
  ["agent/languageRequest"] = function(example)
    local language = require("agent_lsp.language")
    local compat = require("agent_lsp.compat")
    local clients, supports, sync = language.clients, compat.supports, vim.lsp.buf_request_sync
    language.clients = function() return { { id = 99, name = "gopls" } } end
    compat.supports = function() return true end
    vim.lsp.buf_request_sync = function() return { [99] = { result = example.result } } end
    return function()
      language.clients, compat.supports, vim.lsp.buf_request_sync = clients, supports, sync
    end
  end,
}

names = vim.tbl_keys(requests)
table.sort(names)
for _, method in ipairs(names) do
  test("requests/" .. method .. ": types, and the handler answers the params with the result", function()
    local handler = require("agent_lsp.client").handlers[method]
    local problems = {}
    for i, example in ipairs(requests[method]) do
      local e = vim.tbl_extend("force", { method = method }, example)
      vim.list_extend(problems, luacats.check(types, e, request_classes[method], ("[%d]"):format(i)))
      -- The fixture's documents are not loaded here: nothing to write, so
      -- saved, as the server's example says.
      local undo = prepare[method] and prepare[method](example) or function() end
      local got = handler(nil, example.params, { client_id = 0 })
      undo()
      if not vim.deep_equal(got, example.result) then
        table.insert(problems, ("[%d] answered %s, not %s"):format(i, vim.inspect(got), vim.inspect(example.result)))
      end
    end
    assert(#problems == 0, table.concat(problems, "\n"))
  end)
end

test("an event type the plugin does not know is a generic line, never an error", function()
  local lines = events.render({ session = "s-1", seq = 7, type = "plan.update", steps = { "read", "edit" }, done = false, note = "two\nlines" })
  assert(#lines == 1, vim.inspect(lines))
  local want = 's-1 #7 plan.update done=false note=two lines steps=["read", "edit"]'
  assert(lines[1] == want, lines[1])
  -- A known type whose fields are missing or of another type: no error either.
  assert(events.render({ session = "s-1", seq = 8, type = "tool.end" })[1] == "s-1 #8 tool.end ? ?: ? (?)")
  lines = events.render({ session = "s-1", seq = 9, type = "message", message = "text" })
  assert(lines[1] == "s-1 #9 message message=text", lines[1])
end)

-- documented_settings reads the initializationOptions paths (e.g.
-- "permissions.allowEdit") of the settings table in docs/protocol.md, which
-- the Go tests keep equal to the server's table of settings.
local function documented_settings()
  local out, rows = {}, nil
  for _, line in ipairs(vim.fn.readfile(repo .. "/docs/protocol.md")) do
    if line == "<!-- begin: settings -->" then
      rows = 0
    elseif line == "<!-- end: settings -->" then
      break
    elseif rows then
      rows = rows + 1
      local path = rows > 2 and vim.split(line, "|", { plain = true })[4]:match("^%s*`([%w%.]+)`%s*$")
      if path then
        out[path] = true
      end
    end
  end
  assert(next(out), "no settings table in docs/protocol.md")
  return out
end

-- option_paths lists the dotted paths of the values in t (a list is a value,
-- and so is the object of a setting, such as mcpServers's servers by name).
local function option_paths(t, prefix, out, settings)
  for k, v in pairs(t) do
    if type(v) == "table" and not vim.tbl_islist(v) and not settings[prefix .. k] then
      option_paths(v, prefix .. k .. ".", out, settings)
    else
      table.insert(out, prefix .. k)
    end
  end
  return out
end

test("every initializationOptions key the plugin sends is a setting of docs/protocol.md", function()
  local settings = documented_settings()
  local config = require("agent_lsp.config")
  config.setup({
    model = "m",
    base_url = "http://m",
    api_key_env = "K",
    store = "/s.db",
    allow = { "a" },
    deny = { "d" },
    allow_edit = { ".env" },
    scrub_env = { "*_TOKEN" },
    context_tokens = 8192,
    window = 50,
    tool_output = 4096,
    read_only_subagents = true,
    mcp_servers = { docs = { command = "docs-mcp", args = { "--stdio" }, env = { K = "v" } } },
    mcp_allow = { "docs" },
  })
  local paths = option_paths(config.init_options(), "", {}, settings)
  config.setup()
  table.sort(paths)
  local unknown = vim.tbl_filter(function(p) return not settings[p] end, paths)
  assert(#paths == 15 and #unknown == 0, ("not settings: %s (of %s)"):format(table.concat(unknown, ", "), table.concat(paths, ", ")))
end)

harness.finish()
