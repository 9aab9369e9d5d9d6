-- A reader of the LuaCATS subset lua/agent_lsp/types.lua is written in, and a
-- checker of decoded JSON values against its types, for tests/protocol.lua.
-- It knows ---@class Name[: Parent], ---@field name[?] type, ---@alias Name
-- type (or one "---| type" line per member), and type expressions made of
-- string, integer, number, boolean, "literals", T[], class and alias names,
-- joined by |. Anything else is an error, so an annotation it cannot read
-- fails the test rather than passing unchecked. A "literal" may hold spaces
-- ("waiting for approval"); elsewhere a type expression ends at a space.
local M = {}

-- type_expr reads the type expression at the start of s: names, T[] and
-- "literals" (which may hold spaces) joined by |; it returns the
-- expression and the rest of s.
local function type_expr(s)
  local i, out = 1, {}
  while true do
    local piece = s:match('^"[^"]*"', i) or s:match("^[%w%._]+%[?%]?", i)
    if not piece then
      break
    end
    table.insert(out, piece)
    i = i + #piece
    if s:sub(i, i) ~= "|" then
      break
    end
    i = i + 1
  end
  return table.concat(out, "|"), s:sub(i)
end

---@class LuaCats.Field
---@field type string
---@field optional boolean

---@class LuaCats.Types
---@field classes table<string, { parent?: string, fields: table<string, LuaCats.Field> }>
---@field aliases table<string, string>

---Reads the classes and aliases of a LuaCATS file.
---@param path string
---@return LuaCats.Types
function M.read(path)
  local t = { classes = {}, aliases = {} }
  local class, alias
  for _, line in ipairs(vim.fn.readfile(path)) do
    local member = line:match("^%-%-%-|%s*(.*)$")
    member = member and type_expr(member)
    if member and alias then
      t.aliases[alias] = t.aliases[alias] == "" and member or (t.aliases[alias] .. "|" .. member)
    else
      alias = nil
      local name, parent = line:match("^%-%-%-@class%s+([%w%._]+)%s*:?%s*([%w%._]*)")
      local fname, opt, ftype, rest = line:match("^%-%-%-@field%s+([%w_]+)(%??)%s+(.*)")
      if fname then
        ftype, rest = type_expr(ftype)
      end
      local aname, atype = line:match("^%-%-%-@alias%s+([%w%._]+)%s*(.*)")
      atype = atype and (type_expr(atype))
      if name then
        class = { parent = parent ~= "" and parent or nil, fields = {} }
        t.classes[name] = class
      elseif fname then
        assert(class, "a field outside a class: " .. line)
        assert(not rest:match("^%s*|"), "a type with spaces: " .. line)
        class.fields[fname] = { type = ftype, optional = opt == "?" }
      elseif aname then
        t.aliases[aname] = atype
        alias = aname
      elseif line:match("^%-%-%-@") and line ~= "---@meta" then
        error("an annotation the reader does not know: " .. line)
      end
    end
  end
  return t
end

---The fields of a class with those it inherits (its own win).
---@param t LuaCats.Types
---@param name string
---@return table<string, LuaCats.Field>
function M.fields(t, name)
  local class = assert(t.classes[name], "no class " .. name)
  local fields = class.parent and M.fields(t, class.parent) or {}
  for k, f in pairs(class.fields) do
    fields[k] = f
  end
  return fields
end

---The members of a union type expression.
---@param expr string
---@return string[]
function M.members(expr) return vim.split(expr, "|", { plain = true }) end

local builtin = {
  string = function(v) return type(v) == "string" end,
  number = function(v) return type(v) == "number" end,
  integer = function(v) return type(v) == "number" and math.floor(v) == v end,
  boolean = function(v) return type(v) == "boolean" end,
  any = function() return true end, -- a value the contract passes through (agent/languageRequest's result)
}

local function is_object(v) return type(v) == "table" and (next(v) ~= nil and not vim.tbl_islist(v) or getmetatable(v) ~= nil) end

-- check_one checks v against one member of a union; it returns the problems.
local function check_one(t, v, expr, path)
  local literal = expr:match('^"(.*)"$')
  if literal then
    return v == literal and {} or { ("%s: %s is not %q"):format(path, vim.inspect(v), literal) }
  elseif builtin[expr] then
    return builtin[expr](v) and {} or { ("%s: %s is not %s"):format(path, vim.inspect(v), expr) }
  elseif expr:match("%[%]$") then
    if type(v) ~= "table" or not vim.tbl_islist(v) then
      return { ("%s: %s is not a list"):format(path, vim.inspect(v)) }
    end
    local problems = {}
    for i, item in ipairs(v) do
      vim.list_extend(problems, M.check(t, item, expr:sub(1, -3), ("%s[%d]"):format(path, i)))
    end
    return problems
  elseif t.aliases[expr] then
    return M.check(t, v, t.aliases[expr], path)
  elseif t.classes[expr] then
    if not is_object(v) then
      return { ("%s: %s is not an object (%s)"):format(path, vim.inspect(v), expr) }
    end
    local fields, problems = M.fields(t, expr), {}
    for k, item in pairs(v) do
      if fields[k] then
        vim.list_extend(problems, M.check(t, item, fields[k].type, path .. "." .. k))
      else
        table.insert(problems, ("%s.%s: %s has no field %s"):format(path, k, expr, k))
      end
    end
    for k, f in pairs(fields) do
      if v[k] == nil and not f.optional then
        table.insert(problems, ("%s.%s: missing (%s requires it)"):format(path, k, expr))
      end
    end
    return problems
  end
  error("a type the reader does not know: " .. expr)
end

---Checks a decoded JSON value against a type expression of t.
---@param t LuaCats.Types
---@param v any
---@param expr string
---@param path string where v is, for the messages
---@return string[] problems empty when v has the type
function M.check(t, v, expr, path)
  local members, problems = M.members(expr), {}
  for _, m in ipairs(members) do
    local found = check_one(t, v, m, path)
    if #found == 0 then
      return {}
    end
    vim.list_extend(problems, found)
  end
  if #members > 1 then
    return { ("%s: matches none of %s (%s)"):format(path, expr, table.concat(problems, "; ")) }
  end
  return problems
end

return M
