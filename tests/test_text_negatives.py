import itertools
import json
import shutil
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

from avjudge.jsonl import read_jsonl
from avjudge.llm import BackendError, ChatRequest, OpenAIChatBackend, RuleBackend
from avjudge.llm.lexicons import LEXICONS
from avjudge.llm.rules import closed_lexicons, swap_in_category
from avjudge.perturb.taxonomy import AT_DIMENSIONS, VT_DIMENSIONS, taxonomy
from avjudge.perturb.text import (
    TextNegative,
    TextRejection,
    iter_rotation,
    make_text_negative,
    quality_check,
    similarity,
)
from avjudge.world import MANIFEST


def problem(original: str, modified: str) -> str | None:
    return quality_check(original, modified)[0]


def rotation_of(task: str, n: int, seed: int) -> list[tuple[str, ...]]:
    return list(itertools.islice(iter_rotation(task, seed), n))


def test_taxonomies_match_the_paper_and_lexicons():
    assert len(VT_DIMENSIONS) == 14
    assert len({d.primary for d in AT_DIMENSIONS}) == 15 and len(AT_DIMENSIONS) == 40
    for d in VT_DIMENSIONS + AT_DIMENSIONS:
        assert d.categories and all(c in LEXICONS for c in d.categories), d.key
    for task in ("vt", "at"):
        weights = {d.key: d.weight for d in taxonomy(task)}
        assert abs(sum(weights.values()) - 1) < 1e-9
    vt = {d.key: d.weight for d in taxonomy("vt")}
    assert abs(vt["temporal"] + vt["logical"] - 0.25) < 1e-9


@pytest.mark.parametrize("task", ["vt", "at"])
def test_three_dimension_rotation_is_balanced(task):
    dims = taxonomy(task)
    rotation = rotation_of(task, 1000, seed=5)
    assert all(len(set(r)) == 3 for r in rotation)
    counts = Counter(k for r in rotation for k in r)
    for d in dims:
        expected = 3000 * d.weight
        assert abs(counts[d.key] - expected) <= 0.05 * expected, (d.key, counts[d.key], expected)
    assert rotation == rotation_of(task, 1000, seed=5)


def test_rule_swaps_stay_in_category_and_fix_articles():
    rng = np.random.default_rng(0)
    text, detail = swap_in_category("A small red circle moves.", ["colour"], rng)
    words = set(text.lower().rstrip(".").split())
    assert "red" not in words and len(words & set(LEXICONS["colour"])) == 1
    for seed in range(30):
        out, _ = swap_in_category("It is a red ball.", ["colour"], np.random.default_rng(seed))
        colour = out.split()[3]
        article = out.split()[2]
        assert article == ("an" if colour[0] in "aeiou" else "a"), out
    assert swap_in_category("Nothing to change here.", ["colour"], rng) is None
    out, _ = swap_in_category("Two shapes are visible.", ["count"], rng)
    assert out.split()[0] in {w.capitalize() for w in LEXICONS["count"]} and out.split()[0] != "Two"
    # numbers keep their grammatical number: no "One beats are heard", no "Two shape is visible"
    assert {swap_in_category("Three beats.", ["count"], np.random.default_rng(s))[0].split()[0] for s in range(40)} == {
        w.capitalize() for w in LEXICONS["count"]
    } - {"One", "Three"}
    assert swap_in_category("One shape is visible.", ["count"], rng) is None


def test_a_swap_changes_every_mention_of_the_phrase():
    text = "A purple square grows and an orange ring moves. The purple square flashes. Purple is seen first."
    for seed in range(20):
        out, detail = swap_in_category(text, ["colour"], np.random.default_rng(seed))
        old, new = detail.split("'")[1], detail.split("'")[3]
        assert old.lower() not in out.lower() and out.lower().count(new.lower()) >= text.lower().count(old.lower())
        assert out.split()[0] == ("An" if new[0] in "aeiou" else "A")  # every article still agrees


def test_a_closed_vocabulary_swaps_only_to_words_the_corpus_uses():
    corpus = ["A red circle and a blue square.", "A green circle moves to the left.", "A blue circle."]
    assert closed_lexicons(corpus)["colour"] == ("red", "green", "blue")
    assert "count" not in closed_lexicons(corpus)  # no number word at all: nothing to swap to
    closed, general = RuleBackend(vocabulary=corpus), RuleBackend()

    def request(seed):
        return ChatRequest("", seed=seed, meta={"original": "A red circle and a gray box.", "categories": ["colour"]})

    closed_out = {json.loads(closed.complete(request(s)))["modified_description"] for s in range(30)}
    general_out = {json.loads(general.complete(request(s)))["modified_description"] for s in range(30)}
    assert closed_out == {"A green circle and a gray box.", "A blue circle and a gray box."}  # "gray": not in corpus
    assert len(general_out) > 4


