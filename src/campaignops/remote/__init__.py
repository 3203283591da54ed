"""What runs on a remote box: the box executor, which the ssh backend copies there.

Nothing in this package may import campaignops outside it (or anything beyond the standard
library): the box has only ``python3``, and the executor travels as one file, a zip of this
package (artifact.py), named by its content. Its entry is boxexec.py; its commands are
commands.py; the loop is executor.py; the one supervisor's rules, which the local backend's
executor imports too, are supervision.py (docs/architecture.md, "The supervisor").
"""
