"""What the box executor gets from the failure catalog: the GPU out-of-memory matchers."""

from __future__ import annotations

import re

from campaignops.model import catalog


def test_oom_patterns_are_the_gpu_oom_entries_for_the_backend_case_insensitive() -> None:
    data = {
        "version": 1,
        "failures": [
            {"id": "cuda-oom", "category": "oom-gpu", "matchers": ["CUDA out of memory"]},
            {
                "id": "box",
                "category": "oom-gpu",
                "matchers": ["HIP out of memory"],
                "backends": ["ssh"],
            },
            {
                "id": "slurm-only",
                "category": "oom-gpu",
                "matchers": ["oom on slurm"],
                "backends": ["slurm"],
            },
            {"id": "host", "category": "oom-host", "matchers": ["Killed process"]},
        ],
    }
    found = catalog.oom_patterns(catalog.from_data(data), backend="vast-ai", kind="ssh")
    assert found == ("(?i)CUDA out of memory", "(?i)HIP out of memory")
    assert re.search(found[0], "torch.cuda.OutOfMemoryError: cuda OUT OF MEMORY. Tried")
    assert not re.search(found[0], "CUDA error: an illegal memory access")
