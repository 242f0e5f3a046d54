"""Print a Kernel as IR text; the law is `parse(to_text(k)) == k`.

Layout: the `.kernel` line, then one line per `.param`, `.shared` and `.reg` declaration, a blank
line, and the body with instructions indented by four spaces and labels at column 0:

    .kernel axpy
    .param .u64 x_ptr
    .reg .u32 %r<4>

        mov.u32 %r0, %tid.x;
    DONE:
        exit;
"""

from __future__ import annotations

from isa.ir.program import Kernel, LabelDef

__all__ = ["to_text"]


def to_text(kernel: Kernel, *, abbreviate: bool = True) -> str:
    """IR text of `kernel`. `abbreviate=False` spells every register of a vector (`{%a0, %a1, ...}`)
    instead of ranges (`{%a0..%a63}`), as ptxas wants it."""
    lines = [f".kernel {kernel.name}"]
    lines += [p.text() for p in kernel.params]
    lines += [s.text() for s in kernel.shared]
    lines += [r.text() for r in kernel.regs]
    lines.append("")
    for item in kernel.body:
        if isinstance(item, LabelDef):
            lines.append(item.text())
        else:
            lines.append("    " + item.text(abbreviate))
    return "\n".join(lines) + "\n"
