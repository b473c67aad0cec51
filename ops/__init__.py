"""Operating the arena: Prometheus metrics read from the database, readiness checks, backups."""
