"""What can the demo's tiny judges learn from the world, and how fast? Probes behind issue #5's targets.

Each probe trains the demo's tiny Qwen2.5-Omni thinker (the demo's AV or VT config, `freeze: all`), from
random encoders unless --encoders aligned, or for the at_ probes the demo's tiny Qwen2-Audio (its AT config; its
encoder is always random), on one yes/no question about world clips, and reports held-out
AUROC along training, with the balanced accuracy and the share answered Yes at 0.5 beside it (the demo's
targets read answers). Examples are prepared once (one draw of each on-the-fly negative), so thousands of
optimiser steps fit in minutes:

  audio_low_note    (AV) Yes when a pitched object sounds a note below 200 Hz: the audio alone decides it
  video_low_colour  (AV) Yes when a red, green or blue object is visible: the picture alone decides it
  random_mismatch   (AV) the AV pairs' positives against their random-mismatch negatives: needs both
  caption_edits     (VT) the VT pairs as they are: positives against every caption edit, AUROC also per
                    edited dimension (appearance, counting, motion, spatial, temporal) and per kind of edit
                    (`avjudge.world.decidability`: "object colour, none on screen", "event count", ...);
                    printed first, the same AUROCs per dimension from the caption alone
                    (`avjudge.data.audit.text_leak`)
  object_phrase     (VT) a clip described by one of its objects alone, "The video shows a small red circle."
                    (Yes), or by that object in a colour no object of the clip has (No): binding a colour word to
                    what is on screen, with nothing else in the text
  object_list       (VT) the same question of all the clip's objects listed, one of them in a colour the clip lacks
                    for No: as many colour words as objects, and nothing else
  caption_colour    (VT) the same question inside the whole caption: a clip's caption (Yes) or the caption with one
                    object's colour changed at every mention to one the clip lacks (No)
  at_audio_low_note (AT) the AT judge (tiny Qwen2-Audio, trained whole from random weights) asked about its
                    positives, relabelled as audio_low_note: does its audio path learn anything at all?
  at_sound_phrase   (AT) a clip described by one of its sounds alone, "A low pure sine tone sounds." (Yes), or by
                    that sound in a timbre none of the clip's sounds has (No): binding a word to what is heard
  at_caption_edits  (AT) the AT pairs as they are: positives against every edit of the sound description, AUROC
                    also per edited dimension; printed first, the same from the caption alone

The first two ask the AV judge's prompt about positives (the clip's own audio) relabelled by the ground truth,
so each measures one encoder's path to the answer token; the last two are the real tasks.

--caption-steps N first trains N steps of captioning (language-model loss on the clip's video caption and,
for AV probes, its sound description, given its frames and audio: how Omni models learn to see and hear
before any judging), then the probe, to test whether a model that already names colours and notes (or, for
the VT judge, binds caption words to what it sees) finds the comparison learnable. --caption-reply presence
teaches it to say exactly the colours on screen and the notes heard ("I see blue red. I hear 110 196.") instead
of the world's description; --caption-clips N captions N clips of a world of their own (seed 2) instead of the
probe's training clips, which a few hundred clips' captioning would memorise. Either way the caption loss on the
probe's held-out clips, never captioned, is printed after captioning: whether the model names what it has not
seen.

--first PROBE:N first trains N steps on another probe's question (the same judge), printing its own held-out curve,
then asks the probe's question at step 0 and trains on it: a curriculum, e.g. `--first object_phrase:2000` before
`caption_edits` asks whether binding single colour words to the picture carries over to whole captions. Repeated,
the stages run in the order given (`--first object_list:4000 --first caption_colour:2000`).
--mix PROBE trains on that probe's examples together with the probe's own, shuffled in one pool (a multi-task mix:
does the short question's skill survive among the judge's edits?); held out are the probe's pairs alone.

--align-steps N first aligns the two encoders (CLIP-style, batches of 32) on a world of their own
(--align-clips, another seed: a pretraining corpus the probe never sees; its last 64 clips held out): each
clip's audio embedding, max-pooled over the audio encoder's output tokens, is pulled toward its own video
embedding (max-pooled over the vision merger's tokens) and pushed from the other clips' in the batch
(--align-pooling mean averages the tokens instead). The embeddings are the tokens the language model reads,
so after it a clip's colours and notes sit on shared directions; `--set freeze=llm` then keeps them so while
the probe trains the language model (the paper's AV policy). --encoders aligned starts instead from the shipped
aligned encoders the demo's judges start from (checkpoints/tiny/, made by `research/align_tiny_encoders.py` the
same way); --encoders FILE from any encoder
weights that script wrote (e.g. with --start and --pooling mean).

--world KEY=VALUE changes the probe's world (a WorldConfig field: ambience_prob=1.0 gives every clip the ambience
its place implies, one more audio-visual link), --lm KEY=VALUE the tiny language model (a Qwen2 text-config field:
num_hidden_layers=4, num_key_value_heads=4, intermediate_size=512, attention_dropout=0.2,
num_attention_heads=16 with num_key_value_heads=16: heads stay as wide as before, avjudge.judges.tiny.HEAD_DIM).

--fresh-mismatches (random_mismatch only) trains on a fresh draw each batch instead of the dataset's ~290
random-mismatch negatives: half the batch training clips with their own audio, half a training clip's prompt and
frames with another training clip's audio (the same recombination the pair builder makes, never materialised), as
`pooled_head.py` does; held out are the dataset's pairs as always. It asks whether the language model is short of
negatives or of a way to read them.

Usage: python -m research.learnability [--clips 300] [--steps 1000] [--probes a,b] [--first PROBE:N ...]
       [--mix PROBE] [--caption-steps 0]
       [--caption-reply description|presence] [--caption-clips 0]
       [--align-steps 0] [--align-clips 1000] [--align-pooling max|mean] [--encoders random|aligned|FILE]
       [--set KEY=VALUE ...] [--world KEY=VALUE ...] [--lm KEY=VALUE ...] [--fresh-mismatches]
(`--set` takes training options, e.g. max_pixels=12544 to see the 84-px frames smart_resize gives 192-px clips.)
"""

