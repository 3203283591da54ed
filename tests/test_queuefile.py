"""The queue file parser and the append-only comparison, as pure functions."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from campaignops.model import queuefile
from campaignops.model.queuefile import Cell, Edit, Problem

CELLS = [
    ("configs/a.yaml rec", Cell(1, "configs/a.yaml", "rec", None, "a")),
    ("configs/a.yaml rec 20", Cell(1, "configs/a.yaml", "rec", 20, "a")),
    ("   configs/a.yaml    rec   20   ", Cell(1, "configs/a.yaml", "rec", 20, "a")),
    ("configs/a.yaml rec 20\r", Cell(1, "configs/a.yaml", "rec", 20, "a")),
    ("./configs/x/b.c.yml det 1", Cell(1, "./configs/x/b.c.yml", "det", 1, "b.c")),
    ("configs/noext seg", Cell(1, "configs/noext", "seg", None, "noext")),
    ("configs/a#b.yaml rec", Cell(1, "configs/a#b.yaml", "rec", None, "a#b")),
    ("a.yaml rec 999999999", Cell(1, "a.yaml", "rec", 999999999, "a")),
]


@pytest.mark.parametrize(("line", "cell"), CELLS, ids=[c[0] for c in CELLS])
def test_valid_lines_become_cells(line: str, cell: Cell) -> None:
    parsed = queuefile.parse(line + "\n")
    assert parsed.problems == ()
    assert parsed.cells == (cell,)


@pytest.mark.parametrize(
    "text", ["", "\n", "   \n", "# comment\n", "   # indented comment\n", "#x y z w v\n", "\r\n"]
)
def test_blank_and_comment_lines_are_skipped(text: str) -> None:
    assert queuefile.parse(text) == queuefile.QueueFile(cells=(), problems=())


BAD = [
    ("a.yaml\trec", 7, "a TAB"),
    ("a.yaml rec\t20", 11, "a TAB"),
    ("\t# tab-indented comment", 1, "a TAB"),
    ("\t", 1, "a TAB"),
    ("a.yaml\u00a0rec", 7, "U+00A0"),
    ("a.yaml rec\x0b", 11, "U+000B"),
    ("a.yaml r\rec", 9, "U+000D"),
    ("a.yaml rec 20 extra", 15, "4 fields"),
    ("a.yaml rec 20 # note", 15, "a comment after the fields"),
    ("a.yaml rec # note", 12, "a comment after the fields"),
    ("a.yaml #rec", 8, "a comment after the fields"),
    ("a.yaml", 7, "no task"),
    ("  a.yaml  ", 9, "no task"),
    ("/etc/a.yaml rec", 1, "absolute"),
    ("../a.yaml rec", 1, "'..' component"),
    (" configs/../../a.yaml rec", 2, "'..' component"),
    ("configs/ rec", 1, "directory"),
    ("configs/. rec", 1, "directory"),
    ("configs/x/.hidden.yaml rec", 1, "cell name '.hidden'"),
    ("configs/.yaml rec", 1, "cell name '.yaml'"),
    ("configs/.hidden seg", 1, "the wrapper refuses it"),
    ("a.yaml rec 0", 12, "not a positive integer"),
    ("a.yaml rec -3", 12, "not a positive integer"),
    ("a.yaml rec +3", 12, "not a positive integer"),
    ("a.yaml rec 2.5", 12, "not a positive integer"),
    ("a.yaml rec twenty", 12, "not a positive integer"),
    ("a.yaml rec \u0663", 12, "not a positive integer"),
    ("a.yaml rec 020", 12, "leading zero"),
    ("a.yaml rec 1234567890", 12, "too large"),
    ("a.yaml rec " + "9" * 5000, 12, "too large"),
]


@pytest.mark.parametrize(("line", "col", "words"), BAD, ids=[repr(b[0][:30]) for b in BAD])
def test_malformed_lines_are_problems_at_the_bad_field(line: str, col: int, words: str) -> None:
    parsed = queuefile.parse("# header\n" + line + "\n")
    assert parsed.cells == ()
    assert len(parsed.problems) == 1
    problem = parsed.problems[0]
    assert (problem.line, problem.col) == (2, col)
    assert words in problem.message


def test_line_numbers_count_blank_and_comment_lines() -> None:
    text = "# h\n\nconfigs/a.yaml rec\n  \nbad\nconfigs/b.yaml det 5"
    parsed = queuefile.parse(text)
    assert [(c.line, c.name) for c in parsed.cells] == [(3, "a"), (6, "b")]
    assert parsed.problems == (Problem(5, 4, parsed.problems[0].message),)


def test_lines_split_on_lf_only_and_drop_line_end_crs() -> None:
    assert queuefile.lines("a\r\nb\n") == ["a", "b"]
    assert queuefile.lines("a\nb") == ["a", "b"]
    assert queuefile.lines("a\x0cb\u2028c\n\n") == ["a\x0cb\u2028c", ""]
    assert queuefile.lines("") == []


@given(st.text())
def test_parse_is_total(text: str) -> None:
    parsed = queuefile.parse(text)
    count = len(queuefile.lines(text))
    for problem in parsed.problems:
        assert 1 <= problem.line <= count
        assert problem.col >= 1
    for cell in parsed.cells:
        assert 1 <= cell.line <= count
        assert cell.name
        assert cell.epochs is None or cell.epochs > 0
    assert len({c.line for c in parsed.cells} | {p.line for p in parsed.problems}) == len(
        parsed.cells
    ) + len(parsed.problems)


@given(st.lists(st.sampled_from(["a", "b/c.yaml", "x", " ", "#", "\t", "0", "..", "/", "\r"])))
def test_parse_is_total_on_queue_like_text(tokens: list[str]) -> None:
    text = "".join(t + (" " if i % 3 else "\n") for i, t in enumerate(tokens))
    parsed = queuefile.parse(text)
    assert all(cell.name and " " not in cell.cfg for cell in parsed.cells)


BASE = "# queue\nconfigs/a.yaml rec\nconfigs/b.yaml det 5\nconfigs/c.yaml seg\n"

ALLOWED = {
    "unchanged": BASE,
    "append": BASE + "configs/d.yaml rec\n",
    "append blank and comment": BASE + "\n# later\nconfigs/d.yaml rec\n",
    "comment out with space": BASE.replace("configs/b.yaml", "# configs/b.yaml"),
    "comment out without space": BASE.replace("configs/b.yaml", "#configs/b.yaml"),
    "comment out and append": BASE.replace("configs/c", "# configs/c") + "configs/c2.yaml seg\n",
    "CRLF to LF": BASE,
    "no final newline": BASE.rstrip("\n"),
}


@pytest.mark.parametrize("name", list(ALLOWED))
def test_allowed_changes(name: str) -> None:
    old = BASE.replace("\n", "\r\n") if name == "CRLF to LF" else BASE
    assert queuefile.first_edit(old, ALLOWED[name]) is None


def test_appending_to_a_file_without_final_newline_is_an_append() -> None:
    assert queuefile.first_edit("a rec\nb rec", "a rec\nb rec\nc rec\n") is None


FORBIDDEN = {
    "edit": (BASE.replace("det 5", "det 6"), 3, "line 3 was changed"),
    "edit a comment": (BASE.replace("# queue", "# the queue"), 1, "line 1 was changed"),
    "comment out with extra edit": (
        BASE.replace("configs/b.yaml det 5", "# configs/b.yaml det 6"),
        3,
        "line 3 was changed",
    ),
    "uncomment": ("queue\n" + BASE.split("\n", 1)[1], 1, "line 1 was changed"),
    "delete middle": (BASE.replace("configs/b.yaml det 5\n", ""), 3, "line 3 ('configs/b.yaml"),
    "delete last": (BASE.replace("configs/c.yaml seg\n", ""), 3, "line 4 was deleted from the end"),
    "truncate": ("", 1, "lines 1-4 were deleted"),
    "insert": (BASE.replace("configs/c", "configs/x.yaml rec\nconfigs/c"), 4, "inserted at line 4"),
    "reorder": (
        "# queue\nconfigs/a.yaml rec\nconfigs/c.yaml seg\nconfigs/b.yaml det 5\n",
        3,
        "reordered from line 3",
    ),
}


@pytest.mark.parametrize("name", list(FORBIDDEN))
def test_forbidden_changes_point_at_the_first_differing_line(name: str) -> None:
    new, line, words = FORBIDDEN[name]
    edit = queuefile.first_edit(BASE, new)
    assert isinstance(edit, Edit)
    assert edit.line == line
    assert words in edit.change


@given(st.text(), st.text())
def test_first_edit_is_total_and_appends_are_allowed(old: str, extra: str) -> None:
    edit = queuefile.first_edit(old, extra)
    assert edit is None or edit.line >= 1
    sep = "" if old == "" or old.endswith("\n") else "\n"
    assert queuefile.first_edit(old, old + sep + extra) is None


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (3, None),
        ("3", None),
        (0, "not a positive integer"),
        (-1, "not a positive integer"),
        (1.5, "not a positive integer"),
        (True, "not a positive integer"),
        ("1 2", "not a positive integer"),
        ("020", "leading zero"),
        (10**10, "too large"),
    ],
)
def test_epochs_from_yaml_follow_the_queue_line_rule(value: object, problem: str | None) -> None:
    found = queuefile.epochs_problem(value)
    assert (found is None) if problem is None else (found is not None and problem in found)
