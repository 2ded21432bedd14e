"""avjudge: train and run judges of generated audio-video."""

__version__ = "0.2.0.dev0"
