"""EOL checks: line endings: CR/CRLF in LF-only files, BOMs, .gitattributes rules.

A CRLF wrapper dies on the cluster with ``$'\\r': command not found``, a CRLF queue file gives
cell names ending in ``\\r``, and a BOM hides a shebang. Files are inspected as bytes, so the
check works whatever the encoding; files with NUL bytes are skipped (other families refuse them).
Unlike pre-commit's mixed-line-ending, a file that is CRLF *throughout* is reported too.
What ``--fix`` may rewrite, and how it writes, is in campaignops.checks.eolfix.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from campaignops.checks import eolfix, leftovers
from campaignops.checks.context import CheckContext
from campaignops.checks.eolfix import Refusal
from campaignops.checks.finding import Code, Finding, code_table
from campaignops.core import atomic, layout
from campaignops.core.errors import InputError

FAMILY = "EOL"
SUMMARY = (
    "line endings: CR/CRLF in LF-only files, BOMs, .gitattributes rules; merge leftovers: "
    "conflict markers, .rej files"
)
CODES = code_table(
    Code(
        id="EOL001",
        message="{kind} line ending at line {lineno}; {count} of {lines} lines end in {endings}",
        hint="convert to LF: campaign check --fix --select EOL {file} (on Linux the CR is data: a CRLF script fails with '$'\\r': command not found', a queue cell's name ends in \\r)",
    ),
    Code(
        id="EOL002",
        message="UTF-8 byte-order mark at the start of the file",
        hint="remove it: campaign check --fix --select EOL {file} (a BOM breaks the shebang line)",
    ),
    Code(
        id="EOL003",
        message="no eol=lf rule for {pattern} in .gitattributes{missing}",
        hint="add the line '{pattern} text eol=lf' to .gitattributes (campaign check --fix adds it), then run git add --renormalize .",
    ),
    Code(
        id="EOL004",
        message="CR inside a quoted YAML string at line {lineno} ({kept} such CR in the file); "
        "--fix leaves quoted strings byte for byte",
        hint="edit it by hand: most YAML parsers read a raw CR in a quoted string as a line "
        "break (folded to a space); write \\r inside double quotes if the CR is meant",
    ),
    *leftovers.CODES,
    Code(
        id="EOL007",
        message="lone CR (no LF after it) at line {lineno} ({kept} such CR in the file); "
        "--fix converts CRLF line endings only and leaves a lone CR as written",
        hint="edit it by hand: a CR inside a line is data (a quoted shell string, a progress "
        "line); write it as an escape (printf '\\r', $'\\r') if it is meant, or delete it; if "
        "the file ends its lines with CR alone, convert them: tr '\\r' '\\n'",
    ),
)
# With --fix the finding is still reported (so the hook fails and the change gets reviewed),
# with one of these hints in place of the instructions.
FIXED_HINTS = {
    "EOL001": "fixed in place: {count} line endings converted to LF; review the change (git diff) and stage it",
    "EOL002": "fixed in place: byte-order mark removed; review the change (git diff) and stage it",
    "EOL003": "fixed: '{pattern} text eol=lf' appended to .gitattributes; review and stage it, then run git add --renormalize .",
}
PARTLY_FIXED_HINT = (
    "partly fixed in place: {count} line endings converted to LF; {left}; review the change "
    "(git diff) and stage it"
)
LEFT = {
    "EOL004": "{n} CR inside quoted YAML strings left as written (EOL004)",
    "EOL007": "{n} lone CR (no LF after it) left as written (EOL007)",
}
LOCKED_HINT = (
    "not fixed: this exact content is locked in .campaign/wrappers.lock and must not change; "
    "copy it to the next wrapper version with LF line endings"
)

BOM = b"\xef\xbb\xbf"
# manifests, failures and policy are YAML by default, but a policy may re-point manifests and
# wrappers; naming every kind keeps them checked wherever they live.
CHECKED_KINDS = (
    layout.SCRIPT,
    layout.WRAPPER,
    layout.QUEUE,
    layout.YAML,
    layout.MANIFEST,
    layout.FAILURES,
    layout.POLICY,
    layout.LOCK,
    layout.LEDGER,
)
# Files whose quoted scalars --fix must leave alone.
YAML_KINDS = (layout.YAML, layout.MANIFEST, layout.FAILURES, layout.POLICY)
GITATTRIBUTES = ".gitattributes"
REQUIRED_PATTERNS = ("*.sh", "*.yaml", "*.yml", "*.txt")
FIX_COMMENT = "# LF line endings for campaign files (added by campaign check --fix)"


@dataclass(frozen=True)
class Endings:
    """Line-ending census of one file. ``first`` is the byte offset of the first CR, if any."""

    crlf: int
    cr: int
    lines: int
    first: int | None

    @property
    def bad(self) -> int:
        return self.crlf + self.cr


def census(data: bytes) -> Endings:
    crlf = data.count(b"\r\n")
    cr = data.count(b"\r") - crlf
    lf = data.count(b"\n") - crlf
    unterminated = 1 if data and not data.endswith((b"\n", b"\r")) else 0
    first = data.find(b"\r")
    return Endings(
        crlf=crlf, cr=cr, lines=crlf + cr + lf + unterminated, first=first if first >= 0 else None
    )


def position(data: bytes, offset: int) -> tuple[int, int]:
    """1-based (line, column in characters) of byte ``offset``.

    Only LF counts as a line break here: for the *first* CR that is what every tool agrees on,
    since no CR comes before it. A leading BOM is not a column (editors do not show it).
    """
    start = data.rfind(b"\n", 0, offset) + 1
    prefix = data[start:offset]
    if start == 0:
        prefix = prefix.removeprefix(BOM)
    return data.count(b"\n", 0, offset) + 1, len(prefix.decode("utf-8", errors="replace")) + 1


def normalize(data: bytes) -> bytes:
    """The LF-only, BOM-less form of ``data`` (each CRLF and each lone CR becomes one LF)."""
    return data.removeprefix(BOM).replace(b"\r\n", b"\n").replace(b"\r", b"\n")


def file_findings(rel: str, data: bytes) -> list[Finding]:
    """EOL001 and EOL002 for one file's bytes."""
    found: list[Finding] = []
    ends = census(data)
    if ends.first is not None:
        line, col = position(data, ends.first)
        kind = "CRLF" if data[ends.first + 1 : ends.first + 2] == b"\n" else "CR"
        endings = "CR or CRLF" if ends.crlf and ends.cr else kind
        found.append(
            CODES["EOL001"].at(
                rel,
                line,
                col,
                kind=kind,
                lineno=line,
                count=ends.bad,
                lines=ends.lines,
                endings=endings,
                file=rel,
            )
        )
    if data.startswith(BOM):
        found.append(CODES["EOL002"].at(rel, 1, 1, file=rel))
    return found


