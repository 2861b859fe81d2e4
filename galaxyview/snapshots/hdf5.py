"""Guarded reads from HDF5 files that may be damaged or lie about their sizes: every failure a
SnapshotError naming the file and the dataset or attribute; no dataset read before its declared
size is compared with the bytes the file holds of it."""
from __future__ import annotations

import math
import os
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from galaxyview.errors import SnapshotError

# what h5py raises on damaged metadata (and numpy on values of the wrong kind)
ERRORS = (OSError, RuntimeError, KeyError, ValueError, TypeError, AttributeError, IndexError)
DEFLATE_RATIO = 1032  # the most a deflate stream expands; other filters are taken alike
SIGNATURE = b"\x89HDF\r\n\x1a\n"
_MISSING = object()


def is_hdf5(path) -> bool:
    """The file starts with HDF5's signature."""
    try:
        with open(path, "rb") as f:
            return f.read(8) == SIGNATURE
    except OSError:
        return False


@contextmanager
def opened(path):
    """The HDF5 file `path` open for reading (h5py); what h5py raises on a damaged file, there
    or in the block, a SnapshotError naming it."""
    try:
        import h5py
    except ImportError:  # a runtime dependency; say how to get it back
        raise SnapshotError("HDF5 snapshots need h5py: pip install h5py") from None
    try:
        with h5py.File(path, "r") as f:
            yield f
    except (OSError, RuntimeError, KeyError) as exc:  # h5py's, where no guard named the object
        raise SnapshotError(f"{path}: an HDF5 file that cannot be read (truncated or "
                            f"corrupt: {exc})") from None


def sniff(path, test) -> bool:
    """test(file, path) on the HDF5 file `path`; False for a file that is not HDF5."""
    if not is_hdf5(path):
        return False
    with opened(path) as f:
        return bool(test(f, path))


def damaged(path, what: str, exc: BaseException) -> SnapshotError:
    """The error of an HDF5 read that failed: `what` is the object read."""
    return SnapshotError(f"{path}: {what} cannot be read ({type(exc).__name__}: {exc}); the "
                         f"file is damaged or incomplete")


def _name(obj, key: str = "") -> str:
    base = obj.name.rstrip("/") if getattr(obj, "name", None) else ""
    return f"{base}/{key}" if key else base or "/"


def has(obj, key: str, path) -> bool:
    """`key` in the group (or file) `obj`, a damaged link a SnapshotError."""
    try:
        return obj is not None and key in obj
    except ERRORS as exc:
        raise damaged(path, f"group {_name(obj)}", exc) from None


def get(obj, key: str, path):
    """obj[key] (a group or dataset), None where there is none."""
    if not has(obj, key, path):
        return None
    try:
        return obj[key]
    except ERRORS as exc:
        raise damaged(path, f"{_name(obj, key)}", exc) from None


def names(obj, path) -> list[str]:
    """The member names of group `obj`."""
    try:
        return list(obj)
    except ERRORS as exc:
        raise damaged(path, f"group {_name(obj)}", exc) from None


def attr(obj, key: str, path, default=_MISSING):
    """Attribute `key` of `obj` as stored, `default` when absent (else SnapshotError)."""
    where = f"attribute {key!r} of {_name(obj)}"
    try:
        present = obj is not None and key in obj.attrs
        if present:
            return obj.attrs[key]
    except ERRORS as exc:
        raise damaged(path, where, exc) from None
    if default is _MISSING:
        raise SnapshotError(f"{path}: {where} is missing; the file is damaged or incomplete")
    return default


def _numbers(value, path, where: str) -> np.ndarray:
    array = np.ravel(np.asarray(value))
    if array.dtype.kind not in "biuf":
        raise SnapshotError(f"{path}: {where} = {value!r}: must be a number; the file is "
                            f"damaged")
    return array


def number(obj, key: str, path, default=_MISSING, *, positive: bool = False) -> float:
    """Attribute `key` of `obj` as one finite number (> 0 with `positive`)."""
    value = attr(obj, key, path, default)
    if value is default:
        return default
    where = f"attribute {key!r} of {_name(obj)}"
    array = _numbers(value, path, where)
    if len(array) != 1:
        raise SnapshotError(f"{path}: {where} holds {len(array)} values, not one number; the "
                            f"file is damaged")
    x = float(array[0])
    if not math.isfinite(x) or (positive and not x > 0):
        raise SnapshotError(f"{path}: {where} = {x:g}: must be a finite number"
                            + (" > 0" if positive else "") + "; the file is damaged")
    return x


def counts(obj, key: str, path, default=_MISSING) -> np.ndarray:
    """Attribute `key` of `obj` as whole numbers >= 0 (int64)."""
    value = attr(obj, key, path, default)
    if value is default:
        return default
    where = f"attribute {key!r} of {_name(obj)}"
    array = _numbers(value, path, where).astype(np.float64)
    if not (np.isfinite(array).all() and (array >= 0).all() and (array == np.round(array)).all()
            and (array < 2**62).all()):
        raise SnapshotError(f"{path}: {where} = {np.ravel(value).tolist()}: particle counts "
                            f"must be whole numbers >= 0; the file is damaged")
    return array.astype(np.int64)


def _held(dataset, path) -> int:
    """The bytes of the file (or, for a virtual dataset, of its source files) that can hold
    the dataset's values."""
    size = os.path.getsize(path)
    if dataset.is_virtual:
        folder, total = Path(path).parent, 0
        for source in dataset.virtual_sources():
            name = source.file_name
            target = Path(path) if name == "." else folder / name
            total += os.path.getsize(target) if target.is_file() else 0
        return total
    stored = min(int(dataset.id.get_storage_size()), size)
    filtered = dataset.id.get_create_plist().get_nfilters() > 0
    return stored * DEFLATE_RATIO if filtered else stored


def array(obj, key: str, path, *, width: int | None = None, rows: int | None = None,
          numeric: bool = True, any_shape: bool = False) -> np.ndarray:
    """Dataset `key` of group `obj`, checked before it is read: numbers (with `numeric`), shape
    (rows,) or (rows, width) (rows None: any; with `any_shape` any shape), and no more values
    than the file holds bytes for (a header or shape that promises more is damage, not a
    reason to allocate)."""
    dataset = get(obj, key, path)
    where = f"dataset {_name(obj, key)}"
    if dataset is None:
        raise SnapshotError(f"{path}: {where} is missing; the file is damaged or incomplete")
    try:
        shape, dtype = dataset.shape, dataset.dtype
        need = (math.prod(shape) if shape is not None else 0) * dtype.itemsize
        held = _held(dataset, path)
    except ERRORS as exc:
        raise damaged(path, where, exc) from None
    if numeric and dtype.kind not in "biuf":
        raise SnapshotError(f"{path}: {where} holds {dtype} values, not numbers; the file is "
                            f"damaged")
    want = ((rows if rows is not None else "N",) if width is None else
            (rows if rows is not None else "N", width))
    fits = shape is not None and (any_shape or len(shape) == len(want) and all(
        w in ("N", s) for w, s in zip(want, shape)))
    if not fits:
        raise SnapshotError(f"{path}: {where} has shape {shape}, expected "
                            f"({', '.join(map(str, want))}{',' if len(want) == 1 else ''}); "
                            f"the file is damaged")
    if need > held:
        raise SnapshotError(f"{path}: {where} declares {shape} values of {dtype} ({need:,} "
                            f"bytes), but the file holds {held:,} bytes for it: its header or "
                            f"shape is damaged, or the file is truncated")
    try:
        return dataset[()]
    except ERRORS as exc:
        raise damaged(path, where, exc) from None
