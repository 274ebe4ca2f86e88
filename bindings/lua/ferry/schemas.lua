-- ferry/schemas.lua, part of the module `ferry`: schemas (ferry.Schema), the pools of
-- binding-owned structs, array and stream slots. ferry/init.lua loads the parts in order;
-- what they share goes through the table ferry/init.lua puts at
-- package.loaded["ferry.internal"] while they load.
local I = require("ferry.internal")
local ferry, raw, backend = I.ferry, I.raw, I.backend
local EINVAL, NULLABLE, raise = I.EINVAL, I.NULLABLE, I.raise
local VALIDATE_DEFAULT = I.VALIDATE_DEFAULT

-- ---- handles: pools of binding-owned ABI structs ------------------------------------

-- Handles of released structs are kept for the next user (released, zeroed
-- structs and their userdata/cdata): no allocation, no finaliser and no
-- garbage per import or batch. At most POOL_SIZE are kept.
local POOL_SIZE = 64

-- Schema handles, for schemas shared by a stream and its batches.
local schema_pool = {}
do
  local owners, ptrs, n = {}, {}, 0
  function schema_pool.take()
    if n > 0 then
      local owner, ptr = owners[n], ptrs[n]
      owners[n], ptrs[n] = nil, nil
      n = n - 1
      return owner, ptr
    end
    return backend.handle("schema")
  end
  -- Gives back a handle whose struct is released.
  function schema_pool.give(owner, ptr)
    if n < POOL_SIZE then
      n = n + 1
      owners[n], ptrs[n] = owner, ptr
    else
      backend.handle_free(owner)
    end
  end
end


local raw_schema_release = raw.ferry_schema_release

-- ---- structs for a producer to fill ----------------------------------------------------

--- ferry.array_slots() -> { schema = ArrowSchema*, array = ArrowDeviceArray* }:
--- released structs owned by Lua, for a producer (another runtime, or
--- DeviceArray:export) to fill and ferry.import to take from. Freed
--- (released first when still live) when collected or by slots:free().
local ArraySlots = {}
ArraySlots.__index = ArraySlots
function ferry.array_slots()
  local owner, array, schema = backend.handle("pair")
  return setmetatable({ schema = schema, array = array, _owner = owner }, ArraySlots)
end
function ArraySlots:free()
  local owner = self._owner
  if owner then
    self._owner, self.schema, self.array = nil, nil, nil
    backend.handle_free(owner)
  end
end

--- ferry.stream_slot() -> { stream = ArrowDeviceArrayStream* }: the same for a stream.
function ferry.stream_slot()
  local owner, stream = backend.handle("stream")
  return setmetatable({ stream = stream, _owner = owner }, ArraySlots)
end

-- ---- schemas ----------------------------------------------------------------------

-- A Schema is a view of an ArrowSchema. Views of an array's or a stream's
-- schema (and their children) are borrowed: `_parent` is the object whose
-- liveness they follow. A shared schema (a stream's, or one an array shares
-- with its copies) counts its holders in `_users` and is released with the
-- last; a schema returned to the caller (stream:get_schema()) is owned
-- (`_mine`): the caller releases it.
local Schema = {}
Schema.__index = Schema
ferry.Schema = Schema

local function schema_view(ptr, parent)
  return setmetatable({ _ptr = ptr, _parent = parent }, Schema)
end

local function shared_schema(owner, ptr, users)
  return setmetatable({ _ptr = ptr, _owner = owner, _users = users, _released = false }, Schema)
end

-- Drops one holder of a shared schema; the last one releases it. From a
-- finaliser (`collected`: the Lua 5.4 __gc of an object holding it) the
-- schema's handle may have been finalized in this same collection already
-- (finalizers run in the reverse order of their marking), its struct freed,
-- so the struct is never touched then; when this was the last holder, the
-- handle's own finaliser releases and frees it.
local function unref_schema(schema, collected)
  local users = schema._users - 1
  schema._users = users
  if users == 0 then
    schema._released = true
    if not collected then
      raw_schema_release(schema._ptr)
      schema_pool.give(schema._owner, schema._ptr)
    end
    schema._owner = nil
  end
