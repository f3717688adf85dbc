"""HTTP plumbing under every app: security headers, request guards, login throttling, the
resilient cache backend and the client address. Imports no other schedweb app."""
