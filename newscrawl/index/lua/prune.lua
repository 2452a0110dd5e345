-- Delete fingerprints older than a day number, scanning the given block-0 buckets.
--
-- KEYS[1]   meta hash
-- KEYS[2..] block-0 bucket hashes ({prefix}:simhash:0:{value})
-- ARGV[1] oldest day kept; ARGV[2] bucket key format, e.g. 'newscrawl:simhash:%d:%04x'
-- Returns the number of fingerprints deleted. Keys that are not hashes are skipped.
-- A field of a block-b bucket is the fingerprint without block b (six bytes): here the block-0
-- value comes from the key's name (its last four hex digits).

local min_day = tonumber(ARGV[1])
local bucket_format = ARGV[2]
local deleted = 0
for k = 2, #KEYS do
  -- A key of another type under the bucket pattern (not ours) is skipped, not an error that
  -- would stop every later prune.
  local entries = redis.pcall('HGETALL', KEYS[k])
  if type(entries) ~= 'table' or entries.err then
    entries = {}
  end
  local block0 = tonumber(string.sub(KEYS[k], -4), 16)
  if block0 == nil then
    entries = {}
  end
  for j = 1, #entries, 2 do
    local e = entries[j]
    local v = entries[j + 1]
    -- the record's day (index.lua's parse_record): with a sketch, <code byte 1-5><2-byte day>
    -- <sketch>...; without, "<day>:<doc id>"
    local code = string.byte(v, 1)
    local sketched = code ~= nil and code >= 1 and code <= 5 and #v >= 9
    local day
    if sketched then
      day = struct.unpack('>H', string.sub(v, 2, 3))
    else
      day = tonumber(string.match(v, '^(%-?%d+):'))
    end
    if string.len(e) == 6 and day ~= nil and day < min_day then
      local f = struct.pack('>H', block0) .. e
      local _, c2, c3, c4 = struct.unpack('>HHHH', f)
      redis.call('HDEL', KEYS[k], e)
      if sketched then
        -- the sketch (from the record's byte 4) has its two band bucket values in bytes 3-6
        local b0, b1 = struct.unpack('>HH', string.sub(v, 6, 9))
        -- band entries: in the hashes of blocks 2 and 3 (index.lua's BAND0_BLOCK, BAND1_BLOCK)
        redis.pcall('HDEL', string.format(bucket_format, 2, b0), f)
        redis.pcall('HDEL', string.format(bucket_format, 3, b1), f)
      end
      -- pcall: a foreign non-hash key under a block 1-3 name must not abort the script after
      -- earlier deletions (Redis does not roll them back) and before the count is updated.
      redis.pcall('HDEL', string.format(bucket_format, 1, c2), string.sub(f, 1, 2) .. string.sub(f, 5))
      redis.pcall('HDEL', string.format(bucket_format, 2, c3), string.sub(f, 1, 4) .. string.sub(f, 7))
      redis.pcall('HDEL', string.format(bucket_format, 3, c4), string.sub(f, 1, 6))
      deleted = deleted + 1
    end
  end
end
if deleted > 0 then
  redis.call('HINCRBY', KEYS[1], 'count', -deleted)
end
return deleted
