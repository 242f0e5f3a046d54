"""Tile plans of CTAs that walk a tensor's boxes in a linear order that is not affine in the
box coordinates (persistent CTAs: CTA b copies boxes b, b + G, b + 2G, ... of a row-major box
grid, `kernels/membound/tmacopy.py --ctas G`).

Such a CTA's box coordinates ((t mod C) * box_cols, (t div C) * box_rows) wrap from row to row,
so they are neither affine in %ctaid nor a translation of CTA 0's (memo.TilePlan refuses them) and
every CTA was simulated in detail. The tensor map defines the box grid, so each aligned box has a
linear index L (row-major over the grid of boxes, innermost dimension first); in L the walk is
affine (L_j(b) = L_j(0) + b, plus a truncation: the last CTAs make one trip fewer). `BoxGrid`
maps a TMA tile key (handle, coords) to (handle, (L,)) and back, `LinearTilePlan` is a
`memo.TilePlan` over those keys: affine (with truncation) in %ctaid, checked on sample CTAs when
built and on every CTA simulated in detail (runner.py compares `keyed(run.tiles)`), as the
affine plan is. L2 residency is decided on the linear keys (a bijection with the boxes), so the
hit vectors, and with them the memo, are those of the boxes themselves.
Not covered (no plan, CTA by CTA): boxes not aligned to the box grid, element strides, a walk
that is not affine in L either (e.g. a data-dependent tile scheduler)."""

from __future__ import annotations

from hopsim.timing import memo as memo_mod


class BoxGrid:
    """Linear box index of the aligned boxes of each tensor map (handle -> TensorMap from gmem)."""

    def __init__(self, gmem):
        self._gmem = gmem
        self._grids: dict = {}

    def _grid(self, handle):
        g = self._grids.get(handle, False)
        if g is False:
            g = None
            try:
                tm = self._gmem.tensor_map(handle)
            except (KeyError, TypeError, ValueError, AttributeError):
                tm = None
            if tm is not None and all(s == 1 for s in (tm.element_strides or ())):
                box, dims = tuple(tm.box_dims), tuple(tm.global_dims)
                counts = tuple(-(-d // b) for d, b in zip(dims, box))
                g = (box, counts)
            self._grids[handle] = g
        return g

    def linear(self, handle, coords: tuple) -> tuple | None:
        """(L,) of the box at `coords` of tensor map `handle`, or None (not a tensor map, not an
        aligned box inside the tensor)."""
        g = self._grid(handle)
        if g is None or len(coords) != len(g[0]):
            return None
        box, counts = g
        lin, span = 0, 1
        for c, b, n in zip(coords, box, counts):
            q, r = divmod(c, b)
            if r or not 0 <= q < n:
                return None
            lin += q * span
            span *= n
        return (lin,)

    def coords(self, handle, lin: tuple) -> tuple:
        box, counts = self._grid(handle)
        out, rest = [], lin[0]
        for b, n in zip(box, counts):
            rest, q = divmod(rest, n)
            out.append(q * b)
        return tuple(out)

    def rows(self, rows: list) -> list | None:
        """A CTA's captured (handle, coords, nbytes) rows in linear keys; ld.global lines kept;
        None if a TMA tile is not an aligned box of its tensor map."""
        out = []
        for row in rows:
            new = []
            for h, co, nb in row:
                if h != memo_mod.GLINE:
                    co = self.linear(h, co)
                    if co is None:
                        return None
                new.append((h, co, nb))
            out.append(new)
        return out


class LinearTilePlan(memo_mod.TilePlan):
    """A `TilePlan` whose TMA tile keys are linear box indices (`BoxGrid`)."""

    grid: BoxGrid | None = None

    def keyed(self, tiles: list) -> list:
        """A CTA's recorded (handle, coords) tiles per warp in this plan's keys."""
        g = self.grid
        return [[(h, co if h == memo_mod.GLINE else g.linear(h, co)) for h, co in row] for row in tiles]

    @classmethod
    def build_linear(cls, launch, make_executor, gmem, also=()) -> "LinearTilePlan | None":
        grid = BoxGrid(gmem)
        plan = cls.build(launch, make_executor, transform=grid.rows, also=also)
        if plan is not None:
            plan.grid = grid
        return plan
