"""The ``catallax`` command with a fault injected, for the crash tests (tests/scenarios/test_resume.py)::

    python -m tests.scenarios.faults N run relay --seed 4 ...

runs ``catallax run relay --seed 4 ...`` whose N-th database write of rounds stops inside its open
transaction (every row sent, nothing committed) and says so on stderr, so the test can SIGKILL it there.
The hook is the store's test-only injection point (``RunStore.before_commit``); a run never sets it.
"""

import sys
import time

from market.store import RunStore
from scenarios.cli.main import main


def hang_in_write(n: int):
    def hook(count: int) -> None:
        if count == n:
            print(f"catallax: fault injection: hanging inside write {count}, transaction open", file=sys.stderr, flush=True)
            time.sleep(3600)

    return staticmethod(hook)


if __name__ == "__main__":
    RunStore.before_commit = hang_in_write(int(sys.argv[1]))
    sys.exit(main(sys.argv[2:]))
