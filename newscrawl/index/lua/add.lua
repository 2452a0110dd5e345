-- add (after lib.lua): store a fingerprint without a near-duplicate check.
-- KEYS as check_add.lua. ARGV[1] bucket key format, ARGV[2] fingerprint (8 bytes), ARGV[3]
-- version ("" = unchecked), ARGV[4] doc id, ARGV[5] today (day number), ARGV[6] now (seconds),
-- ARGV[7] sketch ("" = none). Returns 1 if the fingerprint is new, else 0.
local fp, version, doc, today, now = ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5]), ARGV[6]
local qs = sketch_arg(ARGV[7])
local refused = write_refused(fp, today, version, qs)
if refused then
  return refused
end
return add_entry(fp, doc, today, now, qs)