end

local function schema_ptr(self)
  local root = self
  while root._parent do root = root._parent end
  if root._released then error(ferry.error("ferry.Schema", EINVAL, "schema already released"), 3) end
  return self._ptr
end

function Schema:format()
  local format = self._format
  if not format then
    format = raw.ferry_schema_format(schema_ptr(self))
    self._format = format
  end
  return format
end
function Schema:name() return raw.ferry_schema_name(schema_ptr(self)) end
function Schema:flags() return raw.ferry_schema_flags(schema_ptr(self)) end
function Schema:nullable() return math.floor(self:flags() / NULLABLE) % 2 == 1 end
function Schema:n_children() return raw.ferry_schema_n_children(schema_ptr(self)) end
function Schema:pointer() return schema_ptr(self) end

function Schema:child(i)
  local child = raw.ferry_schema_child(schema_ptr(self), i)
  if not child then raise("ferry.Schema.child", EINVAL, "no child " .. tostring(i)) end
  return schema_view(child, self)
end

function Schema:dictionary()
  local dictionary = raw.ferry_schema_dictionary(schema_ptr(self))
  return dictionary and schema_view(dictionary, self) or nil
end

--- metadata() -> list of { key, value } pairs (binary strings) in order,
--- plus a by-key map under field `map`; nil when absent.
function Schema:metadata()
  local ptr = schema_ptr(self)
  local n = raw.ferry_schema_metadata_count(ptr)
  if n < 0 then raise("ferry.Schema.metadata", EINVAL, "malformed metadata encoding") end
  if n == 0 then return nil end
  local list, map = {}, {}
  for i = 0, n - 1 do
    local key = raw.ferry_schema_metadata_key(ptr, i)
    local value = raw.ferry_schema_metadata_value(ptr, i)
    list[#list + 1] = { key, value }
    map[key] = value
  end
  list.map = map
  return list
end

--- validate() -> ok, message, findings
function Schema:validate()
  local code, message, findings = backend.validate(schema_ptr(self), nil, VALIDATE_DEFAULT)
  return code == 0, message, findings
end

--- release(): releases a schema the caller owns (stream:get_schema()), once;
--- views of an array's or a stream's schema go with their owner.
function Schema:release()
  if self._mine then
    self._mine = false
    unref_schema(self)
  end
end

-- Schemas the caller owns also release when collected (and on 5.4 by
-- `local s <close>`); views and shared schemas have no finaliser to pay.
-- (Collected: the handle is not given back to the pool, where a struct its
-- own finaliser frees in this same collection would be taken again.)
local OwnedSchema = { __index = Schema, __close = Schema.release, __gc = function(self)
  if self._mine then
    self._mine = false
    unref_schema(self, true)
  end
end }
local function owned_schema()
  local owner, ptr = schema_pool.take()
  local schema = shared_schema(owner, ptr, 1)
  schema._mine = true
  return setmetatable(schema, OwnedSchema)
end

--- export(out): moves this owned schema into a consumer-allocated struct.
function Schema:export(out)
  if not self._mine or self._users ~= 1 then
    raise("ferry.Schema.export", EINVAL, "only a schema the caller owns alone can be moved")
  end
  local code = raw.ferry_schema_move(schema_ptr(self), out)
  if code ~= 0 then raise("ferry.Schema.export", code, "destination not released") end
  self:release()
end

function Schema:__tostring()
  return string.format("ferry.Schema(%s %q)", tostring(self:format()), tostring(self:name()))
end
OwnedSchema.__tostring = Schema.__tostring

-- For the parts loaded after this one.
I.owned_schema, I.POOL_SIZE, I.Schema = owned_schema, POOL_SIZE, Schema
I.schema_pool, I.schema_view, I.shared_schema = schema_pool, schema_view, shared_schema
I.unref_schema = unref_schema
