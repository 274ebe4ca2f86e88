-- ferry/streams.lua, part of the module `ferry`: consumer streams (ferry.DeviceStream):
-- ferry.import_stream, next, batches, export. ferry/init.lua loads the parts in order; what
-- they share goes through the table ferry/init.lua puts at package.loaded["ferry.internal"]
-- while they load.
local I = require("ferry.internal")
local ferry, raw, backend = I.ferry, I.raw, I.backend
local CPU, dispose_reused, EINVAL, kind_of = I.CPU, I.dispose_reused, I.EINVAL, I.kind_of
local LEAK_REPORT, leak_track, leak_untrack = I.LEAK_REPORT, I.leak_track, I.leak_untrack
local new_device_array, new_reused_array = I.new_device_array, I.new_reused_array
local owned_schema, raise, Schema = I.owned_schema, I.raise, I.Schema
local schema_view, unref_schema = I.schema_view, I.unref_schema
local VALIDATE_DEFAULT, validation_level = I.VALIDATE_DEFAULT, I.validation_level

-- ---- streams ------------------------------------------------------------------------

-- A DeviceStream owns an ArrowDeviceArrayStream. Its schema is fetched once
-- and shared with every batch (`_users` counts the stream and its live
-- batches), and prepared once, so each batch's validation skips the
-- schema's walk.
local DeviceStream = {}
DeviceStream.__index = DeviceStream
ferry.DeviceStream = DeviceStream

local function stream_ptr(self, where)
  if self._released then raise(where or "ferry.DeviceStream", EINVAL, "stream already released") end
  return self._ptr
end

local function new_stream(owner, ptr, opts, made_by)
  local level = VALIDATE_DEFAULT
  if opts ~= nil then level = validation_level(opts.validate) end
  local stream = setmetatable({ _owner = owner, _ptr = ptr, _schema = false, _prepared = false,
                                _level = level, _released = false, _error = false,
                                _ended = false }, DeviceStream)
  if LEAK_REPORT then
    leak_track(stream, string.format("DeviceStream from %s (on %s) never closed", made_by,
               raw.ferry_device_type_name(raw.ferry_array_stream_device_type(ptr))))
  end
  return stream
end

