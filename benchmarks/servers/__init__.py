"""One server module per framework, each exposing the same benchmark workloads (see ../README.md)."""
