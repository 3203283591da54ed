"""One error hierarchy for the library. The library raises; the CLI maps to exit codes."""

from __future__ import annotations

from collections.abc import Mapping


class CampaignError(Exception):
    """Base class. ``exit_code`` is what the CLI returns for this error."""

    exit_code = 2

    def __init__(self, *, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message}\n  hint: {self.hint}" if self.hint else self.message

    def details(self) -> Mapping[str, object]:
        """Fields a program can act on beyond message and hint (the JSON error document's)."""
        return {}


class UsageError(CampaignError):
    """The command line asks for something that cannot be done (unknown ID, bad date)."""


class InputError(CampaignError):
    """A file could not be read as the format it should have (named in ``path``)."""

    def __init__(self, *, path: str, message: str, hint: str = "") -> None:
        super().__init__(message=f"{path}: {message}", hint=hint)
        self.path = path


class GitError(CampaignError):
    """A git operation failed (not a repository, unknown ref)."""


class LockConflictError(CampaignError):
    """A wrapper is already locked with other content: it must be copied to a new version."""

    exit_code = 1


class YamlSyntaxError(CampaignError):
    """A YAML document that does not parse; checks turn it into a finding at ``line``:``col``."""

    exit_code = 1

    def __init__(self, *, path: str, line: int, col: int, problem: str) -> None:
        super().__init__(message=f"{path}:{line}:{col}: {problem}")
        self.path = path
        self.line = line
        self.col = col
        self.problem = problem
