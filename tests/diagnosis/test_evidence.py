"""Evidence beyond one message, on the template catalog (issue 23): a quota table tells a file
quota from a byte quota, a LINCS warning block's magnitude tells a blow-up from a recoverable
warning, and an MPI launcher's exit box names the signal. The lines come from real logs: the
quota table is the Sheffield HPC docs' `quota -u -s` (rcgsheffield/sheffield_hpc#1947; SPACE_OVER
is that row with the star moved to the space column), the LINCS blocks are plumed/plumed2#192 (a
crash) and tbereau/auto_martini#14 (a run that went on; markdown bold removed), the MPICH box is
abacusmodeling/ABACUS-orbitals#1 with its exit code varied (9 is je-santos/MPLBM-UT#92's)."""

from __future__ import annotations

from types import ModuleType

import pytest

from campaignops.learn.diagnosis import engine
from campaignops.model import catalog

QUOTA_HEADER = "    Filesystem   space   quota   limit   grace   files   quota   limit   grace"
FILES_OVER = "                 3289M  51200M  76800M            321k*   300k    350k   none"
SPACE_OVER = "                 3289M* 51200M  76800M   none     154k    300k    350k"
EDQUOT = "OSError: [Errno 122] Disk quota exceeded: 'out/intermediate.ntw'"

LINCS_BLOWUP = """Step 169, time 0.338 (ps)  LINCS WARNING in simulation 3
relative constraint deviation after LINCS:
rms 0.164806, max 8.641613 (between atoms 2782 and 2784)
bonds that rotated more than 30 degrees:
 atom 1 atom 2  angle  previous, current, constraint length
   2782   2783   90.0    0.2983   0.8532      0.1000
   2782   2784   90.0    0.2629   0.9642      0.1000
Wrote pdb files with previous and current coordinates"""
LINCS_RECOVERABLE = """Step 40342, time 806.84 (ps)  LINCS WARNING
relative constraint deviation after LINCS:
rms 0.003365, max 0.006212 (between atoms 2 and 5)
bonds that rotated more than 30 degrees:
 atom 1 atom 2  angle  previous, current, constraint length
      1      2   31.0    0.2399   0.2399      0.2400"""

MPICH_BOX = """===================================================================================
=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES
=   PID 177624 RUNNING AT cu13
=   EXIT CODE: {code}
=   CLEANING UP REMAINING PROCESSES
=   YOU CAN IGNORE THE BELOW CLEANUP MESSAGES"""


@pytest.fixture(scope="module")
def template(bench: ModuleType) -> catalog.Catalog:
    return catalog.from_data(bench.catalog_data())


def category(text: str, cat: catalog.Catalog) -> str | None:
    return engine.diagnose(text, catalog=cat).category


def test_a_quota_table_with_the_files_column_over_its_limit_makes_it_an_inode_quota(
    template: catalog.Catalog,
) -> None:
    table = f"{QUOTA_HEADER}\nstorage:/export/users\n{FILES_OVER}"
    assert category(f"{EDQUOT}\n{table}", template) == "inodes"
    assert category(f"{table}\n{EDQUOT}", template) == "inodes"
    assert category(f"{QUOTA_HEADER}\n{SPACE_OVER}\n{EDQUOT}", template) == "quota-limit"
    assert category(EDQUOT, template) == "quota-limit"
    assert category(table, template) is None  # the table alone is no failure


def test_a_lincs_block_is_a_blow_up_only_when_its_deviation_is_large(
    template: catalog.Catalog,
) -> None:
    assert category(LINCS_BLOWUP, template) == "numerical-instability"
    assert category(LINCS_RECOVERABLE, template) is None


def test_an_mpich_exit_box_names_the_signal(template: catalog.Catalog) -> None:
    assert category(MPICH_BOX.format(code=139), template) == "segfault"
    assert category(MPICH_BOX.format(code=9), template) == "oom-host"
    assert category(MPICH_BOX.format(code=1), template) is None
