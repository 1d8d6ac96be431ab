"""The docs site and the commands its pages show."""
