"""yamldoc: JSON-shaped scalars, duplicate keys, node positions, and the expansion budget."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from campaignops.core import yamldoc
from campaignops.core.errors import InputError, YamlSyntaxError
from campaignops.core.yamldoc import Locator


def load(text: str) -> object:
    return yamldoc.load(text, path="m.yaml")


# --- scalars stay as JSON would have them -------------------------------------------------------


def test_timestamps_stay_strings() -> None:
    doc = load(
        "d: 2026-06-01\nt: 2026-06-01T12:30:00Z\ns: 2001-12-14 21:59:43.10 -5\nl: [2026-06]\n"
    )
    assert doc == {
        "d": "2026-06-01",
        "t": "2026-06-01T12:30:00Z",
        "s": "2001-12-14 21:59:43.10 -5",
        "l": ["2026-06"],
    }


def test_other_scalars_still_resolve() -> None:
    assert load("[1, 1.5, true, null, '1', 0x10]") == [1, 1.5, True, None, "1", 16]


def test_empty_document_is_none() -> None:
    assert load("") is None
    assert load("# just a comment\n") is None


def test_merge_keys_still_work() -> None:
    # `<<: *defaults` is plain YAML 1.1; the duplicate-key check must not break it.
    doc = load("base: &b {x: 1, y: 1}\nthing:\n  <<: *b\n  y: 2\n")
    assert doc == {"base": {"x": 1, "y": 1}, "thing": {"x": 1, "y": 2}}


# --- duplicate keys -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "line", "col", "key"),
    [
        ("a: 1\nb: 2\na: 3\n", 3, 1, "'a'"),
        ("top:\n  x: 1\n  y:\n    - 1\n  x: 2\n", 5, 3, "'x'"),
        ("jobs:\n  - {id: a, args: {}, id: b}\n", 2, 23, "'id'"),
    ],
)
def test_duplicate_key_raises_at_the_duplicate(text: str, line: int, col: int, key: str) -> None:
    with pytest.raises(YamlSyntaxError) as info:
        load(text)
    err = info.value
    assert (err.path, err.line, err.col) == ("m.yaml", line, col)
    assert f"duplicate key {key}" in err.problem


def test_non_string_keys_are_refused_at_the_key() -> None:
    # JSON has only string keys; YAML 1.1 reads `on:` as True and `1:` as an int.
    with pytest.raises(YamlSyntaxError) as info:
        load('"1": a\n1: b\n')
    assert (info.value.line, info.value.col) == (2, 1)
    assert "not a string; quote it" in info.value.problem


def test_syntax_error_position() -> None:
    with pytest.raises(YamlSyntaxError) as info:
        load("jobs:\n  - id: a\n  bad: 1\n")
    assert (info.value.line, info.value.col) == (3, 3)
    assert "expected '-'" in info.value.problem


# --- Locator ------------------------------------------------------------------------------------

DOC = """\
project: demo
jobs:
  - id: a
    args: {lr: 0.1, seed: [1, 2, {x: 3}]}
  - id: b
grid:
  lr: [0.1, 0.01]
