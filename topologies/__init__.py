"""Mininet topologies and the Mininet helpers that build and tear them down."""
