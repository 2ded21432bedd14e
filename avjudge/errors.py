"""The base of every error avjudge reports to a user: a message that names the thing and the fix."""


class AvjudgeError(Exception):
    """Raised for bad input or configuration; the CLI prints it without a traceback."""
