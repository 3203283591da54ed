"""What runs on a remote box: ``boxexec``, the standalone executor the ssh backend copies there.

Nothing in this package may import campaignops (or anything beyond the standard library): the
box has only ``python3``, and the executor travels as one file, byte for byte. That file also
holds the one supervisor's rules, which the local backend's executor imports
(docs/architecture.md, "The supervisor").
"""
