"""The strict answer rule every suite offers beside its paper's own: a letter only where a response gives one as its
answer, never a letter that happens to stand in a sentence."""

from __future__ import annotations

import re


def strict_answer(
    response: str, letters: tuple[str, ...] = ("A", "B", "C", "D"), options: tuple[str, ...] = ()
) -> str | None:
    """A letter only where the response gives it as an answer: the whole response ("B", "(B)", "☞A"), its opening
    before punctuation or a line break ("B. slow."), a statement ("the answer is B", "Option: A"; the last one) or
    its last line alone. An upper-case letter only, outside the whole-response case: "a" in free text is an
    article."""
    offered = "".join(letters)
    text = response.strip()
    bare = re.sub(r"[\W_]+", "", text)
    if len(bare) == 1 and bare.upper() in letters:
        return bare.upper()
    opening = re.match(rf"^[\W_]*([{offered}])(?:[.):,;\]]|\s*$|\s*\n)", text)
    if opening:
        return opening.group(1)
    stated = re.findall(rf"(?i:\b(?:answer|option|choice)\b)\W{{0,3}}(?:(?i:is)\W{{0,3}})?\b([{offered}])\b", text)
    if stated:
        return stated[-1]
    last_line = re.sub(r"[\W_]+", "", text.splitlines()[-1]) if text else ""
    return last_line if len(last_line) == 1 and last_line in letters else None
