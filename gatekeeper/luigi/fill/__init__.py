"""The inline machinery of the range wrappers: everything that runs or reports periods outside
Luigi's own worker.

- ``chunks``: the chunk tasks a range fills through (contiguous and independent);
- ``policy``: which periods may run inline (only where Luigi could not tell the difference);
- ``inline``: running a period inside a chunk as Luigi's worker runs a task, and reporting it;
- ``wire``: those reports to luigid over one keep-alive connection;
- ``watch``: the range's closing line, progress bar and luigid status, from the ledger.

The rule, with the list of the Luigi settings it honours, is in ``docs/inline.md``. Only the
range adapter (``range.py``, ``range_session.py``) imports this package.
"""
