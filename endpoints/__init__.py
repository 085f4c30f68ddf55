"""Test endpoints run inside Mininet hosts: MRC-style sender/receiver and traffic helpers."""
