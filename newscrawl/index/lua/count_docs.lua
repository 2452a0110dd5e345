-- newscrawl: the documents stored in block-0 buckets (`newscrawl stats`: articles indexed).
-- KEYS: block-0 bucket keys ({prefix}:simhash:0:*). A field's value is one record, or, when
-- several documents were stored with the same fingerprint (texts their sketches tell apart),
-- byte 0 then (<2-byte big-endian length><record>)* (index.lua's split_records; no record starts
-- with byte 0). Reads only; returns the number of records.
local total = 0
for _, key in ipairs(KEYS) do
  for _, value in ipairs(redis.call('HVALS', key)) do
    if #value > 0 and string.byte(value, 1) == 0 then
      local pos = 2
      while pos + 1 <= #value do
        total = total + 1
        pos = pos + 2 + string.byte(value, pos) * 256 + string.byte(value, pos + 1)
      end
    else
      total = total + 1
    end
  end
end
return total