-- After an error the stream is finished (docs/bindings.md, "After an error,
-- the same error"): the producer's get_next and get_schema are never called
-- again, and every later read raises this same ferry.Error (code, message,
-- and where it first failed). A batch refused by validation counts: the
-- producer's state after it is unknown. The end of the stream is kept too.
local function stream_failed(self, where, code, message)
  local err = ferry.error(where, code, message)
  self._error = err
  error(err, 3)
end

local function check_stream_error(self)
  local err = self._error
  if err then error(err, 3) end
end

--- ferry.import_stream(ptr, opts) -> DeviceStream: takes ownership of a
--- C-allocated stream (moved). Every batch is validated against the
--- stream's schema (opts.validate: "default" (the default), "full", false).
function ferry.import_stream(stream_in, opts)
  local owner, ptr = backend.handle("stream")
  local code = raw.ferry_array_stream_move(stream_in, ptr)
  if code ~= 0 then
    backend.handle_free(owner)
    raise("ferry.import_stream", code, "the stream is released or NULL")
  end
  return new_stream(owner, ptr, opts, "ferry.import_stream")
end

function DeviceStream:pointer() return stream_ptr(self) end
function DeviceStream:device_type()
  return raw.ferry_device_type_name(raw.ferry_array_stream_device_type(stream_ptr(self)))
end

-- get_schema into a new shared Schema with one holder, or raise.
local function fetch_schema(self, where)
  local ptr = stream_ptr(self, where)
  check_stream_error(self)
  local schema = owned_schema()
  local code, message = raw.ferry_array_stream_get_schema(ptr, schema._ptr)
  if code ~= 0 then
    schema:release()
    stream_failed(self, where, code, message)
  end
  return schema
end

--- get_schema() -> a new Schema owned by the caller (release() it, or let
--- it be collected).
function DeviceStream:get_schema() return fetch_schema(self, "ferry.get_schema") end

-- The shared schema of the batches (fetched and prepared once).
local function batch_schema(self)
  local schema = self._schema
  if schema then return schema end
  schema = fetch_schema(self, "ferry.get_schema")
  schema._mine = false -- held by the stream: released with it and its batches
  setmetatable(schema, Schema)
  if self._level >= 0 then
    local prepared, code, message = backend.prepare(schema._ptr)
    if not prepared then
      unref_schema(schema)
      stream_failed(self, "ferry.get_schema", code, message)
    end
    self._prepared = prepared
  end
  schema._kind = kind_of(schema:format(), raw.ferry_schema_dictionary(schema._ptr) ~= nil)
  self._schema = schema
  return schema
end

--- schema() -> a view of the schema every batch is described by (fetched
--- once; valid while the stream or one of its batches is).
function DeviceStream:schema() return schema_view(batch_schema(self)._ptr, batch_schema(self)) end

local get_next_raw, get_next_on_raw = backend.get_next, backend.get_next_on
local validate_batch = backend.validate_batch

-- Gives a batch (`what`: "a stream batch", "an async batch") a hold on its
-- stream's shared schema and registers it for the leak report; returns it.
local function hold_batch_schema(arr, schema, what)
  schema._users = schema._users + 1
  arr._shared = schema
  if LEAK_REPORT then
    leak_track(arr, string.format("DeviceArray of %s (format '%s', length %s) never closed", what,
                                  tostring(schema:format()), tostring(arr:length())))
  end
  return arr
end

-- Pulls one batch into a new DeviceArray: plain get_next, or with `on` the
-- consumer-stream handoff of ferry_array_stream_get_next_on; validates it.
local function pull(self, on, consumer_stream)
  local ptr = stream_ptr(self, "ferry.get_next")
  if self._error then error(self._error, 2) end
  if self._ended then return nil end
  local schema = self._schema or batch_schema(self)
  local arr = new_device_array(false, schema._kind)
  local code, message
  if on then
    code, message = get_next_on_raw(ptr, arr._ptr, consumer_stream)
  else
    code, message = get_next_raw(ptr, arr._ptr)
  end
  local released, device_type, device_id, pending
  if code == 0 then
    code, message, released, device_type, device_id, pending =
      validate_batch(self._prepared or nil, arr._ptr, self._level)
  end
  if code ~= 0 or released then
    arr:release()
    if code ~= 0 then stream_failed(self, "ferry.get_next", code, message) end
    self._ended = true
    return nil
  end
  if device_type == CPU and not pending then
    arr._host_ok = true
  else
    arr._device_type, arr._device_id = device_type, device_id
  end
  return hold_batch_schema(arr, schema, "a stream batch")
end

--- next() -> DeviceArray, or nil at the end of the stream.
function DeviceStream:next() return pull(self, false, nil) end

--- next_on(consumer_stream) -> DeviceArray, or nil at the end: the
--- consumer-stream handoff per batch. The batch is handed to
--- `consumer_stream` (a native stream of the batch's device, as from
--- Device:stream(): the CUstream/hipStream_t value itself), which is made to
--- wait on the batch's sync event without blocking the host; with
--- consumer_stream nil the host waits.
function DeviceStream:next_on(consumer_stream) return pull(self, true, consumer_stream) end

-- Iterator of `batches()` without reuse: a new DeviceArray per batch.
local function pull_step(state)
  return pull(state.stream, state.on, state.consumer)
end

-- The 4th value of the generic for (Lua 5.4 closes it when the loop ends,
-- `break` included): disposes the loop's reused batch object.
local LoopCloser = {}
LoopCloser.__close = function(closer) dispose_reused(closer.batch) end

--- batches(opts) -> iterator for `for batch in stream:batches() do ... end`.
--- opts.reuse: one DeviceArray is refilled for every batch (no object per
---   batch; each batch is released when the loop advances, or by
---   batch:release() in the body, so do not keep it).
--- opts.consumer_stream: every batch is handed to this device stream as by
---   next_on(consumer_stream); opts.host_wait = true: the host waits on
---   every batch's event instead.
function DeviceStream:batches(opts)
  local on, consumer_stream = false, nil
  if opts then
    if opts.consumer_stream ~= nil then on, consumer_stream = true, opts.consumer_stream end
    if opts.host_wait then on = true end
  end
  stream_ptr(self, "ferry.get_next")
  check_stream_error(self)
  if not (opts and opts.reuse) then
    return pull_step, { stream = self, on = on, consumer = consumer_stream }, nil
  end
  if self._ended then return function() return nil end, nil, nil end
  local schema = batch_schema(self)
  schema._users = schema._users + 1
  local arr = new_reused_array(schema, schema._kind, true)
  local closer = setmetatable({ batch = arr }, LoopCloser)
  -- finish(code, message) ends the loop; finish() on every step after it
  -- raises the stream's error again (the loop never pulls after an error).
  local function finish(code, message)
    if code == nil then
      check_stream_error(self)
      return
    end
    dispose_reused(arr)
    if code ~= 0 then
      if self._released then raise("ferry.get_next", code, message) end
      stream_failed(self, "ferry.get_next", code, message)
    end
    self._ended = true
  end
  local f, s = backend.batch_iterator(self._owner, arr._owner, arr, finish, consumer_stream,
                                      on and 1 or 0, self._prepared or nil)
  return f, s, nil, closer
end

--- release(): releases the stream exactly once (also when collected, and by
--- `local s <close>` on 5.4). Batches may outlive it.
function DeviceStream:release()
  if self._released then return end
  self._released = true
  if LEAK_REPORT then leak_untrack(self) end
  -- Batches may outlive the stream and share its schema: the last holder
  -- releases it.
  local schema = self._schema
  self._schema = false
  if schema then unref_schema(schema) end
  if self._prepared then
    backend.prepared_free(self._prepared)
    self._prepared = false
  end
  backend.handle_free(self._owner)
  self._owner = nil
end
--- close(): the same as release().
DeviceStream.close = DeviceStream.release
DeviceStream.__close = DeviceStream.release
-- Collected without close() (Lua 5.4; LuaJIT's handle finalisers do the
-- same): released, without touching the shared schema's struct (see
-- unref_schema's `collected`), and still reported (leak report on).
DeviceStream.__gc = function(self)
  self._leak = nil
  local schema = self._schema
  if schema and not self._released then
    self._schema = false
    unref_schema(schema, true)
  end
  self:release()
end

--- export(out): moves the stream into a consumer-allocated struct.
function DeviceStream:export(out)
  local code = raw.ferry_array_stream_move(stream_ptr(self, "ferry.DeviceStream.export"), out)
  if code ~= 0 then raise("ferry.DeviceStream.export", code, "destination not released") end
  self:release()
end

-- For the parts loaded after this one.
I.hold_batch_schema, I.new_stream = hold_batch_schema, new_stream
