"""The SQLite implementations: one file per host, for state that must survive a restart."""
