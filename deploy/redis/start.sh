#!/bin/sh
# Start Redis for the newscrawl cluster with ACL users built from environment variables.
#
#   REDIS_PASSWORD      (required) password of user "newscrawl", the crawlers' user: every command
#                       except the @admin ones (CONFIG SET, SHUTDOWN, BGSAVE, ...; CONFIG GET is
#                       allowed) and FLUSHALL/FLUSHDB.
#   REDIS_OPS_PASSWORD  (optional) password of user "ops" (all commands), for backups and tuning.
#   REDIS_MAXMEMORY     (optional, default 0 = no limit) e.g. "4gb"; with maxmemory-policy
#                       noeviction a full Redis refuses writes instead of dropping keys.
#
# Passwords never appear on a command line or in a file: only their SHA-256 digests do
# ("#<hex>" in ACL syntax). The default user is switched off, so unauthenticated clients get
# nothing. The official image's entrypoint then drops root and runs redis-server as "redis".
set -eu

# Extra arguments (e.g. "--loglevel verbose") are passed on to redis-server.

conf="${REDIS_CONF:-/usr/local/etc/redis/redis.conf}"

if [ -z "${REDIS_PASSWORD:-}" ]; then
    echo "start.sh: REDIS_PASSWORD is not set (copy .env.example to .env and set it)" >&2
    exit 2
fi
if [ "${#REDIS_PASSWORD}" -lt 16 ]; then
    echo "start.sh: REDIS_PASSWORD is too short (use at least 16 characters, e.g. openssl rand -hex 32)" >&2
    exit 2
fi

sha256() {
    printf '%s' "$1" | sha256sum | cut -d ' ' -f 1
}

crawler_hash=$(sha256 "$REDIS_PASSWORD")
set -- "$conf" \
    --user default off resetpass nocommands resetkeys \
    --user newscrawl on "#${crawler_hash}" '~*' '&*' +@all -@admin '+config|get' -flushall -flushdb \
    --maxmemory "${REDIS_MAXMEMORY:-0}" \
    "$@"

if [ -n "${REDIS_OPS_PASSWORD:-}" ]; then
    if [ "${#REDIS_OPS_PASSWORD}" -lt 16 ]; then
        echo "start.sh: REDIS_OPS_PASSWORD is too short (use at least 16 characters)" >&2
        exit 2
    fi
    set -- "$@" --user ops on "#$(sha256 "$REDIS_OPS_PASSWORD")" '~*' '&*' +@all
fi

if [ -n "${REDIS_SERVER:-}" ]; then
    # Tests run this script against a local redis-server binary.
    exec "$REDIS_SERVER" "$@"
fi
exec docker-entrypoint.sh redis-server "$@"
