"""A reward for Flow-Factory (X-GenGroup/Flow-Factory), as its own loader builds one: a reward YAML
(`avjudge.rewards.config`) named in its reward configuration.

```yaml
rewards:
  - name: avjudge
    reward_model: avjudge.rewards.FlowFactoryReward
    batch_size: 8
    reward: configs/av_reward.yaml    # the avjudge reward (extra keys reach extra_kwargs)
    fps: 16                           # the rate of its frames
    sample_rate: 16000                # the rate of its audio, where samples carry none
```

Read from Flow-Factory @ 5f6cda1a: ``src/flow_factory/rewards/loader.py`` (``load_reward_model`` builds
``reward_model_class(config=config, accelerator=accelerator)``), ``src/flow_factory/hparams/reward_args.py``
(``RewardArguments``: ``device``, ``dtype``, ``batch_size``, unknown keys in ``extra_kwargs``),
``src/flow_factory/rewards/abc.py`` (``PointwiseRewardModel.__call__(prompt, image, video, audio, ...)``: video
(T, C, H, W) in [0, 1], audio (C, N) in [-1, 1]; ``RewardModelOutput(rewards, extra_info)``) and
``src/flow_factory/rewards/reward_processor.py`` (it keeps the models that are ``PointwiseRewardModel``s, reads
``model.config.batch_size``, passes the sample fields ``model.__call__`` names, and makes a tensor of
``output.rewards``). Where Flow-Factory is installed the class is a ``PointwiseRewardModel``.
"""

from __future__ import annotations

from types import SimpleNamespace

from ..config import ConfigError
from .adapters import failing_as
from .inputs import batch_items, same_lengths
from .reward import Reward, sample


def _pointwise_base() -> type:
    try:  # Flow-Factory's RewardProcessor keeps only its PointwiseRewardModel subclasses
        from flow_factory.rewards.abc import PointwiseRewardModel
    except ImportError:
        return object
    return PointwiseRewardModel


def _output(rewards: list, extra_info: dict):
    try:
        from flow_factory.rewards.abc import RewardModelOutput
    except ImportError:
        return RewardOutput(rewards, extra_info)
    return RewardModelOutput(rewards=rewards, extra_info=extra_info)


class FlowFactoryReward(_pointwise_base()):
    """A Flow-Factory pointwise reward model, ``model(prompt, video=, audio=, audio_sample_rate=) -> output`` with
    ``output.rewards`` and ``output.extra_info`` (each term's value and ``failed``).

    Args:
        config: Flow-Factory's ``RewardArguments`` (its loader passes it): ``extra_kwargs["reward"]`` names the
            reward YAML, ``["fps"]`` the frames' rate, ``["sample_rate"]`` the audio's, ``["on_failure"]`` the
            rule (default neutral), ``device`` where its models run; or, in code, a `Reward`.
        accelerator: Flow-Factory's accelerator (its loader passes it; unused).
        fps, sample_rate, on_failure, batch_size: in code, beside a `Reward`.
    """

    required_fields = ("prompt", "video", "audio")
    use_tensor_inputs = True

    def __init__(self, config, accelerator=None, fps: float | None = None, sample_rate: int | None = None,
                 on_failure=None, batch_size: int = 8):  # fmt: skip
        if isinstance(config, Reward):
            reward, settings = config, SimpleNamespace(batch_size=batch_size, device=None, dtype=None)
        else:
            from .config import load_reward

            settings, extra = config, dict(getattr(config, "extra_kwargs", None) or {})
            if not extra.get("reward"):
                raise ConfigError("Flow-Factory's reward configuration names the avjudge reward YAML: reward: FILE")
            device = str(getattr(config, "device", "auto"))
            reward = load_reward(extra["reward"], [f"device={device}"])
            fps, sample_rate = extra.get("fps", fps), extra.get("sample_rate", sample_rate)
            on_failure = extra.get("on_failure", on_failure)
        self.reward = failing_as(reward, on_failure, "neutral")
        self.fps, self.sample_rate = fps, sample_rate
        self.config, self.accelerator = settings, accelerator  # what Flow-Factory's processor and base read
        self.device, self.dtype, self.model = getattr(settings, "device", None), getattr(settings, "dtype", None), None

    def __call__(self, prompt, video=None, audio=None, audio_sample_rate=None, **_):
        frames = video if video is not None else [None] * len(prompt)  # an audio-only model's samples
        items = batch_items(frames, self.fps, audio, audio_sample_rate or self.sample_rate)
        same_lengths(prompt=prompt, video=items)
        batch = self.reward.score([sample(i, p, group=p) for i, p in zip(items, prompt)])
        return _output(batch.rewards, batch.columns())

    def to(self, device):
        """Flow-Factory moves reward models between devices; avjudge's load where they run."""
        self.device = device
        return self


class RewardOutput:
    """What a Flow-Factory reward model returns where Flow-Factory is not installed: ``rewards`` and
    ``extra_info``."""

    def __init__(self, rewards: list, extra_info: dict):
        self.rewards, self.extra_info = rewards, extra_info
