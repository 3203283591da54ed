"""Knowledge written once (issue 17, "Knowledge is written more than once"): the finished-state
set and the state → failure category map live in model/states.py, a backend page's place in
model/backendpage.py, the rule that picks a submission's backend in model/policy.py. Another copy in the package fails here, so it cannot drift unseen.

The box executor (remote/) runs with the standard library only and carries its own
copy of the states it writes (remote/jobstate.py); tests/remote/test_boxexec_detach.py keeps that one in step.

The process supervision rules (TERM, then KILL after a grace; reaping a task's leader; the
subreaper; afterok's verdict) live once, in remote/supervision.py, which the
local backend's executor imports: there were two supervisors, each with its own copy.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import campaignops
from campaignops.model.states import FINISHED, STATE_CATEGORIES

PACKAGE = Path(campaignops.__file__).parent
HOMES = {"model/states.py", "model/backendpage.py", "model/policy.py"}
COPIES_ALLOWED = {"remote/jobstate.py"}  # standard library only: a checked copy


def _modules() -> Iterator[tuple[str, ast.Module]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel not in HOMES | COPIES_ALLOWED:
            yield rel, ast.parse(path.read_text(encoding="utf-8"))


def _strings(node: ast.AST) -> set[str] | None:
    """The strings of a set, tuple or list literal made of string constants only, else None."""
    if not isinstance(node, (ast.Set, ast.Tuple, ast.List)) or not node.elts:
        return None
    if all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
        return {e.value for e in node.elts if isinstance(e, ast.Constant)}
    return None


def finished_sets(tree: ast.AST) -> list[int]:
    """Lines where a literal spells the finished-state set."""
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, (ast.Set, ast.Tuple, ast.List)) and _strings(node) == FINISHED
    ]


def category_maps(tree: ast.AST) -> list[int]:
    """Lines where a dict literal maps final states to their failure categories."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            pairs = {
                (k.value, v.value)
                for k, v in zip(node.keys, node.values, strict=True)
                if isinstance(k, ast.Constant) and isinstance(v, ast.Constant)
            }
            if len(pairs & set(STATE_CATEGORIES.items())) >= 2:
                found.append(node.lineno)
    return found


def page_places(tree: ast.AST) -> list[int]:
    """Lines where an f-string builds a backend page's path (``f"backends/{name}.md"``)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            parts = node.values
            for before, value, after in zip(parts, parts[1:], parts[2:], strict=False):
                if (
                    isinstance(before, ast.Constant)
                    and str(before.value).endswith("backends/")
                    and isinstance(value, ast.FormattedValue)
                    and isinstance(after, ast.Constant)
                    and str(after.value).startswith(".md")
                ):
                    found.append(node.lineno)
    return found


def backend_picks(tree: ast.AST) -> list[int]:
    """Lines where a submission's backend is picked by hand: ``x.smoke_backend if ...``."""
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.IfExp)
        and isinstance(node.body, ast.Attribute)
        and node.body.attr == "smoke_backend"
    ]


SUPERVISOR = "remote/supervision.py"  # the one supervisor (docs/architecture.md, "The supervisor")


def _names(node: ast.AST) -> set[str]:
    """Every name, attribute and string constant under ``node``."""
    found: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            found.add(sub.id)
        elif isinstance(sub, ast.Attribute):
            found.add(sub.attr)
        elif isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            found.add(sub.value)
    return found


def escalations(tree: ast.AST) -> list[int]:
    """Functions that send KILL once a grace after the TERM ran out (a comparison that reads
    ``term_at`` or a ``kill_wait``): the TERM → KILL escalation."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and "SIGKILL" in _names(node):
            graces = [
                c
                for c in ast.walk(node)
                if isinstance(c, ast.Compare)
                and any(n == "term_at" or "kill_wait" in n for n in _names(c))
            ]
            if graces:
                found.append(node.lineno)
    return found


def task_reaps(tree: ast.AST) -> list[int]:
    """Calls that reap a task's processes or adopt its orphans: ``os.waitid`` (the WNOWAIT
    look at a task's leader) and ``prctl`` (PR_SET_CHILD_SUBREAPER)."""
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("waitid", "prctl")
    ]


def afterok_rules(tree: ast.AST) -> list[int]:
    """Conditions that judge a parent for afterok: not COMPLETED, and ended or UNKNOWN."""
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.BoolOp)
        and isinstance(node.op, ast.And)
        and {"COMPLETED", "UNKNOWN"} <= _names(node)
    ]


def test_the_supervision_rules_are_written_once() -> None:
    detectors = (escalations, task_reaps, afterok_rules)
    copies = [
        f"{rel}:{line} ({find.__name__})"
        for rel, tree in _modules()
        if rel != SUPERVISOR
        for find in detectors
        for line in find(tree)
    ]
    assert not copies, f"call the supervisor's functions in {SUPERVISOR} instead: {copies}"
    home = ast.parse((PACKAGE / SUPERVISOR).read_text(encoding="utf-8"))
    assert [len(find(home)) for find in detectors] == [1, 3, 1], "the supervisor's rules moved"


def test_the_supervision_detectors_see_a_copy() -> None:
    source = (
        "def tick(task):\n"
        "    if task.stop and time.monotonic() - task.term_at >= self.d.kill_wait_s:\n"
        "        killpg(task.pgid, signal.SIGKILL)\n"
        "    os.waitid(os.P_PID, task.pgid, flags)\n"
        'ok = s != "COMPLETED" and (s in FINISHED or s == "UNKNOWN")\n'
    )
    tree = ast.parse(source)
    assert (escalations(tree), task_reaps(tree), afterok_rules(tree)) == ([1], [4], [5])


def test_the_finished_states_are_written_once() -> None:
    copies = [f"{rel}:{line}" for rel, tree in _modules() for line in finished_sets(tree)]
    assert not copies, f"import FINISHED from campaignops.model.states instead: {copies}"


def test_the_state_categories_are_written_once() -> None:
    copies = [f"{rel}:{line}" for rel, tree in _modules() for line in category_maps(tree)]
    assert not copies, f"import STATE_CATEGORIES from campaignops.model.states: {copies}"


def test_a_backend_page_is_placed_in_one_module() -> None:
    copies = [f"{rel}:{line}" for rel, tree in _modules() for line in page_places(tree)]
    assert not copies, f"name a page with campaignops.model.backendpage.path_of: {copies}"


def test_the_backend_is_picked_by_one_rule() -> None:
    copies = [f"{rel}:{line}" for rel, tree in _modules() for line in backend_picks(tree)]
    assert not copies, f"call campaignops.model.policy.backend_for: {copies}"


def test_the_detectors_see_a_copy() -> None:
    source = (
        'A = frozenset({"COMPLETED", "FAILED", "TIMEOUT", "OUT_OF_MEMORY", "CANCELLED",'
        ' "PREEMPTED", "NODE_FAIL"})\n'
        'B = {"OUT_OF_MEMORY": "oom-host", "TIMEOUT": "timeout"}\n'
        'C = f"backends/{name}.md"\n'
        'D = a or (policy.smoke_backend if stage == "smoke" else None)\n'
    )
    tree = ast.parse(source)
    found = (finished_sets(tree), category_maps(tree), page_places(tree), backend_picks(tree))
    assert found == ([1], [2], [3], [4])
