"""The ledger contract on both backends (SQLite and PostgreSQL)."""
