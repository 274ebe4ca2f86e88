-- Objects forgotten without close() are released by the collector exactly
-- once, and nothing the collector frees is handed out again (Lua 5.4 runs
-- table finalisers in the reverse order of their marking, so a finaliser
-- may meet a handle whose own finaliser already freed its struct). Each
-- kind of object is made, dropped and collected in a loop, and the same
-- structs are then reused, in a child interpreter: under valgrind on Lua
-- 5.4 when valgrind is installed (any invalid read or write fails the
-- test), plainly otherwise.
local ferry = require("ferry")

local SCRIPT = [[
package.path, package.cpath = ...
local ferry = require("ferry")
local stream = ferry.stream({ type = "int32" }, function() return nil end)
for i = 1, 20 do
  -- an owned schema
  local owned = stream:get_schema()
  owned = nil
  -- a stream whose schema was fetched, no batch outstanding
  local n = 0
  local s = ferry.stream({ type = "int32" }, function()
    n = n + 1
    if n < 3 then return { type = "int32", values = { n } } end
  end)
  local view = s:schema()
  view, s = nil, nil
  -- an importer holding an array
  local importer = ferry.importer()
  local slots = ferry.array_slots()
  ferry.array{ type = "int32", values = { i } }:export(slots.array, slots.schema)
  local arr = importer:import(slots.array, slots.schema)
  if i % 2 == 0 then arr = nil end
  importer, slots = nil, nil
  -- an async consumer with its schema, and an unfinished exporter
  local consumer = ferry.async_consumer{ window = 2 }
  local exporter = ferry.async_exporter(consumer:handler(), { type = "int32" }, function()
    return { type = "int32", values = { 1 } }
  end)
  exporter:pump(0)
  local batch = consumer:poll(0)
  if batch then batch:close() end
  if i % 2 == 0 then exporter = nil end
  consumer = nil
  collectgarbage()
  -- what the pools hand out now must be sound
  local again = stream:get_schema()
  assert(again:format() == "i")
  again:release()
  local slots2 = ferry.array_slots()
  ferry.array{ type = "utf8", values = { "x" .. i } }:export(slots2.array, slots2.schema)
  local back = ferry.import(slots2.array, slots2.schema)
  assert(back:value(0) == "x" .. i)
  back:close()
end
stream:close()
collectgarbage()
collectgarbage()
io.write("ok ", ferry.live_allocations(), " ", ferry.raw.ferry_live_exports(), "\n")
]]

local function has_valgrind()
  local pipe = io.popen("command -v valgrind 2>/dev/null")
  local path = pipe:read("*a")
  pipe:close()
  return path ~= ""
end

describe("objects collected without close (" .. ferry.backend .. ")", function()
  it("are released once, and their structs are never handed out again", function()
    local lua = ferry.backend == "luajit" and "luajit" or "lua5.4"
    local wrapper = ""
    if lua == "lua5.4" and has_valgrind() then wrapper = "valgrind -q --error-exitcode=99 " end
    local script = os.tmpname()
    local file = assert(io.open(script, "w"))
    file:write(SCRIPT)
    file:close()
    local pipe = assert(io.popen(string.format("%s%s -e 'loadfile(%q)(%q, %q)' 2>&1; echo \"exit $?\"",
                                               wrapper, lua, script, package.path, package.cpath)))
    local out = pipe:read("*a")
    pipe:close()
    os.remove(script)
    assert.are.equal("ok 0 0\nexit 0\n", out)
  end)
end)
