"""Collision modules (engines/modules.py COLLISIONS)."""
