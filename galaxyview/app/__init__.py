"""The Qt viewer: window, controls, heads-up display and the worker thread that steps the engine."""
