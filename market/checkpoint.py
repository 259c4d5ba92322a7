"""Checkpoints as data only: a model's ``state_dict()`` to bytes and back, and nothing that can run code.

A checkpoint lives in the run database, and a database is input: anyone who
can write the file or reach the server chooses its bytes. ``pickle.loads`` of
those bytes runs whatever they say (a ``__reduce__`` that calls ``os.system``),
so checkpoints are not pickles. The format::

    MAGIC | FORMAT (2 bytes, big-endian) | npz archive

The archive (``np.load(allow_pickle=False)``) holds ``state``, the state as
JSON text, and every array as its own ``.npy`` member. JSON keeps what it
can (None, bool, int of any size, float exactly, str, list, dict with str
keys); everything else is an object with a ``"~"`` tag: ``tuple``, ``set``,
``frozenset``, ``dict`` (other keys), ``ndarray`` and ``npscalar`` (a member,
dtype kept), ``tensor`` (a member plus the torch dtype). Round trips are exact:
a tuple stays a tuple (``random.setstate`` needs one), int64 stays int64.

Reading is bounded by the bytes given, because an archive can declare or inflate to far more than it
holds (a few MB of deflated zeros is gigabytes): only ``state`` and the members it refers to are read, each
at most once; the members' declared sizes must fit in the archive itself (:func:`encode` stores members
uncompressed) and are checked before any byte is inflated, reading stops one byte past it, and an array's
header (dtype, shape) must describe exactly the bytes that follow before an array is made.
"""

from __future__ import annotations

import io
import json
import sys
import zipfile

import numpy as np

MAGIC = b"CATALLAX-CHECKPOINT\n"
FORMAT = 1  # raise when the encoding changes; decode refuses any other version
TAG = "~"


class CheckpointError(ValueError):
    """Bytes that are not a checkpoint this catallax reads (foreign, damaged, another format, a pickle)."""


def encode(state) -> bytes:
    """``state`` (nested containers of scalars, numpy arrays, torch tensors) as checkpoint bytes."""
    arrays: list[np.ndarray] = []
    text = json.dumps(_encode(state, arrays, "state"), separators=(",", ":"))
    members = {"state": np.frombuffer(text.encode(), dtype=np.uint8)} | {f"a{i}": a for i, a in enumerate(arrays)}
    buf = io.BytesIO()
    np.savez(buf, allow_pickle=False, **members)
    return MAGIC + FORMAT.to_bytes(2, "big") + buf.getvalue()


def decode(data: bytes):
    """The state :func:`encode` wrote. Raises :class:`CheckpointError` for anything else; never unpickles."""
    data = bytes(data)
    if not data.startswith(MAGIC):
        if data[:1] == b"\x80":  # pickle protocol 2+
            raise CheckpointError(f"a pickled checkpoint from an older catallax, not loaded (unpickling runs "
                                  f"code); this catallax reads checkpoint format {FORMAT}: start the run again")
        raise CheckpointError("not a catallax checkpoint")
    version = int.from_bytes(data[len(MAGIC):len(MAGIC) + 2], "big")
    if version != FORMAT:
        raise CheckpointError(f"checkpoint format version {version}, this catallax reads {FORMAT}")
    try:
        with zipfile.ZipFile(io.BytesIO(data[len(MAGIC) + 2:])) as archive:
            declared = sum(info.file_size for info in archive.infolist())
            if declared > len(data):
                raise CheckpointError(f"a damaged catallax checkpoint (its members declare {declared} bytes, more "
                                      f"than the {len(data)}-byte checkpoint holds)")
            members = _Members(archive, limit=len(data))
            return _decode(json.loads(members["state"].tobytes()), members)
    except CheckpointError:
        raise
    except Exception as err:  # noqa: BLE001 (zip, npy header, JSON, tags: all of it is the file's fault)
        raise CheckpointError(f"a damaged catallax checkpoint ({type(err).__name__}: {err})") from None


class _Members:
    """The archive's arrays by name, each read on first use and only once, within ``limit`` bytes."""

    def __init__(self, archive: zipfile.ZipFile, limit: int):
        self.archive, self.limit, self.used = archive, limit, set()

    def __getitem__(self, name: str) -> np.ndarray:
        if name in self.used:
            raise CheckpointError(f"a damaged catallax checkpoint (member {name!r} referred to twice)")
        self.used.add(name)
        info = self.archive.getinfo(f"{name}.npy")
        if info.file_size > self.limit:
            raise CheckpointError(f"a damaged catallax checkpoint (member {name!r} declares {info.file_size} bytes, "
                                  f"more than the {self.limit}-byte checkpoint holds)")
        with self.archive.open(info) as f:
            raw = f.read(info.file_size + 1)
        if len(raw) != info.file_size:
            raise CheckpointError(f"a damaged catallax checkpoint (member {name!r} is not the size it declares)")
        return _array(name, raw)


