"""The class attribute that marks gatekeeper's tasks for an inline fill's execution summary.

Tasks whose class sets ``gatekeeper_summary`` are judged by the ledger in the summary of a
worker whose history is a ``channel.ForkedHistory``: ranges (``RANGE``), chunks and periods
(True). A scheduled fill (``[gatekeeper] inline = false``) installs no such history, and the
mark is then read by nobody.
"""

SUMMARY_MARK = "gatekeeper_summary"
RANGE = "range"
