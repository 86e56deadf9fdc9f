"""The failures review of a run: failed cases classified, fingerprinted and clustered (docs/failures-review.md)."""
