"""The bad-input rule's check, shared by the CLI tests: stderr holds exactly one line and no traceback."""

from __future__ import annotations


def one_error_line(capsys) -> str:
    """The one non-blank stderr line the command wrote (asserting there is no traceback and no other line)."""
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [x for x in err.splitlines() if x.strip()]
    assert len(lines) == 1, err
    return lines[0]
