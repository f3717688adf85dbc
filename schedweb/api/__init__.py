"""REST API of schedweb: DRF under /api/v1/, tokens, queue ACLs, Volcano manifests."""
