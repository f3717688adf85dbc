"""Server-rendered dashboard: queue tree, deserved vs allocated, why pending, queue administration."""
