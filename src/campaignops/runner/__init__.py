"""The runner: submit only from committed configs; gates, ledger, backends, status."""
