-- check_and_add (after lib.lua and lookup.lua): the nearest stored doc within max distance, or,
-- when none, store this fingerprint. Atomic, so of two concurrent near-duplicates one is added.
-- KEYS[1] meta hash, KEYS[2-5] the fingerprint's block buckets (block 0 first), KEYS[6-7] its
-- sketch's band buckets (with a sketch).
-- ARGV[1] bucket key format, ARGV[2] fingerprint (8 bytes big-endian), ARGV[3] version ("" =
-- unchecked), ARGV[4] max distance (0-7), ARGV[5] oldest day compared (-1 = no retention),
-- ARGV[6] doc id, ARGV[7] today (day number), ARGV[8] now (seconds), ARGV[9] sketch ("" = none),
-- ARGV[10] its thresholds ("text numbers wide support chance"), ARGV[11] the index's 'created'
-- mark as the caller last saw it (absent or "" = not checked; another one: an error reply,
-- nothing added).
-- Returns {distance, fingerprint hex, doc id} of the match, or {} when the fingerprint was added.
-- Retention: an expired record within max distance is no match and is deleted here; expired
-- entries that are not near are left to prune.lua.
local fp, version, maxd = ARGV[2], ARGV[3], tonumber(ARGV[4])
local min_day, doc, today, now = tonumber(ARGV[5]), ARGV[6], tonumber(ARGV[7]), ARGV[8]
local qs = sketch_arg(ARGV[9])
local refused = lost_error(ARGV[11]) or write_refused(fp, today, version, qs)
if refused then
  return refused
end
local matches = lookup(fp, maxd, min_day, qs, ARGV[10], true)
if #matches > 0 then
  return {matches[1][1], matches[1][2], matches[1][3]}
end
add_entry(fp, doc, today, now, qs)
return {}
