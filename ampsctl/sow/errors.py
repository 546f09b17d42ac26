"""SOW errors: every one is an InputError (exit 3) that names the file or journal place."""

from __future__ import annotations

from ampsctl.errors import InputError, Location


class SowFileError(InputError):
    """A SOW file that cannot be used: not a SOW file, an unknown version, or damaged."""

    def __init__(self, path: str, message: str, *, hint: str, code: str = "SOW_FILE", damaged: bool = False) -> None:
        super().__init__(message, code=code, hint=hint, location=Location(path))
        self.path = path
        self.damaged = damaged  # True: the file was a SOW file once (recovery rebuilds it)


class ReplayError(InputError):
    """A journal record the SOW cannot apply (a message without its key fields, a bad sow_delete)."""

    def __init__(self, sequence: int, topic: str, message: str, *, hint: str | None = None, code: str = "SOW_REPLAY") -> None:
        super().__init__(f"journal record {sequence} (topic '{topic}'): {message}", code=code, hint=hint)
        self.sequence = sequence
        self.topic = topic
