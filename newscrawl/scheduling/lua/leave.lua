-- A worker leaving (run.py): its heartbeat and registry entry go.
-- KEYS: registry, heartbeat   ARGV: worker id
redis.call('DEL', KEYS[2])
redis.call('HDEL', KEYS[1], ARGV[1])
return 1
