"""Theory modules, one per work."""
