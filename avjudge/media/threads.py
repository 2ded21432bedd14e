"""How many threads one clip's FFmpeg work uses.

The frame scaler: one. FFmpeg's default starts a thread per core for every frame it scales and waits for them all,
which cost more than it gave (a world clip decoded in 0.029 s with one thread, 0.047 s with one per core, on 2 cores:
`benchmarks/pipeline_overlap.py`), and beside a busy thread on the same cores every frame waits.

The video decoder: ``decoder`` (0: FFmpeg's choice, a thread per core). A pool of decoding processes sets 1 in each
(`avjudge.media.processes`): its processes are the parallelism.
"""

SCALER = 1
decoder = 0