def _rules(text: str) -> Iterator[tuple[str, list[str]]]:
    for raw in text.splitlines():
        line = raw.strip()
        # Macro definitions and C-quoted patterns never name the plain globs we look for.
        if not line or line.startswith(("#", "[attr]", '"')):
            continue
        pattern, *attrs = line.split()
        yield pattern, attrs


def has_lf_rule(text: str, pattern: str) -> bool:
    """Whether ``.gitattributes`` text gives ``pattern`` LF endings, as git would resolve it.

    Only lines whose pattern is exactly ``pattern`` or ``*`` count. Later lines override earlier
    ones attribute by attribute, as in git. ``eol=lf`` (or the legacy ``crlf=input``) is needed,
    and ``text`` must not be unset: ``-text``, ``-crlf`` and ``binary`` turn conversion off.
    """
    eol: str | None = None
    text_state: bool | None = None
    for pat, attrs in _rules(text):
        if pat not in (pattern, "*"):
            continue
        for attr in attrs:
            if attr in ("text", "text=auto", "crlf"):
                text_state = True
            elif attr in ("-text", "-crlf", "binary"):
                text_state = False
            elif attr in ("!text", "!crlf"):
                text_state = None
            elif attr.startswith("eol="):
                eol = attr.removeprefix("eol=")
            elif attr == "crlf=input":
                eol = "lf"
            elif attr in ("-eol", "!eol"):
                eol = None
    return eol == "lf" and text_state is not False


def missing_patterns(text: str | None) -> tuple[str, ...]:
    """Required patterns without an LF rule; all of them when the file is missing (None)."""
    if text is None:
        return REQUIRED_PATTERNS
    return tuple(p for p in REQUIRED_PATTERNS if not has_lf_rule(text, p))


def with_rules(data: bytes, patterns: Iterable[str]) -> bytes:
    """``.gitattributes`` bytes with a rule appended for each pattern (last rule wins in git)."""
    lines = [FIX_COMMENT, *(f"{p} text eol=lf" for p in patterns)]
    sep = b"\n" if data and not data.endswith(b"\n") else b""
    return data + sep + ("\n".join(lines) + "\n").encode()


def _locked(ctx: CheckContext, data: bytes) -> bool:
    """Whether this exact content is recorded in the lock (rewriting it would break the lock)."""
    if not ctx.reader.exists(layout.LOCK_FILE):
        return False
    lock = ctx.reader.read_bytes(layout.LOCK_FILE)
    digest = hashlib.sha256(data).hexdigest()
    return lock is not None and f"sha256:{digest}".encode() in lock


def _create(ctx: CheckContext, rel: str, data: bytes) -> bool:
    """A new file (nothing of anyone's to keep): written atomically."""
    try:
        atomic.write_atomic(ctx.root / rel, data, root=ctx.root)
    except InputError as exc:
        ctx.reader.problems.setdefault(rel, exc)
        return False
    return True


def _rewrite(ctx: CheckContext, rel: str, data: bytes) -> bool:
    """An existing file: rewritten in place (mode, owner, xattrs and hard links survive)."""
    try:
        eolfix.write_in_place(ctx.root / rel, data, rel=rel)
    except InputError as exc:
        ctx.reader.problems.setdefault(rel, exc)
        return False
    return True


