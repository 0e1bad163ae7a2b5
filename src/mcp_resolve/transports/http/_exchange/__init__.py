"""The endpoint: one request's exchange, and handshake-era sessions."""
