-- remove (after lib.lua): delete a stored fingerprint, or only one doc's record of it (the
-- fingerprint goes with its last record).
-- KEYS[1] meta hash, KEYS[2-5] the fingerprint's block buckets. ARGV[1] bucket key format,
-- ARGV[2] fingerprint (8 bytes), ARGV[3] version ("" = unchecked), ARGV[4] doc id ("" = any).
-- Returns 1 if something was deleted, else 0.
local fp, version, doc = ARGV[2], ARGV[3], ARGV[4]
local refused = bad_input(fp, nil) or version_error(version, false)
if refused then
  return refused
end
local v = redis.call('HGET', KEYS[2], rest(fp, 0))
if not v then
  return 0
end
if doc == '' then
  return delete_entry(fp, v)
end
local all = split_records(v)
local keep = {}
for _, r in ipairs(all) do
  local _, d = parse_record(r)
  if d ~= doc then
    keep[#keep + 1] = r
  end
end
if #keep == #all then
  return 0
end
keep_records(fp, all, keep)
return 1
