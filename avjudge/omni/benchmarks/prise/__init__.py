"""PriSe-style primitive-sensation stimuli (after AVI-Bench-PriSe), generated then measured: short clips with one
primitive thing to see, hear, or see and hear, each with exact ground truth and a presence check.

Tasks: ``shape`` (circle, square, triangle), ``colour`` (red, green, blue, yellow), ``position`` (a corner or the
centre), ``size`` (small, medium, large), ``motion`` (left, right, up, down), ``blur`` (sharp or blurred); ``pitch``
(a low or high tone), ``noise`` (a tone or noise), ``beat_count`` (1-6 beats); ``sounds_first`` (two objects flash,
each with its own tone: which sounds first) and ``av_offset`` (one flash and one beep: the sound before, with or
after the picture, by -400..400 ms). Every formal item has a presence-check item (``"confirms": ID``): "Can you see
/ hear anything?", so that its answer counts only if the check is answered right (double confirmation).

Every item's truth is measured again on the decoded file by code that does not know how it was drawn: the shape's
fill of its bounding box, the mean colour of the lit pixels, the centroid and its path, the lit area, the edge
sharpness, the f0 and spectral flatness, the onsets of the sound and the frames where each object lights up. An item
whose measure disagrees is drawn again or rejected, and counted.
"""

from .make import make_prise
from .measures import agrees
from .parser import earliest_option
from .stimuli import TASKS
from .suite import PriSe

__all__ = ["TASKS", "PriSe", "agrees", "earliest_option", "make_prise"]