"""


@pytest.mark.parametrize(
    ("where", "key", "expected"),
    [
        (("project",), False, (1, 10)),
        (("project",), True, (1, 1)),
        (("jobs", 0, "id"), False, (3, 9)),
        (("jobs", 0, "id"), True, (3, 5)),
        (("jobs", 1), False, (5, 5)),
        (("jobs", 0, "args", "lr"), False, (4, 16)),
        (("jobs", 0, "args", "seed", 1), False, (4, 31)),
        (("jobs", 0, "args", "seed", 2, "x"), False, (4, 38)),
        (("jobs", 0, "args", "seed", 2, "x"), True, (4, 35)),
        (("grid", "lr", 1), False, (7, 13)),
    ],
)
def test_locator_positions(
    where: tuple[str | int, ...], key: bool, expected: tuple[int, int]
) -> None:
    assert Locator(DOC).at(where, key=key) == expected


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        ((), (1, 1)),
        (("nope",), (1, 1)),
        (("jobs", 5), (3, 3)),  # past the end: the sequence itself
        (("jobs", 0, "nope"), (3, 5)),  # missing key: the mapping that lacks it
        (("project", "deeper"), (1, 10)),  # a scalar has no children
    ],
)
def test_locator_falls_back_to_deepest_node(
    where: tuple[str | int, ...], expected: tuple[int, int]
) -> None:
    assert Locator(DOC).at(where) == expected


def test_locator_line_offset() -> None:
    loc = Locator(DOC, line_offset=3)
    assert loc.at(("jobs", 0, "id")) == (6, 9)
    assert loc.at(("project",), key=True) == (4, 1)
    assert loc.at(()) == (4, 1)


def test_locator_on_unparseable_text_points_at_the_top() -> None:
    assert Locator("a: [\n").at(("a",)) == (1, 1)
    assert Locator("\x00\x01").at(("a", 0)) == (1, 1)


# --- the node budget counts the expanded tree ---------------------------------------------------


def aliased(added: int) -> str:
    """A flow sequence whose aliases add exactly ``added`` nodes to the tree (``added`` >= 0).

    An alias of the anchored 999-scalar list adds 999 nodes (it is written as one); an alias
    of the anchored one-scalar list adds 1.
    """
    copies, rest = divmod(added, 999)
    items = [f"&b [{', '.join(['0'] * 999)}]", "&s [0]", *(["*b"] * copies), *(["*s"] * rest)]
    return "[" + ", ".join(items) + "]"


def expanded(doc: object) -> int:
    if isinstance(doc, list):
        return 1 + sum(expanded(x) for x in doc)
    return 1


def test_budget_allows_exactly_max_alias_nodes() -> None:
    text = aliased(yamldoc.MAX_ALIAS_NODES)
    assert len(text) < yamldoc.MAX_ALIAS_NODES // 10  # small on disk: only the expansion is big
    doc = load(text)
    written = 1 + 2 + 999 + 1 + (len(doc) - 2)  # root, its slots, the two anchored lists' items
    assert expanded(doc) - written == yamldoc.MAX_ALIAS_NODES


def test_budget_refuses_one_alias_node_more() -> None:
    with pytest.raises(InputError, match="alias bomb") as exc:
        load(aliased(yamldoc.MAX_ALIAS_NODES + 1))
    assert str(exc.value).startswith(
        f"m.yaml: YAML aliases add {yamldoc.MAX_ALIAS_NODES + 1:,} nodes to the document; "
        f"the limit is {yamldoc.MAX_ALIAS_NODES:,} nodes added by aliases"
    )


def test_budget_counts_aliases_in_mappings() -> None:
    copies = yamldoc.MAX_ALIAS_NODES // 999 + 1
    base = "[" + ", ".join(["0"] * 999) + "]"
    text = f"a: &b {base}\n" + "".join(f"k{i}: *b\n" for i in range(copies))
    with pytest.raises(InputError, match="alias bomb"):
        load(text)


def test_many_written_nodes_are_no_alias_bomb() -> None:
    # 51,000 explicit jobs were refused as an alias bomb: nodes were counted, not aliases.
    items = ", ".join(["0"] * (yamldoc.MAX_ALIAS_NODES + 1))
    assert len(load(f"x: [{items}]\n")["x"]) == yamldoc.MAX_ALIAS_NODES + 1  # type: ignore[index]


def test_nesting_at_the_limit_loads_and_one_deeper_is_refused() -> None:
    depth = yamldoc.MAX_DEPTH
    assert load("[" * depth + "]" * depth) is not None
    with pytest.raises(InputError, match="nests deeper") as exc:
        load("[" * (depth + 1) + "]" * (depth + 1))
    assert str(exc.value).startswith(f"m.yaml:1:{depth + 1}: YAML nests deeper than {depth} levels")


# Each text is made when its test runs, and the tests are named: the block text is 450 MB
# (30,000 lines of growing indent). Made at import and used as the test's id, it was built by
# every pytest process and carried in its collection, its reports and pytest-xdist's messages
# (17 s of CPU and 4.4 GB to run these three; collecting the suite 8.0 s of CPU, 1.8 GB).
@pytest.mark.parametrize(
    ("make", "where"),
    [
        # past the C stack of libyaml's composer
        pytest.param(lambda: "[" * 30_000 + "]" * 30_000, "1:65", id="flow"),
        pytest.param(
            lambda: "a:\n" + "".join(f"{' ' * i}- \n" for i in range(30_000)), "65:64", id="block"
        ),
        # a syntax error comes first: reported
        pytest.param(lambda: "a: 1\n" + "- " * 30_000 + "x\n", None, id="syntax-error-first"),
    ],
)
def test_nesting_far_past_the_limit_is_refused_before_composing(
    make: Callable[[], str], where: str | None
) -> None:
    text = make()
    if where is None:
        with pytest.raises(YamlSyntaxError):
            load(text)
        return
    with pytest.raises(InputError, match=rf"^m\.yaml:{where}: YAML nests deeper"):
        load(text)


def test_nesting_through_aliases_has_no_place() -> None:
    chain = "a0: &a0 [0]\n" + "".join(f"a{i}: &a{i} [*a{i - 1}]\n" for i in range(1, 80))
    with pytest.raises(InputError, match=r"^m\.yaml: YAML nests deeper .* \(through aliases\)"):
        load(chain)


def test_front_matter_offset_places_the_limit_in_the_file() -> None:
    with pytest.raises(InputError, match=r"^p\.md:3:67: YAML nests"):
        yamldoc.load("a: 1\nb: " + "[" * 70 + "]" * 70, path="p.md", line_offset=1)


def test_recursive_alias_is_refused() -> None:
    with pytest.raises(InputError, match="recursive alias"):
        load("a: &a [1, *a]\n")


@pytest.mark.parametrize(
    "text",
    [
        DOC,
        DOC.replace("\n", "\r\n"),
        DOC.replace("\n", "\r"),
        "# head\n\nproject:   demo  # trailing\njobs:\n- id: a\ngrid:\t{lr: [1]}\n",
        "---\nproject: |\n  jobs: not a key\njobs: []\ngrid:\n  lr: [1]\n",
        'x: {a: 1,\n  b: 2}\nproject: "p"\njobs:\n  - id: a\ngrid: {}\n',
    ],
)
def test_top_level_keys_are_found_by_text_where_composing_finds_them(text: str) -> None:
    # Most findings sit at a top-level key; finding it without composing the file keeps a
    # manifest with such findings as cheap as a clean one. The answer must not change.
    for name in ("project", "jobs", "grid"):
        fast = Locator(text, line_offset=2)
        composed = Locator(text, line_offset=2)
        composed.at(("jobs", 99, "x"))  # composes the file; later lookups use the nodes
        assert fast.at((name,), key=True) == composed.at((name,), key=True), name


def test_a_text_loaded_again_is_not_parsed_again_and_each_caller_owns_its_tree(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A command reads the failure catalog through several readers: from the third load on, a
    load of the same text is a copy, not a parse (the first is not copied: most texts are read
    once), and changing one changes no other."""
    text = "failures:\n  - id: memo-test-entry\n    matchers: [x]\n"
    yamldoc.load(text, path="failures.yaml")
    first = yamldoc.load(text, path="failures.yaml")
    parses: list[str] = []
    real = yamldoc.yaml.load

    def counted(stream: str, Loader: object) -> object:
        parses.append(stream)
        return real(stream, Loader=Loader)  # type: ignore[arg-type]

    monkeypatch.setattr(yamldoc.yaml, "load", counted)
    first["failures"].append("changed by its caller")
    again = yamldoc.load(text, path="failures.yaml")
    assert parses == []
    assert again == {"failures": [{"id": "memo-test-entry", "matchers": ["x"]}]}
    again["failures"][0]["id"] = "changed too"
    assert yamldoc.load(text, path="other.yaml")["failures"][0]["id"] == "memo-test-entry"


