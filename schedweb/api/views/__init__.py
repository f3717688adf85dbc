"""DRF views of the API, one module per concept."""
