"""Lines rewritten in place on a terminal: the progress of long commands (status --watch).

On a terminal each ``show`` moves the cursor back over the lines it wrote last, clears them and
writes the new ones; ``note`` does the same with a line that stays (a warning), above the next
``show``. Where the stream is not a terminal ``show`` writes nothing: progress is for people, and
a log or a pipe gets the command's ordinary lines only (``note`` then just prints).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TextIO

from campaignops.core import safetext

UP = "\x1b[{n}F"  # the cursor to the start of the line n lines up
CLEAR_BELOW = "\x1b[J"  # clear from the cursor to the end of the screen


class Live:
    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.on = bool(getattr(stream, "isatty", lambda: False)())
        self._shown = 0

    def _back(self) -> str:
        return UP.format(n=self._shown) + CLEAR_BELOW if self._shown else ""

    def show(self, lines: Sequence[str]) -> None:
        if not self.on:
            return
        body = "".join(f"{safetext.plain_line(line)}\n" for line in lines)
        self.stream.write(self._back() + body)
        self.stream.flush()
        self._shown = len(lines)

    def note(self, line: str) -> None:
        """A line that stays: over the live lines on a terminal (shown again by the next
        ``show``), else just printed."""
        self.stream.write(self._back() + safetext.plain_line(line) + "\n")
        self.stream.flush()
        self._shown = 0
