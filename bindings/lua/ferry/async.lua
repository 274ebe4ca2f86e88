-- ferry/async.lua, part of the module `ferry`: async device streams (the Async Device Stream
-- Interface): ferry.async_consumer, ferry.async_exporter. ferry/init.lua loads the parts in
-- order; what they share goes through the table ferry/init.lua puts at
-- package.loaded["ferry.internal"] while they load.
local I = require("ferry.internal")
local ferry, raw, backend = I.ferry, I.raw, I.backend
local Array, CPU, DeviceArray, EINVAL = I.Array, I.CPU, I.DeviceArray, I.EINVAL
local ENOMEM, errno, hold_batch_schema = I.ENOMEM, I.errno, I.hold_batch_schema
local kind_of, LEAK_REPORT, leak_track = I.kind_of, I.LEAK_REPORT, I.leak_track
local leak_untrack, new_device_array = I.leak_untrack, I.new_device_array
local owned_schema, raise, resolve_device = I.owned_schema, I.raise, I.resolve_device
local ReusedArray, Schema, schema_view = I.ReusedArray, I.Schema, I.schema_view
local unref_schema, validation_level = I.unref_schema, I.validation_level

-- ---- async device streams (the Async Device Stream Interface) ------------------------

-- The core does the protocol (docs/bindings.md, "Async device streams"): a
-- FerryAsyncConsumer queues what a producer pushes, on the producer's
-- threads, in C; a FerryAsyncSender serializes a producer's calls. Lua only
-- takes batches from the queue and feeds the sender, always on the Lua
-- thread, so no callback ever enters Lua. Where Lua would wait, a coroutine
-- that can yield yields instead (coroutine.yield(object)), so one Lua
-- thread can run a consumer and a producer, or an event loop can wait on
-- the consumer's fd(); elsewhere the wait blocks in C.
local ETIMEDOUT = errno.ETIMEDOUT
local isyieldable = coroutine.isyieldable or function() return false end

-- Handlers this module allocated and handed to producers that have not
-- released them yet: their memory must outlive the consumer object, so it
-- is freed by a later sweep once the producer released it.
local pending_handlers = {}
local function sweep_handlers()
  for handler in pairs(pending_handlers) do
    if raw.ferry_async_handler_is_released(handler) == 1 then
      pending_handlers[handler] = nil
      raw.ferry_async_handler_free(handler)
    end
  end
end

-- Frees what a consumer holds in C (once): the core consumer (which cancels
-- a running stream; its memory goes when the producer releases) and, when
-- released already, the handler (else it waits in pending_handlers).
local function free_consumer_state(state)
  if state.freed then return end
  state.freed = true
  raw.ferry_async_consumer_free(state.consumer)
  if raw.ferry_async_handler_is_released(state.handler) == 1 then
    raw.ferry_async_handler_free(state.handler)
  else
    pending_handlers[state.handler] = true
  end
end

local AsyncConsumer = {}
AsyncConsumer.__index = AsyncConsumer
ferry.AsyncConsumer = AsyncConsumer

