"""H.264 mp4 writer: ffmpeg (imageio-ffmpeg's binary) fed from a thread, with safe output.

The movie is written to a temporary file beside the destination and renamed into place by
close(), so an interrupted or failed recording never leaves a broken movie under the name asked
for. ffmpeg runs in its own process (and process group, so Ctrl-C reaches only Python); a writer
thread feeds it from a bounded queue, so encoding overlaps with stepping and rendering.

    writer = MovieWriter("merger.mp4", fps=30, size=(1920, 1080))   # checks the path at once
    for ...:
        writer.add_frame(rgb)        # (H, W, 3) or (H, W, 4) uint8, top row first
    writer.close()                   # finishes the movie and renames it into place
"""
from __future__ import annotations

import os
import queue
import subprocess
import threading
from collections import deque
from pathlib import Path

import numpy as np

from galaxyview.errors import GalaxyviewError
from galaxyview.files import check_output_path, open_temp, remove_quietly
from galaxyview.render.yuv import i420_size

SUFFIXES = (".mp4",)
PIXEL_FORMATS = ("rgb24", "yuv420p")
PRESETS = ("auto", "ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow",
           "slower")
AUTO_LARGE = 2560 * 1440  # "auto": veryfast up to this many pixels, superfast above


def auto_preset(size) -> str:
    """x264's preset for "auto": veryfast (OBS Studio's default for recording) up to 2560x1440,
    superfast for larger frames: x264's work grows with the pixels, and with veryfast a 4K
    movie stays under 30 frames/s on 16 cores (docs/recording.md)."""
    width, height = size
    return "veryfast" if width * height <= AUTO_LARGE else "superfast"
_STOP = object()


class MovieError(GalaxyviewError):
    """The movie cannot be written: bad path, size or rate, or the encoder failed."""


def check_output(path, overwrite: bool = False) -> Path:
    """Check that a movie can be written at `path` without doing any work; return it as a Path.

    Refuses a folder, a missing folder, a suffix other than .mp4 and an existing file (unless
    overwrite). Writability is proven by creating (and removing) a file in the folder.
    """
    path = Path(path).expanduser()
    if path.suffix.lower() not in SUFFIXES and not path.is_dir():
        raise MovieError(f"{path}: movies are H.264 mp4 files; give a name ending in .mp4")
    path = check_output_path(path, overwrite, error=MovieError)
    temp, fd = _open_temp(path)
    os.close(fd)
    remove_quietly(temp)
    return path


def _open_temp(path: Path) -> tuple[Path, int]:
    """A new hidden file beside `path` (files.open_temp: .NAME.galaxyview-PID-RANDOM.part;
    stale ones a killed recording left are removed first); (name, fd)."""
    try:
        return open_temp(path, ".part")
    except PermissionError:
        raise MovieError(f"{path}: no permission to write in {path.parent}; choose a "
                         "folder you can write to") from None
    except OSError as exc:
        raise MovieError(f"{path}: cannot write in {path.parent} ({exc.strerror or exc}); "
                         "choose another folder") from None


def check_size(size) -> tuple[int, int]:
    """(width, height) as ints; H.264 in yuv420p needs both even (and at least 16)."""
    try:
        width, height = (int(v) for v in size)
    except (TypeError, ValueError):
        raise MovieError(f"movie size must be (width, height), got {size!r}") from None
    if width < 16 or height < 16 or width > 8192 or height > 8192:
        raise MovieError(f"movie size {width}x{height} is out of range; width and height must "
                         "be in 16..8192")
    if width % 2 or height % 2:
        raise MovieError(f"movie size {width}x{height}: H.264 (yuv420p) needs an even width and "
                         f"height; try {width + width % 2}x{height + height % 2}")
    return width, height


def check_fps(fps) -> int:
    if isinstance(fps, bool) or not isinstance(fps, (int, np.integer)) or not 1 <= fps <= 240:
        raise MovieError(f"frame rate must be a whole number of frames per second in 1..240, "
                         f"got {fps!r}")
    return int(fps)


def _ffmpeg_exe() -> str:
    """The ffmpeg binary that imageio-ffmpeg ships (or the one $IMAGEIO_FFMPEG_EXE names)."""
    try:
        import imageio_ffmpeg

        return imageio_ffmpeg.get_ffmpeg_exe()
    except (ImportError, RuntimeError) as exc:
        raise MovieError(f"no ffmpeg for encoding movies ({exc}); pip install imageio-ffmpeg") \
            from None


def _widen_pipe(pipe) -> None:
    """Ask Linux for a 1 MiB pipe (64 KiB by default): fewer wake-ups per 6 MB frame."""
    try:
        import fcntl

        fcntl.fcntl(pipe.fileno(), fcntl.F_SETPIPE_SZ, 1 << 20)
    except (ImportError, AttributeError, OSError):
        pass  # other systems, or a lower limit: only slower


