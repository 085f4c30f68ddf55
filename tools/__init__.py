"""Developer tools kept beside the project (not installed): cleanup of stray resources."""
