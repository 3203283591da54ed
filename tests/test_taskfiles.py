"""Task paths as bash words: what bash makes of each is exactly the text, ${NAME} expanded."""

from __future__ import annotations

import subprocess

import pytest

from campaignops.model.taskfiles import output_problem, path_problem, shell_word

ENV = {"PATH": "/usr/bin:/bin", "CAMPAIGN_OUT": "runs/a b", "HOME": "/home/x"}


def bash_says(word: str) -> str:
    script = f"set -u; printf %s {word}"
    return subprocess.run(
        ["bash", "-c", script], env=ENV, capture_output=True, text=True, check=True, timeout=10
    ).stdout


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("${CAMPAIGN_OUT}/m.json", "runs/a b/m.json"),
        ("${CAMPAIGN_OUT}${CAMPAIGN_OUT}", "runs/a bruns/a b"),
        ("a*.json", "a*.json"),
        ("~/x", "~/x"),
        ('it\'s "here"', 'it\'s "here"'),
        ("`whoami`;rm -rf x|&", "`whoami`;rm -rf x|&"),
        ("{a,b}/[c]?", "{a,b}/[c]?"),
        ("-n", "-n"),
        ("ünï cödé ${HOME}", "ünï cödé /home/x"),
    ],
)
def test_bash_reads_the_word_as_the_text_with_env_references_expanded(
    text: str, expected: str
) -> None:
    assert path_problem(text) is None
    assert bash_says(shell_word(text)) == expected


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("$HOME/x", "uses '$' other than in ${NAME}"),
        ("$(id)", "uses '$' other than in ${NAME}"),
        ("${A:-b}", "uses '$' other than in ${NAME}"),
        ("${1}", "uses '$' other than in ${NAME}"),
        ("a\tb", "holds a control character"),
        ("", "is empty"),
    ],
)
def test_what_bash_would_expand_otherwise_is_a_problem(text: str, problem: str) -> None:
    assert (path_problem(text) or "").startswith(problem)


def test_outputs_stay_inside_the_campaign() -> None:
    assert output_problem("/abs") == "is absolute"
    assert output_problem("a/../../b") == "leaves the campaign ('..')"
    assert output_problem("a/..b/c..") is None
    assert output_problem("${CAMPAIGN_OUT}/x") is None
