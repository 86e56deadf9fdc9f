"""One module per primitive (or small group); each registers itself on import."""
