-- Every difference between the Neovim releases the plugin supports (0.7 to
-- 0.11 and later) is bridged here, so that no other module tests versions or
-- probes for APIs. Newer APIs are preferred where they exist, which keeps
-- recent releases free of deprecation warnings.
local M = {}

local has_0_8 = vim.fn.has("nvim-0.8") == 1 -- autocommand data, 'winbar'
local has_0_11 = vim.fn.has("nvim-0.11") == 1 -- client:method(), str_utfindex(s, encoding), start{attach=false}, vim.lsp.config/enable
local has_0_12 = vim.fn.has("nvim-0.12") == 1 -- document versions are b:changedtick (vim.lsp.util.buf_versions deprecated)

---libuv bindings: vim.uv from 0.10, vim.loop before.
M.uv = vim.uv or vim.loop

---Calls a method of an LSP client: client:method(...) from 0.11, whose client
---is an object, client.method(...) before, whose client holds closures.
---@param client table a vim.lsp client
---@param method string e.g. "request", "cancel_request", "is_stopped"
---@param ... any the method's arguments
---@return any ...
function M.call(client, method, ...)
  if has_0_11 then
    return client[method](client, ...)
  end
  return client[method](...)
end

---The running clients called name: vim.lsp.get_clients from 0.10,
---get_active_clients before.
---@param name string
---@return table[] clients
function M.get_clients(name)
  local all = vim.lsp.get_clients and vim.lsp.get_clients() or vim.lsp.get_active_clients()
  local list = {}
  for _, client in pairs(all) do
    if client.name == name and not M.call(client, "is_stopped") then
      table.insert(list, client)
    end
  end
  return list
end

---Every running client: vim.lsp.get_clients from 0.10, get_active_clients before.
---@return table[] clients
function M.all_clients()
  local all = vim.lsp.get_clients and vim.lsp.get_clients() or vim.lsp.get_active_clients()
  local list = {}
  for _, client in pairs(all) do
    if not M.call(client, "is_stopped") then
      table.insert(list, client)
    end
  end
  return list
end

---Whether client answers method: client:supports_method(method) from 0.11,
---client.supports_method(method) before.
---@param client table
---@param method string
---@return boolean
function M.supports(client, method) return M.call(client, "supports_method", method) and true or false end

---The autocommand event of a change of diagnostics, and its pattern:
---DiagnosticChanged where it exists (0.7 and later), else 0.6's User
---DiagnosticsChanged.
---@return string event
---@return string|nil pattern
function M.diagnostic_event()
  if vim.fn.exists("##DiagnosticChanged") == 1 then
    return "DiagnosticChanged", nil
  end
  return "User", "DiagnosticsChanged"
end

---Starts the one client of the plugin, or reuses the running one, and
---attaches it to bufnr (nil: to no buffer). known.id is the client's id, kept
---by the caller: 0.7 lists a client only once it is initialized, and a second
---buffer may open before that. Without a known client, vim.lsp.start (0.8+)
---reuses a running client of config's name (reuse_client), e.g. one started
---before setup(); before 0.11 vim.lsp.start always attaches, so a start for
---no buffer goes through start_client there, and start{attach = false} from
---0.11.
---@param config table vim.lsp client config (name, cmd, root_dir, ...)
---@param bufnr integer|nil
---@param known { id?: integer }
---@return integer|nil client_id
function M.start(config, bufnr, known)
  local id = known.id
  local running = id and vim.lsp.get_client_by_id(id)
  if running and M.call(running, "is_stopped") then
    running = nil
  end
  if running then
    if bufnr then
      vim.lsp.buf_attach_client(bufnr, id)
    end
  elseif bufnr and vim.lsp.start then
    id = vim.lsp.start(config, { bufnr = bufnr, reuse_client = function(c, conf) return c.name == conf.name end })
  else
    if has_0_11 then
      -- reuse_client: vim.lsp.enable may have started the client already.
      id = vim.lsp.start(config, { attach = false, reuse_client = config.reuse_client })
    else
      id = vim.lsp.start_client(config)
    end
    if id and bufnr then
      vim.lsp.buf_attach_client(bufnr, id)
    end
  end
  known.id = id
  return id
end

