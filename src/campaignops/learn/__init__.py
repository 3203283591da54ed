"""Learning from finished work: diagnosis, lessons, right-sizing."""
