"""Benchmarks of the scheduler core: seeded synthetic clusters and in-memory session runs."""
