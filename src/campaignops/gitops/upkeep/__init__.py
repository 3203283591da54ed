"""`campaign audit`: the campaign's upkeep on a schedule (stamps, sources, leftovers)."""
