"""The single source of truth for judge prompts.

Scoring, the SFT collator and the dataset exporters all render through this module, so the
text a judge is trained on is exactly the text it is scored with. It imports nothing from
avjudge, so every layer (data exporters as well as judges) may use it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .errors import AvjudgeError

ANSWERS = {1: "Yes", 0: "No"}


@dataclass(frozen=True)
class JudgeTask:
    name: str
    title: str
    query: str  # may hold {text} and {utterance}
    needs_video: bool
    needs_audio: bool
    needs_text: bool
    family: str  # default model family (AVBench: Omni for AV and VT, Qwen2-Audio for AT)
    caption_field: str | None  # which caption of a source record the judge reads
    choices: tuple[str, ...] = ()  # the letters a multiple-choice task's answer is read from; () for Yes / No
    pair_query: str = ""  # the same question of two clips, A and B (preference exports); may hold {text}, {utterance}


TASKS: dict[str, JudgeTask] = {
    "av": JudgeTask(
        "av",
        "audio-video consistency",
        "Does the audio accurately match the video content? Answer only Yes or No.",
        needs_video=True,
        needs_audio=True,
        needs_text=False,
        family="qwen2_5_omni",
        caption_field=None,
        pair_query="In which clip does the audio match the video content better? Answer only A or B.",
    ),
    "vt": JudgeTask(
        "vt",
        "video-text consistency",
        "Does the video accurately match the following description?\nDescription: {text}\nAnswer only Yes or No.",
        needs_video=True,
        needs_audio=False,
        needs_text=True,
        family="qwen2_5_omni",
        caption_field="video",
        pair_query="Which clip matches the following description better?\nDescription: {text}\nAnswer only A or B.",
    ),
    "at": JudgeTask(
        "at",
        "audio-text consistency",
        "Does the audio accurately match the following description?\nDescription: {text}{utterance}\n"
        "Answer only Yes or No.",
        needs_video=False,
        needs_audio=True,
        needs_text=True,
        family="qwen2_audio",
        caption_field="audio",
        pair_query="In which clip does the audio match the following description better?\nDescription: {text}"
        "{utterance}\nAnswer only A or B.",
    ),
}


# Multiple-choice questions on a clip, as the omni-model benchmarks ask them (AVI-Bench, OmniVideoBench, WorldSense:
# video with its audio; SonicBench: audio alone), to check that a judge's backbone keeps its general perception
# through fine-tuning. ``{text}`` is the question with its lettered options (`render_choice_question`); the closing
# instruction is the one LLaVA-style evaluation harnesses use. Apart from TASKS: Yes / No judges never see it (and
# the tiny judges' tokenizer is trained on TASKS' queries alone).
OPTION_LETTERS = tuple("ABCDEFGH")
# The Yes / No bridge: a judge that reads a text (vt, at) judges each option of a multiple-choice question as this
# statement, its caption (`avjudge.omni.bridge`)
BRIDGE_STATEMENT = 'The answer to the question "{question}" is: {option}'
CHOICE_QUERY = "{text}\nAnswer with the option's letter from the given choices directly."
CHOICE_TASKS: dict[str, JudgeTask] = {
    "choice_av": JudgeTask(
        "choice_av",
        "multiple choice on video with its audio",
        CHOICE_QUERY,
        needs_video=True,
        needs_audio=True,
        needs_text=True,
        family="qwen2_5_omni",
        caption_field=None,
        choices=OPTION_LETTERS,
    ),
    "choice_a": JudgeTask(
        "choice_a",
        "multiple choice on audio",
        CHOICE_QUERY,
        needs_video=False,
        needs_audio=True,
        needs_text=True,
        family="qwen2_audio",
        caption_field=None,
        choices=OPTION_LETTERS,
    ),
}


def render_choice_question(question: str, options: list[str]) -> str:
    """A question and its options as one text, each option on its own line after its letter ("A. ...")."""
    if not 2 <= len(options) <= len(OPTION_LETTERS):
        raise ValueError(f"a multiple-choice question needs 2 to {len(OPTION_LETTERS)} options, not {len(options)}")
    lines = [question.strip()] + [f"{letter}. {option.strip()}" for letter, option in zip(OPTION_LETTERS, options)]
    return "\n".join(lines)


@dataclass(frozen=True)
class ChatFormat:
    """How one model family lays out a single-turn ChatML prompt with media placeholders."""

    system: str | None
    video: str  # placeholder run for one video; the adapter expands its ``video_pad`` token
    audio: str  # the same for one audio item and ``audio_pad``
    media_separator: str  # between the media block and the query
    video_pad: str
    audio_pad: str
    audio_start: str  # around a video's own audio when it rides inside the video item
    audio_end: str

    def render(self, media: list[str], query: str, answer: str | None = None) -> str:
        parts = []
        if self.system is not None:
            parts.append(f"<|im_start|>system\n{self.system}<|im_end|>\n")
        block = "".join(getattr(self, kind) for kind in media)
        parts.append(f"<|im_start|>user\n{block}{self.media_separator if block else ''}{query}<|im_end|>\n")
        parts.append("<|im_start|>assistant\n")
        if answer is not None:
            parts.append(f"{answer}<|im_end|>\n")
        return "".join(parts)


_QWEN2_TOKENS = dict(
    video_pad="<|VIDEO|>", audio_pad="<|AUDIO|>", audio_start="<|audio_bos|>", audio_end="<|audio_eos|>"
)
CHAT_FORMATS: dict[str, ChatFormat] = {
    # Qwen2.5-Omni's own system prompt; media items come before the text in the user turn.
    "qwen2_5_omni": ChatFormat(
        system="You are Qwen, a virtual human developed by the Qwen Team, Alibaba Group, capable of perceiving "
        "auditory and visual inputs, as well as generating text and speech.",
        video="<|vision_bos|><|VIDEO|><|vision_eos|>",
        audio="<|audio_bos|><|AUDIO|><|audio_eos|>",
        media_separator="",
        **_QWEN2_TOKENS,
    ),
    # Qwen2-Audio-Instruct's template: "Audio 1: <|audio_bos|><|AUDIO|><|audio_eos|>\n" then the text.
    "qwen2_audio": ChatFormat(
        system="You are a helpful assistant.",
        video="",
        audio="Audio 1: <|audio_bos|><|AUDIO|><|audio_eos|>",
        media_separator="\n",
        **_QWEN2_TOKENS,
    ),
    # Qwen3-Omni's template adds no system turn of its own and renames every media token.
    "qwen3_omni": ChatFormat(
        system=None,
        video="<|vision_start|><|video_pad|><|vision_end|>",
        audio="<|audio_start|><|audio_pad|><|audio_end|>",
        media_separator="",
        video_pad="<|video_pad|>",
        audio_pad="<|audio_pad|>",
        audio_start="<|audio_start|>",
        audio_end="<|audio_end|>",
    ),
}


class TaskError(AvjudgeError, ValueError):
    """A judge task avjudge does not know."""


def task(name: str) -> JudgeTask:
    """A judge task: a Yes / No judge (TASKS) or a multiple-choice one (CHOICE_TASKS)."""
    found = TASKS.get(name) or CHOICE_TASKS.get(name)
    if found is None:
        raise TaskError(
            f"unknown judge {name!r}; choose one of {sorted(TASKS)} (or {sorted(CHOICE_TASKS)} for "
            "multiple-choice questions)"
        )
    return found


def render_query(task_name: str, text: str | None = None, utterance: str | None = None) -> str:
    """The question a judge answers for one sample."""
    t = task(task_name)
    if t.needs_text and not text:
        raise ValueError(f"the {t.name} judge needs a description text")
    speech = f"\nSpeech: {utterance}" if utterance else ""
    return t.query.format(text=(text or "").strip(), utterance=speech)


PAIR_ANSWERS = ("A", "B")  # the verdicts of a pair question: clip A or clip B


def render_pair_query(task_name: str, tags: str, text: str | None = None, utterance: str | None = None) -> str:
    """The question of two clips for one task: each clip's media ``tags`` (e.g. ``<video><audio>``) after its
    letter, then the task's pair question."""
    t = task(task_name)
    if t.needs_text and not text:
        raise ValueError(f"the {t.name} judge needs a description text")
    speech = f"\nSpeech: {utterance}" if utterance else ""
    question = t.pair_query.format(text=(text or "").strip(), utterance=speech)
    return f"Clip A: {tags}\nClip B: {tags}\n{question}"


def media_kinds(task_name: str) -> list[str]:
    t = task(task_name)
    return [kind for kind, needed in (("video", t.needs_video), ("audio", t.needs_audio)) if needed]


def render_prompt(
    task_name: str,
    family: str,
    text: str | None = None,
    utterance: str | None = None,
    answer: str | None = None,
    system: str | None = None,
    media: list[str] | None = None,
) -> str:
    """The full chat text (placeholders unexpanded); ``answer`` appends the supervised reply;
    ``media`` overrides the task's media items (a video carrying its own audio is one item)."""
    if family not in CHAT_FORMATS:
        raise ValueError(f"unknown model family {family!r}; choose one of {sorted(CHAT_FORMATS)}")
    fmt = CHAT_FORMATS[family]
    if system is not None:
        fmt = replace(fmt, system=system or None)
    return fmt.render(
        media if media is not None else media_kinds(task_name), render_query(task_name, text, utterance), answer
    )
