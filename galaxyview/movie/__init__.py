"""Movies: the H.264 encoder with safe output (encoder) and the headless recorder (recorder)."""

from galaxyview.movie.encoder import MovieError, MovieWriter, check_output

__all__ = ["MovieError", "MovieWriter", "check_output"]
