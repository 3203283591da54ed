"""The ssh backend: GPU boxes reached over SSH only; submit, query, pull, release and the meter."""
