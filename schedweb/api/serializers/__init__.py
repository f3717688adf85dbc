"""DRF serializers of the API, one module per concept."""
