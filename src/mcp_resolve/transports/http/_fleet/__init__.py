"""Serving with more than one process: shared sessions, workers, lifespan, uvicorn limits."""
