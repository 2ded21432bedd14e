"""AVI-Bench: its four-level taxonomy (`levels`), its task measures (`measures`), its suite (`suite`: a user's
download of the task files converted, answered and scored) and its commands. Its data is never shipped or trained
on."""

from .suite import AviBench

__all__ = ["AviBench"]