def test_a_closed_vocabulary_makes_no_word_pair_the_corpus_never_has():
    """Every caption's sky is above its grass: a sky "below" or "to the left of" grass is a new word pair, and the
    text alone would give such a negative away; the objects' relation is edited instead."""
    text = "A field under a blue sky above grass. The red circle is to the left of the blue square."
    corpus = [
        text,
        "The blue square is above the red circle.",
        "The green ring is below the red circle.",
        "The red circle is to the right of the green ring.",
    ]

    def request(seed):
        return ChatRequest("", seed=seed, meta={"original": text, "categories": ["spatial", "position"]})

    closed_out = {
        json.loads(RuleBackend(vocabulary=corpus).complete(request(s)))["modified_description"] for s in range(30)
    }
    general_out = {json.loads(RuleBackend().complete(request(s)))["modified_description"] for s in range(30)}
    assert closed_out == {
        text.replace("to the left of", relation) for relation in ("above", "below", "to the right of")
    }
    assert any("sky above grass" not in out for out in general_out)


def test_quality_control():
    original = "Audio Observation: a low tone | Speech Content: hello there"
    assert problem(original, original) == "unchanged"
    assert problem(original, original.replace("Audio Observation:", "Audio:")) == "structural_markers_changed"
    assert problem(original, original.replace(" | ", " ")) == "structural_markers_changed"
    rewritten = "Audio Observation: wholly unrelated sounds of many kinds | Speech Content: nothing alike"
    assert problem(original, rewritten) == "similarity_out_of_range"
    assert problem(original, original.replace("low", "high")) is None
    assert abs(similarity("abcd", "abce") - 0.75) < 1e-9


def test_world_caption_negatives_pass_qc_and_rejections_are_counted(small_world):
    records = list(read_jsonl(small_world / MANIFEST))
    backend = RuleBackend()
    accepted, rejected = 0, Counter()
    for task, field in (("vt", "video"), ("at", "audio")):
        dims = {d.key: d for d in taxonomy(task)}
        for i, (record, chosen) in enumerate(zip(records, rotation_of(task, len(records), 0))):
            original = record["captions"][field]
            for key in chosen:
                result = make_text_negative(original, task, dims[key], backend, seed=i)
                if isinstance(result, TextNegative):
                    accepted += 1
                    assert result.text != original and problem(original, result.text) is None
                    assert 0.70 <= result.similarity <= 0.995
                else:
                    assert isinstance(result, TextRejection) and len(result.reasons) == 4  # 1 try + 3 regenerations
                    rejected.update(result.reasons)
    assert accepted > 0 and sum(rejected.values()) > 0


# ---- the OpenAI-compatible client against a real local server ---------------------------


class _Script:
    def __init__(self):
        self.replies: list = []  # each: ("json", obj) | ("raw", text) | ("status", code) | ("sleep", s)
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        self.active = 0
        self.max_active = 0
        self.lock = threading.Lock()


