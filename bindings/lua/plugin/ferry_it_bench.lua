-- The benchmark entry points of core/harness/ferry_it_bench.h, called by
-- the C shim ferry_it_lua.c (lua_pcall, like the plugin's other entry
-- points) and written the way a Lua user of the binding writes them: a Lua
-- string made once per length is the exported buffer (zero-copy: the export
-- anchors the string, and the consumer's release only drops that reference);
-- ferry.export_array and ferry.export_stream_to with an iterator function to
-- produce; ferry.import and `for batch in stream:batches()` to consume.
-- Every function raises a ferry.Error (code + message) on failure.
local ferry = require("ferry")

local M = {}
local EINVAL, ENOMEM = ferry.errno.EINVAL, ferry.errno.ENOMEM
local MAX_LENGTH = 1 << 28 -- 1 GiB of int32

local function fail(code, fmt, ...)
  error(ferry.error("ferry_it_bench", code, string.format(fmt, ...)), 0)
end

-- length -> the array's node, whose values buffer is a string of `length`
-- int32 values, each holding `length`.
local nodes = {}

local function node_of(length)
  local node = nodes[length]
  if node then return node end
  if math.type(length) ~= "integer" or length < 0 or length > MAX_LENGTH then
    fail(EINVAL, "length %s is outside 0..%d", tostring(length), MAX_LENGTH)
  end
  local ok, values = pcall(string.rep, string.pack("=i4", length), length)
  if not ok then fail(ENOMEM, "cannot allocate %d int32 values: %s", length, tostring(values)) end
  node = { format = "i", name = "values", length = length, buffers = { false, values, n = 2 } }
  nodes[length] = node
  return node
end

-- Length and element 0 of a consumed array or batch, which is released here.
local function read_first_and_release(array)
  local length = array:length()
  local first = length > 0 and array:value(0) or nil
  array:release()
  if length > 0 and first ~= length then
    fail(EINVAL, "element 0 is %s, expected the length %d", tostring(first), length)
  end
end

function M.noop(x) return x + 1 end

function M.export_array(length, schema_out, array_out)
  ferry.export_array(node_of(length), array_out, schema_out)
end

function M.consume_array(schema, array)
  read_first_and_release(ferry.import(array, schema))
end

function M.export_stream(length, batches, out)
  local node = node_of(length)
  if math.type(batches) ~= "integer" or batches < 0 then
    fail(EINVAL, "batches %s is negative", tostring(batches))
  end
  local remaining = batches
  ferry.export_stream_to(out, node, function()
    if remaining == 0 then return nil end
    remaining = remaining - 1
    return node
  end)
end

function M.consume_stream(stream_ptr)
  local stream = ferry.import_stream(stream_ptr)
  local ok, err = pcall(function()
    for batch in stream:batches() do read_first_and_release(batch) end
  end)
  stream:release()
  if not ok then error(err, 0) end
end

return M
