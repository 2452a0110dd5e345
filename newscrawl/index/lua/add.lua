-- add (after lib.lua): store a fingerprint without a near-duplicate check.
-- KEYS as check_add.lua. ARGV[1] bucket key format, ARGV[2] fingerprint (8 bytes), ARGV[3]
-- version ("" = unchecked), ARGV[4] doc id, ARGV[5] today (day number), ARGV[6] now (seconds),
-- ARGV[7] sketch ("" = none). Returns 1 if the fingerprint is new, else 0.
local fp, version, doc, today, now = ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5]), ARGV[6]
local qs = ARGV[7]
if qs == '' then
  qs = nil
end
local refused = bad_input(fp, qs) or bad_day(today, qs) or version_error(version, true)
if refused then
  return refused
end
return add_entry(fp, doc, today, now, qs)