import argparse
import dataclasses
import math
import random
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from avjudge.config import from_dict, load_config, parse_overrides, to_dict
from avjudge.data.audit import text_leak
from avjudge.data.pairs import PairDataset, load_pairs
from avjudge.demo import TRAIN_CONFIGS, DemoSize
from avjudge.demo.run import build_demo_pairs
from avjudge.jsonl import read_jsonl, write_json
from avjudge.judges.tiny import ALIGNED_ENCODERS, check_language_model, make_tiny_judges
from avjudge.prompts import task as judge_task
from avjudge.stats import auroc, per_negative_type, printed
from avjudge.train import AnswerCollator, TrainConfig, build_training
from avjudge.train.evaluation import binary_metrics
from avjudge.train.trainer import prepared_pairs
from avjudge.world import MANIFEST, WorldConfig, make_world, vocab
from avjudge.world.captions import sound_name
from research.align import POOLINGS, align_encoders, world_media
from research.demo_targets import caption_edits_told

LOW_COLOURS = ("red", "green", "blue")  # 110, 147 and 196 Hz in the world's colour -> pitch link


def _audio_low_note(record, scene):
    if record["label"] == 1:
        return {
            **record,
            "label": int(
                any(
                    o["sound"] and o["sound"]["timbre"] != "noise_burst" and o["sound"]["f0"] < 200
                    for o in scene["objects"]
                )
            ),
        }
    return None


def _video_low_colour(record, scene):
    return (
        {**record, "label": int(any(o["colour"] in LOW_COLOURS for o in scene["objects"]))}
        if record["label"] == 1
        else None
    )


def _random_mismatch(record, scene):
    return record if record["negative_type"] in ("positive", "random_mismatch") else None


def _as_labelled(record, scene):
    return record


