"""Framework: configuration, registries, interfaces, session, statement, node table."""