def rgb_frame(rgb, size, copy: bool = True) -> np.ndarray:
    """An (H, W, 3) uint8 frame of `size` (W, H) from an RGB or RGBA image; MovieError for
    another shape or type. A copy unless `copy` is False (the caller will not change it)."""
    rgb = np.asarray(rgb)
    width, height = size
    if rgb.dtype != np.uint8 or rgb.ndim != 3 or rgb.shape[2] not in (3, 4):
        raise MovieError(f"a movie frame must be an (H, W, 3) uint8 RGB image, got shape "
                         f"{rgb.shape} {rgb.dtype}")
    if rgb.shape[:2] != (height, width):
        raise MovieError(f"frame of {rgb.shape[1]}x{rgb.shape[0]} pixels does not match the "
                         f"movie size {width}x{height}")
    if rgb.shape[2] == 4:
        return np.ascontiguousarray(rgb[:, :, :3])
    return rgb.copy() if copy else np.ascontiguousarray(rgb)


def i420_frame(i420, size, copy: bool = True) -> np.ndarray:
    """Flat I420 bytes (W x H luma, then the two W/2 x H/2 chroma planes) of `size`; MovieError
    for another length or type."""
    i420 = np.asarray(i420)
    width, height = size
    want = i420_size(width, height)
    if i420.dtype != np.uint8 or i420.ndim != 1 or i420.size != want:
        raise MovieError(f"a yuv420p frame of {width}x{height} must be {want} uint8 bytes, got "
                         f"shape {i420.shape} {i420.dtype}")
    return i420.copy() if copy else np.ascontiguousarray(i420)


def put_frame(frames: queue.Queue, frame, raise_if_failed) -> None:
    """Queue `frame` for a writer thread, raising its failure (raise_if_failed) meanwhile."""
    while True:
        raise_if_failed()
        try:
            frames.put(frame, timeout=0.2)
            return
        except queue.Full:
            continue


