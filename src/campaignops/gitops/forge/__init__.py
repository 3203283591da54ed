"""Publishing to a forge (GitHub, GitLab): one sticky review comment per change request, one
open audit issue per label. ``campaign publish`` is the code path the generated workflows run.

http.py     the REST client: timeouts, bounded retries, no redirects, the token never echoed
shape.py    every answer's JSON checked field by field before use
settings.py the CI environment → Settings (which platform, API URL, project, token, number)
github.py   GitHub's issue-comment and issue endpoints → Note / Issue
gitlab.py   GitLab's merge-request-note and issue endpoints → Note / Issue
publish.py  the idempotent decisions (pure, over listed items) and the two operations
"""
