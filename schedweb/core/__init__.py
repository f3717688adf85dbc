"""The cluster objects (queues, nodes, jobs, tasks, ...), their write services and the demo loader."""
