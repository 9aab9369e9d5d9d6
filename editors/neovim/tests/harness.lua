-- The harness of the headless tests: test() runs a case and logs it, finish()
-- prints the tally and quits Neovim with the verdict as its exit code.
local M = {}

local failures, passed = {}, 0

---@param msg string
function M.log(msg) io.stderr:write(msg .. "\n") end

---Runs fn as the test case name; an error fails it.
---@param name string
---@param fn fun()
function M.test(name, fn)
  local start = vim.loop.hrtime()
  local ok, err = xpcall(fn, debug.traceback)
  local took = ("(%.1f s)"):format((vim.loop.hrtime() - start) / 1e9)
  if ok then
    passed = passed + 1
    M.log("ok   " .. name .. " " .. took)
  else
    table.insert(failures, name)
    M.log("FAIL " .. name .. " " .. took .. "\n" .. tostring(err))
  end
end

function M.finish()
  M.log(("%d passed, %d failed"):format(passed, #failures))
  vim.cmd(#failures == 0 and "qall!" or "cquit! 1")
end

return M