def test_a_kept_text_with_an_alias_keeps_its_sharing_and_each_copy_is_its_own() -> None:
    # The kept tree is copied by hand (dicts and lists) unless a node is shared, as an alias
    # shares it: then deepcopy, which keeps the sharing the alias limits were measured with.
    text = "base: &b {cpus: 1, tags: [a]}\nsmoke: *b\nplain: {x: [1, 2.5, true, null]}\n"
    yamldoc.load(text, path="m.yaml")
    kept = yamldoc.load(text, path="m.yaml")
    copied = yamldoc.load(text, path="m.yaml")
    assert copied["smoke"] is copied["base"] and copied["base"] is not kept["base"]
    copied["plain"]["x"].append("mine")
    assert yamldoc.load(text, path="m.yaml")["plain"] == {"x": [1, 2.5, True, None]}


def test_a_text_that_failed_fails_again_naming_its_own_path() -> None:
    text = "a: [1, 2\n"
    for path in ("one.yaml", "two.yaml"):
        with pytest.raises(YamlSyntaxError) as info:
            yamldoc.load(text, path=path)
        assert path in str(info.value)


def test_a_text_loaded_once_is_not_kept() -> None:
    """A check of a thousand manifests loads each once: none is copied into the memo."""
    texts = [f"id: once-{n}\n" for n in range(3)]
    for text in texts:
        yamldoc.load(text, path="m.yaml")
    assert not any(text in yamldoc._LOADED for text in texts)
    yamldoc.load(texts[0], path="m.yaml")
    assert texts[0] in yamldoc._LOADED
