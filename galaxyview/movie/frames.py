"""Numbered PNG frames (what planetarium playback systems take): the MovieWriter's interface,
one file a frame named from a printf pattern (`frames/%05d.png`: 00000.png, 00001.png, ...).

Every name is checked before any work (existing files are refused unless overwrite; a missing
folder is created when its parent exists); each frame is written beside its name and renamed
into place, by a thread (Pillow), so a stopped recording keeps every frame written so far and
no half-written file."""
from __future__ import annotations

import os
import queue
import threading
from pathlib import Path


from galaxyview.files import check_output_path, open_temp, remove_quietly, remove_stale_temps
from galaxyview.movie.encoder import MovieError, check_fps, check_size, put_frame, rgb_frame

_STOP = object()


def is_pattern(text) -> bool:
    """Whether an output name asks for numbered PNG frames (a %d pattern ending in .png)."""
    name = str(text)
    return name.lower().endswith(".png") and "%" in Path(name).name


def frame_pattern(text) -> str:
    """The checked pattern: one %d field (with flags and width), in the file name, .png."""
    name = str(Path(text).expanduser())
    try:
        a, b = name % 0, name % 1
    except (TypeError, ValueError):
        a = b = None
    if not is_pattern(name) or a is None or a == b or "%" in str(Path(name).parent):
        raise MovieError(f"{text}: PNG frames need a file name with one number field and "
                         "ending in .png, e.g. frames/%05d.png")
    return name


class FrameWriter:
    """Write RGB frames as numbered PNG files; `path` is their folder once closed."""

    def __init__(self, pattern, fps: int = 30, size=(1920, 1080), overwrite: bool = False, *,
                 frames: int = 1, queue_frames: int = 4, compress_level: int = 1):
        self.pattern = frame_pattern(pattern)
        self.fps, self.size = check_fps(fps), check_size(size)
        self.folder = Path(self.pattern).parent
        if not self.folder.exists() and self.folder.parent.is_dir():
            try:
                self.folder.mkdir()
            except OSError as exc:
                raise MovieError(f"cannot create the folder {self.folder} ({exc.strerror}); "
                                 "choose another folder") from None
        for i in range(frames):  # every name, before any work
            check_output_path(self.name(i), overwrite, error=MovieError)
        if not os.access(self.folder, os.W_OK):
            raise MovieError(f"{self.folder}: no permission to write here; choose a folder "
                             "you can write to")
        self.path = self.folder
        self.overwrite, self.compress_level = overwrite, compress_level
        self.frames_written = 0
        self._error: BaseException | None = None
        self._queue: queue.Queue = queue.Queue(maxsize=max(1, queue_frames))
        self._closed = False
        self._thread = threading.Thread(target=self._write, name="png-frames", daemon=True)
        self._thread.start()

    def name(self, i: int) -> Path:
        return Path(self.pattern % i)

    def add_frame(self, rgb, copy: bool = True) -> None:
        """Queue one frame: (H, W, 3) or (H, W, 4) uint8, top row first."""
        if self._closed:
            raise MovieError(f"{self.pattern}: the frames are already closed")
        put_frame(self._queue, rgb_frame(rgb, self.size, copy), self._raise_if_failed)

    def close(self) -> Path:
        """Write the queued frames; return the folder. MovieError if none was written."""
        if not self._closed:
            self._closed = True
            self._queue.put(_STOP)
            self._thread.join()
        self._raise_if_failed()
        if self.frames_written == 0:
            raise MovieError(f"{self.pattern}: no frames were recorded")
        return self.path

    def abort(self) -> None:
        """Stop writing; the frames already written are kept."""
        if not self._closed:
            self._closed = True
            try:
                while True:
                    self._queue.get_nowait()
            except queue.Empty:
                pass
            self._queue.put(_STOP)
            self._thread.join(timeout=30)

    def _raise_if_failed(self) -> None:
        if self._error is not None:
            raise MovieError(f"{self.pattern}: writing frame {self.frames_written} failed "
                             f"({self._error}); {self.frames_written} frames were written. "
                             "Check free disk space and the folder's permissions")

    def _write(self) -> None:
        from PIL import Image

        while True:
            frame = self._queue.get()
            if frame is _STOP:
                return
            if self._error is not None:
                continue
            target = self.name(self.frames_written)
            temp = None
            try:
                if target.exists() and not self.overwrite:
                    raise FileExistsError(f"{target} already exists; pass --overwrite")
                if self.frames_written == 0:  # a killed run's frame in the making
                    remove_stale_temps(target, any_name=True)
                temp, fd = open_temp(target, ".part", clean=False)
                with os.fdopen(fd, "wb") as out:
                    Image.fromarray(frame).save(out, format="PNG",
                                                compress_level=self.compress_level)
                os.replace(temp, target)
                self.frames_written += 1
            except OSError as exc:
                if temp is not None:
                    remove_quietly(temp)
                self._error = exc
