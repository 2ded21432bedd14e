"""Answering a suite's questions: with a judge's backbone (the option letters' next-token probabilities, or its
own greedy text) or with any model behind an OpenAI-compatible chat endpoint (its text, from the suite's own prompt;
vLLM, SGLang and the hosted APIs speak it), sent what of each clip the configuration asks (`request_media.MediaPlan`).

Every way writes answers JSONL ``{"id", "model", "response", ...}`` through the one resumable job loop
(`avjudge.runtime.run_job`): a rerun asks only what is not answered yet. A question that cannot be answered (a clip
that cannot be read, a request the endpoint refuses) is recorded with its ``error``; an endpoint that does not answer
at all stops the run after its retries, and a rerun asks the rest. One answers file holds one model's answers.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from ..data.questions import ChoiceQuestion
from ..errors import HTTPFailure
from ..httpjson import RequestCache, post_json
from ..jsonl import read_jsonl
from ..judges.choice import check_answerable
from ..runtime.jobs import run_job
from ..scoring.questions import question_samples
from .base import SuiteError
from .request_media import MediaPlan, MediaUnavailable

LETTER_CHUNK = 64  # questions a judge answers together: a clip is decoded once for all its questions in a chunk


class RequestFailed(HTTPFailure):
    """A request that did not get an answer; ``final`` when asking again cannot help (a bad request, a bad clip)."""


def _check_model(out: Path, model: str) -> None:
    """An answers file holds one model's answers: another model's is an error."""
    for record in read_jsonl(out):
        if record.get("model") != model:
            raise SuiteError(
                f"{out} holds answers of {record.get('model')!r}, not {model!r}: give each model its own answers file"
            )


def _answers(questions: list[ChoiceQuestion], out: Path, process, chunk: int, progress: bool) -> list[dict]:
    """Each question's answer, asked by ``process`` (one row per question of a chunk) unless ``out`` has it."""
    run_job([{"id": q.id, "question": q} for q in questions], out, process, chunk, progress, "questions")
    done = {str(r["id"]): r for r in read_jsonl(out)}
    return [done[q.id] for q in questions if q.id in done]


def _failed(row: dict, error: str) -> dict:
    return {**row, "response": None, "error": error}


def answer_with_judge(
    judge, questions: list[ChoiceQuestion], out: Path, model: str, progress: bool = True, generate: int = 0
) -> list[dict]:
    """The judge's letter for each question, with the letters' probabilities; or, with ``generate`` tokens, the
    backbone's own greedy text for the suite's parser to read. A clip it cannot read is an error."""
    _check_model(out, model)
    if not generate:
        check_answerable(judge, questions)

    def letters(chunk: list[dict]) -> list[dict]:
        asked = [item["question"] for item in chunk]
        rows = []
        for q, result in zip(asked, judge.score_samples(question_samples(judge, asked))):
            row = {"id": q.id, "model": model}
            n = len(q.options)
            rows.append(
                {**row, "response": result.answer(n), "probs": result.offered(n)}
                if result.ok
                else _failed(row, result.error)
            )
        return rows

    def texts(chunk: list[dict]) -> list[dict]:
        asked = [item["question"] for item in chunk]
        rows = []
        for q, text in zip(asked, judge.generate(question_samples(judge, asked), generate)):
            row = {"id": q.id, "model": model}
            rows.append({**row, "response": text} if isinstance(text, str) else _failed(row, text.error))
        return rows

    return _answers(questions, out, texts if generate else letters, 1 if generate else LETTER_CHUNK, progress)


@dataclass(frozen=True)
class Endpoint:
    """An OpenAI-compatible chat-completions endpoint, the model it serves, and what of each clip it is sent."""

    url: str  # http://host:8000/v1 or the full .../chat/completions
    model: str
    api_key: str | None = None
    max_tokens: int = 1024
    timeout: float = 300.0
    retries: int = 3
    backoff: float = 1.0  # seconds before the first retry; doubled each time
    media: MediaPlan = MediaPlan()
    cache: RequestCache | None = None

    @property
    def completions_url(self) -> str:
        url = self.url.rstrip("/")
        return url if url.endswith("/chat/completions") else f"{url}/chat/completions"

    def request_body(self, question: ChoiceQuestion) -> dict:
        """The chat request: the clip's parts inline, then the suite's prompt; greedy decoding as the papers do."""
        try:
            parts = self.media.parts(question)
        except MediaUnavailable as err:
            raise RequestFailed(str(err), final=True) from err
        return {
            "model": self.model,
            "messages": [{"role": "user", "content": parts}],
            "temperature": 0.0,
            "max_tokens": self.max_tokens,
        }

    def ask(self, question: ChoiceQuestion) -> str:
        """The model's text answer (from the cache when this exact request was answered before); transient
        failures are retried with backoff, then raised."""
        try:
            reply = post_json(
                self.completions_url,
                self.request_body(question),
                self.api_key,
                self.timeout,
                self.retries,
                self.backoff,
                self.cache,
            )
        except HTTPFailure as err:
            raise RequestFailed(str(err), err.final) from err
        try:
            return reply["choices"][0]["message"]["content"] or ""
        except (KeyError, IndexError, TypeError) as err:
            raise RequestFailed(
                f"{self.completions_url} answered without choices[0].message ({err})", final=True
            ) from err


def answer_with_endpoint(
    endpoint: Endpoint, questions: list[ChoiceQuestion], out: Path, concurrency: int = 4, progress: bool = True
) -> list[dict]:
    """Each question asked of ``endpoint`` (``concurrency`` requests in flight), its text written to ``out`` as it
    comes; a request the endpoint refuses, or a clip that cannot be sent, is that question's error."""
    _check_model(out, endpoint.model)

    def ask(question: ChoiceQuestion) -> dict:
        row = {"id": question.id, "model": endpoint.model}
        try:
            return {**row, "response": endpoint.ask(question)}
        except RequestFailed as err:
            if not err.final:  # the endpoint did not answer after its retries: stop, a rerun asks again
                raise
            return _failed(row, str(err))

    def process(chunk: list[dict]) -> list[dict]:
        with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
            return list(pool.map(ask, [item["question"] for item in chunk]))

    return _answers(questions, out, process, 4 * max(1, concurrency), progress)
