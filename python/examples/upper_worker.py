#!/usr/bin/python3
"""upper_worker serves kind py-upper for a taskd node: each run's message is
its payload upper-cased, and the task's data becomes b"seen".

    /usr/bin/python3 python/examples/upper_worker.py --target 127.0.0.1:7420

It prints "ready" on stdout once the node has welcomed it (the log goes to
stderr) and serves until interrupted.
"""

import argparse
import logging
import os
import signal
import sys

import grpc

# python/ holds taskd_worker and the generated package taskd.v1.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from taskd_worker import Result, Worker  # noqa: E402


def main():
    p = argparse.ArgumentParser(description="A taskd remote worker for kind py-upper.")
    p.add_argument("--target", default="127.0.0.1:7420", help="the node's gRPC address (default %(default)s)")
    p.add_argument("--name", default="upper-worker", help="the worker's name (default %(default)s)")
    p.add_argument("--concurrency", type=int, default=4, help="runs at once (default %(default)s)")
    p.add_argument("--token", default=os.environ.get("TASKD_TOKEN"),
                   help="a token with the work verb (default $TASKD_TOKEN; none on a node without tokens)")
    p.add_argument("--ca", help="a CA certificate file: connect with TLS, verifying the node against it")
    args = p.parse_args()
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    credentials = None
    if args.ca:
        with open(args.ca, "rb") as f:
            credentials = grpc.ssl_channel_credentials(root_certificates=f.read())

    ready = []

    def on_welcome(node, heartbeat):
        if not ready:  # one line, at the first welcome
            ready.append(node)
            print("ready", flush=True)

    worker = Worker(args.target, args.name, kinds=["py-upper"], concurrency=args.concurrency,
                    token=args.token, credentials=credentials, on_welcome=on_welcome)

    @worker.handle("py-upper")
    def upper(run):
        return Result(message=run.payload.decode("utf-8", "replace").upper(), data=b"seen")

    signal.signal(signal.SIGTERM, lambda *_: worker.stop())
    try:
        worker.run()
    except KeyboardInterrupt:
        worker.stop()


if __name__ == "__main__":
    main()
