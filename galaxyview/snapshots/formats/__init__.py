"""One module a snapshot format, each a `Format` (snapshots/format.py) listed in
snapshots/registry.py."""
