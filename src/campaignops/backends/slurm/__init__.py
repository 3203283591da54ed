"""The Slurm backend: sbatch scripts, the sbatch, squeue, sacct and scancel calls and their answers."""