def _absent_colours(scene) -> list[str]:
    """The world's colours no object of ``scene`` has, in a fixed order."""
    return sorted(set(vocab.COLOURS) - {o["colour"] for o in scene["objects"]})


def _object_phrase(record, scene):
    """A VT positive's clip described by one object alone, "The video shows a small red circle.": one of its
    objects (Yes) or, as often, that object in a colour none of its objects has (No); drawn from the record's id."""
    if record["negative_type"] != "positive":
        return None
    rng = random.Random(record["id"])
    obj = rng.choice(scene["objects"])
    shown = rng.random() < 0.5
    colour = obj["colour"] if shown else rng.choice(_absent_colours(scene))
    return {**record, "label": int(shown), "text": f"The video shows a {obj['size']} {colour} {obj['shape']}."}


def _object_list(record, scene):
    """A VT positive's clip described by all its objects and nothing else, "The video shows a small red circle and
    a large blue ring." (Yes), or the same with one object in a colour none of its objects has (No): the
    object-phrase question with as many colour words as the clip has objects."""
    if record["negative_type"] != "positive":
        return None
    rng = random.Random(record["id"])
    changed = rng.randrange(len(scene["objects"])) if rng.random() < 0.5 else None
    spare = _absent_colours(scene)
    names = [
        f"a {o['size']} {rng.choice(spare) if i == changed else o['colour']} {o['shape']}"
        for i, o in enumerate(scene["objects"])
    ]
    text = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    return {**record, "label": int(changed is None), "text": f"The video shows {text}."}


def _caption_colour(record, scene):
    """A VT positive's own caption (Yes) or, as often, that caption with one object's colour changed at every mention
    to a colour none of its objects has (No): the object-phrase question inside a whole caption."""
    if record["negative_type"] != "positive":
        return None
    rng = random.Random(record["id"])
    obj = rng.choice(scene["objects"])
    if rng.random() < 0.5:
        return {**record, "label": 1}
    colour = rng.choice(_absent_colours(scene))
    name = f"{obj['colour']} {obj['shape']}"
    return {**record, "label": 0, "text": record["text"].replace(name, f"{colour} {obj['shape']}")}


def _sound_phrase(record, scene):
    """An AT positive's clip described by one of its sounds alone, "A low pure sine tone sounds." (Yes), or by that
    sound in a timbre none of its sounds has (No): the object-phrase question for the ear; drawn from the record's
    id, None for a clip with no sound."""
    if record["negative_type"] != "positive":
        return None
    sounds = [o["sound"] for o in scene["objects"] if o["sound"]]
    if not sounds:
        return None
    rng = random.Random(record["id"])
    sound = rng.choice(sounds)
    heard = rng.random() < 0.5
    timbre = sound["timbre"] if heard else rng.choice(sorted(set(vocab.TIMBRE_WORDS) - {s["timbre"] for s in sounds}))
    return {**record, "label": int(heard), "text": f"A {sound_name({**sound, 'timbre': timbre})} sounds."}


# probe -> (the judge it trains, the pair record as the probe asks it: its label, and text where the probe changes
# it; None to leave the record out)
PROBES = {
    "audio_low_note": ("av", _audio_low_note),
    "video_low_colour": ("av", _video_low_colour),
    "random_mismatch": ("av", _random_mismatch),
    "caption_edits": ("vt", _as_labelled),
    "object_phrase": ("vt", _object_phrase),
    "object_list": ("vt", _object_list),
    "caption_colour": ("vt", _caption_colour),
    "at_audio_low_note": ("at", _audio_low_note),
    "at_sound_phrase": ("at", _sound_phrase),
    "at_caption_edits": ("at", _as_labelled),
}


def stage_argument(value: str) -> tuple[str, int]:
    """--first: PROBE:N, a probe and its steps."""
    probe, _, steps = value.partition(":")
    if probe not in PROBES or not steps.isdigit() or int(steps) < 1:
        raise argparse.ArgumentTypeError(f"{value}: give PROBE:N, a probe of {sorted(PROBES)} and its steps")
    return probe, int(steps)