class MovieWriter:
    """Write RGB frames into an H.264 mp4 movie at `path`.

    path: destination (.mp4); checked here, before any work: an existing file is refused unless
        overwrite, and a missing or unwritable folder fails at once.
    fps: frames per second of the movie (whole number, 1..240).
    size: (width, height), both even.
    crf: x264 constant rate factor (0 lossless .. 51; 18 looks lossless for most content).
    preset: x264 speed/size trade-off (faster presets make bigger files); "auto": by the
        frame's size (auto_preset).
    queue_frames: frames waiting for the encoder before add_frame blocks.
    pixel_format: what add_frame takes: "rgb24" (RGB images; ffmpeg converts them) or
        "yuv420p" (flat I420 bytes, BT.709 limited range, as OffscreenRenderer.read_i420 and
        render.yuv.i420_from_rgb make them: x264 takes them as they are).

    add_frame() copies the frame (unless copy=False), so the caller may reuse its buffer.
    close() finishes the movie and renames it to `path`; abort() discards it. As a context
    manager it closes on success and aborts on an exception.
    """

    def __init__(self, path, fps: int = 30, size=(1920, 1080), overwrite: bool = False, *,
                 crf: int = 18, preset: str = "auto", queue_frames: int = 8,
                 pixel_format: str = "rgb24"):
        self.fps = check_fps(fps)
        self.size = check_size(size)
        if pixel_format not in PIXEL_FORMATS:
            raise MovieError(f"unknown pixel format {pixel_format!r}; choose one of "
                             f"{', '.join(PIXEL_FORMATS)}")
        self.pixel_format = pixel_format
        if preset not in PRESETS:
            raise MovieError(f"unknown x264 preset {preset!r}; choose one of {', '.join(PRESETS)}")
        self.preset = auto_preset(self.size) if preset == "auto" else preset
        if isinstance(crf, bool) or not isinstance(crf, int) or not 0 <= crf <= 51:
            raise MovieError(f"crf must be a whole number in 0..51, got {crf!r}")
        self.path = check_output(path, overwrite)
        self.overwrite = overwrite
        self.frames_written = 0
        self._error: BaseException | None = None
        self._stderr: deque[str] = deque(maxlen=20)
        self._queue: queue.Queue = queue.Queue(maxsize=max(1, queue_frames))
        self._finished: Path | None = None
        ffmpeg = _ffmpeg_exe()
        self.temp_path, fd = _open_temp(self.path)
        os.close(fd)
        try:
            self._proc = subprocess.Popen(
                self._command(ffmpeg, crf, self.preset), stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                start_new_session=True)  # Ctrl-C reaches Python only
        except OSError as exc:
            self._remove_temp()
            raise MovieError(f"cannot start the encoder (ffmpeg): {exc}; reinstall "
                             "imageio-ffmpeg") from None
        _widen_pipe(self._proc.stdin)
        self._feeder = threading.Thread(target=self._feed, name="movie-encoder", daemon=True)
        self._drainer = threading.Thread(target=self._drain, name="movie-stderr", daemon=True)
        self._feeder.start()
        self._drainer.start()
        self._closed = False

    # -- public --------------------------------------------------------------------------------
    def add_frame(self, rgb, copy: bool = True) -> None:
        """Queue one frame: (H, W, 3) or (H, W, 4) uint8 (alpha dropped), H, W = size[1], size[0];
        with pixel_format "yuv420p", flat I420 bytes of the movie's size instead.

        copy=False hands a contiguous array over without a copy: the caller must not touch it
        afterwards.
        """
        if self._closed:
            raise MovieError(f"{self.path}: the movie is already closed")
        frame = (i420_frame(rgb, self.size, copy) if self.pixel_format == "yuv420p"
                 else rgb_frame(rgb, self.size, copy))
        put_frame(self._queue, frame, self._raise_if_failed)

    def close(self) -> Path:
        """Encode the queued frames, finish the file and rename it to `path`; return `path`.

        With no frames at all there is no valid movie: the temporary file is removed and
        MovieError is raised.
        """
        if self._closed:
            if self._finished is None:
                raise MovieError(f"{self.path}: the recording was stopped without a movie")
            return self._finished
        self._closed = True
        try:
            self._queue.put(_STOP)
            self._feeder.join()
            self._finish_process()
            if self._error is not None:
                raise self._failure()
            if self.frames_written == 0:
                raise MovieError(f"{self.path}: no frames were recorded, so no movie was written")
        except BaseException:  # KeyboardInterrupt while finishing too: leave nothing behind
            self._kill()
            self._remove_temp()
            raise
        if self.path.exists() and not self.overwrite:
            raise MovieError(f"{self.path} appeared while recording; the movie is kept as "
                             f"{self.temp_path}")
        os.replace(self.temp_path, self.path)
        self._finished = self.path
        return self.path

    def abort(self) -> None:
        """Stop the encoder and remove the temporary file; nothing is written at `path`."""
        self._closed = True
        self._kill()
        self._remove_temp()

    def __enter__(self) -> "MovieWriter":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()

    # -- internals -----------------------------------------------------------------------------
    def _command(self, ffmpeg: str, crf: int, preset: str) -> list[str]:
        width, height = self.size
        convert = (["-vf", "setparams=range=tv:colorspace=bt709:color_primaries=bt709:"
                           "color_trc=bt709"]  # already BT.709: tagged, not converted
                   if self.pixel_format == "yuv420p"
                   else ["-vf", "scale=out_color_matrix=bt709:out_range=tv"])
        return [
            ffmpeg, "-hide_banner", "-loglevel", "error", "-y",
            "-f", "rawvideo", "-pix_fmt", self.pixel_format, "-s", f"{width}x{height}",
            "-r", str(self.fps), "-i", "-", "-an", *convert,
            "-c:v", "libx264", "-preset", preset, "-crf", str(crf), "-pix_fmt", "yuv420p",
            "-colorspace", "bt709", "-color_primaries", "bt709", "-color_trc", "bt709",
            "-color_range", "tv", "-movflags", "+faststart", "-f", "mp4", str(self.temp_path),
        ]

    def _feed(self) -> None:
        """Writer thread: frames from the queue into ffmpeg's stdin."""
        stdin = self._proc.stdin
        while True:
            frame = self._queue.get()
            if frame is _STOP:
                break
            if self._error is not None:
                continue  # keep draining so add_frame never blocks on a dead encoder
            try:
                stdin.write(memoryview(frame).cast("B"))
                self.frames_written += 1
            except (OSError, ValueError) as exc:
                self._error = exc
        try:
            stdin.close()
        except OSError as exc:
            self._error = self._error or exc

    def _drain(self) -> None:
        for line in self._proc.stderr:
            self._stderr.append(line.decode(errors="replace").rstrip())

    def _finish_process(self) -> None:
        code = self._proc.wait()
        self._drainer.join(timeout=5)
        if code != 0 and self._error is None:
            self._error = RuntimeError(f"exit status {code}")

    def _failure(self) -> MovieError:
        said = "; ".join(line for line in self._stderr if line) or str(self._error)
        return MovieError(f"{self.path}: the encoder (ffmpeg) failed after {self.frames_written} "
                          f"frames: {said}. No movie was written; check free disk space and "
                          "the folder's permissions")

    def _raise_if_failed(self) -> None:
        if self._error is not None or self._proc.poll() not in (None, 0):
            self._closed = True
            self._kill()
            self._drainer.join(timeout=5)
            self._error = self._error or RuntimeError(f"exit status {self._proc.returncode}")
            self._remove_temp()
            raise self._failure()

    def _kill(self) -> None:
        proc = getattr(self, "_proc", None)
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
        feeder = getattr(self, "_feeder", None)
        if feeder is not None and feeder.is_alive():
            try:  # unblock the writer thread
                while True:
                    self._queue.get_nowait()
            except queue.Empty:
                pass
            try:
                self._queue.put(_STOP, timeout=5)
            except queue.Full:
                pass
            feeder.join(timeout=5)

    def _remove_temp(self) -> None:
        remove_quietly(self.temp_path)