def _array(name: str, raw: bytes) -> np.ndarray:
    """The ``.npy`` bytes as an array, once its header's dtype and shape account for exactly the bytes after it."""
    f = io.BytesIO(raw)
    read_header = {(1, 0): np.lib.format.read_array_header_1_0,
                   (2, 0): np.lib.format.read_array_header_2_0}.get(np.lib.format.read_magic(f))
    if read_header is None:
        raise CheckpointError(f"a damaged catallax checkpoint (member {name!r}: not an .npy version 1 or 2)")
    shape, fortran, dtype = read_header(f)
    if dtype.hasobject:
        raise CheckpointError(f"a damaged catallax checkpoint (member {name!r} holds objects)")
    count = 1
    for n in shape:
        count *= n
    if count * dtype.itemsize != len(raw) - f.tell():
        raise CheckpointError(f"a damaged catallax checkpoint (member {name!r}: its shape {shape} does not match "
                              "its bytes)")
    array = np.frombuffer(raw, dtype=dtype, offset=f.tell(), count=count)
    return array.reshape(shape, order="F" if fortran else "C")


SCALARS = (type(None), bool, int, float, str)


def _encode(x, arrays: list, path: str):
    if type(x) in SCALARS:
        return x
    if type(x) in (list, tuple) and all(type(v) in SCALARS for v in x):  # e.g. random.getstate()'s 625 ints
        return list(x) if type(x) is list else {TAG: "tuple", "v": list(x)}
    if type(x) is list:
        return [_encode(v, arrays, f"{path}[{i}]") for i, v in enumerate(x)]
    if type(x) is dict and all(type(k) is str for k in x) and TAG not in x:
        return {k: _encode(v, arrays, f"{path}.{k}") for k, v in x.items()}
    if type(x) is dict:
        return {TAG: "dict", "k": [_encode(k, arrays, path) for k in x],
                "v": [_encode(v, arrays, f"{path}[{k!r}]") for k, v in x.items()]}
    if type(x) in (tuple, set, frozenset):
        return {TAG: type(x).__name__, "v": [_encode(v, arrays, f"{path}[{i}]") for i, v in enumerate(x)]}
    if isinstance(x, (np.ndarray, np.generic)):
        if x.dtype.hasobject:
            raise TypeError(f"checkpoint: {path} is an object array (only plain dtypes are data)")
        arrays.append(np.asarray(x))
        return {TAG: "ndarray" if isinstance(x, np.ndarray) else "npscalar", "i": len(arrays) - 1}
    torch = sys.modules.get("torch")  # a state holds tensors only if torch is already imported
    if torch is not None and isinstance(x, torch.Tensor):
        t = x.detach().cpu().contiguous()
        raw = t.numpy() if t.dtype in _numpy_dtypes(torch) else t.reshape(-1).view(torch.uint8).numpy()
        arrays.append(raw)
        return {TAG: "tensor", "i": len(arrays) - 1, "dtype": str(t.dtype).removeprefix("torch."),
                "shape": list(t.shape)}
    raise TypeError(f"checkpoint: {path} is a {type(x).__module__}.{type(x).__qualname__}, not data")


def _decode(x, arrays: _Members):
    if isinstance(x, list):
        return [_decode(v, arrays) for v in x]
    if not isinstance(x, dict):
        return x
    if TAG not in x:
        return {k: _decode(v, arrays) for k, v in x.items()}
    tag = x[TAG]
    if tag == "dict":
        return dict(zip((_decode(k, arrays) for k in x["k"]), (_decode(v, arrays) for v in x["v"]), strict=True))
    if tag in ("tuple", "set", "frozenset"):
        return {"tuple": tuple, "set": set, "frozenset": frozenset}[tag](_decode(v, arrays) for v in x["v"])
    if tag in ("ndarray", "npscalar", "tensor"):
        a = arrays[f"a{int(x['i'])}"].copy()  # frombuffer gives read-only views of the archive
        if tag == "ndarray":
            return a
        if tag == "npscalar":
            return a[()]
        import torch

        dtype = getattr(torch, x["dtype"])
        if not isinstance(dtype, torch.dtype):
            raise CheckpointError(f"a damaged catallax checkpoint (unknown tensor dtype {x['dtype']!r})")
        t = torch.from_numpy(a)
        return t if t.dtype == dtype else t.view(dtype).reshape(x["shape"])
    raise CheckpointError(f"a damaged catallax checkpoint (unknown tag {tag!r})")


def _numpy_dtypes(torch) -> set:
    """The torch dtypes numpy holds as they are (others, e.g. bfloat16, travel as their bytes)."""
    return {torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16,
            torch.float32, torch.float64, torch.complex64, torch.complex128}
