"""The example pipelines, end to end."""
