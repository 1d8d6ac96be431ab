"""The Luigi adapter: tasks, ranges, the inline machinery, luigid, faults."""
