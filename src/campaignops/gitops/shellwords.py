"""A proposed shell command as `campaign guard` reads it: the simple commands it runs.

Not a shell: enough of POSIX sh's grammar to find each command word a line would run, through
the ways an agent chains or wraps commands: ``&&``, ``||``, ``;``, ``|``, ``&``, newlines,
subshells and ``$( … )``, back quotes, ``NAME=value`` prefixes, ``env``/``sudo``/``nohup``/
``timeout``-style wrappers, ``bash -c '…'`` (and sh, zsh, dash, ksh), ``eval``, ``xargs``, and
``ssh HOST command …``, whose words the remote shell reads again. Quoting is shlex's (POSIX).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

# Tokens that end one simple command (shlex's punctuation runs, newline included).
SEPARATORS = frozenset({"&&", "||", ";", "|", "&", "|&", ";;", "\n", "(", ")", "{", "}", "!"})
SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "ash", "fish"})
# Wrappers that run the rest of their words as a command, and how many of their own words
# (beyond options) come first: `timeout 60 sbatch …` runs sbatch.
WRAPPERS = {
    "env": 0,
    "sudo": 0,
    "doas": 0,
    "nohup": 0,
    "time": 0,
    "nice": 0,
    "ionice": 0,
    "exec": 0,
    "command": 0,
    "builtin": 0,
    "stdbuf": 0,
    "setsid": 0,
    "unbuffer": 0,
    "xargs": 0,
    "timeout": 1,
    "watch": 0,
    "flock": 1,
    "parallel": 0,
}
# Options of those wrappers that take a value as the next word (the value is not the command).
WRAPPER_VALUED = {
    "env": {"-u", "--unset", "-C", "--chdir", "-S", "--split-string"},
    "sudo": {"-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-U", "-T"},
    "nice": {"-n", "--adjustment"},
    "ionice": {"-c", "-n", "-p"},
    "timeout": {"-s", "--signal", "-k", "--kill-after"},
    "xargs": {"-I", "-L", "-n", "-P", "-d", "-E", "-s", "-a"},
    "watch": {"-n", "--interval", "-d"},
    "stdbuf": {"-i", "-o", "-e"},
    "flock": {"-w", "-E"},
}
# find's actions that run a command on each file found.
FIND_RUNS = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
# ssh's options that take a value (OpenSSH's synopsis): the first other word is the host.
SSH_VALUED = frozenset("BbcDEeFIiJLlmOoPpQRSWw")
# `<<EOF`, `<<-'EOF'`, `<< "EOF"`: a here-document whose body follows the line.
HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1")
# A here-document read by a shell or ssh runs its body; one read by cat or git is text.
RUNS_BODY = re.compile(r"(^|[\s;&|(`])(ssh|(ba|z|da|k)?sh)(\s|$)")
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
# How deep `bash -c "ssh h 'bash -c …'"` may nest before the guard stops reading (and denies).
MAX_DEPTH = 8


class TooDeep(Exception):
    """Wrappers nested past MAX_DEPTH: the guard does not guess what such a line runs."""


@dataclass(frozen=True)
class Simple:
    """One simple command: its words, the first the program (path stripped), and where it
    runs (``via``: the ssh hosts and shells it was wrapped in, outermost first)."""

    words: tuple[str, ...]
    via: tuple[str, ...] = ()

    @property
    def program(self) -> str:
        return PurePosixPath(self.words[0].lstrip("`")).name if self.words else ""

    @property
    def args(self) -> tuple[str, ...]:
        return self.words[1:]


def heredocs(text: str) -> tuple[str, list[str]]:
    """``text`` without its here-document bodies, and the bodies a shell or ssh reads (these
    run as commands); other bodies (a commit message, a file's text) are not read."""
    kept: list[str] = []
    run: list[str] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        kept.append(line)
        i += 1
        for match in HEREDOC.finditer(line):
            body: list[str] = []
            while i < len(lines) and lines[i].strip() != match.group(2):
                body.append(lines[i])
                i += 1
            i += 1  # the delimiter line
            if RUNS_BODY.search(line):
                run.append("\n".join(body))
    return "\n".join(kept), run


def tokens(line: str) -> list[str]:
    """shlex's POSIX words, with the shell's operators (and unquoted newlines) as tokens."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars="();<>|&\n")
    lexer.whitespace = " \t\r"
    lexer.whitespace_split = True
    lexer.commenters = ""  # `#` inside a word is common (URLs, issue numbers); not a comment
    return list(lexer)


def _split(words: Sequence[str]) -> Iterator[list[str]]:
    """The simple commands of a token list: runs between separators, `$(` and back quotes."""
    current: list[str] = []
    for word in words:
        if word in SEPARATORS or (word and set(word) <= set("();&|\n")):
            if current:
                yield current
            current = []
            continue
        if word in (">", ">>", "<", "<<", "<<<", ">&", "<&", "&>", "&>>"):
            current.append(word)
            continue
        # `$(cmd` and `` `cmd `` start a command of their own inside the word list.
        if word.startswith("$") and word == "$":
            if current:
                yield current
            current = []
            continue
        if word.startswith("`") and len(word) > 1:
            if current:
                yield current
            current = [word.lstrip("`")]
            continue
        current.append(word.rstrip("`") if word.endswith("`") else word)
    if current:
        yield current


def _without_redirections(words: list[str]) -> list[str]:
    out: list[str] = []
    skip = False
    for word in words:
        if skip:
            skip = False
            continue
        if word in (">", ">>", "<", "<<", "<<<", ">&", "<&", "&>", "&>>"):
            skip = True
            continue
        out.append(word)
    return out


def _unwrapped(words: list[str]) -> list[str]:
    """The words after NAME=value prefixes and wrappers (`env -i`, `sudo -u x`, `timeout 5`)."""
    while words:
        if ASSIGNMENT.match(words[0]):
            words = words[1:]
            continue
        name = PurePosixPath(words[0]).name
        if name not in WRAPPERS:
            return words
        if name == "command" and {"-v", "-V"} & set(words[1:]):
            return []  # `command -v sbatch` asks where sbatch is; it runs nothing
        rest, valued = words[1:], WRAPPER_VALUED.get(name, set())
        while rest and (rest[0].startswith("-") or (name == "env" and ASSIGNMENT.match(rest[0]))):
            option = rest.pop(0)
            if option == "--":
                break
            if option in valued and rest:
                rest.pop(0)
        words = rest[WRAPPERS[name] :]
    return words


def _ssh_command(args: Sequence[str]) -> tuple[str, list[str]] | None:
    """ssh's host and the words of its remote command, or None (no command: a login)."""
    i = 0
    while i < len(args):
        word = args[i]
        if word == "--":
            i += 1
            break
        if not word.startswith("-") or word == "-":
            break
        i += 2 if len(word) == 2 and word[1] in SSH_VALUED else 1
    if i >= len(args) - 1:
        return None
    return args[i], list(args[i + 1 :])


def _shell_script(program: str, args: Sequence[str]) -> str | None:
    """The script of `bash -c SCRIPT` (options before -c, -lc and the like), else None."""
    if program not in SHELLS:
        return None
    for i, word in enumerate(args):
        if word.startswith("-") and not word.startswith("--") and "c" in word[1:]:
            return args[i + 1] if i + 1 < len(args) else ""
        if not word.startswith("-"):
            return None
    return None


def commands(line: str, *, via: tuple[str, ...] = (), depth: int = 0) -> Iterator[Simple]:
    """Every simple command ``line`` would run, wrappers opened (TooDeep past MAX_DEPTH);
    ValueError when the quoting does not close (shlex)."""
    if depth > MAX_DEPTH:
        raise TooDeep(line)
    line, bodies = heredocs(line)
    for body in bodies:
        yield from commands(body, via=(*via, "<<"), depth=depth + 1)
    for run in _split(tokens(line)):
        words = _unwrapped(_without_redirections(run))
        if not words:
            continue
        simple = Simple(words=tuple(words), via=via)
        yield simple
        program = simple.program
        script = _shell_script(program, simple.args)
        if script is not None:
            yield from commands(script, via=(*via, program), depth=depth + 1)
        elif program == "find":
            for i, word in enumerate(simple.args):
                if word in FIND_RUNS and i + 1 < len(simple.args):
                    # `-exec sbatch {} ;`: the shell's `;` already ended the words here.
                    inner = Simple(words=simple.args[i + 1 :], via=(*via, "find"))
                    yield inner
        elif program == "eval":
            yield from commands(" ".join(simple.args), via=(*via, "eval"), depth=depth + 1)
        elif program in ("ssh", "autossh", "mosh"):
            remote = _ssh_command(simple.args)
            if remote is not None:
                # The remote shell reads the words again, joined by spaces (as ssh sends them).
                host, rest = remote
                yield from commands(" ".join(rest), via=(*via, f"ssh {host}"), depth=depth + 1)