def _tracking(ctx: CheckContext, rel: str, tracked: frozenset[str] | None) -> Refusal | None:
    if tracked is None:
        return Refusal.NO_GIT
    target = eolfix.target_rel(ctx.root, rel)
    if target is None or target not in tracked:
        return Refusal.UNTRACKED
    return None


def _is_yaml(ctx: CheckContext, rel: str) -> bool:
    return rel.endswith((".yaml", ".yml")) or any(rel in ctx.of(k) for k in YAML_KINDS)


def _fix_file(
    ctx: CheckContext, rel: str, data: bytes, found: list[Finding], tracked: frozenset[str] | None
) -> Iterator[Finding]:
    text = eolfix.text_of(data)
    refusal = _tracking(ctx, rel, tracked) or (Refusal.NOT_TEXT if text is None else None)
    spans: list[tuple[int, int]] | None = []
    if text is not None and refusal is None and _is_yaml(ctx, rel):
        spans = eolfix.quoted_spans(text)
        refusal = Refusal.YAML_UNREADABLE if spans is None else None
    if refusal is not None or text is None or spans is None:
        yield from (dataclasses.replace(f, hint=(refusal or Refusal.NOT_TEXT).value) for f in found)
        return
    fixed = eolfix.normalize(text, spans)
    if fixed.data != data and not _rewrite(ctx, rel, fixed.data):
        yield from found
        return
    left = {code: crs for code, crs in (("EOL004", fixed.kept), ("EOL007", fixed.lone)) if crs}
    for f in found:
        if f.id == "EOL001" and left:
            said = "; ".join(LEFT[code].format(n=len(crs)) for code, crs in left.items())
            hint = PARTLY_FIXED_HINT.format(count=fixed.converted, left=said)
        else:
            hint = FIXED_HINTS[f.id].format(count=fixed.converted)
        yield dataclasses.replace(f, hint=hint)
    for code, crs in left.items():
        line, col = position(fixed.data, fixed.byte_offset(crs[0]))
        yield CODES[code].at(rel, line, col, lineno=line, kept=len(crs))


def _check_file(ctx: CheckContext, rel: str, tracked: frozenset[str] | None) -> Iterator[Finding]:
    data = ctx.reader.read_bytes(rel)
    if data is None or b"\x00" in data:
        return
    found = file_findings(rel, data)
    if not found or not ctx.fix:
        yield from found
        return
    if _locked(ctx, data):
        yield from (dataclasses.replace(f, hint=LOCKED_HINT) for f in found)
        return
    yield from _fix_file(ctx, rel, data, found, tracked)


def _check_gitattributes(ctx: CheckContext, tracked: frozenset[str] | None) -> Iterator[Finding]:
    data: bytes | None = None
    if ctx.reader.exists(GITATTRIBUTES):
        data = ctx.reader.read_bytes(GITATTRIBUTES)
        if data is None:
            return  # refused (a link out of the campaign, a directory): already a problem
    text = None if data is None else data.decode("utf-8", errors="replace").removeprefix("\ufeff")
    missing = missing_patterns(text)
    if not missing:
        return
    note = " (the file is missing)" if data is None else ""
    found = [CODES["EOL003"].at(GITATTRIBUTES, 1, 1, pattern=p, missing=note) for p in missing]
    if not ctx.fix:
        yield from found
        return
    refusal: Refusal | None = None
    if data is not None:
        refusal = _tracking(ctx, GITATTRIBUTES, tracked)
        refusal = refusal or (Refusal.NOT_TEXT if eolfix.text_of(data) is None else None)
    if refusal is not None:
        yield from (dataclasses.replace(f, hint=refusal.value) for f in found)
        return
    new = with_rules(data or b"", missing)
    if data is None and not _create(ctx, GITATTRIBUTES, new):
        yield from found
        return
    if data is not None and not _rewrite(ctx, GITATTRIBUTES, new):
        yield from found
        return
    yield from (
        dataclasses.replace(f, hint=FIXED_HINTS["EOL003"].format(pattern=p))
        for f, p in zip(found, missing, strict=True)
    )


def checked_files(ctx: CheckContext) -> tuple[str, ...]:
    return tuple(dict.fromkeys(rel for kind in CHECKED_KINDS for rel in ctx.of(kind)))


def _text_files(ctx: CheckContext) -> tuple[str, ...]:
    """Every file of a kind (Markdown, YAML, scripts, …): where a merge leaves its markers."""
    return tuple(dict.fromkeys(rel for rels in ctx.files.values() for rel in rels))


def check(ctx: CheckContext) -> Iterator[Finding]:
    tracked = eolfix.tracked(ctx.root) if ctx.fix else None
    for rel in checked_files(ctx):
        yield from _check_file(ctx, rel, tracked)
    yield from leftovers.check(ctx, _text_files(ctx))
    # The rules are a property of the campaign, not of a file: only inside one.
    if ctx.policy.found:
        yield from _check_gitattributes(ctx, tracked)
