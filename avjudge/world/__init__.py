"""A deterministic synthetic audio-video world whose clips carry exact ground truth."""

from .captions import captions
from .make import MANIFEST, make_world, render_clip, summarize, world_manifest, world_record
from .render import object_look, render_frames
from .scene import Event, Scene, Speech, WorldObject, sample_scene, scene_id
from .sound import render_audio
from .world_config import WorldConfig

__all__ = [
    "Event",
    "MANIFEST",
    "Scene",
    "Speech",
    "WorldConfig",
    "WorldObject",
    "captions",
    "make_world",
    "object_look",
    "render_audio",
    "render_clip",
    "render_frames",
    "sample_scene",
    "scene_id",
    "summarize",
    "world_manifest",
    "world_record",
]
