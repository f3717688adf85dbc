"""Benchmarks of the web side: the scheduling cycle on PostgreSQL and API latency (no Django app)."""
