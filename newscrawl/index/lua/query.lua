-- query (after lib.lua and lookup.lua): every stored doc within max distance, adds nothing.
-- KEYS as check_add.lua. ARGV[1] bucket key format, ARGV[2] fingerprint (8 bytes), ARGV[3]
-- version ("" = unchecked), ARGV[4] max distance, ARGV[5] oldest day compared (-1 = no
-- retention), ARGV[6] sketch ("" = none), ARGV[7] its thresholds.
-- Returns a flat array {distance, fingerprint hex, doc id, ...}, nearest first.
local fp, version, maxd, min_day = ARGV[2], ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5])
local qs = sketch_arg(ARGV[6])
local refused = bad_input(fp, qs) or version_error(version, false)
if refused then
  return refused
end
local out = {}
for _, m in ipairs(lookup(fp, maxd, min_day, qs, ARGV[7], false)) do
  out[#out + 1] = m[1]
  out[#out + 1] = m[2]
  out[#out + 1] = m[3]
end
return out
