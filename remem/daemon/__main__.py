"""``python -m remem.daemon [--db PATH] [--key KEY]``: run the hook daemon of a store."""

from __future__ import annotations

import argparse
import logging
import os
import sys

from .client import endpoint
from .server import IDLE_S, HookDaemon


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m remem.daemon")
    parser.add_argument("--db", help="store file (default: $REMEM_HOME/remem.db)")
    parser.add_argument("--key", help="the endpoint key the client computed (checked)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s remem-daemon %(message)s")
    ep = endpoint(args.db)
    if args.key and args.key != ep.key:
        print(f"remem daemon: endpoint key {args.key} does not match this environment's {ep.key}",
              file=sys.stderr)
        return 2
    try:
        idle = float(os.environ.get("REMEM_DAEMON_IDLE_S", IDLE_S))
    except ValueError:
        idle = IDLE_S
    return HookDaemon(ep, idle_s=idle).run()


if __name__ == "__main__":
    raise SystemExit(main())