@pytest.fixture()
def server():
    script = _Script()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            with script.lock:
                script.active += 1
                script.max_active = max(script.max_active, script.active)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                script.requests.append(body)
                script.headers.append(dict(self.headers))
                kind, value = script.replies.pop(0) if script.replies else ("json", {"modified_description": "x"})
            try:
                if kind == "sleep":
                    time.sleep(value)
                    kind, value = "json", {"modified_description": "late"}
            finally:
                # active until its answer is ready, not until it is sent: a client that has its answer may start
                # the next request before this thread would get to count itself out (a race under load)
                with script.lock:
                    script.active -= 1
            if kind == "status":
                self.send_response(value)
                self.end_headers()
                self.wfile.write(b"error")
                return
            content = value if kind == "raw" else json.dumps(value)
            payload = json.dumps({"choices": [{"message": {"content": content}}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield script, f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()


def _backend(url, tmp_path, **kw):
    return OpenAIChatBackend(
        url, "judge-llm", timeout_s=kw.pop("timeout_s", 2.0), backoff_s=0.01, cache_dir=tmp_path / "cache", **kw
    )


def test_http_client_sends_json_mode_and_key_and_caches(server, tmp_path, monkeypatch):
    script, url = server
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    backend = _backend(url, tmp_path)
    request = ChatRequest(prompt="edit this", seed=3)
    script.replies = [("json", {"modified_description": "edited"})]
    assert json.loads(backend.complete(request))["modified_description"] == "edited"
    body = script.requests[0]
    assert body["response_format"] == {"type": "json_object"} and body["seed"] == 3 and body["model"] == "judge-llm"
    assert script.headers[0]["Authorization"] == "Bearer sk-test"
    again = _backend(url, tmp_path)  # a rerun: served from the on-disk cache
    assert json.loads(again.complete(request))["modified_description"] == "edited"
    assert len(script.requests) == 1


def test_http_client_retries_server_errors_and_timeouts(server, tmp_path):
    script, url = server
    backend = _backend(url, tmp_path, timeout_s=0.5, max_retries=3)
    script.replies = [("status", 500), ("sleep", 1.0), ("status", 503), ("json", {"modified_description": "ok"})]
    assert json.loads(backend.complete(ChatRequest(prompt="p")))["modified_description"] == "ok"
    assert len(script.requests) == 4
    script.replies = [("status", 400)]
    with pytest.raises(BackendError, match="HTTP 400"):
        backend.complete(ChatRequest(prompt="not retried"))
    script.replies = [("status", 500)] * 4
    with pytest.raises(BackendError, match=r"HTTP 500 .*\(after 4 attempts\)"):
        backend.complete(ChatRequest(prompt="always failing"))


def test_http_client_limits_concurrency(server, tmp_path):
    script, url = server
    script.replies = [("sleep", 0.2)] * 8
    backend = _backend(url, tmp_path, max_concurrency=3)
    replies = backend.complete_many([ChatRequest(prompt=f"p{i}") for i in range(8)])
    assert len(replies) == 8 and all(isinstance(r, str) for r in replies)
    assert script.max_active <= 3 and script.max_active >= 2


def test_malformed_replies_and_server_errors_become_counted_rejections(server, tmp_path):
    script, url = server
    dim = {d.key: d for d in taxonomy("vt")}["appearance"]
    original = "A small red circle moves to the left."
    script.replies = [
        ("raw", "not json at all"),
        ("raw", '{"modified_description": 5}'),
        ("raw", '```json\n{"modified_description": "A small blue circle moves to the left."}\n```'),
    ]
    result = make_text_negative(original, "vt", dim, _backend(url, tmp_path), seed=0)
    assert isinstance(result, TextNegative) and result.attempts == 3 and "blue" in result.text
    script.replies = [("status", 500)] * 100
    failing = _backend(url, tmp_path / "other", max_retries=1)
    rejection = make_text_negative(original, "vt", dim, failing, seed=1)
    assert isinstance(rejection, TextRejection) and rejection.reasons == ("backend_error",) * 4
    assert "Target Dimension: Appearance" in script.requests[0]["messages"][-1]["content"]


def test_local_transformers_backend_runs(tiny_judges):
    """A tiny random LM answers garbage: the pipeline must reject it, not crash."""
    import torch
    from transformers import AutoTokenizer, Qwen2Config, Qwen2ForCausalLM

    from avjudge.llm import make_backend

    folder = tiny_judges["qwen2_audio"].parent / "tiny_lm"
    if not folder.exists():
        tok = AutoTokenizer.from_pretrained(str(tiny_judges["qwen2_audio"]))
        torch.manual_seed(0)
        Qwen2ForCausalLM(
            Qwen2Config(
                vocab_size=len(tok),
                hidden_size=32,
                intermediate_size=64,
                num_hidden_layers=1,
                num_attention_heads=2,
                num_key_value_heads=1,
            )
        ).save_pretrained(str(folder))
        tok.save_pretrained(str(folder))
    backend = make_backend("transformers", model_dir=folder, max_new_tokens=8)
    assert isinstance(backend.complete(ChatRequest(prompt="hello", seed=0)), str)
    dim = {d.key: d for d in taxonomy("vt")}["appearance"]
    result = make_text_negative("A small red circle.", "vt", dim, backend, seed=0)
    assert isinstance(result, TextRejection)


def test_annotate_writes_a_manifest_and_resumes(server, tmp_path, small_world):
    from avjudge.data import load_manifest
    from avjudge.data.annotate import annotate

    script, url = server
    clips = tmp_path / "clips"
    clips.mkdir()
    for record in list(read_jsonl(small_world / MANIFEST))[:3]:
        shutil.copy(small_world / record["video"], clips / Path(record["video"]).name)
    good = {"video": "a red circle moves", "audio": "a low tone beats twice", "utterance": ""}
    script.replies = [("json", good), ("raw", "not json"), ("json", {**good, "utterance": "hello"})]
    out = tmp_path / "manifest.jsonl"
    backend = OpenAIChatBackend(url, "omni", backoff_s=0.01, cache_dir=tmp_path / "cache")
    summary = annotate(clips, out, backend, progress=False)
    assert summary["total"] == 3 and summary["errors"] == 1
    content = script.requests[0]["messages"][-1]["content"]
    assert content[0]["type"] == "video_url" and content[0]["video_url"]["url"].startswith("data:video/mp4;base64,")
    sources = load_manifest(out)
    assert len(sources) == 2 and sources[0]["captions"] == good and Path(sources[0]["video"]).exists()
    annotate(clips, out, backend, progress=False)  # resumed: nothing is asked again
    assert len(script.requests) == 3 and len(out.read_text().splitlines()) == 3


def test_a_motion_edit_leaves_a_spatial_relation_whole():
    text = "At the start, the red circle is to the right of the blue square. The red circle moves upward."
    edits = {
        swap_in_category(text, ["motion", "event", "direction"], np.random.default_rng(seed))[0] for seed in range(40)
    }
    assert all("is to the right of the blue square" in out for out in edits)
    assert {out.split(". ")[1] for out in edits} > {"The red circle moves downward."}  # the motion itself changes
    # the spatial dimension still edits the relation
    out, detail = swap_in_category(text, ["spatial", "position"], np.random.default_rng(0))
    assert "to the right of" not in out and detail.startswith("Changed 'to the right of'")


def test_an_order_swap_makes_no_word_pair_the_corpus_never_has():
    text = "First the red circle flashes twice, then the blue square hops once."
    request = ChatRequest("", seed=0, meta={"original": text, "categories": ["colour"], "mode": "order"})
    general = json.loads(RuleBackend().complete(request))["modified_description"]
    assert general == "First the blue circle flashes twice, then the red square hops once."
    # no caption of this corpus has a blue circle or a red square
    closed = json.loads(RuleBackend(vocabulary=[text, "A blue ring."]).complete(request))
    assert closed["modified_description"] == text
    widened = json.loads(RuleBackend(vocabulary=[text, "the blue circle and the red square"]).complete(request))
    assert widened["modified_description"] == general


def test_a_closed_vocabulary_draws_new_phrases_as_often_as_the_corpus_uses_them():
    """Drawn evenly, a count edit would bring "four times" in as often as "twice", though the corpus says it
    seldom: that word alone would then mark negatives."""
    corpus = ["It hops twice."] * 8 + ["It hops four times.", "It hops once."]
    backend = RuleBackend(vocabulary=corpus)
    drawn = Counter(
        json.loads(
            backend.complete(ChatRequest("", seed=s, meta={"original": "It hops once.", "categories": ["times"]}))
        )["modified_description"]
        for s in range(300)
    )
    assert set(drawn) == {"It hops twice.", "It hops four times."}
    assert 0.8 < drawn["It hops twice."] / 300 < 0.97  # 8 of the 9 uses of the other phrases


def test_corpus_usage_weighs_phrases_within_their_category_not_one_category_against_another():
    """Colour words fill this corpus and "large" occurs once; a size edit must still be as likely as the caption's
    size mentions make it (one of its three swappable mentions), or size edits would all but vanish."""
    text = "A small red circle flashes. The red circle hops."
    corpus = [text, "A large red circle.", "A small blue circle."] + ["The blue circle hops."] * 20
    backend = RuleBackend(vocabulary=corpus)
    drawn = Counter(
        json.loads(
            backend.complete(ChatRequest("", seed=s, meta={"original": text, "categories": ["colour", "size"]}))
        )["modification_detail"]
        for s in range(300)
    )
    assert set(drawn) == {"Changed 'red' to 'blue'", "Changed 'small' to 'large'"}
    assert 0.25 < drawn["Changed 'small' to 'large'"] / 300 < 0.42
