"""Remove the directories the answers left empty (cookiecutter cannot make a directory optional).

Copier does the same with copier.yml's ``_exclude``; the two engines must give identical trees.
"""

from pathlib import Path

for rel in (".github/workflows", ".github"):
    path = Path(rel)
    if path.is_dir() and not any(path.iterdir()):
        path.rmdir()
