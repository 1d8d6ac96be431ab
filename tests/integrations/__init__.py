"""Delta, OpenLineage and the Databricks collector, against local fakes."""