def encoders_argument(value: str) -> Path | None:
    """--encoders: ``random`` (None), ``aligned`` (the committed file) or a file of encoder weights."""
    encoders = {"random": None, "aligned": ALIGNED_ENCODERS}.get(value, Path(value))
    if encoders is not None and not encoders.exists():
        raise argparse.ArgumentTypeError(f"{value}: no such file (random, aligned, or a file of encoder weights)")
    return encoders


def make_demo_world(world: Path, clips: int, seed: int, overrides: dict | None = None) -> Path:
    """``clips`` demo-sized clips; ``overrides``: WorldConfig fields that differ."""
    make_world(
        from_dict(WorldConfig, {**to_dict(DemoSize().world(seed, clips)), **(overrides or {})}, "--world"),
        world,
        progress=False,
    )
    return world


def make_pairs(root: Path, clips: int, pairs: int, tasks: set[str], world: dict | None = None) -> Path:
    build_demo_pairs(make_demo_world(root / "world", clips, 0, world), root / "pairs", pairs, tasks=sorted(tasks))
    return root / "pairs"


def labelled(dataset, probe, scenes, clips: dict) -> list[tuple[int, dict, object]]:
    """(label, pair record as the probe asks it, the pair's clip) for each record the probe keeps; ``clips``: the
    dataset's pairs decoded so far (index -> clip), filled as needed, so that probes, curriculum stages and mixes
    over one dataset decode each pair once."""
    out = []
    for i, record in enumerate(dataset.records):
        asked = probe(record, scenes[record["source_id"]])
        if asked is not None:
            if i not in clips:
                clips[i] = dataset[i][1]
            out.append((asked["label"], asked, clips[i]))
    return out


def description_reply(record: dict, task: str) -> str:
    """A world clip's description: its video caption and, for the AV judge, which hears the clip too, its sound
    description (the spoken line left out: it repeats words of the video caption)."""
    caption = record["captions"]
    return caption["video"] if task == "vt" else f"{caption['video']} {caption['audio'].split(' A ')[0]}"


def presence_reply(record: dict, task: str) -> str:
    """Exactly the colours on screen and, for the AV judge, the notes heard (Hz, rounded): the two halves of the
    world's colour -> note link, named."""
    objects = record["scene"]["objects"]
    reply = f"I see {' '.join(sorted({o['colour'] for o in objects}))}."
    if task == "vt":
        return reply
    notes = sorted({round(o["sound"]["f0"]) for o in objects if o["sound"] and o["sound"]["timbre"] != "noise_burst"})
    return f"{reply} I hear {' '.join(map(str, notes)) or 'no note'}."


# --caption-reply: what a clip's captioning reply says
CAPTION_REPLIES = {"description": description_reply, "presence": presence_reply}


def caption_examples(judge, clips, world: dict, reply, task: str) -> list:
    """Each clip's media with ``reply(world record, task)`` as the reply, every reply token supervised. The
    prompt is the judge's own question; the VT judge's, which quotes a description, quotes a bare "-".
    ``clips``: (world id, decoded clip) pairs."""
    examples = []
    for key, clip in clips:
        sample = judge.sample(clip, "-" if judge.task.needs_text else None, None)
        prompt_length = judge.prepare(sample).length
        example = judge.prepare(sample, answer=reply(world[key], task))
        example.labels = [-100] * prompt_length + example.input_ids[prompt_length:]
        examples.append(example)
    return examples


def positive_clips(items) -> list:
    """(world id, clip) of each distinct clip among the positives of (label, pair record, clip) triples."""
    clips = {
        record["source_id"]: clip
        for label, record, clip in items
        if record["label"] == 1 and record["negative_type"] == "positive"
    }
    return list(clips.items())


