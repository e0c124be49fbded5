"""Child process: append turns to one session of a store on object storage, through the plumbing.

    chain_appender.py URL SESSION WRITER COUNT

Only the URL and the environment (endpoint, credentials) are shared with the other writers: no file
system. Each turn is a blob and a commit created after the head this process last read; a
`StaleSessionError` (another writer created that seq first) backs off, rereads the head and retries
the same turn after it, as every concurrent writer must. After each acknowledged commit it prints
`seq id` (flushed).
COUNT 0 means forever (until killed).
"""

from __future__ import annotations

import random
import sys
import time

from sessionstore.errors import StaleSessionError
from sessionstore.plumbing.commits import make_line
from sessionstore.plumbing.object_storage import open_url


def main() -> None:
    url, name, writer, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    backend = open_url(url)
    log = backend.log(name)
    head = log.head()
    print("ready", flush=True)
    i = 0
    while count == 0 or i < count:
        oid = backend.objects.write(f'{{"writer":"{writer}","turn":{i}}}\n'.encode())
        lost = 0
        while True:
            line, body = make_line(
                parent=head, kind="turn", blob=oid, count=(head.count if head else 0) + 1, tokens=0,
                usage=None, extra={"sizes": [0], "writer": writer, "turn": i},
            )  # fmt: skip
            try:
                head = log.append(line, body, head)
                break
            except StaleSessionError:  # back off (jittered, doubling) so the losers do not race in step
                lost += 1
                time.sleep(random.uniform(0, 0.002 * 2 ** min(lost, 4)))
                head = log.head(after=head)  # the newest (reading just the seq it lost falls behind)
        print(head.seq, head.id, flush=True)
        i += 1


if __name__ == "__main__":
    main()
