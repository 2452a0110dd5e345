-- Extend (or, with ttl '', delete) the run marker if it is still ours (run.py).
-- KEYS: run   ARGV: run id, ttl   Returns 1 if it was ours, else 0.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if ARGV[2] == '' then redis.call('DEL', KEYS[1]) else redis.call('EXPIRE', KEYS[1], ARGV[2]) end
return 1
