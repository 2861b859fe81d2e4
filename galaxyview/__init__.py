"""galaxyview: a real-time galaxy collision viewer built on a GPU Barnes-Hut tree code."""

__version__ = "0.1.0"
