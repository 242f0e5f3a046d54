"""Global memory: named byte buffers at 64-bit addresses, per-lane typed access, tensor maps.

    address space (bytes)
    0x0000_0001_0000_0000 ┬ buffer "A"  (256-B aligned, contiguous uint8)
                          ├ gap (256 B guard)
                          ├ buffer "B"
                          ...
    0x0000_7f00_0000_0000 ┬ tensor-map handles (64-B aligned, 128 B each: a `.tmap` param value)

A buffer is a numpy uint8 array; `view(name, dtype, shape)` gives a typed numpy view of it (what a
test uses to fill inputs and read results). Per-lane loads/stores (`load`, `store`) take an array
of addresses; every byte must lie inside one buffer or `IllegalInstruction` names the address.
Tensor maps (`isa.tensormap` objects, or anything the TMA copy accepts) are registered and get a
handle address; the executor resolves a `.tmap` param value through `tensor_map(handle)`.

Not modelled: caching, coherence, alignment faults of the hardware beyond natural alignment.
"""

from __future__ import annotations

import bisect

import numpy as np

from hopsim.functional.errors import IllegalInstruction

GMEM_BASE = 0x1_0000_0000
TMAP_BASE = 0x7F00_0000_0000
ALIGN = 256


class GlobalMemory:
    """Named global buffers (see module docstring)."""

    def __init__(self):
        self._names: list[str] = []
        self._bases: list[int] = []
        self._bufs: list[np.ndarray] = []
        self._next = GMEM_BASE
        self._tmaps: dict[int, object] = {}
        self._tmap_names: dict[str, int] = {}

    # ----------------------------------------------------------------------------- buffers
    def reserve(self, name: str, nbytes: int) -> int:
        """Address space for buffer `name` without its data (timing-only runs): reads give zeros,
        per-lane stores are dropped; nothing of size `nbytes` is allocated. Returns the base address, the
        one `alloc` would give."""
        return self.alloc(name, np.broadcast_to(np.zeros(1, dtype=np.uint8), (int(nbytes),)), copy=False)

    def alloc(self, name: str, data, copy: bool = True) -> int:
        """Allocate buffer `name` holding `data` (an int byte count -> zeros, or an array whose
        bytes are copied). Returns its base address (256-B aligned)."""
        if name in self._names:
            raise ValueError(f"global buffer {name!r} already allocated")
        if isinstance(data, (int, np.integer)):
            buf = np.zeros(int(data), dtype=np.uint8)
        elif not copy:
            buf = data
        else:
            buf = np.frombuffer(np.ascontiguousarray(data).tobytes(), dtype=np.uint8).copy()
        base = self._next
        self._next = (base + buf.nbytes + 2 * ALIGN - 1) // ALIGN * ALIGN  # >= 1 granule of guard
        self._names.append(name)
        self._bases.append(base)
        self._bufs.append(buf)
        return base

    def snapshot(self) -> list:
        """Copies of the buffers' bytes (None for a reserved, read-only one), for `restore`."""
        return [b.copy() if b.flags.writeable else None for b in self._bufs]

    def restore(self, snap: list) -> None:
        """Put the bytes of `snapshot()` back into the same buffers (in place)."""
        for b, saved in zip(self._bufs, snap):
            if saved is not None:
                b[...] = saved

    def address(self, name: str) -> int:
        return self._bases[self._names.index(name)]

    def buffer(self, name: str) -> np.ndarray:
        """The raw uint8 array of a buffer (writable)."""
        return self._bufs[self._names.index(name)]

    def view(self, name: str, dtype, shape=None) -> np.ndarray:
        """Typed view of a buffer (shares memory)."""
        v = self.buffer(name).view(dtype)
        return v if shape is None else v.reshape(shape)

    def locate(self, addr: int, nbytes: int = 1) -> tuple[int, int]:
        """(buffer index, offset) of [addr, addr+nbytes); IllegalInstruction if outside a buffer."""
        i = int(np.searchsorted(self._bases, addr, side="right")) - 1
        if i < 0 or addr + nbytes > self._bases[i] + self._bufs[i].nbytes:
            raise IllegalInstruction(f"global access [0x{addr:x}, 0x{addr + nbytes:x}) outside every buffer "
                                     f"({', '.join(f'{n}@0x{b:x}+{len(x)}' for n, b, x in zip(self._names, self._bases, self._bufs))})")
        return i, addr - self._bases[i]

    def read(self, addr: int, nbytes: int) -> np.ndarray:
        """A copy of nbytes at addr (uint8)."""
        i, off = self.locate(addr, nbytes)
        return self._bufs[i][off:off + nbytes].copy()

    def write(self, addr: int, data) -> None:
        b = np.frombuffer(np.ascontiguousarray(data).tobytes(), dtype=np.uint8)
        i, off = self.locate(addr, b.nbytes)
        if self._bufs[i].flags.writeable:  # a reserved buffer (timing-only) keeps no data
            self._bufs[i][off:off + b.nbytes] = b

    def region(self, addr: int, nbytes: int) -> np.ndarray:
        """A writable uint8 view of [addr, addr+nbytes) (must lie in one buffer)."""
        i, off = self.locate(addr, nbytes)
        return self._bufs[i][off:off + nbytes]

    # ----------------------------------------------------------------------------- per-lane access
    def _lane_buffer(self, al: list, size: int) -> int:
        """The buffer index of a warp access of `size` bytes at each address of `al` (a list);
        IllegalInstruction when an address is outside the buffers, the access spans two of them,
        or an address is not `size`-aligned."""
        lo, hi = min(al), max(al)
        i = bisect.bisect_right(self._bases, lo) - 1
        if i < 0 or hi + size > self._bases[i] + self._bufs[i].nbytes:
            self.locate(lo, 1)
            self.locate(hi, size)  # raises with a message (or the range spans two buffers)
            raise IllegalInstruction(f"one warp access spans two global buffers (0x{lo:x} .. 0x{hi:x})")
        if size & (size - 1) == 0:
            bad = [x for x in al if x & (size - 1)]
        else:
            bad = [x for x in al if x % size]
        if bad:
            raise IllegalInstruction(f"misaligned global access of {size} B at 0x{bad[0]:x}")
        return i

    def _lane_offsets(self, addrs: np.ndarray, size: int) -> tuple[np.ndarray, int]:
        al = np.asarray(addrs).tolist()
        i = self._lane_buffer(al, size)
        return np.asarray(al, dtype=np.int64) - self._bases[i], i

    def load(self, addrs: np.ndarray, dtype, count: int = 1) -> np.ndarray:
        """Per-lane load: values[len(addrs), count] of dtype from each address (a vector of `count`
        consecutive elements per lane, as ld.global.v2/v4)."""
        dtype = np.dtype(dtype)
        size = dtype.itemsize * count
        off, i = self._lane_offsets(addrs, size)
        idx = off[:, None] + np.arange(size)
        return self._bufs[i][idx].view(dtype).reshape(len(off), count)

    def store(self, addrs: np.ndarray, values, dtype, count: int = 1) -> None:
        """Per-lane store of values[len(addrs), count] (dtype) to each address. `values` may be a
        function () -> the values, called only when the buffer keeps data (not a reserved one)."""
        dtype = np.dtype(dtype)
        size = dtype.itemsize * count
        if len(addrs) == 0:
            return
        al = np.asarray(addrs).tolist()
        i = self._lane_buffer(al, size)
        if not self._bufs[i].flags.writeable:  # a reserved buffer (timing-only) keeps no data
            return
        off = np.asarray(al, dtype=np.int64) - self._bases[i]
        if callable(values):
            values = values()
        data = np.ascontiguousarray(np.asarray(values, dtype=dtype).reshape(len(off), count)).view(np.uint8)
        idx = off[:, None] + np.arange(size)
        self._bufs[i][idx] = data.reshape(len(off), size)

    # ----------------------------------------------------------------------------- tensor maps
    def register_tensor_map(self, name: str, tmap) -> int:
        """Register a tensor map under `name`; returns its handle address (the `.tmap` param value)."""
        if name in self._tmap_names:
            handle = self._tmap_names[name]
        else:
            handle = TMAP_BASE + 128 * len(self._tmap_names)
            self._tmap_names[name] = handle
        self._tmaps[handle] = tmap
        return handle

    def tensor_map(self, handle: int):
        try:
            return self._tmaps[int(handle)]
        except KeyError:
            raise IllegalInstruction(f"0x{int(handle):x} is not a registered tensor map handle "
                                     f"(known: {', '.join(f'{n}=0x{h:x}' for n, h in self._tmap_names.items()) or 'none'})") from None

    def buffers(self) -> dict[str, tuple[int, int]]:
        """name -> (base address, nbytes)."""
        return {n: (b, x.nbytes) for n, b, x in zip(self._names, self._bases, self._bufs)}
