-- The hostile producers of tests/hostile (build/lib/libferry_hostile.so, the
-- one library every binding's hostile suite loads) for the specs, the same
-- functions on both backends: LuaJIT calls the library through its FFI, Lua
-- 5.4 through the module lferry_hostile54 (spec/hostile.c).
--   count(), case(i) -> name, kind, flags, where, needle   (i from 0)
--   stream_count(), stream_case(i) -> name, at, level, code, needle
--   array(name, schema_ptr, device_array_ptr) -> errno
--   stream(schema_case, batch_case, good, stream_ptr) -> errno
--   stream_make(name, stream_ptr) -> errno
--   live(), double_releases(), calls_after_failure(), reset()
--   fd_readable(fd, timeout_ms) -> 1, 0 or -1
local ferry = require("ferry")
local build = assert(os.getenv("FERRY_BUILD_DIR"), "FERRY_BUILD_DIR (test.sh sets it)")

if ferry.backend ~= "luajit" then
  package.cpath = build .. "/lua/test/?.so;" .. package.cpath
  local lib = require("lferry_hostile54")
  lib.REFUSED, lib.FULL, lib.READER = 0, 1, 2
  return lib
end

local ffi = require("ffi")
pcall(ffi.cdef, [[
  int32_t ferry_hostile_count(void);
  const char* ferry_hostile_name(int32_t i);
  int32_t ferry_hostile_kind(int32_t i);
  int32_t ferry_hostile_flags(int32_t i);
  const char* ferry_hostile_where(int32_t i);
  const char* ferry_hostile_needle(int32_t i);
  int ferry_hostile_make(const char* name, struct ArrowDeviceArray* out, struct ArrowSchema* schema_out);
  int32_t ferry_hostile_stream_count(void);
  const char* ferry_hostile_stream_name(int32_t i);
  int32_t ferry_hostile_stream_at(int32_t i);
  int32_t ferry_hostile_stream_level(int32_t i);
  int32_t ferry_hostile_stream_code(int32_t i);
  const char* ferry_hostile_stream_needle(int32_t i);
  int ferry_hostile_stream_make(const char* name, struct ArrowDeviceArrayStream* out);
  int ferry_hostile_stream(const char* schema_case, const char* batch_case, int32_t good,
                           struct ArrowDeviceArrayStream* out);
  int64_t ferry_hostile_calls_after_failure(void);
  int64_t ferry_hostile_live(void);
  int64_t ferry_hostile_released_again(void);
  void ferry_hostile_reset(void);
  struct ferry_hostile_pollfd { int fd; short events; short revents; };
  int poll(struct ferry_hostile_pollfd* fds, unsigned long nfds, int timeout);
]])
local lib = ffi.load(build .. "/lib/libferry_hostile.so")
local POLLIN, EINTR = 1, 4

local function text(p) return ffi.string(p) end

return {
  REFUSED = 0, FULL = 1, READER = 2,
  count = function() return lib.ferry_hostile_count() end,
  case = function(i)
    local name = lib.ferry_hostile_name(i)
    if name == nil then return nil end
    return text(name), lib.ferry_hostile_kind(i), lib.ferry_hostile_flags(i),
      text(lib.ferry_hostile_where(i)), text(lib.ferry_hostile_needle(i))
  end,
  stream_count = function() return lib.ferry_hostile_stream_count() end,
  stream_case = function(i)
    local name = lib.ferry_hostile_stream_name(i)
    if name == nil then return nil end
    return text(name), lib.ferry_hostile_stream_at(i), lib.ferry_hostile_stream_level(i),
      lib.ferry_hostile_stream_code(i), text(lib.ferry_hostile_stream_needle(i))
  end,
  array = function(name, schema, array) return lib.ferry_hostile_make(name, array, schema) end,
  stream = function(schema, batch, good, out) return lib.ferry_hostile_stream(schema, batch, good, out) end,
  stream_make = function(name, out) return lib.ferry_hostile_stream_make(name, out) end,
  live = function() return tonumber(lib.ferry_hostile_live()) end,
  double_releases = function() return tonumber(lib.ferry_hostile_released_again()) end,
  calls_after_failure = function() return tonumber(lib.ferry_hostile_calls_after_failure()) end,
  reset = function() lib.ferry_hostile_reset() end,
  fd_readable = function(fd, timeout_ms)
    local p = ffi.new("struct ferry_hostile_pollfd", { fd = fd, events = POLLIN })
    local rc
    repeat
      rc = ffi.C.poll(p, 1, timeout_ms)
    until rc >= 0 or ffi.errno() ~= EINTR
    if rc < 0 then return -1 end
    return (rc > 0 and bit.band(p.revents, POLLIN) ~= 0) and 1 or 0
  end,
}
