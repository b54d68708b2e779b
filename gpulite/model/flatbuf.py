"""A bounds-checked FlatBuffer table reader.

flatc's generated Python trusts every offset in the file, so a corrupted model turns into
``struct.error``, ``IndexError`` or a loop over a four-billion-element vector. This reader
checks every offset, vtable and vector length against the buffer before it touches the
bytes and raises :class:`~gpulite.errors.ModelError` naming the table and field instead.
Vectors of scalars come back as zero-copy numpy views into the file.
"""

from __future__ import annotations

import struct

import numpy as np

from gpulite.errors import ModelError

_SCALAR = {
    "bool": ("<?", 1), "i8": ("<b", 1), "u8": ("<B", 1), "i16": ("<h", 2), "u16": ("<H", 2),
    "i32": ("<i", 4), "u32": ("<I", 4), "i64": ("<q", 8), "u64": ("<Q", 8),
    "f32": ("<f", 4), "f64": ("<d", 8),
}
_NP = {
    "bool": np.bool_, "i8": np.int8, "u8": np.uint8, "i16": np.int16, "u16": np.uint16,
    "i32": np.int32, "u32": np.uint32, "i64": np.int64, "u64": np.uint64,
    "f32": np.float32, "f64": np.float64,
}


class Buffer:
    """The whole file, with checked little-endian reads."""

    def __init__(self, data: bytes | bytearray | memoryview | np.ndarray) -> None:
        self.array = np.frombuffer(data, dtype=np.uint8)
        self.data = self.array.data
        self.size = len(self.array)

    def check(self, pos: int, nbytes: int, what: str) -> None:
        if pos < 0 or nbytes < 0 or pos + nbytes > self.size:
            raise ModelError(
                f"{what}: needs bytes [{pos}, {pos + nbytes}) but the file has {self.size} bytes"
                " (truncated or corrupted offset)"
            )

    def read(self, kind: str, pos: int, what: str):
        fmt, n = _SCALAR[kind]
        self.check(pos, n, what)
        return struct.unpack_from(fmt, self.data, pos)[0]

    def root(self, name: str) -> Table:
        if self.size < 8:
            raise ModelError(f"file is {self.size} bytes; a FlatBuffer needs at least 8")
        return Table(self, self.read("u32", 0, "root offset"), name)


class Table:
    """One FlatBuffer table; ``slot`` is the field id from the schema."""

    __slots__ = ("buf", "name", "pos", "vt_len", "vtable")

    def __init__(self, buf: Buffer, pos: int, name: str) -> None:
        self.buf, self.name, self.pos = buf, name, pos
        vt = pos - buf.read("i32", pos, f"{name} vtable offset")
        vt_len = buf.read("u16", vt, f"{name} vtable")
        if vt_len < 4 or vt_len % 2:
            raise ModelError(f"{name}: vtable length {vt_len} is invalid (expected an even number >= 4)")
        buf.check(vt, vt_len, f"{name} vtable")
        obj_len = buf.read("u16", vt + 2, f"{name} vtable")
        buf.check(pos, obj_len, f"{name} table body")
        self.vtable, self.vt_len = vt, vt_len

    def _field(self, slot: int) -> int:
        off = 4 + 2 * slot
        if off >= self.vt_len:
            return 0
        rel = self.buf.read("u16", self.vtable + off, f"{self.name} vtable")
        return self.pos + rel if rel else 0

    def has(self, slot: int) -> bool:
        return self._field(slot) != 0

    def scalar(self, slot: int, kind: str, default=0):
        p = self._field(slot)
        return self.buf.read(kind, p, f"{self.name} field {slot}") if p else default

    def _deref(self, slot: int, what: str) -> int:
        p = self._field(slot)
        if not p:
            return 0
        target = p + self.buf.read("u32", p, f"{self.name}.{what} offset")
        self.buf.check(target, 4, f"{self.name}.{what}")
        return target

    def table(self, slot: int, name: str) -> Table | None:
        t = self._deref(slot, name)
        return Table(self.buf, t, name) if t else None

    def _vector(self, slot: int, elem: int, what: str) -> tuple[int, int]:
        v = self._deref(slot, what)
        if not v:
            return 0, 0
        n = self.buf.read("u32", v, f"{self.name}.{what} length")
        self.buf.check(v + 4, n * elem, f"{self.name}.{what} ({n} elements of {elem} bytes)")
        return v + 4, n

    def string(self, slot: int, what: str = "string") -> str | None:
        start, n = self._vector(slot, 1, what)
        if not start:
            return None
        try:
            return bytes(self.buf.data[start : start + n]).decode("utf-8")
        except UnicodeDecodeError as e:
            raise ModelError(f"{self.name}.{what}: not valid UTF-8 ({e.reason})") from None

    def array(self, slot: int, kind: str, what: str = "vector") -> np.ndarray | None:
        """Zero-copy numpy view of a vector of scalars, or None when absent."""
        dt = np.dtype(_NP[kind]).newbyteorder("<")
        start, n = self._vector(slot, dt.itemsize, what)
        if not start:
            return None if not self.has(slot) else np.zeros(0, dt)
        return np.frombuffer(self.buf.data, dtype=dt, count=n, offset=start)

    def tables(self, slot: int, name: str) -> list[Table]:
        start, n = self._vector(slot, 4, name + "s")
        out = []
        for i in range(n):
            p = start + 4 * i
            out.append(Table(self.buf, p + self.buf.read("u32", p, name), f"{name}[{i}]"))
        return out

    def strings(self, slot: int, what: str) -> list[str]:
        start, n = self._vector(slot, 4, what)
        out = []
        for i in range(n):
            p = start + 4 * i
            s = p + self.buf.read("u32", p, what)
            ln = self.buf.read("u32", s, what)
            self.buf.check(s + 4, ln, f"{self.name}.{what}[{i}]")
            out.append(bytes(self.buf.data[s + 4 : s + 4 + ln]).decode("utf-8", "replace"))
        return out