def mean_loss(judge, examples: list, batch_size: int, padding_side: str) -> float:
    """The model's mean loss over ``examples`` (prepared, labelled), without training."""
    model, collate = judge.adapter.model.eval(), AnswerCollator(judge, padding_side)
    with torch.no_grad():
        losses = [
            model(**collate(examples[i : i + batch_size])).loss.item() for i in range(0, len(examples), batch_size)
        ]
    model.train()
    return float(np.mean(losses))


def shuffled_batches(examples: list, batch_size: int, rng: random.Random):
    """Batches of ``examples`` in epochs, each a fresh shuffle."""
    order = []
    while True:
        if len(order) < batch_size:
            order += rng.sample(range(len(examples)), len(examples))
        yield [examples[i] for i in order[:batch_size]]
        order = order[batch_size:]


def with_audio_of(example, other):
    """``example`` (a prepared AV prompt) hearing ``other``'s audio instead of its own; both must give the same
    number of audio tokens, so the prompt's token layout stays valid."""
    if example.feature_attention_mask.sum() != other.feature_attention_mask.sum():
        raise ValueError("fresh mismatches need clips of one length: these two give different audio lengths")
    return dataclasses.replace(
        example, input_features=other.input_features, feature_attention_mask=other.feature_attention_mask
    )


