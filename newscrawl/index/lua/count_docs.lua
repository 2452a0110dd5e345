-- count (after lib.lua): the documents stored in block-0 buckets, one record each (`newscrawl
-- stats`: articles indexed). Reads only.
-- KEYS[1] meta hash, KEYS[2..] block-0 buckets ({prefix}:simhash:0:*). ARGV[1] bucket key format.
-- Returns the number of records.
local total = 0
for k = 2, #KEYS do
  for _, value in ipairs(redis.call('HVALS', KEYS[k])) do
    total = total + #split_records(value)
  end
end
return total
