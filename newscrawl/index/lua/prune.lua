-- prune (after lib.lua): delete the records older than a day in a batch of block-0 buckets.
-- KEYS[1] meta hash, KEYS[2..] block-0 buckets ({prefix}:simhash:0:{value}).
-- ARGV[1] bucket key format, ARGV[2] the oldest day kept.
-- Returns the number of fingerprints deleted (a fingerprint several docs share loses its expired
-- records and goes with its last one). Keys that are not hashes are skipped, and so are
-- unreadable records (kept).
local min_day = tonumber(ARGV[2])
local deleted = 0
for k = 2, #KEYS do
  -- a key of another type under the bucket pattern (not ours) is skipped, not an error that
  -- would stop every later prune
  local entries = redis.pcall('HGETALL', KEYS[k])
  if type(entries) ~= 'table' or entries.err then
    entries = {}
  end
  -- a block-0 field is the fingerprint less its block 0, which the key's last four hex digits name
  local block0 = tonumber(string.sub(KEYS[k], -4), 16)
  if block0 == nil then
    entries = {}
  end
  for j = 1, #entries, 2 do
    local e, v = entries[j], entries[j + 1]
    if #e == 6 then
      local all = split_records(v)
      local keep, gone = {}, {}
      for _, r in ipairs(all) do
        local day = parse_record(r)
        if day ~= nil and day < min_day then
          gone[#gone + 1] = r
        else
          keep[#keep + 1] = r
        end
      end
      if #gone > 0 then
        local f = struct.pack('>H', block0) .. e
        if #keep > 0 then
          drop_bands(f, gone, keep)
          redis.call('HSET', KEYS[k], e, join_records(keep))
        else
          deleted = deleted + drop_fingerprint(f, v, KEYS[k])
        end
      end
    end
  end
end
if deleted > 0 then
  redis.call('HINCRBY', meta, 'count', -deleted)
end
return deleted
