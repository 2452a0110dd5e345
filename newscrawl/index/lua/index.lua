-- newscrawl near-duplicate index: one script for check_and_add / query / add / remove.
--
-- KEYS[1]   meta hash ({prefix}:simhash:meta)
-- KEYS[2-5] the four bucket hashes of the fingerprint (block 0 = most significant 16 bits)
-- ARGV[1] mode: "check_add" | "query" | "add" | "remove"
-- ARGV[2] fingerprint, 8 bytes big-endian (never a Lua number: Lua numbers are doubles)
-- ARGV[3] fingerprint configuration version ("" = unchecked)
-- ARGV[4] max Hamming distance (0..3)
-- ARGV[5] today's day number (days since the Unix epoch)
-- ARGV[6] oldest day still compared (-1 = no retention)
-- ARGV[7] doc id (check_add / add; remove: "" = any)
-- ARGV[8] key prefix (to name the other buckets of a stored fingerprint)
-- ARGV[9] now (seconds since the epoch, for the meta hash)
--
-- Bucket layout: field = 8-byte fingerprint in all four hashes; block-0 value "<day>:<doc id>",
-- blocks 1-3 value "<day>". Returns, for check_add/query, a flat array
-- {distance, fingerprint hex, doc id, ...} sorted by distance (check_add: at most one match; an
-- empty array means "no near-duplicate, fingerprint added"); add: 1 if new else 0; remove: 1/0.

local mode = ARGV[1]
local fp = ARGV[2]
local version = ARGV[3]
local maxd = tonumber(ARGV[4])
local today = tonumber(ARGV[5])
local min_day = tonumber(ARGV[6])
local doc = ARGV[7]
local prefix = ARGV[8]
local now = ARGV[9]
local meta = KEYS[1]

if string.len(fp) ~= 8 then
  return redis.error_reply('NEWSCRAWL_BAD_FINGERPRINT expected 8 bytes')
end

if version ~= '' then
  local stored = redis.call('HGET', meta, 'version')
  if stored then
    if stored ~= version then
      return redis.error_reply('NEWSCRAWL_INCOMPATIBLE_INDEX ' .. stored)
    end
  elseif mode == 'check_add' or mode == 'add' then
    redis.call('HSET', meta, 'version', version)
  end
end

local q1, q2, q3, q4 = struct.unpack('>HHHH', fp)
local q = {q1, q2, q3, q4}

local function bucket_key(block, value)
  return string.format('%s:simhash:%d:%04x', prefix, block, value)
end

local function add_entry()
  local created = redis.call('HSET', KEYS[2], fp, today .. ':' .. doc)
  for i = 3, 5 do
    redis.call('HSET', KEYS[i], fp, today)
  end
  if created == 1 then
    redis.call('HINCRBY', meta, 'count', 1)
    redis.call('HSETNX', meta, 'created', now)
  end
  return created
end

local function delete_entry(f)
  local c1, c2, c3, c4 = struct.unpack('>HHHH', f)
  local removed = redis.call('HDEL', bucket_key(0, c1), f)
  redis.call('HDEL', bucket_key(1, c2), f)
  redis.call('HDEL', bucket_key(2, c3), f)
  redis.call('HDEL', bucket_key(3, c4), f)
  if removed == 1 then
    redis.call('HINCRBY', meta, 'count', -1)
  end
  return removed
end

if mode == 'add' then
  return add_entry()
end

if mode == 'remove' then
  local v = redis.call('HGET', KEYS[2], fp)
  if not v then
    return 0
  end
  if doc ~= '' then
    local stored_doc = string.match(v, '^%-?%d+:(.*)$')
    if stored_doc ~= doc then
      return 0
    end
  end
  return delete_entry(fp)
end

local writing = (mode == 'check_add')

-- Hamming distance to the query, stopping as soon as it exceeds maxd.
local function distance(a1, a2, a3, a4)
  local a = {a1, a2, a3, a4}
  local d = 0
  for i = 1, 4 do
    local x = bit.bxor(a[i], q[i])
    while x ~= 0 do
      x = bit.band(x, x - 1)
      d = d + 1
      if d > maxd then
        return d
      end
    end
  end
  return d
end

local seen = {}
local matches = {}
for i = 1, 4 do
  local entries = redis.call('HGETALL', KEYS[i + 1])
  for j = 1, #entries, 2 do
    local f = entries[j]
    if not seen[f] and string.len(f) == 8 then
      seen[f] = true
      local v = entries[j + 1]
      local day, docid
      if i == 1 then
        local d, rest = string.match(v, '^(%-?%d+):(.*)$')
        day = tonumber(d)
        docid = rest
      else
        day = tonumber(v)
      end
      if min_day >= 0 and day ~= nil and day < min_day then
        if writing then
          delete_entry(f)
        end
      else
        local a1, a2, a3, a4 = struct.unpack('>HHHH', f)
        local dist = distance(a1, a2, a3, a4)
        if dist <= maxd then
          if docid == nil then
            local v0 = redis.call('HGET', bucket_key(0, a1), f)
            if v0 then
              docid = string.match(v0, '^%-?%d+:(.*)$')
            end
          end
          if docid ~= nil then
            table.insert(matches, {dist, string.format('%04x%04x%04x%04x', a1, a2, a3, a4), docid})
          elseif writing then
            -- orphan (its block-0 record is gone): clean it up
            delete_entry(f)
          end
        end
      end
    end
  end
end

table.sort(matches, function(x, y)
  if x[1] ~= y[1] then
    return x[1] < y[1]
  end
  return x[2] < y[2]
end)

if writing then
  if #matches > 0 then
    return matches[1]
  end
  add_entry()
  return {}
end

local out = {}
for _, m in ipairs(matches) do
  table.insert(out, m[1])
  table.insert(out, m[2])
  table.insert(out, m[3])
end
return out
