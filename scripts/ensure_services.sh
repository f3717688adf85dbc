#!/usr/bin/env bash
# Start PostgreSQL and Redis when stopped and install Debian's chromium and promtool when missing
# (what `make test` needs). Prints every action it takes.
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

# Test tools from Debian: chromium (the browser tests) and promtool (package prometheus, without
# its recommended node exporter: the /metrics lint test). The prometheus server the package also
# ships is never started by this install (a policy-rc.d refusing service starts, unless one exists).
updated=""
apt_update() { [ -n "$updated" ] || { apt-get update; updated=1; }; }
if [ ! -x /usr/bin/chromium ]; then
    echo "ensure_services: /usr/bin/chromium missing: running apt-get update && apt-get install -y chromium"
    apt_update
    DEBIAN_FRONTEND=noninteractive apt-get install -y chromium
fi
if ! command -v promtool >/dev/null 2>&1; then
    echo "ensure_services: promtool missing: running apt-get install -y --no-install-recommends prometheus"
    policy=/usr/sbin/policy-rc.d
    if [ ! -e "$policy" ]; then
        printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 755 "$policy"
        trap 'rm -f "$policy"' EXIT
    fi
    apt_update
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends prometheus
fi
