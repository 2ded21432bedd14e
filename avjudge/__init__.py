"""avjudge: train and run judges of generated audio-video."""

from . import moved as _moved

__version__ = "0.2.0.dev0"

_moved.install()  # the old paths of modules that moved keep working, with a warning, for one release
