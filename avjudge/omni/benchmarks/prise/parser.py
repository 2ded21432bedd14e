"""PriSe's answer rule: AVI-Bench's multiple-choice rule (the earliest option named)."""

from __future__ import annotations

import re


def earliest_option(response: str, letters: tuple[str, ...], options: tuple[str, ...] = ()) -> str | None:
    """AVI-Bench's multiple-choice reading: the option named earliest in the response, by its text as a whole word
    or by its letter standing alone; failing both, the first number, where it is an option."""
    found = []
    for letter, option in zip(letters, options):
        text = re.search(rf"(?<!\w){re.escape(option.lower())}(?!\w)", response.lower()) if option else None
        if text:
            found.append((text.start(), letter))
        standalone = re.search(rf"\b{letter}\b", response)
        if standalone:
            found.append((standalone.start(), letter))
    if found:
        return min(found)[1]
    number = re.search(r"\d+", response)
    if number and number.group(0) in options:
        return letters[options.index(number.group(0))]
    return None
