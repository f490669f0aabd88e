"""A minimal taskd remote worker (taskd.v1.WorkerService) in Python.

A worker opens one Work stream to a taskd node, says which kinds it
handles, and runs the runs of those kinds that the node sends it:

    from taskd_worker import Worker, Result

    worker = Worker("127.0.0.1:7420", name="mailer", kinds=["email"], concurrency=4)

    @worker.handle("email")
    def send(run):
        deliver(run.payload)
        return Result(message="sent")

    worker.run()

A handler is called with a Run and ends the run by how it returns:

  - returns normally: success. It may return None, a str (the run's
    message) or a Result (a message, new data for the task, or a warning).
  - raises Retry, or any exception not listed below: a failed attempt,
    retried after the task's backoff until its attempts are used up.
  - raises Permanent: failed, not retried; the task goes on with its
    next fire time, or, with none left, is DEAD.
  - raises Snooze(until): the same fire time runs again at until (a
    datetime, or seconds from now; None is at once), no attempt used up.
  - raises Cancel: the task is cancelled, no more runs.

Runs execute on up to `concurrency` threads. When the node cancels a run
(its deadline passed, the node lost the identity, the node is stopping)
run.cancelled becomes true: a long handler should check it, or wait with
run.wait_cancelled(seconds), and give up; the node refuses its outcome
anyway. The worker sends heartbeats within the interval the node asks for, and
reconnects with backoff when the stream fails. Needs only grpcio and
protobuf, and the generated package taskd.v1 beside this file (python/ on
sys.path).
"""

import datetime
import logging
import queue
import random
import threading
import time
from concurrent import futures

import grpc

from taskd.v1 import worker_pb2, worker_pb2_grpc

__all__ = ["Worker", "Run", "Result", "Retry", "Permanent", "Snooze", "Cancel"]

log = logging.getLogger("taskd_worker")


class Result:
    """A successful outcome: a message for the run's history, and data that
    replaces the task's persistent data when it is not None (b"" empties
    it). warning=True records the success as a warning."""

    def __init__(self, message="", data=None, warning=False):
        self.message = message
        self.data = data
        self.warning = warning


class Retry(Exception):
    """The run failed; it is retried after the task's backoff. Any other
    exception a handler raises (except those below) does the same."""


class Permanent(Exception):
    """The run failed and is not retried."""


class Snooze(Exception):
    """The same fire time runs again at until (a datetime, or seconds from
    now; None: at once), with no attempt used up."""

    def __init__(self, until=None, message=""):
        super().__init__(message)
        self.until = until


class Cancel(Exception):
    """The task is cancelled: no more runs."""


def _time(ts):
    """A Timestamp field as an aware UTC datetime, or None when unset."""
    if ts is None or (ts.seconds == 0 and ts.nanos == 0):
        return None
    return ts.ToDatetime(tzinfo=datetime.timezone.utc)


class Run:
    """One run of a task, as the node sent it (WorkRun)."""

    def __init__(self, msg):
        self.run_id = msg.run_id
        self.identity = msg.identity
        self.task_id = msg.task_id
        self.kind = msg.kind
        self.payload = msg.payload
        self.data = msg.data
        self.labels = dict(msg.labels)
        self.run_number = msg.run_number
        self.attempt = msg.attempt
        self.fire_time = _time(msg.fire_time if msg.HasField("fire_time") else None)
        self.fence = msg.fence
        self.deadline = _time(msg.deadline if msg.HasField("deadline") else None)
        self.manual = msg.manual
        self.recovery = msg.recovery
        self.node = msg.node
        self.cancel_reason = ""
        self._cancelled = threading.Event()

    @property
    def cancelled(self):
        """True once the node cancelled the run or the stream was lost."""
        return self._cancelled.is_set()

    def wait_cancelled(self, timeout=None):
        """Waits up to timeout seconds for a cancellation; True if cancelled."""
        return self._cancelled.wait(timeout)

    def _cancel(self, reason):
        self.cancel_reason = reason
        self._cancelled.set()

    def __repr__(self):
        return "Run(%s %s/%s %s run %d attempt %d fence %s)" % (
            self.run_id, self.identity, self.task_id, self.kind,
            self.run_number, self.attempt, self.fence)


