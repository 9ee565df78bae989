"""Errors ddrl raises for bad input. The CLI prints them as one line."""


class DdrlError(Exception):
    """Base class: a problem the user can fix, with a message saying how."""


class ConfigError(DdrlError):
    """A study or run config is malformed."""


class CheckpointError(DdrlError):
    """A checkpoint is missing, incomplete or belongs to another run."""


class OutputError(DdrlError, OSError):
    """An output cannot be written (disk full, read-only folder). An OSError too, so code
    that handles a failed write keeps working; the message names the output's path."""

    def __str__(self) -> str:
        return self.strerror or super().__str__()