---Registers config as the LSP config called name with vim.lsp.config from
---0.11, so that vim.lsp.enable(name) and :checkhealth vim.lsp know it (the
---config's reuse_client keeps one client); nothing before 0.11.
---@param name string
---@param make_config fun(): table the config, made only where it is registered
---@return boolean registered
function M.register(name, make_config)
  if has_0_11 and vim.lsp.config and vim.lsp.enable then
    vim.lsp.config(name, make_config())
    return true
  end
  return false
end

-- enabled holds the names this module enabled with vim.lsp.enable.
local enabled = {}

---Lets Neovim attach the client called name from 0.11: registers its config
---(M.register) and enables it with vim.lsp.enable, whose FileType
---autocommand asks the config's root_dir(bufnr, on_dir) for each buffer of
---a file and starts or reuses (the config's reuse_client) the client. With
---on false, a config this module enabled is disabled again (vim.lsp.enable
---(name, false), which stops its clients). Before 0.11 it does nothing and
---returns false: the caller attaches buffers with its own autocommand.
---@param name string
---@param make_config fun(): table the config, with root_dir a function
---@param on boolean
---@return boolean handled true where vim.lsp.enable attaches buffers
function M.enable(name, make_config, on)
  if not M.register(name, make_config) then
    return false
  end
  if on then
    vim.lsp.enable(name)
    enabled[name] = true
  elseif enabled[name] then
    vim.lsp.enable(name, false)
    enabled[name] = nil
  end
  return true
end

---The length of line in a position encoding, i.e. the character of its end:
---vim.str_utfindex takes the encoding from 0.11 and returns the UTF-32 and
---UTF-16 lengths together before.
---@param line string
---@param encoding? "utf-8"|"utf-16"|"utf-32" default "utf-16"
---@return integer
function M.line_width(line, encoding)
  encoding = encoding or "utf-16"
  if encoding == "utf-8" then
    return #line
  end
  if has_0_11 then
    return vim.str_utfindex(line, encoding)
  end
  local utf32, utf16 = vim.str_utfindex(line)
  return encoding == "utf-32" and utf32 or utf16
end

---Fires the User autocommand pattern. Its handlers get data in the event from
---0.8; 0.7's nvim_exec_autocmds rejects the key, so it is left out there.
---A failing handler does not fail the caller (an LSP handler, typically).
---@param pattern string
---@param data? any
function M.fire(pattern, data) pcall(vim.api.nvim_exec_autocmds, "User", { pattern = pattern, modeline = false, data = has_0_8 and data or nil }) end

---Whether bufnr still holds the text of version, the document version a
---server computed an edit against, and the buffer's version as the LSP
---client knows it (nil: no client tracks the buffer, e.g. it is not loaded).
---Up to 0.11 that is vim.lsp.util.buf_versions[bufnr]: 0 at didOpen, then the
---changedtick of each change, as didChange sends it. 0.12 deprecates that
---table for b:changedtick, which a write raises too, without a didChange: so
---there an unmodified buffer one tick past version still holds its text, as
---Neovim's own check of an edit's version allows.
---@param bufnr integer
---@param version integer
---@return boolean current
---@return integer|nil at
function M.at_version(bufnr, version)
  if not vim.api.nvim_buf_is_loaded(bufnr) then
    return false, nil
  end
  if has_0_12 then
    local tick = vim.b[bufnr].changedtick
    return tick == version or (tick == version + 1 and not vim.bo[bufnr].modified), tick
  end
  local at = vim.lsp.util.buf_versions[bufnr]
  return at == version, at
end

---Shows text in the winbar of window win from 0.8, which has one; false
---before (the caller shows it elsewhere).
---@param win integer
---@param text string
---@return boolean shown
function M.winbar(win, text)
  if has_0_8 then
    vim.wo[win].winbar = text:gsub("%%", "%%%%")
  end
  return has_0_8
end

---The reporter of :checkhealth: vim.health.start/ok/... from 0.10,
---vim.health.report_* on 0.8 and 0.9, the health module's report_* on 0.7.
---@return { start: fun(s: string), ok: fun(s: string), info: fun(s: string), warn: fun(s: string, advice?: string[]), error: fun(s: string, advice?: string[]) }
function M.health()
  local h = vim.health
  if h and h.start then
    return { start = h.start, ok = h.ok, info = h.info, warn = h.warn, error = h.error }
  end
  h = (h and h.report_start) and h or require("health")
  return { start = h.report_start, ok = h.report_ok, info = h.report_info, warn = h.report_warn, error = h.report_error }
end

---Whether this release runs the handlers of server requests in a coroutine
---(0.10 and later as far as the plugin relies on it; 0.7 never does): the
---review waits for its mappings there, and reads its keys in a prompt before.
---@return boolean
function M.requests_in_coroutine() return vim.fn.has("nvim-0.10") == 1 end

---True when the caller may yield: newer releases run server-request handlers
---in a coroutine, so the review can wait for its mappings; 0.7 runs them on
---the main thread, where the keys must be read while the handler waits.
---@return boolean
function M.can_yield() return coroutine.running() ~= nil and coroutine.isyieldable ~= nil and coroutine.isyieldable() end

return M