def _outcome(run, fn):
    """Calls fn(run) and turns how it ended into a WorkOutcome."""
    out = worker_pb2.WorkOutcome(run_id=run.run_id, fence=run.fence)
    try:
        res = fn(run)
    except Snooze as e:
        out.result = worker_pb2.WORK_RESULT_SNOOZE
        out.message = str(e)
        until = e.until
        if isinstance(until, (int, float)):
            until = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=until)
        if until is not None:
            if until.tzinfo is None:  # a naive datetime is taken as UTC
                until = until.replace(tzinfo=datetime.timezone.utc)
            out.snooze_until.FromDatetime(until)
    except Permanent as e:
        out.result = worker_pb2.WORK_RESULT_PERMANENT
        out.message = str(e) or "permanent error"
    except Cancel as e:
        out.result = worker_pb2.WORK_RESULT_CANCEL
        out.message = str(e) or "cancelled by the handler"
    except Exception as e:  # Retry and anything else: retried
        if not isinstance(e, Retry):
            log.warning("run %s: handler raised %r", run.run_id, e, exc_info=True)
        out.result = worker_pb2.WORK_RESULT_ERROR
        out.message = str(e) or type(e).__name__
    else:
        if isinstance(res, str):
            res = Result(message=res)
        elif res is None:
            res = Result()
        elif not isinstance(res, Result):
            raise TypeError("a handler returns None, a str or a Result, not %r" % (res,))
        out.result = worker_pb2.WORK_RESULT_WARNING if res.warning else worker_pb2.WORK_RESULT_SUCCESS
        out.message = res.message
        if res.data is not None:
            out.data = bytes(res.data)
            out.data_set = True
    return out


class _Session:
    """One Work stream: what is sent on it and the runs in flight on it."""

    def __init__(self, concurrency):
        self.outbox = queue.Queue()  # WorkRequests; None ends the stream
        self.runs = {}  # run_id -> Run, in flight
        self.lock = threading.Lock()
        self.closed = threading.Event()
        self.pool = futures.ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="taskd-run")

    def requests(self, hello):
        yield worker_pb2.WorkRequest(hello=hello)
        while True:
            item = self.outbox.get()
            if item is None:
                return
            yield item

    def send(self, request):
        if not self.closed.is_set():
            self.outbox.put(request)

    def close(self):
        """Ends the stream's requests and cancels the runs still in flight
        (the node fails them: their outcomes can no longer be sent)."""
        self.closed.set()
        self.outbox.put(None)
        with self.lock:
            runs, self.runs = list(self.runs.values()), {}
        for run in runs:
            run._cancel("stream closed")
        self.pool.shutdown(wait=False)


