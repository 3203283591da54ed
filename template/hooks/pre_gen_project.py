"""Refuse unacceptable answers before cookiecutter writes anything it keeps.

The rules are campaignops.generate.answers.validate, the same ones `campaign new` applies and copier.yml's
validators mirror. Answers arrive as JSON inside a raw string: Jinja's tojson escapes quotes, so
no answer can end the string or run as code here.
"""

import json
import sys

ANSWERS = json.loads(r"""{{ cookiecutter | tojson }}""")

try:
    from campaignops.generate.answers import validate
except ImportError:
    sys.exit(
        "This template validates answers with the campaignops package, which is not importable "
        "by the Python running cookiecutter. Install it next to cookiecutter "
        "(pip install campaignops), or use `campaign new`."
    )

problems = validate(ANSWERS)
for name, message in problems.items():
    print(f"error: {message} (got {ANSWERS.get(name)!r})", file=sys.stderr)
sys.exit(1 if problems else 0)
