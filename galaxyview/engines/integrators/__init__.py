"""Integrators, one module per scheme and engine kind (registered in engines/modules.py)."""