class Worker:
    """A remote worker of one taskd node.

    target is the node's gRPC address (host:port); name names the worker in
    the runs' history and the node's logs; kinds are the kinds it announces
    (default: those it has handlers for); concurrency is the most runs it
    takes at once. token, when set, is sent as "authorization: Bearer
    <token>" (a node with tokens needs one with the "work" verb).
    credentials, when set, is a grpc.ChannelCredentials for TLS.
    on_welcome(node, heartbeat_seconds) is called after each welcome.
    """

    def __init__(self, target, name, kinds=None, concurrency=1, token=None,
                 credentials=None, on_welcome=None,
                 min_backoff=0.1, max_backoff=5.0):
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.target = target
        self.name = name
        self.kinds = list(kinds or [])
        self.concurrency = concurrency
        self.token = token
        self.credentials = credentials
        self.on_welcome = on_welcome
        self.min_backoff = min_backoff
        self.max_backoff = max_backoff
        self.handlers = {}
        self._stop = threading.Event()
        self._call = None
        self._call_lock = threading.Lock()

    def handle(self, kind):
        """A decorator that makes fn(run) the handler of kind."""
        def register(fn):
            self.handlers[kind] = fn
            return fn
        return register

    def stop(self):
        """Makes run return: closes the stream; runs in flight are failed
        by the node and retried."""
        self._stop.set()
        with self._call_lock:
            if self._call is not None:
                self._call.cancel()

    def run(self):
        """Serves until stop is called. Whenever the stream fails it opens a
        new one after a backoff (doubling from min_backoff up to
        max_backoff, with jitter; reset by a welcome); while the node cannot
        be reached, the channel tries to connect about every second."""
        kinds = self.kinds or sorted(self.handlers)
        if not kinds:
            raise ValueError("no kinds: register a handler with @worker.handle(kind)")
        for k in kinds:
            if k not in self.handlers:
                raise ValueError("kind %r has no handler" % k)
        hello = worker_pb2.WorkerHello(worker=self.name, kinds=kinds, concurrency=self.concurrency)
        metadata = [("authorization", "Bearer " + self.token)] if self.token else None
        # The channel reconnects with a backoff of its own (up to 2 minutes
        # by default): keep it short, so that a worker waiting in _connected
        # finds a node that came back within a second.
        options = [("grpc.initial_reconnect_backoff_ms", int(self.min_backoff * 1000)),
                   ("grpc.max_reconnect_backoff_ms", int(min(self.max_backoff, 1.0) * 1000))]
        if self.credentials is not None:
            channel = grpc.secure_channel(self.target, self.credentials, options)
        else:
            channel = grpc.insecure_channel(self.target, options)
        stub = worker_pb2_grpc.WorkerServiceStub(channel)
        delay = self.min_backoff
        try:
            while not self._stop.is_set():
                if not self._connected(channel, self.max_backoff):
                    if not self._stop.is_set():
                        log.warning("cannot reach %s yet", self.target)
                    continue  # that wait was the backoff
                welcomed = self._session(stub, hello, metadata)
                if self._stop.is_set():
                    break
                if welcomed:
                    delay = self.min_backoff
                wait = delay * random.uniform(0.5, 1.0)
                log.info("reconnecting to %s in %.2fs", self.target, wait)
                self._stop.wait(wait)
                delay = min(delay * 2, self.max_backoff)
        finally:
            channel.close()

    def _connected(self, channel, timeout):
        """Waits up to timeout seconds for the channel to connect (a call made
        before would fail at once with the last connection error)."""
        ready = grpc.channel_ready_future(channel)
        try:
            deadline = time.monotonic() + timeout
            while not self._stop.is_set():
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                try:
                    ready.result(timeout=min(left, 0.5))
                    return True
                except grpc.FutureTimeoutError:
                    pass
            return False
        finally:
            ready.cancel()

    def _session(self, stub, hello, metadata):
        """Runs one Work stream until it ends; True if it was welcomed."""
        s = _Session(self.concurrency)
        welcomed = False
        call = stub.Work(s.requests(hello), metadata=metadata)
        with self._call_lock:
            self._call = call
        if self._stop.is_set():
            call.cancel()
        try:
            for resp in call:
                which = resp.WhichOneof("msg")
                if which == "welcome":
                    welcomed = True
                    self._welcome(s, resp.welcome)
                elif which == "run":
                    self._start(s, Run(resp.run))
                elif which == "cancel":
                    with s.lock:
                        run = s.runs.get(resp.cancel.run_id)
                    log.info("run %s cancelled by the node: %s", resp.cancel.run_id, resp.cancel.reason)
                    if run is not None:
                        run._cancel(resp.cancel.reason)
                elif which == "ack":
                    a = resp.ack
                    if a.accepted:
                        log.info("run %s: outcome accepted", a.run_id)
                    else:
                        log.warning("run %s: dropped: %s", a.run_id, a.reason)
            log.warning("stream to %s ended by the node", self.target)
        except grpc.RpcError as e:
            if not self._stop.is_set():
                log.warning("stream to %s failed: %s: %s", self.target, e.code(), e.details())
        finally:
            with self._call_lock:
                self._call = None
            s.close()
        return welcomed

    def _welcome(self, s, welcome):
        interval = welcome.heartbeat_interval.ToTimedelta().total_seconds()
        log.info("welcomed by node %s (heartbeat every %.3fs)", welcome.node, interval)
        if interval > 0:
            threading.Thread(target=self._heartbeats, args=(s, interval),
                             name="taskd-heartbeat", daemon=True).start()
        if self.on_welcome is not None:
            self.on_welcome(welcome.node, interval)

    @staticmethod
    def _heartbeats(s, interval):
        # Every half interval, so that a late wake-up never makes one late.
        beat = worker_pb2.WorkRequest(heartbeat=worker_pb2.WorkerHeartbeat())
        while not s.closed.wait(interval / 2):
            s.send(beat)

    def _start(self, s, run):
        fn = self.handlers.get(run.kind)
        log.info("run %r", run)
        if fn is None:  # the node only sends announced kinds; be safe
            s.send(worker_pb2.WorkRequest(outcome=worker_pb2.WorkOutcome(
                run_id=run.run_id, fence=run.fence, result=worker_pb2.WORK_RESULT_PERMANENT,
                message="worker %s has no handler for kind %r" % (self.name, run.kind))))
            return
        with s.lock:
            s.runs[run.run_id] = run

        def execute():
            try:
                out = _outcome(run, fn)
            except Exception as e:  # a handler that returned something odd
                out = worker_pb2.WorkOutcome(run_id=run.run_id, fence=run.fence,
                                             result=worker_pb2.WORK_RESULT_ERROR, message=str(e))
            with s.lock:
                s.runs.pop(run.run_id, None)
            s.send(worker_pb2.WorkRequest(outcome=out))

        try:
            s.pool.submit(execute)
        except RuntimeError:  # the session closed meanwhile
            pass
