from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor
WORK_RESULT_CANCEL: WorkResult
WORK_RESULT_ERROR: WorkResult
WORK_RESULT_PERMANENT: WorkResult
WORK_RESULT_SNOOZE: WorkResult
WORK_RESULT_SUCCESS: WorkResult
WORK_RESULT_UNSPECIFIED: WorkResult
WORK_RESULT_WARNING: WorkResult

class WorkAck(_message.Message):
    __slots__ = ["accepted", "reason", "run_id"]
    ACCEPTED_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    accepted: bool
    reason: str
    run_id: str
    def __init__(self, run_id: _Optional[str] = ..., accepted: bool = ..., reason: _Optional[str] = ...) -> None: ...

class WorkCancel(_message.Message):
    __slots__ = ["reason", "run_id"]
    REASON_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    reason: str
    run_id: str
    def __init__(self, run_id: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class WorkOutcome(_message.Message):
    __slots__ = ["data", "data_set", "fence", "message", "result", "run_id", "snooze_until"]
    DATA_FIELD_NUMBER: _ClassVar[int]
    DATA_SET_FIELD_NUMBER: _ClassVar[int]
    FENCE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    SNOOZE_UNTIL_FIELD_NUMBER: _ClassVar[int]
    data: bytes
    data_set: bool
    fence: str
    message: str
    result: WorkResult
    run_id: str
    snooze_until: _timestamp_pb2.Timestamp
    def __init__(self, run_id: _Optional[str] = ..., fence: _Optional[str] = ..., result: _Optional[_Union[WorkResult, str]] = ..., message: _Optional[str] = ..., data: _Optional[bytes] = ..., data_set: bool = ..., snooze_until: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class WorkRequest(_message.Message):
    __slots__ = ["heartbeat", "hello", "outcome"]
    HEARTBEAT_FIELD_NUMBER: _ClassVar[int]
    HELLO_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    heartbeat: WorkerHeartbeat
    hello: WorkerHello
    outcome: WorkOutcome
    def __init__(self, hello: _Optional[_Union[WorkerHello, _Mapping]] = ..., outcome: _Optional[_Union[WorkOutcome, _Mapping]] = ..., heartbeat: _Optional[_Union[WorkerHeartbeat, _Mapping]] = ...) -> None: ...

class WorkResponse(_message.Message):
    __slots__ = ["ack", "cancel", "run", "welcome"]
    ACK_FIELD_NUMBER: _ClassVar[int]
    CANCEL_FIELD_NUMBER: _ClassVar[int]
    RUN_FIELD_NUMBER: _ClassVar[int]
    WELCOME_FIELD_NUMBER: _ClassVar[int]
    ack: WorkAck
    cancel: WorkCancel
    run: WorkRun
    welcome: WorkerWelcome
    def __init__(self, welcome: _Optional[_Union[WorkerWelcome, _Mapping]] = ..., run: _Optional[_Union[WorkRun, _Mapping]] = ..., cancel: _Optional[_Union[WorkCancel, _Mapping]] = ..., ack: _Optional[_Union[WorkAck, _Mapping]] = ...) -> None: ...

class WorkRun(_message.Message):
    __slots__ = ["attempt", "data", "deadline", "fence", "fire_time", "identity", "kind", "labels", "manual", "node", "payload", "recovery", "run_id", "run_number", "task_id"]
    class LabelsEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_FIELD_NUMBER: _ClassVar[int]
    FENCE_FIELD_NUMBER: _ClassVar[int]
    FIRE_TIME_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    MANUAL_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    RECOVERY_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    RUN_NUMBER_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    attempt: int
    data: bytes
    deadline: _timestamp_pb2.Timestamp
    fence: str
    fire_time: _timestamp_pb2.Timestamp
    identity: str
    kind: str
    labels: _containers.ScalarMap[str, str]
    manual: bool
    node: str
    payload: bytes
    recovery: bool
    run_id: str
    run_number: int
    task_id: str
    def __init__(self, run_id: _Optional[str] = ..., identity: _Optional[str] = ..., task_id: _Optional[str] = ..., kind: _Optional[str] = ..., payload: _Optional[bytes] = ..., data: _Optional[bytes] = ..., labels: _Optional[_Mapping[str, str]] = ..., run_number: _Optional[int] = ..., attempt: _Optional[int] = ..., fire_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., fence: _Optional[str] = ..., deadline: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., manual: bool = ..., recovery: bool = ..., node: _Optional[str] = ...) -> None: ...

class WorkerHeartbeat(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class WorkerHello(_message.Message):
    __slots__ = ["concurrency", "kinds", "worker"]
    CONCURRENCY_FIELD_NUMBER: _ClassVar[int]
    KINDS_FIELD_NUMBER: _ClassVar[int]
    WORKER_FIELD_NUMBER: _ClassVar[int]
    concurrency: int
    kinds: _containers.RepeatedScalarFieldContainer[str]
    worker: str
    def __init__(self, worker: _Optional[str] = ..., kinds: _Optional[_Iterable[str]] = ..., concurrency: _Optional[int] = ...) -> None: ...

class WorkerWelcome(_message.Message):
    __slots__ = ["heartbeat_interval", "node"]
    HEARTBEAT_INTERVAL_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    heartbeat_interval: _duration_pb2.Duration
    node: str
    def __init__(self, node: _Optional[str] = ..., heartbeat_interval: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class WorkResult(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