--- ferry.async_consumer(opts) -> AsyncConsumer: a consumer of an async
--- device stream. Hand consumer:handler() (a struct
--- ArrowAsyncDeviceStreamHandler*) to any producer, in any runtime; its
--- callbacks may come from any thread and are queued in C. opts.window: at
--- most this many batches requested ahead (default 4); opts.validate as for
--- ferry.import (every batch is validated against the stream's schema).
function ferry.async_consumer(opts)
  opts = opts or {}
  local window = opts.window or 4
  if type(window) ~= "number" or window < 1 or window % 1 ~= 0 then
    raise("ferry.async_consumer", EINVAL, "window must be an integer >= 1, got " .. tostring(window))
  end
  local level = validation_level(opts.validate)
  sweep_handlers()
  local handler = raw.ferry_async_handler_new()
  if handler == nil then raise("ferry.async_consumer", ENOMEM, "cannot allocate a handler") end
  local code, consumer, message = raw.ferry_async_consumer_create(window, level, handler)
  if code ~= 0 then
    raw.ferry_async_handler_free(handler)
    raise("ferry.async_consumer", code, message)
  end
  local state = { consumer = consumer, handler = handler, freed = false }
  local self = setmetatable({ _state = state, _schema = false, _error = false, _ended = false,
                              _closed = false }, AsyncConsumer)
  -- LuaJIT has no __gc on tables: an anchor frees the C side when collected
  -- (its finaliser holds only `state`, never the object).
  self._anchor = backend.gc_anchor(handler, function() free_consumer_state(state) end) or false
  if LEAK_REPORT then leak_track(self, "AsyncConsumer from ferry.async_consumer never closed") end
  return self
end

local function live_consumer(self, where)
  if self._closed then raise(where, EINVAL, "async consumer already closed") end
  return self._state.consumer
end

--- handler() -> the struct ArrowAsyncDeviceStreamHandler* to hand to a
--- producer (it stays valid until that producer releases it, even after
--- close()).
function AsyncConsumer:handler()
  live_consumer(self, "ferry.AsyncConsumer.handler")
  return self._state.handler
end

--- fd() -> a file descriptor readable exactly while poll() has something
--- (a batch, the end, an error) to return: for event loops (poll it only;
--- never read or close it). -1 when the platform gives none.
function AsyncConsumer:fd() return raw.ferry_async_consumer_fd(live_consumer(self, "ferry.AsyncConsumer.fd")) end

--- cancel(): asks the producer to stop (idempotent); later reads raise ECANCELED.
function AsyncConsumer:cancel() raw.ferry_async_consumer_cancel(live_consumer(self, "ferry.AsyncConsumer.cancel")) end

-- As stream_failed: the first error is kept and raised on every later read.
local function consumer_failed(self, code, message)
  local err = ferry.error("ferry.AsyncConsumer.next", code, message)
  self._error = err
  error(err, 3)
end

--- poll(timeout_ms) -> DeviceArray, false when nothing arrived within
--- timeout_ms (default 0: do not wait; negative: wait as long as it takes),
--- or nil at the end of the stream. A failure (the producer's on_error, a
--- batch refused by validation, a protocol violation, cancel) raises, and
--- the same error is raised on every later call.
function AsyncConsumer:poll(timeout_ms)
  local consumer = live_consumer(self, "ferry.AsyncConsumer.next")
  if self._error then error(self._error, 2) end
  if self._ended then return nil end
  timeout_ms = timeout_ms or 0
  local schema = self._schema
  if not schema then
    schema = owned_schema()
    local code, message = raw.ferry_async_consumer_get_schema(consumer, schema._ptr, timeout_ms)
    if code ~= 0 then
      schema:release()
      if code == ETIMEDOUT then return false end
      consumer_failed(self, code, message)
    end
    schema._mine = false -- held by the consumer and its batches
    setmetatable(schema, Schema)
    schema._kind = kind_of(schema:format(), raw.ferry_schema_dictionary(schema._ptr) ~= nil)
    self._schema = schema
  end
  local arr = new_device_array(false, schema._kind)
  local code, message = raw.ferry_async_consumer_next(consumer, arr._ptr, timeout_ms)
  if code ~= 0 or raw.ferry_device_array_is_released(arr._ptr) == 1 then
    arr:release()
    if code == ETIMEDOUT then return false end
    if code ~= 0 then consumer_failed(self, code, message) end
    self._ended = true
    return nil
  end
  -- validated by the core consumer, at the level it was made with
  local device_type = raw.ferry_device_array_device_type(arr._ptr)
  if device_type == CPU and raw.ferry_device_array_sync_event(arr._ptr) == nil then
    arr._host_ok = true
  else
    arr._device_type, arr._device_id = device_type, raw.ferry_device_array_device_id(arr._ptr)
  end
  return hold_batch_schema(arr, schema, "an async batch")
end

--- next() -> DeviceArray, or nil at the end. When none is ready: inside a
--- coroutine that can yield, yields (coroutine.yield(consumer)) and tries
--- again when resumed; elsewhere blocks in C until one comes.
function AsyncConsumer:next()
  while true do
    if not isyieldable() then return self:poll(-1) end
    local arr = self:poll(0)
    if arr ~= false then return arr end
    coroutine.yield(self)
  end
end

--- batches() -> iterator for `for batch in consumer:batches() do ... end`
--- (next() per step: coroutine-friendly as next()).
function AsyncConsumer:batches()
  live_consumer(self, "ferry.AsyncConsumer.next")
  return AsyncConsumer.next, self, nil
end

--- wait_released(timeout_ms) -> true once the producer has released the
--- handler (its last call), false when it has not within timeout_ms
--- (negative: wait as long as it takes).
function AsyncConsumer:wait_released(timeout_ms)
  local consumer = live_consumer(self, "ferry.AsyncConsumer.wait_released")
  return raw.ferry_async_consumer_wait_released(consumer, timeout_ms or -1) == 0
end

--- schema() -> a view of the stream's schema once it came (nil before).
function AsyncConsumer:schema()
  live_consumer(self, "ferry.AsyncConsumer.schema")
  local schema = self._schema
  if not schema then return nil end
  return schema_view(schema._ptr, schema)
end

--- close(): gives the consumer up (cancelling a running stream); batches
--- already taken stay valid. Idempotent; later calls raise "already closed".
function AsyncConsumer:close()
  if self._closed then return end
  self._closed = true
  if LEAK_REPORT then leak_untrack(self) end
  local anchor = self._anchor
  if anchor then backend.gc_anchor_drop(anchor) end
  free_consumer_state(self._state)
  local schema = self._schema
  self._schema = false
  if schema then unref_schema(schema) end
end
AsyncConsumer.release = AsyncConsumer.close
AsyncConsumer.__close = AsyncConsumer.close
AsyncConsumer.__gc = function(self) -- 5.4 (LuaJIT: the anchor); still reported as a leak
  self._leak = nil
  local schema = self._schema
  if schema and not self._closed then -- as DeviceStream.__gc
    self._schema = false
    unref_schema(schema, true)
  end
  self:close()
end

-- ---- the producer side ----

local AsyncExporter = {}
AsyncExporter.__index = AsyncExporter
ferry.AsyncExporter = AsyncExporter

-- Ends a sender once: the end marker (code 0) or on_error(code, message), then
-- the handler's release.
local function finish_sender(state, code, message)
  if state.finished then return end
  state.finished = true
  raw.ferry_async_sender_finish(state.sender, code, message)
  local pending = state.pending
  if pending then
    state.pending = false
    backend.handle_free(pending.owner)
  end
end

--- ferry.async_exporter(handler_ptr, schema, producer, opts) -> AsyncExporter:
--- pushes batches to a consumer's struct ArrowAsyncDeviceStreamHandler*
--- (another runtime's, or ferry.async_consumer():handler()), at the pace the
--- consumer requests. `schema` is a spec or node; `producer` is a function
--- called for each batch, or a coroutine resumed for each (yielding it),
--- returning a spec, node or DeviceArray, nil at the end, or nil, message[,
--- code] to fail the stream (a raised error fails it with EIO); opts as for
--- ferry.export_stream_to (device=...). The handler is the exporter's from
--- here on: it is released when the stream ends, fails or is cancelled, and
--- when the exporter is closed or collected first (on_error ECANCELED).
function ferry.async_exporter(handler, schema, producer, opts)
  local where = "ferry.async_exporter"
  if handler == nil then raise(where, EINVAL, "handler must not be nil") end
  opts = opts or {}
  if type(producer) == "thread" then
    local co = producer
    producer = function()
      if coroutine.status(co) == "dead" then return nil end
      local ok, item, message, code = coroutine.resume(co)
      if not ok then error(item, 0) end
      return item, message, code
    end
  elseif type(producer) ~= "function" then
    raise(where, EINVAL, "producer must be a function or a coroutine")
  end
  local device, cpu = resolve_device(opts)
  local code, sender, message = raw.ferry_async_sender_create(handler, cpu and CPU or device.type, nil)
  if code ~= 0 then raise(where, code, message) end -- the core failed and released the handler
  local state = { sender = sender, finished = false, pending = false }
  local self = setmetatable({ _state = state, _producer = producer, _result = false,
                              _opts = { device = opts.device, device_id = opts.device_id,
                                        stream = opts.stream, sync = opts.sync } }, AsyncExporter)
  self._anchor = backend.gc_anchor(sender, function()
    finish_sender(state, errno.ECANCELED, "the Lua exporter was collected before the end")
  end) or false
  -- the schema, at once (the consumer requests batches from inside on_schema)
  local owner, ptr = backend.handle("schema")
  local ok, err = pcall(ferry.export_schema_to, schema, ptr)
  if not ok then
    backend.handle_free(owner)
    finish_sender(state, EINVAL, tostring(type(err) == "table" and err.message or err))
    error(err, 2)
  end
  code, message = raw.ferry_async_sender_send_schema(sender, ptr)
  backend.handle_free(owner)
  if code ~= 0 then
    self._result = ferry.error(where, code, message)
    finish_sender(state, 0, nil) -- refused or cancelled: the core sends nothing more
  end
  return self
end

-- The next batch of the producer, exported into a pair the exporter holds
-- (state.pending) until the sender takes it; false at the end (the stream
-- is finished here, with the producer's error if it failed).
local function produce(self)
  local state = self._state
  local ok, item, message, code = pcall(self._producer)
  if not ok then
    local text = type(item) == "table" and item.message or tostring(item)
    finish_sender(state, type(item) == "table" and item.code or errno.EIO, text)
    self._result = ferry.error("ferry.AsyncExporter.producer", errno.EIO, text)
    return false
  end
  if item == nil then
    if message ~= nil then
      finish_sender(state, code or errno.EIO, tostring(message))
      self._result = ferry.error("ferry.AsyncExporter.producer", code or errno.EIO, tostring(message))
    else
      finish_sender(state, 0, nil)
    end
    return false
  end
  local owner, ptr = backend.handle("pair")
  local exported, err
  if getmetatable(item) == DeviceArray then
    exported, err = pcall(item.export, item, ptr)
  else
    exported, err = pcall(ferry.export_array_to, item, ptr, self._opts)
  end
  if not exported then
    backend.handle_free(owner)
    local text = type(err) == "table" and err.message or tostring(err)
    local failed = type(err) == "table" and err.code or errno.EIO
    finish_sender(state, failed, text)
    self._result = ferry.error("ferry.AsyncExporter.producer", failed, text)
    return false
  end
  state.pending = { owner = owner, ptr = ptr }
  return true
end

--- pump(timeout_ms) -> true once the stream is over (ended, failed or
--- cancelled: see result()), false while the consumer has not asked for
--- more within timeout_ms (default 0; negative: wait). Calls the producer
--- only for batches the consumer requested.
function AsyncExporter:pump(timeout_ms)
  local state = self._state
  timeout_ms = timeout_ms or 0
  while not state.finished do
    local code, message = raw.ferry_async_sender_wait_demand(state.sender, timeout_ms)
    if code == ETIMEDOUT then return false end
    if code ~= 0 then -- cancelled, refused, or a request(n <= 0): stop
      self._result = ferry.error("ferry.AsyncExporter", code, message)
      finish_sender(state, 0, nil)
      break
    end
    if not state.pending and not produce(self) then break end
    local pending = state.pending
    code, message = raw.ferry_async_sender_send(state.sender, pending.ptr, nil, timeout_ms)
    if code == ETIMEDOUT then return false end -- still ours: sent on the next pump
    state.pending = false
    backend.handle_free(pending.owner) -- moved out (or released by ferry on a refusal)
    if code ~= 0 then
      self._result = ferry.error("ferry.AsyncExporter", code, message)
      finish_sender(state, 0, nil)
    end
  end
  local anchor = self._anchor
  if anchor then
    self._anchor = false
    backend.gc_anchor_drop(anchor)
  end
  return true
end

--- run() -> self: pumps to the end. Inside a coroutine that can yield, it
--- yields (coroutine.yield(exporter)) whenever the consumer has not asked
--- for more; elsewhere it blocks in C until it does.
function AsyncExporter:run()
  while not self:pump(isyieldable() and 0 or -1) do coroutine.yield(self) end
  return self
end

--- result() -> nil while running or after a clean end, else the ferry.Error
--- that ended it (the producer's failure, or the consumer's cancel/refusal:
--- ECANCELED, ...).
function AsyncExporter:result() return self._result or nil end

--- done() -> true once the stream is over.
function AsyncExporter:done() return self._state.finished end

--- close(): ends the stream now if it is still running (on_error ECANCELED).
function AsyncExporter:close()
  finish_sender(self._state, errno.ECANCELED, "the Lua exporter was closed before the end")
  local anchor = self._anchor
  if anchor then
    self._anchor = false
    backend.gc_anchor_drop(anchor)
  end
end
AsyncExporter.__close = AsyncExporter.close
AsyncExporter.__gc = AsyncExporter.close

--- ferry.export_async(handler_ptr, schema, producer, opts) -> AsyncExporter:
--- ferry.async_exporter(...):run() (blocks, or yields in a coroutine).
function ferry.export_async(handler, schema, producer, opts)
  return ferry.async_exporter(handler, schema, producer, opts):run()
end

-- DeviceArray inherits Array's methods: copy them in, so that a method call
-- on a batch finds its function with one lookup instead of walking the
-- __index chain.
for name, fn in pairs(Array) do
  if name ~= "__index" and rawget(DeviceArray, name) == nil then DeviceArray[name] = fn end
end

-- The reused array of loops and importers has every DeviceArray method but
-- release (ReusedArray's keeps the structs for the next array).
for name, fn in pairs(DeviceArray) do
  if name ~= "__index" and rawget(ReusedArray, name) == nil then ReusedArray[name] = fn end
end
