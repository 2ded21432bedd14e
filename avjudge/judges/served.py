"""A judge whose forward pass runs in an OpenAI-compatible server (vLLM or SGLang serving the judge's merged
checkpoint).

Everything but the forward pass stays here, from the same checkpoint folder as a local judge: decoding, the frames
a judge sees (sampled at its fps and resized to the size its vision encoder takes, so the server's processor does
not resize them again), the audio at 16 kHz, the system turn and the question (`avjudge.prompts`), and the Yes /
No token ids and calibration. Each clip is one chat request for one token at temperature 0 with the log
probabilities of the allowed answer tokens, penalties off:

- vLLM: serve with ``--logprobs-mode processed_logprobs`` so the log probabilities come after the request's
  ``allowed_token_ids`` (the Yes and No variants); S is then exactly P(Yes) / (P(Yes) + P(No)). In the default
  ``raw_logprobs`` mode they are the model's own, and a variant outside the top 20 is missing from its sum.
- Frames go as vLLM's JPEG frame list (``data:video/jpeg;base64,...``), audio as a 32-bit float WAV.

S = sigmoid((log P(Yes) - log P(No)) / temperature), as the local judge computes it.
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..config import ConfigError
from ..errors import HTTPFailure
from ..httpjson import RequestCache, post_json
from ..llm.content import audio_url_part, frame_list_part, jpeg_base64, text_part, wav_base64
from ..prompts import CHAT_FORMATS, media_kinds, render_query
from .adapters import JudgeSample, adapter_for
from .judge import Judge, JudgeSettings, _Work, settings_for, warn_of_card
from .scorer import ScoreResult

JPEG_QUALITY = 95
# log probabilities asked for: vLLM's default --max-logprobs, so that in its raw mode the answers are likely listed
TOP_LOGPROBS = 20


@dataclass(frozen=True)
class ServedEndpoint:
    """Where the judge's model is served. ``url``: the server's OpenAI base (``http://HOST:8000/v1``); ``model``:
    its served model name; ``token``: a bearer token, if the server wants one; ``retries``: of a 5xx or a lost
    connection, with backoff; ``cache``: answers kept by request content, so a clip asked again (another job, a
    rerun) costs no request."""

    url: str
    model: str
    token: str | None = None
    timeout: float = 300.0
    retries: int = 3
    cache: RequestCache | None = None


class ServedJudge(Judge):
    """A Yes/No judge scored by a served model; results, errors and settings are a local `Judge`'s."""

    def __init__(self, adapter, settings: JudgeSettings, endpoint: ServedEndpoint):
        if adapter.sync_spec:
            raise ConfigError(
                f"{adapter.checkpoint} has a sync adapter (avjudge.judges.sync_adapter), which an OpenAI-compatible "
                "server cannot run: it needs the thinker's merged media inside the forward pass; score it locally"
            )
        if settings.use_audio_in_video:
            raise ConfigError("a served judge sends the audio as its own item: use_audio_in_video is not served")
        super().__init__(adapter, settings)
        if self.task.choices:
            raise ConfigError(f"a served judge answers Yes or No; {self.task.name} is a multiple-choice task")
        self.endpoint = endpoint

    @classmethod
    def load(cls, task: str, checkpoint: str | Path, endpoint: ServedEndpoint, **settings) -> "ServedJudge":
        """A served judge of ``checkpoint``: its tokenizer, processor settings and training record, no weights."""
        path = Path(checkpoint)
        warn_of_card(path)
        return cls(adapter_for(path).around(None, path), settings_for(task, path, settings), endpoint)

    def _load_args(self) -> tuple:
        return (self.endpoint,)

    @property
    def holds_interpreter(self) -> bool:
        return False  # the model runs in its server; here a request waits, the lock let go

    # -- the request -----------------------------------------------------------------------
    def prepare(self, sample: JudgeSample, answer: str | None = None) -> dict:
        """The chat request that scores ``sample``."""
        if answer is not None:
            raise ConfigError("a served judge scores; it does not train")
        content = []
        for kind in media_kinds(self.task.name):
            content.append(self._video_part(sample) if kind == "video" else self._audio_part(sample.audio))
        content.append(text_part(render_query(self.task.name, sample.text, sample.utterance)))
        system = self.settings.system_prompt
        system = CHAT_FORMATS[self.adapter.family].system if system is None else system or None
        messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": content}]
        answers = list(self.head.yes_ids + self.head.no_ids)
        request = {
            "model": self.endpoint.model,
            "messages": messages,
            "max_tokens": 1,
            "temperature": 0.0,
            "logprobs": True,
            "top_logprobs": max(TOP_LOGPROBS, len(answers)),
            "allowed_token_ids": answers,
            "return_tokens_as_token_ids": True,
            "repetition_penalty": 1.0,
            "presence_penalty": 0.0,
            "frequency_penalty": 0.0,
        }
        if sample.frames is not None:
            request["mm_processor_kwargs"] = {"fps": sample.fps}
        return request

    def _video_part(self, sample: JudgeSample) -> dict:
        height, width = self.adapter.vision.target_size(*sample.frames.shape[1:3])
        return frame_list_part([jpeg_base64(frame, JPEG_QUALITY, (width, height)) for frame in sample.frames])

    def _audio_part(self, audio: np.ndarray) -> dict:
        return audio_url_part(wav_base64(audio, self.settings.sample_rate, float32=True))

    # -- the answer ------------------------------------------------------------------------
    def result(self, reply: dict) -> ScoreResult:
        """S from a chat reply's log probabilities of the first token."""
        try:
            listed = reply["choices"][0]["logprobs"]["content"][0]["top_logprobs"]
            logprobs = {_token_id(entry["token"]): entry["logprob"] for entry in listed}
        except (KeyError, IndexError, TypeError, ValueError) as err:
            return ScoreResult.failed(f"the server's reply carries no token log probabilities ({err!r})")
        yes = [logprobs[i] for i in self.head.yes_ids if i in logprobs]
        no = [logprobs[i] for i in self.head.no_ids if i in logprobs]
        if not yes or not no:
            missing = "Yes" if not yes else "No"
            return ScoreResult.failed(f"no {missing} answer among the server's top log probabilities")
        return self.head.result(_logsumexp(yes), _logsumexp(no))

    def _ask(self, request: dict) -> ScoreResult:
        url = self.endpoint.url.rstrip("/") + "/chat/completions"
        try:
            endpoint = self.endpoint
            reply = post_json(url, request, endpoint.token, endpoint.timeout, endpoint.retries, cache=endpoint.cache)
        except HTTPFailure as err:
            if not err.final:  # the server is down or overloaded, not this clip's fault: stop, a rerun resumes
                raise
            return ScoreResult.failed(str(err))
        return self.result(reply)

    def _score_window(self, window: list[_Work]) -> list[_Work]:
        # the server batches concurrent requests itself: keep batch_size of them in flight
        with ThreadPoolExecutor(max(1, self.settings.batch_size)) as pool:
            for work, result in zip(window, pool.map(lambda w: self._ask(w.prepared), window)):
                work.result = result
        return window

    def generate(self, samples, max_new_tokens: int = 64):
        raise ConfigError("a served judge scores Yes/No; ask its server for text directly")


def _token_id(token: str) -> int:
    """vLLM's ``return_tokens_as_token_ids`` spelling: ``token_id:1234``."""
    prefix, _, number = token.partition(":")
    if prefix != "token_id":
        raise ValueError(f"token {token!r} is not given as an id: the request asks return_tokens_as_token_ids")
    return int(number)


def _logsumexp(values: list[float]) -> float:
    top = max(values)
    return top + math.log(sum(math.exp(v - top) for v in values))


def load_judge(
    task: str, checkpoint: str | Path, endpoint: ServedEndpoint | None = None, defer_weights: bool = False, **settings
) -> Judge:
    """The judge of ``checkpoint``: scored by the server at ``endpoint`` where one is given, else loaded here
    (`Judge.load`, which takes ``defer_weights``)."""
    if endpoint is not None:
        return ServedJudge.load(task, checkpoint, endpoint, **settings)
    return Judge.load(task, checkpoint, defer_weights=defer_weights, **settings)
