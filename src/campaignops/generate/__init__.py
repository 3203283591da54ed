"""Making and updating campaigns: ``campaign new``, ``campaign update``, the template's answers."""
