"""The PBS Pro backend: qsub scripts, the qsub, qstat, qselect and qdel calls and their answers."""
