"""The Redis implementations of the stores (extra `[redis]`), sharing one connection pool."""
