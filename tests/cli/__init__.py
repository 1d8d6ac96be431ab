"""The gatekeeper command."""
