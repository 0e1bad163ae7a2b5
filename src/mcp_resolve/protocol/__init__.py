"""JSON-RPC and the two protocol eras; the only package that knows which era a request speaks."""
