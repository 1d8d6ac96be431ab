"""The HTML coverage report."""
