"""Boundary modules (engines/modules.py BOUNDARIES)."""