def fresh_mismatch_batches(own: list, answered_no: list, batch_size: int, rng: random.Random):
    """Half of each batch clips with their own audio (``own``: answered Yes), half a clip's prompt answered No
    (``answered_no``, the same clips in the same order) with another clip's audio, drawn afresh every time."""
    while True:
        batch = [own[rng.randrange(len(own))] for _ in range(batch_size - batch_size // 2)]
        for _ in range(batch_size // 2):
            i, j = rng.sample(range(len(own)), 2)
            batch.append(with_audio_of(answered_no[i], own[j]))
        yield batch


def caption_edit_kinds(items: list, world: dict, fps: float) -> np.ndarray:
    """Each of ``items``' kind of caption edit (`avjudge.world.decidability`: which words it changed), "positive"
    for a positive; ``world``: clip id -> its world record."""
    kinds = iter(kind for _, kind, _ in caption_edits_told([record for _, record, _ in items], world, fps))
    return np.array([next(kinds) if label == 0 else "positive" for label, _, _ in items])


def held_out_reporter(name: str, judge, items: list, curve: list, kinds: np.ndarray | None = None):
    """``report(step, loss)`` for `train`: scores ``items`` ((label, pair record, clip) triples, held out) and
    appends (step, loss, AUROC, AUROC per negative type, then per kind of ``kinds`` (one per item) if given) to
    ``curve``, printing it."""
    prepared = prepared_pairs(judge, [(record, clip) for _, record, clip in items])
    labels = np.array([label for label, _, _ in items])
    types = np.array([record["negative_type"] for _, record, _ in items])

    def report(step: int, loss: float) -> None:
        model = judge.adapter.model.eval()
        scores = np.array([r.score for r in judge.score_prepared(prepared)])
        model.train()
        # one negative type: its AUROC is the overall one
        per_type = per_negative_type(scores, labels, types, auroc) if len(set(types[labels == 0])) > 1 else {}
        if kinds is not None:
            per_type |= per_negative_type(scores, labels, kinds, auroc)
        measured = binary_metrics(scores, labels)
        curve.append((step, loss, measured["auroc"], per_type))
        print(report_line(name, step, loss, measured, per_type), flush=True)

    return report


def report_line(name: str, step: int, loss: float, measured: dict, per_type: dict) -> str:
    """One evaluation's line: held-out AUROC, then balanced accuracy and the share answered Yes at 0.5 (what the
    demo's targets read: the answer, not only the ranking) of ``measured`` (`binary_metrics`), then the AUROC of
    each entry of ``per_type``."""
    detail = "".join(f"  {kind} {printed(value, 3, 'n/a')}" for kind, value in per_type.items())
    return (
        f"{name:<18} step {step:>5}  loss {loss:.3f}  held-out AUROC {printed(measured['auroc'], 3, 'n/a')}  "
        f"balanced accuracy {printed(measured['balanced_accuracy'], 3, 'n/a')}  answers Yes "
        f"{measured['yes_bias']:.0%}{detail}"
    )


def train(judge, batches, steps: int, config: TrainConfig, every: int, report) -> None:
    """AdamW with the config's rate, warm-up and a cosine decay over ``steps`` batches drawn from ``batches`` (an
    iterator of example lists); ``report(step, mean loss)`` every N steps."""
    model, collate = judge.adapter.model.train(), AnswerCollator(judge, config.padding_side)
    optimiser = torch.optim.AdamW(
        [p for p in model.parameters() if p.requires_grad], lr=config.learning_rate, weight_decay=config.weight_decay
    )
    warmup = config.warmup_steps
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimiser, lambda s: min(1.0, (s + 1) / warmup) * 0.5 * (1 + math.cos(math.pi * s / steps))
    )
    losses = []
    for step in range(1, steps + 1):
        loss = model(**collate(next(batches))).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimiser.step()
        schedule.step()
        optimiser.zero_grad()
        losses.append(loss.item())
        if step % every == 0 or step == steps:
            report(step, float(np.mean(losses)))
            losses = []


def run_probe(
    name: str,
    pairs: Path,
    world: dict,
    steps: int,
    every: int,
    overrides: list[str],
    out: Path,
    caption_steps: int = 0,
    align_steps: int = 0,
    align_world: Path | None = None,
    encoders: Path | None = None,
    align_pooling: str = "max",
    language_model: dict | None = None,
    fresh_mismatches: bool = False,
    caption_reply: str = "description",
    caption_world: Path | None = None,
    first: tuple[tuple[str, int], ...] = (),
    mix: str | None = None,
) -> list[tuple[int, float, float, dict]]:
    """[(step, mean training loss since the last report, held-out AUROC, AUROC per held-out negative type)]; with
    ``first`` ((probe, steps) stages trained in turn), step 0 is after them; ``mix``: a probe whose training examples
    join the probe's own."""
    task, probe = PROBES[name]
    family_dirs = make_tiny_judges(out / "cache", encoders=encoders, language_model=language_model)
    config = load_config(
        TrainConfig,
        TRAIN_CONFIGS[task],
        [
            f"model={family_dirs[judge_task(task).family]}",
            f"dataset={pairs}",
            f"output_dir={out / name}",
            "seed=0",
            "max_eval_pairs=2",
            "redraw_negatives=false",
            *overrides,
        ],
    )  # examples are prepared once: nothing to redraw
    torch.manual_seed(config.seed)
    trainer, judge, _, _ = build_training(config)
    collator, train_set = trainer.train_dataset.collator, trainer.train_dataset.pairs
    scenes = {key: record["scene"] for key, record in world.items()}
    train_clips, test_clips = {}, {}
    train_items = labelled(train_set, probe, scenes, train_clips)
    test_set = PairDataset(
        load_pairs(pairs, task, "test"), train_set.pool, train_set.sample_rate, train_set.fps, train_set.root
    )
    test_items = labelled(test_set, probe, scenes, test_clips)
    curve = []
    kinds = caption_edit_kinds(test_items, world, config.fps) if name == "caption_edits" else None
    report = held_out_reporter(name, judge, test_items, curve, kinds)
    unseen_clips = positive_clips(test_items)  # the held-out clips' caption loss, after captioning
    del test_items  # prepared: its decoded clips are needed again only by curriculum stages
    if probe is _as_labelled:  # the judge's own caption edits: what their words alone give away, first
        leak = text_leak(pairs, task)
        print(
            f"{name:<18} the text alone  held-out AUROC {printed(leak['overall'], 3, 'n/a')}"
            + "".join(f"  {kind} {printed(value, 3, 'n/a')}" for kind, value in leak["per_type"].items()),
            flush=True,
        )
    if caption_steps:
        reply = CAPTION_REPLIES[caption_reply]
        if caption_world:
            corpus = {record["id"]: record for record in read_jsonl(caption_world / MANIFEST)}
            captioned = caption_examples(
                judge,
                [(key, judge.decode(caption_world / record["video"])) for key, record in corpus.items()],
                corpus,
                reply,
                task,
            )
        else:
            captioned = caption_examples(judge, positive_clips(train_items), world, reply, task)
        train(
            judge,
            shuffled_batches(captioned, config.per_device_train_batch_size, random.Random(config.seed)),
            caption_steps,
            config,
            every,
            lambda step, loss: print(f"{'captioning':<18} step {step:>5}  loss {loss:.3f}", flush=True),
        )
        unseen = caption_examples(judge, unseen_clips, world, reply, task)
        print(
            f"{'captioning':<18} held-out clips' caption loss "
            f"{mean_loss(judge, unseen, config.per_device_train_batch_size, config.padding_side):.3f}",
            flush=True,
        )
    if align_steps:
        media = world_media(judge, align_world)
        align_encoders(
            judge,
            media[:-64],
            media[-64:],
            align_steps,
            every,
            config.seed,
            pooling=align_pooling,
            report=lambda step, loss, value: print(
                f"{'aligning':<18} step {step:>5}  loss {loss:.3f}  held-out AUROC, own audio vs "
                f"another clip's {printed(value, 3, 'n/a')}",
                flush=True,
            ),
        )
    for stage, stage_steps in first:
        stage_probe = PROBES[stage][1]
        examples = [
            collator.example(record, clip) for _, record, clip in labelled(train_set, stage_probe, scenes, train_clips)
        ]
        train(
            judge,
            shuffled_batches(examples, config.per_device_train_batch_size, random.Random(config.seed)),
            stage_steps,
            config,
            every,
            held_out_reporter(stage, judge, labelled(test_set, stage_probe, scenes, test_clips), []),
        )
    test_clips.clear()
    if first:
        report(0, float("nan"))  # the probe's question, asked of the judge its first stages trained
    rng = random.Random(config.seed)
    if fresh_mismatches:
        clips = {record["source_id"]: (record, clip) for label, record, clip in train_items if label == 1}
        own = [collator.example({**record, "label": 1}, clip) for record, clip in clips.values()]
        answered_no = [collator.example({**record, "label": 0}, clip) for record, clip in clips.values()]
        batches = fresh_mismatch_batches(own, answered_no, config.per_device_train_batch_size, rng)
    else:
        examples = [collator.example(record, clip) for _, record, clip in train_items]
        if mix:
            examples += [
                collator.example(record, clip)
                for _, record, clip in labelled(train_set, PROBES[mix][1], scenes, train_clips)
            ]
        batches = shuffled_batches(examples, config.per_device_train_batch_size, rng)
    train(judge, batches, steps, config, every, report)
    return curve


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--clips", type=int, default=300)
    p.add_argument("--pairs", type=int, default=2400, help="pairs per judge to build (75%% train, 25%% held out)")
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--every", type=int, default=250, help="evaluate every N steps")
    p.add_argument("--probes", default=",".join(PROBES))
    p.add_argument("--caption-steps", type=int, default=0, help="captioning steps before each probe")
    p.add_argument(
        "--caption-reply",
        choices=sorted(CAPTION_REPLIES),
        default="description",
        help="what captioning teaches to say: the world's description of the clip, or exactly the "
        "colours seen and notes heard",
    )
    p.add_argument(
        "--caption-clips",
        type=int,
        default=0,
        help="caption this many clips of a world of their own (seed 2) instead of the probe's training clips",
    )
    p.add_argument(
        "--first",
        action="append",
        type=stage_argument,
        default=[],
        metavar="PROBE:N",
        help="train N steps on this probe's question first (same judge); repeat for more stages",
    )
    p.add_argument(
        "--mix",
        choices=sorted(PROBES),
        help="train on this probe's examples too, shuffled in with the "
        "probe's own (same judge); held out: the probe's alone",
    )
    p.add_argument("--align-steps", type=int, default=0, help="contrastive audio-video encoder steps before each probe")
    p.add_argument("--align-clips", type=int, default=1000, help="clips of the alignment world (seed 1)")
    p.add_argument(
        "--align-pooling",
        choices=sorted(POOLINGS),
        default="max",
        help="how a clip's tokens become the embedding aligned: max or mean over them",
    )
    p.add_argument(
        "--encoders",
        type=encoders_argument,
        default="random",
        metavar="random|aligned|FILE",
        help="the thinker's encoders at the start: random, the committed aligned ones, or a weights "
        "file `research/align_tiny_encoders.py` wrote",
    )
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a training option")
    p.add_argument(
        "--world",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a WorldConfig field of the probe's world, e.g. ambience_prob=1.0",
    )
    p.add_argument(
        "--lm",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a setting of the tiny language model (Qwen2 text config), e.g. num_hidden_layers=4",
    )
    p.add_argument(
        "--fresh-mismatches",
        action="store_true",
        help="random_mismatch: a fresh other clip's audio every batch instead of the dataset's negatives",
    )
    p.add_argument("--out", help="keep the world, pairs and curves here (default: a temporary folder)")
    args = p.parse_args()
    language_model = parse_overrides(args.lm)
    check_language_model(language_model)  # before minutes of world making
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(args.out or tmp)
        t0 = time.perf_counter()
        names = args.probes.split(",")
        if args.fresh_mismatches and names != ["random_mismatch"]:
            p.error("--fresh-mismatches draws random mismatches: use it with --probes random_mismatch alone")
        for option, other in [("--first", stage) for stage, _ in args.first] + [("--mix", args.mix)]:
            if other and any(PROBES[name][0] != PROBES[other][0] for name in names):
                p.error(f"{option} must train the same judge (av, vt or at) as the probes")
        if args.mix and args.fresh_mismatches:
            p.error("--mix joins a probe's examples to the dataset's; --fresh-mismatches draws its own")
        if args.align_steps and any(PROBES[name][0] != "av" for name in names):
            p.error("--align-steps aligns the AV judge's audio and video encoders: use it with AV probes only")
        pairs = make_pairs(
            out, args.clips, args.pairs, {PROBES[name][0] for name in names}, parse_overrides(args.world)
        )
        world = {r["id"]: r for r in read_jsonl(out / "world" / MANIFEST)}
        align_world = make_demo_world(out / "align_world", args.align_clips, seed=1) if args.align_steps else None
        caption_world = (
            make_demo_world(out / "caption_world", args.caption_clips, seed=2)
            if args.caption_steps and args.caption_clips
            else None
        )
        print(f"world and pairs: {time.perf_counter() - t0:.0f} s", flush=True)
        curves = {}
        for name in names:
            t0 = time.perf_counter()
            curves[name] = run_probe(
                name,
                pairs,
                world,
                args.steps,
                args.every,
                args.set,
                out,
                args.caption_steps,
                args.align_steps,
                align_world,
                args.encoders,
                args.align_pooling,
                language_model,
                args.fresh_mismatches,
                args.caption_reply,
                caption_world,
                tuple(args.first),
                args.mix,
            )
            print(f"{name}: {time.perf_counter() - t0:.0f} s", flush=True)
        write_json(
            out / "learnability.json",
            {"args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()}, "curves": curves},
        )
        print(f"\n{'probe':<32}" + "".join(f"{step:>8}" for step, *_ in next(iter(curves.values()))))
        for name, curve in curves.items():
            print(f"{name:<32}" + "".join(f"{printed(a, 3, 'n/a'):>8}" for _, _, a, _ in curve))
            for kind in curve[-1][3]:
                print(f"  {kind:<30}" + "".join(f"{printed(per_type[kind], 3, 'n/a'):>8}" for *_, per_type in curve))


if __name__ == "__main__":
    main()
