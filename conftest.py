"""Root conftest: makes the repository importable in tests without installing it."""
