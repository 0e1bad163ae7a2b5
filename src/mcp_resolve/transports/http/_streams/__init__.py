"""Long-lived SSE streams: a session's GET stream, resumption, and the caps that bound them per client."""
