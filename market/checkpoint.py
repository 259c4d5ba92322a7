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
"""

from __future__ import annotations

import io
import json
import sys

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
        with np.load(io.BytesIO(data[len(MAGIC) + 2:]), allow_pickle=False) as archive:
            members = {name: archive[name] for name in archive.files}
        tree = json.loads(members.pop("state").tobytes())
        return _decode(tree, members)
    except CheckpointError:
        raise
    except Exception as err:  # noqa: BLE001 (zip, npy header, JSON, tags: all of it is the file's fault)
        raise CheckpointError(f"a damaged catallax checkpoint ({type(err).__name__}: {err})") from None


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


def _decode(x, arrays: dict):
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
        a = arrays[f"a{int(x['i'])}"].copy()  # np.load gives read-only views of the archive
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
