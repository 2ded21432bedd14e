"""Answering a suite's questions: with a judge's backbone (the option letters' next-token probabilities) or with any
model behind an OpenAI-compatible chat endpoint (its text, from the suite's own prompt; vLLM, SGLang and the
hosted APIs speak it), sent what of each clip the configuration asks (`request_media.MediaPlan`).

Both write answers JSONL ``{"id", "model", "response", ...}`` as they go and resume: a rerun asks only what is not
answered yet, and asks again what failed for a reason that may pass (a request that failed; a clip that could not
be read is final). One answers file holds one model's answers.
"""

from __future__ import annotations

import hashlib
import json
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from ...httpjson import HTTPFailure, post_json
from ...jsonl import JsonlWriter, read_jsonl, write_json
from ...judges.choice import ChoiceQuestion, answer_questions, question_samples
from ...judges.scorer import ChoiceResult
from ...runtime.jobs import run_job
from ..dimensions import BenchError
from .request_media import MediaPlan, MediaUnavailable


class RequestFailed(HTTPFailure):
    """A request that did not get an answer; ``final`` when asking again cannot help (a bad request, a bad clip)."""


def _previous(out: Path, model: str) -> dict[str, dict]:
    """The answers already in ``out``, by id (the last line per id); an error if they are another model's."""
    done = {}
    for record in read_jsonl(out):
        if record.get("model") != model:
            raise BenchError(
                f"{out} holds answers of {record.get('model')!r}, not {model!r}: give each model its own answers file"
            )
        done[str(record["id"])] = record
    return done


def answer_with_judge(
    judge, questions: list[ChoiceQuestion], out: Path, model: str, progress: bool = True, generate: int = 0
) -> list:
    """The judge's letter for each question, with the letters' probabilities; or, with ``generate`` tokens, the
    backbone's own greedy text for the suite's parser to read. A clip it cannot read is an error."""
    _previous(out, model)
    if generate:
        return _generate_answers(judge, questions, out, model, generate, progress)

    def row(question: ChoiceQuestion, result: ChoiceResult) -> dict:
        if not result.ok:
            return {"id": question.id, "model": model, "response": None, "error": result.error, "final": True}
        n = len(question.options)
        return {"id": question.id, "model": model, "response": result.answer(n), "probs": result.offered(n)}

    return answer_questions(judge, questions, out, progress=progress, row=row)


class RequestCache:
    """Answers by request content (a hash of the endpoint, the model and the whole request body, media included):
    asking the same thing again, in any run, costs nothing."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)

    @staticmethod
    def key(url: str, body: bytes) -> str:
        return hashlib.sha256(url.encode() + b"\0" + body).hexdigest()

    def get(self, key: str) -> str | None:
        path = self.folder / f"{key}.json"
        return json.loads(path.read_text(encoding="utf-8"))["response"] if path.is_file() else None

    def put(self, key: str, response: str) -> None:
        write_json(self.folder / f"{key}.json", {"response": response})


def _generate_answers(judge, questions, out: Path, model: str, tokens: int, progress: bool) -> list[dict]:
    def process(chunk: list[dict]) -> list[dict]:
        rows = []
        for item in chunk:
            (text,) = judge.generate(question_samples(judge, [item["question"]]), tokens)
            row = {"id": item["id"], "model": model}
            failed = {"response": None, "error": getattr(text, "error", None), "final": True}
            rows.append({**row, **({"response": text} if isinstance(text, str) else failed)})
        return rows

    run_job([{"id": q.id, "question": q} for q in questions], out, process, 1, progress, "questions")
    done = {str(r["id"]): r for r in read_jsonl(out)}
    return [done[q.id] for q in questions if q.id in done]


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
        body = json.dumps(self.request_body(question), sort_keys=True).encode()
        key = RequestCache.key(f"{self.completions_url} {self.model}", body)
        cached = self.cache.get(key) if self.cache else None
        if cached is not None:
            return cached
        answer = self._post(body)
        if self.cache:
            self.cache.put(key, answer)
        return answer

    def _post(self, body: bytes) -> str:
        try:
            reply = post_json(self.completions_url, body, self.api_key, self.timeout, self.retries, self.backoff)
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
    comes; what failed for a reason that may pass is asked again on the next run."""
    done = _previous(out, endpoint.model)
    todo = [q for q in questions if q.id not in done or (done[q.id].get("error") and not done[q.id].get("final"))]

    def ask(question: ChoiceQuestion) -> dict:
        row = {"id": question.id, "model": endpoint.model}
        try:
            return {**row, "response": endpoint.ask(question)}
        except RequestFailed as err:
            return {**row, "response": None, "error": str(err), "final": err.final}

    with (
        JsonlWriter(out) as writer,
        ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool,
        tqdm(total=len(questions), initial=len(questions) - len(todo), desc="questions", disable=not progress) as bar,
    ):
        for future in as_completed([pool.submit(ask, q) for q in todo]):
            record = future.result()
            writer.write(record)
            done[record["id"]] = record
            bar.update()
    return [done[q.id] for q in questions if q.id in done]
