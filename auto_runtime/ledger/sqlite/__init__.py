"""The SQLite store: one file, WAL, one writer thread with group commit, readers on their own connections."""
