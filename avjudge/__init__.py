"""avjudge: train and run judges of generated audio-video."""

__version__ = "0.1.0"
