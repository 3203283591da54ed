"""Diagnosis: what a failed task's log and the scheduler's verdict say, by the failure catalog.

``logtext`` reads and cleans a log tail, ``patterns`` vets and ranks matchers, ``catalog``
loads failures.yaml, ``verdicts`` maps scheduler states to categories, ``engine`` decides, and
``report`` finds a ledger job's task, its log and its verdict for ``campaign diagnose`` and
``campaign status --refresh``.
"""
