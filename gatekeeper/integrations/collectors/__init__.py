"""Observations from other systems into the ledger, one module per system.

``databricks``: runs of a Databricks job (``gatekeeper collect databricks``). Each collector
imports its client library lazily, so ``import gatekeeper`` works without the extras.
"""
