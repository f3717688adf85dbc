#!/usr/bin/env bash
# Start PostgreSQL and Redis when stopped and install Debian's chromium when missing (what
# `make test` needs). Prints every action it takes.
set -euo pipefail

missing=()
command -v pg_ctlcluster >/dev/null 2>&1 || missing+=(postgresql)
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
if [ "${#missing[@]}" -gt 0 ]; then
    echo "ensure_services: missing Debian package(s): ${missing[*]}" >&2
    echo "ensure_services: install them with: apt-get update && apt-get install -y ${missing[*]}" >&2
    exit 1
fi

pg_ready() { pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; }
if ! pg_ready; then
    version="$(ls /etc/postgresql | sort -V | tail -n1)"
    echo "ensure_services: starting PostgreSQL $version (cluster main)"
    pg_ctlcluster --skip-systemctl-redirect "$version" main start
    for _ in $(seq 1 30); do pg_ready && break; sleep 1; done
    pg_ready || { echo "ensure_services: PostgreSQL did not become ready" >&2; exit 1; }
fi

redis_ready() { redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null | grep -q PONG; }
if ! redis_ready; then
    echo "ensure_services: starting Redis on 127.0.0.1:6379"
    mkdir -p /var/lib/redis /var/log/redis
    redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
        --dir /var/lib/redis --logfile /var/log/redis/ci.log
    for _ in $(seq 1 30); do redis_ready && break; sleep 1; done
    redis_ready || { echo "ensure_services: Redis did not become ready" >&2; exit 1; }
fi

if [ ! -x /usr/bin/chromium ]; then
    echo "ensure_services: /usr/bin/chromium missing: running apt-get update && apt-get install -y chromium"
    apt-get update
    DEBIAN_FRONTEND=noninteractive apt-get install -y chromium
fi
