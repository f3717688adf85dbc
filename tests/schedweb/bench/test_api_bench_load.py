"""The API benchmark's wrk load: its output read into the table's figures (schedweb.bench.api_bench)."""

from __future__ import annotations

import shutil
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from schedweb.bench.api_bench import measure_wrk, parse_wrk

# wrk 4.1.0's --latency output, as printed here (one run had 17 non-2xx answers and timeouts).
OUTPUT = """Running 15s test @ http://127.0.0.1:55717/api/v1/queues/tree/
  1 threads and 16 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency    50.36ms  137.82ms   1.12s    93.76%
    Req/Sec   508.12    158.76     0.98k    77.29%
  Latency Distribution
     50%  812.00us
     75%   24.89ms
     90%   69.02ms
     99%    1.02s
  15078 requests in 15.08s, 828.72MB read
  Socket errors: connect 0, read 2, write 0, timeout 5
  Non-2xx or 3xx responses: 17
Requests/sec:    999.58
Transfer/sec:     54.94MB
"""


def test_wrk_output_becomes_the_tables_figures():
    assert parse_wrk(OUTPUT) == {
        "requests": 15078, "errors": 24, "error_kinds": {"non-2xx": 17, "read": 2, "timeout": 5},
        "p50_ms": 0.8, "p99_ms": 1020.0, "max_ms": 1120.0, "req_per_s": 999.6}


class _Ok(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as gunicorn answers

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        status = 200 if self.headers.get("Authorization") == "Token t0k" else 401
        self.send_response(status)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args) -> None:
        pass


@pytest.mark.skipif(shutil.which("wrk") is None, reason="wrk is not installed (`make bench` installs it)")
def test_a_real_wrk_run_counts_requests_and_refusals():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Ok)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        port = server.server_address[1]
        ok = measure_wrk("/", "t0k", port, 2, 1)
        refused = measure_wrk("/", "wrong", port, 2, 1)
    finally:
        server.shutdown()
        server.server_close()
    assert ok["clients"] == 2 and ok["requests"] > 0 and ok["errors"] == 0
    assert 0 < ok["p50_ms"] <= ok["p99_ms"] <= ok["max_ms"]
    assert refused["error_kinds"] == {"non-2xx": refused["requests"]}
