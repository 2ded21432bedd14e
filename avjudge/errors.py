"""The base of every error avjudge reports to a user (a message that names the thing and the fix), and which
errors stop a run rather than mark one clip failed."""

from concurrent.futures import BrokenExecutor


class AvjudgeError(Exception):
    """Raised for bad input or configuration; the CLI prints it without a traceback."""


class HTTPFailure(Exception):
    """A request that got no usable answer; ``final`` when asking again cannot help."""

    def __init__(self, message: str, final: bool):
        super().__init__(message)
        self.final = final


# Errors of the code or the machine, not of a clip: recorded per clip, they would mark every clip done with them (a
# pool whose process died, killed for memory, is one).
RUN_FAULTS = (MemoryError, AttributeError, TypeError, NameError, ImportError, BrokenExecutor)


def is_run_fault(err: BaseException) -> bool:
    """Whether ``err`` stops a run instead of failing one clip: a bug, running out of memory (torch's CUDA
    out-of-memory included), or a server that may answer on the next run. A rerun scores those clips."""
    transient = isinstance(err, HTTPFailure) and not err.final
    return isinstance(err, RUN_FAULTS) or transient or type(err).__name__ == "OutOfMemoryError"


def reason(err: BaseException) -> str:
    """How a record states an unexpected error of one clip: ``"<Type>: message"``."""
    return f"{type(err).__name__}: {err}"
