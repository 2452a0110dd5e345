-- Delete fingerprints older than a day number, scanning the given block-0 buckets.
--
-- KEYS[1]   meta hash
-- KEYS[2..] block-0 bucket hashes ({prefix}:simhash:0:{value})
-- ARGV[1] oldest day kept; ARGV[2] bucket key format, e.g. 'newscrawl:simhash:%d:%04x'
-- Returns the number of fingerprints deleted (a fingerprint that several docs share loses its
-- expired records, and is deleted only when none is left). Keys that are not hashes are skipped.
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
    if string.len(e) == 6 then
      local f = struct.pack('>H', block0) .. e
      -- the value's records (index.lua's split_records): one, or "\0" then
      -- (<2-byte length><record>)* when several docs share this fingerprint
      local all = {}
      if string.byte(v, 1) == 0 then
        local pos = 2
        while pos + 1 <= #v do
          local n = struct.unpack('>H', string.sub(v, pos, pos + 1))
          all[#all + 1] = string.sub(v, pos + 2, pos + 1 + n)
          pos = pos + 2 + n
        end
      else
        all[1] = v
      end
      local keep, gone = {}, {}
      for _, r in ipairs(all) do
        -- the record's day (index.lua's parse_record): with a sketch, <code byte 1-5><2-byte
        -- day><sketch>...; without, "<day>:<doc id>"
        local code = string.byte(r, 1)
        local day
        if code ~= nil and code >= 1 and code <= 5 and #r >= 9 then
          day = struct.unpack('>H', string.sub(r, 2, 3))
        else
          day = tonumber(string.match(r, '^(%-?%d+):'))
        end
        if day ~= nil and day < min_day then
          gone[#gone + 1] = r
        else
          keep[#keep + 1] = r
        end
      end
      if #gone > 0 then
        -- band values still used by a kept record (its sketch's bytes 3-6, the record's 6-9)
        local used0, used1 = {}, {}
        for _, r in ipairs(keep) do
          local code = string.byte(r, 1)
          if code ~= nil and code >= 1 and code <= 5 and #r >= 9 then
            local b0, b1 = struct.unpack('>HH', string.sub(r, 6, 9))
            used0[b0], used1[b1] = true, true
          end
        end
        for _, r in ipairs(gone) do
          local code = string.byte(r, 1)
          if code ~= nil and code >= 1 and code <= 5 and #r >= 9 then
            local b0, b1 = struct.unpack('>HH', string.sub(r, 6, 9))
            -- band entries: in the hashes of blocks 2 and 3 (index.lua's BAND0_BLOCK, BAND1_BLOCK)
            if not used0[b0] then
              redis.pcall('HDEL', string.format(bucket_format, 2, b0), f)
            end
            if not used1[b1] then
              redis.pcall('HDEL', string.format(bucket_format, 3, b1), f)
            end
          end
        end
        if #keep > 0 then
          -- other docs' records of this fingerprint are still within retention
          if #keep == 1 then
            redis.call('HSET', KEYS[k], e, keep[1])
          else
            local parts = {'\0'}
            for _, r in ipairs(keep) do
              parts[#parts + 1] = struct.pack('>H', #r) .. r
            end
            redis.call('HSET', KEYS[k], e, table.concat(parts))
          end
        else
          local _, c2, c3, c4 = struct.unpack('>HHHH', f)
          redis.call('HDEL', KEYS[k], e)
          -- pcall: a foreign non-hash key under a block 1-3 name must not abort the script after
          -- earlier deletions (Redis does not roll them back) and before the count is updated.
          redis.pcall('HDEL', string.format(bucket_format, 1, c2), string.sub(f, 1, 2) .. string.sub(f, 5))
          redis.pcall('HDEL', string.format(bucket_format, 2, c3), string.sub(f, 1, 4) .. string.sub(f, 7))
          redis.pcall('HDEL', string.format(bucket_format, 3, c4), string.sub(f, 1, 6))
          deleted = deleted + 1
        end
      end
    end
  end
end
if deleted > 0 then
  redis.call('HINCRBY', KEYS[1], 'count', -deleted)
end
return deleted
