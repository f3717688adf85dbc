"""The scheduling cycle service: DB <-> scheduler_core, Celery beat, agent, /metrics."""
