"""The campaign as a repository under review: ``campaign review``, ``campaign audit``, the forges."""
