"""A NeMo Curator pipeline that keeps the clips avjudge's judges and metrics pass. Copy it, set the paths, then
    pip install -c constraints.txt ".[judges,metrics,curator]"
    python nemo_curator_avjudge.py clips.jsonl
Each line of the input: {"video": PATH}. Here every file is one clip; in a full NeMo pipeline the stage goes after
its clipping and transcoding stages (each ``clip.buffer`` is an encoded clip)."""

import json
import sys
import uuid
from pathlib import Path

from nemo_curator.backends.xenna import XennaExecutor
from nemo_curator.pipeline import Pipeline
from nemo_curator.tasks.video import Clip, Video, VideoTask

from avjudge.integrations.nemo_curator import AvjudgeFilterStage

tasks = []
for line in Path(sys.argv[1]).read_text().splitlines():
    video = Path(json.loads(line)["video"])
    clip = Clip(uuid=uuid.uuid4(), source_video=str(video), span=(0.0, 0.0), buffer=video.read_bytes())
    tasks.append(VideoTask(dataset_name="clips", data=Video(input_video=video, clips=[clip])))
stage = AvjudgeFilterStage(
    dimensions="av,dnsmos", judges={"av": "/ckpt/judges/av"}, min={"av": 0.7, "dnsmos": 3.0}, gpus=0.0
)  # gpus=1.0 where the workers have one
for task in Pipeline(name="avjudge", stages=[stage]).run(XennaExecutor(), initial_tasks=tasks):
    for clip in task.data.clips:
        print(json.dumps({"video": clip.source_video, "kept": True, **clip.avjudge["scores"]}))
    for clip in task.data.filtered_clips:
        print(
            json.dumps(
                {
                    "video": clip.source_video,
                    "kept": False,
                    **clip.avjudge["scores"],
                    "error": clip.errors.get("avjudge"),
                }
            )
        )
