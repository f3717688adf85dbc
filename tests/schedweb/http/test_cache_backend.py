"""ResilientRedisCache: Redis when it answers, this process's memory (and no waiting) when it does not."""

from __future__ import annotations

import time
import uuid

import pytest
import redis
from django.conf import settings
from django.core.cache.backends.locmem import LocMemCache

from schedweb.http.cache_backend import ResilientRedisCache, per_process_limit, shared_count


def _unreachable() -> ResilientRedisCache:
    # Port 9 (discard) is closed on these machines: connections are refused at once.
    return ResilientRedisCache("redis://127.0.0.1:9/0", {"KEY_PREFIX": f"t{uuid.uuid4().hex}"})


def test_redis_down_falls_back_to_memory_and_keeps_counting():
    cache = _unreachable()
    assert cache.get("k", "default") == "default"
    assert cache.down_until > time.monotonic()
    cache.set("k", 1)
    assert cache.get("k") == 1
    assert cache.add("n", 0) is True and cache.add("n", 5) is False
    assert cache.incr("n") == 1 and cache.incr("n", 2) == 3
    assert cache.get_many(["k", "n", "missing"]) == {"k": 1, "n": 3}
    cache.delete("k")
    assert cache.has_key("k") is False


def test_while_down_redis_is_not_asked_again_until_the_retry_time(monkeypatch):
    cache = _unreachable()
    cache.get("k")
    calls = []

    class Client:  # stands in for the Redis client once Redis is back
        def get(self, key: str, default: object = None) -> object:
            calls.append(key)
            return "from-redis"

    monkeypatch.setattr(cache, "_cache", Client())
    assert cache.get("k", "local") == "local" and calls == []
    cache.down_until = time.monotonic() - 1  # retry time reached
    assert cache.get("k") == "from-redis" and len(calls) == 1


@pytest.mark.skipif(not settings.REDIS_URL, reason="needs REDIS_URL")
def test_redis_up_values_live_in_redis():
    prefix = f"t{uuid.uuid4().hex}"
    cache = ResilientRedisCache(settings.REDIS_URL, {"KEY_PREFIX": prefix})
    cache.set("shared", "v", timeout=30)
    assert cache.down_until == 0.0
    keys = redis.Redis.from_url(settings.REDIS_URL).keys(f"{prefix}:*")
    assert len(keys) == 1 and b"shared" in keys[0]
    assert cache.fallback.get("shared") is None
    cache.delete("shared")


def test_count_falls_back_to_memory_while_redis_is_down():
    cache = _unreachable()
    assert [cache.count("hits", 60) for _ in range(3)] == [1, 2, 3]
    assert cache.down_until > time.monotonic() and cache.fallback.get("hits") == 3


@pytest.mark.skipif(not settings.REDIS_URL, reason="needs REDIS_URL")
def test_count_is_one_round_trip_and_expires_from_its_first_count():
    prefix = f"t{uuid.uuid4().hex}"
    cache = ResilientRedisCache(settings.REDIS_URL, {"KEY_PREFIX": prefix})
    server = redis.Redis.from_url(settings.REDIS_URL)
    assert cache.count("hits", 60) == 1
    (key,) = server.keys(f"{prefix}:*")
    server.expire(key, 30)  # as if 30 s of the window had passed
    before = server.info("commandstats")
    assert [cache.count("hits", 60) for _ in range(2)] == [2, 3]
    after = server.info("commandstats")
    assert 28 <= server.ttl(key) <= 30  # EXPIRE NX: later counts do not push the expiry back

    def calls(stats: dict, name: str) -> int:
        return stats.get(f"cmdstat_{name}", {}).get("calls", 0)

    sent = {name: calls(after, name) - calls(before, name) for name in ("incrby", "expire", "set", "exists")}
    assert sent == {"incrby": 2, "expire": 2, "set": 0, "exists": 0}
    assert cache.down_until == 0.0
    server.delete(key)


def test_sliding_count_pushes_the_expiry_back_in_memory_too():
    cache = _unreachable()
    assert cache.count("slide", 60, sliding=True) == 1
    key = cache.fallback.make_key("slide")
    cache.fallback._expire_info[key] -= 30  # as if 30 s had passed
    before = cache.fallback._expire_info[key]
    assert cache.count("slide", 60, sliding=True) == 2
    assert cache.fallback._expire_info[key] - before == pytest.approx(30, abs=1)


@pytest.mark.skipif(not settings.REDIS_URL, reason="needs REDIS_URL")
def test_sliding_count_pushes_the_redis_expiry_back():
    prefix = f"t{uuid.uuid4().hex}"
    cache = ResilientRedisCache(settings.REDIS_URL, {"KEY_PREFIX": prefix})
    server = redis.Redis.from_url(settings.REDIS_URL)
    assert cache.count("slide", 60, sliding=True) == 1
    (key,) = server.keys(f"{prefix}:*")
    server.expire(key, 30)
    assert cache.count("slide", 60, sliding=True) == 2
    assert 58 <= server.ttl(key) <= 60
    server.delete(key)


def test_shared_count_says_when_a_count_stays_in_this_process():
    down = _unreachable()
    assert [shared_count(down, "n", 60) for _ in range(2)] == [(1, True), (2, True)]
    local = LocMemCache(f"t{uuid.uuid4().hex}", {})
    assert shared_count(local, "n", 60) == (1, False)  # a cache configured local is the whole deployment's


@pytest.mark.skipif(not settings.REDIS_URL, reason="needs REDIS_URL")
def test_shared_count_in_redis_is_shared():
    cache = ResilientRedisCache(settings.REDIS_URL, {"KEY_PREFIX": f"t{uuid.uuid4().hex}"})
    assert shared_count(cache, "n", 60) == (1, False)
    cache.delete("n")


@pytest.mark.parametrize(("limit", "local", "processes", "expected"), [
    (5, False, 2, 5), (5, True, 2, 2), (20, True, 3, 6), (1, True, 4, 1), (5, True, 1, 5),
])
def test_per_process_limit(limit, local, processes, expected, settings):
    settings.THROTTLE_PROCESSES = processes
    assert per_process_limit(limit, local) == expected
