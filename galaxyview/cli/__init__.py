"""Command line: argument parsing only; the work is in galaxyview.jobs, movie and app."""
