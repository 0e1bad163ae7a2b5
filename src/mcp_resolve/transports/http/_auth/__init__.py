"""A protected endpoint: the bearer check, its challenges, and Protected Resource Metadata."""
