"""Errors shared by every layer.

`HopsimError` is the root; the CLI turns any of them into one line on stderr and exit status 2.
`InputError` means the user gave something invalid: its message names the field or line, the value,
and what would be valid.
"""


class HopsimError(Exception):
    """Base class of every error hopsim raises on purpose."""


class InputError(HopsimError, ValueError):
    """Invalid user input: the message names the field/line, the value and what is allowed."""

    def __init__(self, field: str, value: object, allowed: str, *, where: str | None = None):
        self.field = field
        self.value = value
        self.allowed = allowed
        self.where = where
        loc = f"{where}: " if where else ""
        super().__init__(f"{loc}{field}={value!r} is invalid: {allowed}")
