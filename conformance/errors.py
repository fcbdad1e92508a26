"""User-facing errors: one line naming the field and what was expected; the CLI exits 2."""


class UserError(Exception):
    """Bad input from a user (manifest, keys, reports, options). Printed as one line, exit 2."""

    exit_code = 2

    def __init__(self, message: str, *, field: str | None = None) -> None:
        self.field = field
        super().__init__(f"{field}: {message}" if field else message)
