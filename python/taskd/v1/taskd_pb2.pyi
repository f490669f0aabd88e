from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor
EVENT_TYPE_CANCELED: EventType
EVENT_TYPE_DEAD: EventType
EVENT_TYPE_DROPPED: EventType
EVENT_TYPE_FAILED: EventType
EVENT_TYPE_FINALIZED: EventType
EVENT_TYPE_FIRED: EventType
EVENT_TYPE_HANDED_OFF: EventType
EVENT_TYPE_INTERRUPTED: EventType
EVENT_TYPE_MISFIRED: EventType
EVENT_TYPE_MOVED: EventType
EVENT_TYPE_NEXT_SCHEDULED: EventType
EVENT_TYPE_PAUSED: EventType
EVENT_TYPE_RESUMED: EventType
EVENT_TYPE_RETRYING: EventType
EVENT_TYPE_SCHEDULED: EventType
EVENT_TYPE_STARTED: EventType
EVENT_TYPE_SUCCEEDED: EventType
EVENT_TYPE_UNSPECIFIED: EventType
EVENT_TYPE_UPDATED: EventType
EVENT_TYPE_VETOED: EventType
MISFIRE_POLICY_FIRE_ALL: MisfirePolicy
MISFIRE_POLICY_FIRE_ONCE_NOW: MisfirePolicy
MISFIRE_POLICY_SKIP: MisfirePolicy
MISFIRE_POLICY_UNSPECIFIED: MisfirePolicy
NODE_STATE_DRAINING: NodeState
NODE_STATE_RUNNING: NodeState
NODE_STATE_STARTING: NodeState
NODE_STATE_STOPPED: NodeState
NODE_STATE_UNSPECIFIED: NodeState
OUTCOME_CANCELED: Outcome
OUTCOME_DROPPED: Outcome
OUTCOME_ERROR: Outcome
OUTCOME_INTERRUPTED: Outcome
OUTCOME_SUCCESS: Outcome
OUTCOME_UNSPECIFIED: Outcome
OUTCOME_VETOED: Outcome
OUTCOME_WARNING: Outcome
SCOPE_EVERY_NODE: Scope
SCOPE_IDENTITY: Scope
SCOPE_UNSPECIFIED: Scope
TASK_STATE_CANCELED: TaskState
TASK_STATE_COMPLETED: TaskState
TASK_STATE_DEAD: TaskState
TASK_STATE_PAUSED: TaskState
TASK_STATE_RETRYING: TaskState
TASK_STATE_RUNNING: TaskState
TASK_STATE_SCHEDULED: TaskState
TASK_STATE_UNSPECIFIED: TaskState

class AnnualCalendar(_message.Message):
    __slots__ = ["days"]
    DAYS_FIELD_NUMBER: _ClassVar[int]
    days: _containers.RepeatedCompositeFieldContainer[Date]
    def __init__(self, days: _Optional[_Iterable[_Union[Date, _Mapping]]] = ...) -> None: ...

class Backoff(_message.Message):
    __slots__ = ["initial", "max"]
    INITIAL_FIELD_NUMBER: _ClassVar[int]
    MAX_FIELD_NUMBER: _ClassVar[int]
    initial: _duration_pb2.Duration
    max: _duration_pb2.Duration
    def __init__(self, initial: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., max: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class Calendar(_message.Message):
    __slots__ = ["annual", "base", "cron", "daily", "dates", "description", "monthly", "name", "revision", "time_zone", "weekly"]
    ANNUAL_FIELD_NUMBER: _ClassVar[int]
    BASE_FIELD_NUMBER: _ClassVar[int]
    CRON_FIELD_NUMBER: _ClassVar[int]
    DAILY_FIELD_NUMBER: _ClassVar[int]
    DATES_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    MONTHLY_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    TIME_ZONE_FIELD_NUMBER: _ClassVar[int]
    WEEKLY_FIELD_NUMBER: _ClassVar[int]
    annual: AnnualCalendar
    base: str
    cron: CronCalendar
    daily: DailyCalendar
    dates: DatesCalendar
    description: str
    monthly: MonthlyCalendar
    name: str
    revision: int
    time_zone: str
    weekly: WeeklyCalendar
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., time_zone: _Optional[str] = ..., base: _Optional[str] = ..., dates: _Optional[_Union[DatesCalendar, _Mapping]] = ..., annual: _Optional[_Union[AnnualCalendar, _Mapping]] = ..., monthly: _Optional[_Union[MonthlyCalendar, _Mapping]] = ..., weekly: _Optional[_Union[WeeklyCalendar, _Mapping]] = ..., daily: _Optional[_Union[DailyCalendar, _Mapping]] = ..., cron: _Optional[_Union[CronCalendar, _Mapping]] = ..., revision: _Optional[int] = ...) -> None: ...

class CancelTaskRequest(_message.Message):
    __slots__ = ["identity", "task_id"]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    identity: str
    task_id: str
    def __init__(self, identity: _Optional[str] = ..., task_id: _Optional[str] = ...) -> None: ...

class CancelTaskResponse(_message.Message):
    __slots__ = ["task"]
    TASK_FIELD_NUMBER: _ClassVar[int]
    task: Task
    def __init__(self, task: _Optional[_Union[Task, _Mapping]] = ...) -> None: ...

class CreateCalendarRequest(_message.Message):
    __slots__ = ["calendar", "replace"]
    CALENDAR_FIELD_NUMBER: _ClassVar[int]
    REPLACE_FIELD_NUMBER: _ClassVar[int]
    calendar: Calendar
    replace: bool
    def __init__(self, calendar: _Optional[_Union[Calendar, _Mapping]] = ..., replace: bool = ...) -> None: ...

class CreateCalendarResponse(_message.Message):
    __slots__ = ["calendar"]
    CALENDAR_FIELD_NUMBER: _ClassVar[int]
    calendar: Calendar
    def __init__(self, calendar: _Optional[_Union[Calendar, _Mapping]] = ...) -> None: ...

class CronCalendar(_message.Message):
    __slots__ = ["expression"]
    EXPRESSION_FIELD_NUMBER: _ClassVar[int]
    expression: str
    def __init__(self, expression: _Optional[str] = ...) -> None: ...

class CronTrigger(_message.Message):
    __slots__ = ["end", "expression", "start", "time_zone"]
    END_FIELD_NUMBER: _ClassVar[int]
    EXPRESSION_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    TIME_ZONE_FIELD_NUMBER: _ClassVar[int]
    end: _timestamp_pb2.Timestamp
    expression: str
    start: _timestamp_pb2.Timestamp
    time_zone: str
    def __init__(self, expression: _Optional[str] = ..., time_zone: _Optional[str] = ..., start: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., end: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class DailyCalendar(_message.Message):
    __slots__ = ["end", "invert", "start"]
    END_FIELD_NUMBER: _ClassVar[int]
    INVERT_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    end: str
    invert: bool
    start: str
    def __init__(self, start: _Optional[str] = ..., end: _Optional[str] = ..., invert: bool = ...) -> None: ...

class Date(_message.Message):
    __slots__ = ["day", "month", "year"]
    DAY_FIELD_NUMBER: _ClassVar[int]
    MONTH_FIELD_NUMBER: _ClassVar[int]
    YEAR_FIELD_NUMBER: _ClassVar[int]
    day: int
    month: int
    year: int
    def __init__(self, year: _Optional[int] = ..., month: _Optional[int] = ..., day: _Optional[int] = ...) -> None: ...

class DatesCalendar(_message.Message):
    __slots__ = ["dates"]
    DATES_FIELD_NUMBER: _ClassVar[int]
    dates: _containers.RepeatedCompositeFieldContainer[Date]
    def __init__(self, dates: _Optional[_Iterable[_Union[Date, _Mapping]]] = ...) -> None: ...

class DeleteCalendarRequest(_message.Message):
    __slots__ = ["name"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class DeleteCalendarResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class DeleteTaskRequest(_message.Message):
    __slots__ = ["identity", "task_id"]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    identity: str
    task_id: str
    def __init__(self, identity: _Optional[str] = ..., task_id: _Optional[str] = ...) -> None: ...

class DeleteTaskResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class DrainNodeRequest(_message.Message):
    __slots__ = ["node"]
    NODE_FIELD_NUMBER: _ClassVar[int]
    node: str
    def __init__(self, node: _Optional[str] = ...) -> None: ...

class DrainNodeResponse(_message.Message):
    __slots__ = ["node"]
    NODE_FIELD_NUMBER: _ClassVar[int]
    node: Node
    def __init__(self, node: _Optional[_Union[Node, _Mapping]] = ...) -> None: ...

class Event(_message.Message):
    __slots__ = ["attempt", "count", "cursor", "fence", "fire_time", "identity", "kind", "message", "next", "node", "outcome", "run_number", "task_id", "time", "trigger", "trigger_name", "type"]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    CURSOR_FIELD_NUMBER: _ClassVar[int]
    FENCE_FIELD_NUMBER: _ClassVar[int]
    FIRE_TIME_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    NEXT_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    RUN_NUMBER_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    TRIGGER_FIELD_NUMBER: _ClassVar[int]
    TRIGGER_NAME_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    attempt: int
    count: int
    cursor: str
    fence: str
    fire_time: _timestamp_pb2.Timestamp
    identity: str
    kind: str
    message: str
    next: _timestamp_pb2.Timestamp
    node: str
    outcome: Outcome
    run_number: int
    task_id: str
    time: _timestamp_pb2.Timestamp
    trigger: int
    trigger_name: str
    type: EventType
    def __init__(self, type: _Optional[_Union[EventType, str]] = ..., time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., node: _Optional[str] = ..., identity: _Optional[str] = ..., task_id: _Optional[str] = ..., kind: _Optional[str] = ..., run_number: _Optional[int] = ..., attempt: _Optional[int] = ..., fence: _Optional[str] = ..., outcome: _Optional[_Union[Outcome, str]] = ..., message: _Optional[str] = ..., next: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., count: _Optional[int] = ..., trigger: _Optional[int] = ..., cursor: _Optional[str] = ..., fire_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., trigger_name: _Optional[str] = ...) -> None: ...

class GetCalendarRequest(_message.Message):
    __slots__ = ["name"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class GetCalendarResponse(_message.Message):
    __slots__ = ["calendar"]
    CALENDAR_FIELD_NUMBER: _ClassVar[int]
    calendar: Calendar
    def __init__(self, calendar: _Optional[_Union[Calendar, _Mapping]] = ...) -> None: ...

class GetIdentityRequest(_message.Message):
    __slots__ = ["identity"]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    identity: str
    def __init__(self, identity: _Optional[str] = ...) -> None: ...

class GetIdentityResponse(_message.Message):
    __slots__ = ["identity"]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    identity: Identity
    def __init__(self, identity: _Optional[_Union[Identity, _Mapping]] = ...) -> None: ...

class GetTaskRequest(_message.Message):
    __slots__ = ["identity", "task_id"]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    identity: str
    task_id: str
    def __init__(self, identity: _Optional[str] = ..., task_id: _Optional[str] = ...) -> None: ...

class GetTaskResponse(_message.Message):
    __slots__ = ["task"]
    TASK_FIELD_NUMBER: _ClassVar[int]
    task: Task
    def __init__(self, task: _Optional[_Union[Task, _Mapping]] = ...) -> None: ...

class Identity(_message.Message):
    __slots__ = ["active", "epoch", "identity", "mapped", "node", "status_node", "status_since", "task_count"]
    ACTIVE_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    MAPPED_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    STATUS_NODE_FIELD_NUMBER: _ClassVar[int]
    STATUS_SINCE_FIELD_NUMBER: _ClassVar[int]
    TASK_COUNT_FIELD_NUMBER: _ClassVar[int]
    active: bool
    epoch: int
    identity: str
    mapped: bool
    node: str
    status_node: str
    status_since: _timestamp_pb2.Timestamp
    task_count: int
    def __init__(self, identity: _Optional[str] = ..., mapped: bool = ..., node: _Optional[str] = ..., epoch: _Optional[int] = ..., task_count: _Optional[int] = ..., active: bool = ..., status_node: _Optional[str] = ..., status_since: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ListCalendarsRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class ListCalendarsResponse(_message.Message):
    __slots__ = ["calendars"]
    CALENDARS_FIELD_NUMBER: _ClassVar[int]
    calendars: _containers.RepeatedCompositeFieldContainer[Calendar]
    def __init__(self, calendars: _Optional[_Iterable[_Union[Calendar, _Mapping]]] = ...) -> None: ...

class ListNodesRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class ListNodesResponse(_message.Message):
    __slots__ = ["nodes"]
    NODES_FIELD_NUMBER: _ClassVar[int]
    nodes: _containers.RepeatedCompositeFieldContainer[Node]
    def __init__(self, nodes: _Optional[_Iterable[_Union[Node, _Mapping]]] = ...) -> None: ...

class ListPausesRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class ListPausesResponse(_message.Message):
    __slots__ = ["pauses"]
    PAUSES_FIELD_NUMBER: _ClassVar[int]
    pauses: _containers.RepeatedCompositeFieldContainer[Pause]
    def __init__(self, pauses: _Optional[_Iterable[_Union[Pause, _Mapping]]] = ...) -> None: ...

class ListRunsRequest(_message.Message):
    __slots__ = ["identity", "task_id"]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    identity: str
    task_id: str
    def __init__(self, identity: _Optional[str] = ..., task_id: _Optional[str] = ...) -> None: ...

class ListRunsResponse(_message.Message):
    __slots__ = ["runs"]
    RUNS_FIELD_NUMBER: _ClassVar[int]
    runs: _containers.RepeatedCompositeFieldContainer[Run]
    def __init__(self, runs: _Optional[_Iterable[_Union[Run, _Mapping]]] = ...) -> None: ...

class ListTasksRequest(_message.Message):
    __slots__ = ["identity", "kind", "labels", "node", "page_size", "page_token", "states"]
    class LabelsEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    STATES_FIELD_NUMBER: _ClassVar[int]
    identity: str
    kind: str
    labels: _containers.ScalarMap[str, str]
    node: str
    page_size: int
    page_token: str
    states: _containers.RepeatedScalarFieldContainer[TaskState]
    def __init__(self, identity: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., states: _Optional[_Iterable[_Union[TaskState, str]]] = ..., kind: _Optional[str] = ..., labels: _Optional[_Mapping[str, str]] = ..., node: _Optional[str] = ...) -> None: ...

class ListTasksResponse(_message.Message):
    __slots__ = ["next_page_token", "tasks"]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    TASKS_FIELD_NUMBER: _ClassVar[int]
    next_page_token: str
    tasks: _containers.RepeatedCompositeFieldContainer[Task]
    def __init__(self, tasks: _Optional[_Iterable[_Union[Task, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class MonthlyCalendar(_message.Message):
    __slots__ = ["days"]
    DAYS_FIELD_NUMBER: _ClassVar[int]
    days: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, days: _Optional[_Iterable[int]] = ...) -> None: ...

class MoveIdentityRequest(_message.Message):
    __slots__ = ["identity", "to_node"]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    TO_NODE_FIELD_NUMBER: _ClassVar[int]
    identity: str
    to_node: str
    def __init__(self, identity: _Optional[str] = ..., to_node: _Optional[str] = ...) -> None: ...

class MoveIdentityResponse(_message.Message):
    __slots__ = ["identity"]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    identity: Identity
    def __init__(self, identity: _Optional[_Union[Identity, _Mapping]] = ...) -> None: ...

class Node(_message.Message):
    __slots__ = ["address", "dispatch_start", "identities_owned", "incarnation", "kinds", "leader", "lease_remaining", "name", "started_at", "state"]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    DISPATCH_START_FIELD_NUMBER: _ClassVar[int]
    IDENTITIES_OWNED_FIELD_NUMBER: _ClassVar[int]
    INCARNATION_FIELD_NUMBER: _ClassVar[int]
    KINDS_FIELD_NUMBER: _ClassVar[int]
    LEADER_FIELD_NUMBER: _ClassVar[int]
    LEASE_REMAINING_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    address: str
    dispatch_start: _timestamp_pb2.Timestamp
    identities_owned: int
    incarnation: str
    kinds: _containers.RepeatedScalarFieldContainer[str]
    leader: bool
    lease_remaining: _duration_pb2.Duration
    name: str
    started_at: _timestamp_pb2.Timestamp
    state: NodeState
    def __init__(self, name: _Optional[str] = ..., incarnation: _Optional[str] = ..., address: _Optional[str] = ..., state: _Optional[_Union[NodeState, str]] = ..., started_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., dispatch_start: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., identities_owned: _Optional[int] = ..., kinds: _Optional[_Iterable[str]] = ..., leader: bool = ..., lease_remaining: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class OnStartupTrigger(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class OnceTrigger(_message.Message):
    __slots__ = ["at", "delay"]
    AT_FIELD_NUMBER: _ClassVar[int]
    DELAY_FIELD_NUMBER: _ClassVar[int]
    at: _timestamp_pb2.Timestamp
    delay: _duration_pb2.Duration
    def __init__(self, at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., delay: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class Pause(_message.Message):
    __slots__ = ["identity", "kind", "since"]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    SINCE_FIELD_NUMBER: _ClassVar[int]
    identity: str
    kind: str
    since: _timestamp_pb2.Timestamp
    def __init__(self, identity: _Optional[str] = ..., kind: _Optional[str] = ..., since: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class PauseIdentityRequest(_message.Message):
    __slots__ = ["identity"]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    identity: str
    def __init__(self, identity: _Optional[str] = ...) -> None: ...

class PauseIdentityResponse(_message.Message):
    __slots__ = ["pause"]
    PAUSE_FIELD_NUMBER: _ClassVar[int]
    pause: Pause
    def __init__(self, pause: _Optional[_Union[Pause, _Mapping]] = ...) -> None: ...

class PauseKindRequest(_message.Message):
    __slots__ = ["kind"]
    KIND_FIELD_NUMBER: _ClassVar[int]
    kind: str
    def __init__(self, kind: _Optional[str] = ...) -> None: ...

class PauseKindResponse(_message.Message):
    __slots__ = ["pause"]
    PAUSE_FIELD_NUMBER: _ClassVar[int]
    pause: Pause
    def __init__(self, pause: _Optional[_Union[Pause, _Mapping]] = ...) -> None: ...

class PauseTaskRequest(_message.Message):
    __slots__ = ["identity", "task_id"]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    identity: str
    task_id: str
    def __init__(self, identity: _Optional[str] = ..., task_id: _Optional[str] = ...) -> None: ...

class PauseTaskResponse(_message.Message):
    __slots__ = ["task"]
    TASK_FIELD_NUMBER: _ClassVar[int]
    task: Task
    def __init__(self, task: _Optional[_Union[Task, _Mapping]] = ...) -> None: ...

class PeriodicTrigger(_message.Message):
    __slots__ = ["count", "end", "interval", "start"]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    INTERVAL_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    count: int
    end: _timestamp_pb2.Timestamp
    interval: _duration_pb2.Duration
    start: _timestamp_pb2.Timestamp
    def __init__(self, start: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., interval: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., end: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., count: _Optional[int] = ...) -> None: ...

class PreviewFireTime(_message.Message):
    __slots__ = ["at", "local", "trigger"]
    AT_FIELD_NUMBER: _ClassVar[int]
    LOCAL_FIELD_NUMBER: _ClassVar[int]
    TRIGGER_FIELD_NUMBER: _ClassVar[int]
    at: _timestamp_pb2.Timestamp
    local: str
    trigger: int
    def __init__(self, at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., trigger: _Optional[int] = ..., local: _Optional[str] = ...) -> None: ...

class PreviewTriggersRequest(_message.Message):
    __slots__ = ["calendars", "count", "task_id", "triggers"]
    CALENDARS_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    FROM_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    TRIGGERS_FIELD_NUMBER: _ClassVar[int]
    calendars: _containers.RepeatedScalarFieldContainer[str]
    count: int
    task_id: str
    triggers: _containers.RepeatedCompositeFieldContainer[Trigger]
    def __init__(self, triggers: _Optional[_Iterable[_Union[Trigger, _Mapping]]] = ..., calendars: _Optional[_Iterable[str]] = ..., count: _Optional[int] = ..., task_id: _Optional[str] = ..., **kwargs) -> None: ...

class PreviewTriggersResponse(_message.Message):
    __slots__ = ["fire_times"]
    FIRE_TIMES_FIELD_NUMBER: _ClassVar[int]
    fire_times: _containers.RepeatedCompositeFieldContainer[PreviewFireTime]
    def __init__(self, fire_times: _Optional[_Iterable[_Union[PreviewFireTime, _Mapping]]] = ...) -> None: ...

class ResumeIdentityRequest(_message.Message):
    __slots__ = ["identity"]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    identity: str
    def __init__(self, identity: _Optional[str] = ...) -> None: ...

class ResumeIdentityResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class ResumeKindRequest(_message.Message):
    __slots__ = ["kind"]
    KIND_FIELD_NUMBER: _ClassVar[int]
    kind: str
    def __init__(self, kind: _Optional[str] = ...) -> None: ...

class ResumeKindResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class ResumeTaskRequest(_message.Message):
    __slots__ = ["identity", "task_id"]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    identity: str
    task_id: str
    def __init__(self, identity: _Optional[str] = ..., task_id: _Optional[str] = ...) -> None: ...

class ResumeTaskResponse(_message.Message):
    __slots__ = ["task"]
    TASK_FIELD_NUMBER: _ClassVar[int]
    task: Task
    def __init__(self, task: _Optional[_Union[Task, _Mapping]] = ...) -> None: ...

class Run(_message.Message):
    __slots__ = ["attempt", "ended_at", "fence", "fire_time", "manual", "message", "node", "outcome", "recovery", "run_number", "started_at", "task_id", "trigger", "trigger_name", "trigger_removed"]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    ENDED_AT_FIELD_NUMBER: _ClassVar[int]
    FENCE_FIELD_NUMBER: _ClassVar[int]
    FIRE_TIME_FIELD_NUMBER: _ClassVar[int]
    MANUAL_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    RECOVERY_FIELD_NUMBER: _ClassVar[int]
    RUN_NUMBER_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    TRIGGER_FIELD_NUMBER: _ClassVar[int]
    TRIGGER_NAME_FIELD_NUMBER: _ClassVar[int]
    TRIGGER_REMOVED_FIELD_NUMBER: _ClassVar[int]
    attempt: int
    ended_at: _timestamp_pb2.Timestamp
    fence: str
    fire_time: _timestamp_pb2.Timestamp
    manual: bool
    message: str
    node: str
    outcome: Outcome
    recovery: bool
    run_number: int
    started_at: _timestamp_pb2.Timestamp
    task_id: str
    trigger: int
    trigger_name: str
    trigger_removed: bool
    def __init__(self, task_id: _Optional[str] = ..., run_number: _Optional[int] = ..., attempt: _Optional[int] = ..., fire_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., started_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., ended_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., node: _Optional[str] = ..., outcome: _Optional[_Union[Outcome, str]] = ..., message: _Optional[str] = ..., fence: _Optional[str] = ..., manual: bool = ..., recovery: bool = ..., trigger: _Optional[int] = ..., trigger_name: _Optional[str] = ..., trigger_removed: bool = ...) -> None: ...

class RunSummary(_message.Message):
    __slots__ = ["ended_at", "message", "node", "outcome", "run_number", "started_at"]
    ENDED_AT_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    RUN_NUMBER_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    ended_at: _timestamp_pb2.Timestamp
    message: str
    node: str
    outcome: Outcome
    run_number: int
    started_at: _timestamp_pb2.Timestamp
    def __init__(self, run_number: _Optional[int] = ..., outcome: _Optional[_Union[Outcome, str]] = ..., started_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., ended_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., node: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class RunTaskNowRequest(_message.Message):
    __slots__ = ["identity", "task_id"]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    identity: str
    task_id: str
    def __init__(self, identity: _Optional[str] = ..., task_id: _Optional[str] = ...) -> None: ...

class RunTaskNowResponse(_message.Message):
    __slots__ = ["task"]
    TASK_FIELD_NUMBER: _ClassVar[int]
    task: Task
    def __init__(self, task: _Optional[_Union[Task, _Mapping]] = ...) -> None: ...

class ScheduleTaskRequest(_message.Message):
    __slots__ = ["task"]
    TASK_FIELD_NUMBER: _ClassVar[int]
    task: TaskSpec
    def __init__(self, task: _Optional[_Union[TaskSpec, _Mapping]] = ...) -> None: ...

class ScheduleTaskResponse(_message.Message):
    __slots__ = ["existing", "task"]
    EXISTING_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    existing: bool
    task: Task
    def __init__(self, task: _Optional[_Union[Task, _Mapping]] = ..., existing: bool = ...) -> None: ...

class ScheduleTasksRequest(_message.Message):
    __slots__ = ["tasks"]
    TASKS_FIELD_NUMBER: _ClassVar[int]
    tasks: _containers.RepeatedCompositeFieldContainer[TaskSpec]
    def __init__(self, tasks: _Optional[_Iterable[_Union[TaskSpec, _Mapping]]] = ...) -> None: ...

class ScheduleTasksResponse(_message.Message):
    __slots__ = ["tasks"]
    TASKS_FIELD_NUMBER: _ClassVar[int]
    tasks: _containers.RepeatedCompositeFieldContainer[Task]
    def __init__(self, tasks: _Optional[_Iterable[_Union[Task, _Mapping]]] = ...) -> None: ...

class Task(_message.Message):
    __slots__ = ["attempt", "created_at", "finished_at", "id", "last_run", "misfires", "next_fire_time", "next_fire_times", "paused", "paused_by", "revision", "run_count", "spec", "state", "waiting", "waiting_reason", "waiting_since"]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    FINISHED_AT_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    LAST_RUN_FIELD_NUMBER: _ClassVar[int]
    MISFIRES_FIELD_NUMBER: _ClassVar[int]
    NEXT_FIRE_TIMES_FIELD_NUMBER: _ClassVar[int]
    NEXT_FIRE_TIME_FIELD_NUMBER: _ClassVar[int]
    PAUSED_BY_FIELD_NUMBER: _ClassVar[int]
    PAUSED_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    RUN_COUNT_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    WAITING_FIELD_NUMBER: _ClassVar[int]
    WAITING_REASON_FIELD_NUMBER: _ClassVar[int]
    WAITING_SINCE_FIELD_NUMBER: _ClassVar[int]
    attempt: int
    created_at: _timestamp_pb2.Timestamp
    finished_at: _timestamp_pb2.Timestamp
    id: str
    last_run: RunSummary
    misfires: int
    next_fire_time: _timestamp_pb2.Timestamp
    next_fire_times: _containers.RepeatedCompositeFieldContainer[_timestamp_pb2.Timestamp]
    paused: bool
    paused_by: _containers.RepeatedScalarFieldContainer[str]
    revision: int
    run_count: int
    spec: TaskSpec
    state: TaskState
    waiting: str
    waiting_reason: str
    waiting_since: _timestamp_pb2.Timestamp
    def __init__(self, id: _Optional[str] = ..., spec: _Optional[_Union[TaskSpec, _Mapping]] = ..., state: _Optional[_Union[TaskState, str]] = ..., created_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., next_fire_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., run_count: _Optional[int] = ..., attempt: _Optional[int] = ..., last_run: _Optional[_Union[RunSummary, _Mapping]] = ..., finished_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., revision: _Optional[int] = ..., paused: bool = ..., paused_by: _Optional[_Iterable[str]] = ..., next_fire_times: _Optional[_Iterable[_Union[_timestamp_pb2.Timestamp, _Mapping]]] = ..., misfires: _Optional[int] = ..., waiting: _Optional[str] = ..., waiting_since: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., waiting_reason: _Optional[str] = ...) -> None: ...

class TaskSpec(_message.Message):
    __slots__ = ["allow_overlap", "backoff", "calendars", "data", "idempotency_key", "identity", "kind", "labels", "max_attempts", "misfire", "non_durable", "payload", "priority", "requests_recovery", "scope", "timeout", "triggers"]
    class LabelsEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ALLOW_OVERLAP_FIELD_NUMBER: _ClassVar[int]
    BACKOFF_FIELD_NUMBER: _ClassVar[int]
    CALENDARS_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    MAX_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    MISFIRE_FIELD_NUMBER: _ClassVar[int]
    NON_DURABLE_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    REQUESTS_RECOVERY_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    TRIGGERS_FIELD_NUMBER: _ClassVar[int]
    allow_overlap: bool
    backoff: Backoff
    calendars: _containers.RepeatedScalarFieldContainer[str]
    data: bytes
    idempotency_key: str
    identity: str
    kind: str
    labels: _containers.ScalarMap[str, str]
    max_attempts: int
    misfire: MisfirePolicy
    non_durable: bool
    payload: bytes
    priority: int
    requests_recovery: bool
    scope: Scope
    timeout: _duration_pb2.Duration
    triggers: _containers.RepeatedCompositeFieldContainer[Trigger]
    def __init__(self, identity: _Optional[str] = ..., kind: _Optional[str] = ..., payload: _Optional[bytes] = ..., data: _Optional[bytes] = ..., triggers: _Optional[_Iterable[_Union[Trigger, _Mapping]]] = ..., non_durable: bool = ..., scope: _Optional[_Union[Scope, str]] = ..., misfire: _Optional[_Union[MisfirePolicy, str]] = ..., priority: _Optional[int] = ..., max_attempts: _Optional[int] = ..., backoff: _Optional[_Union[Backoff, _Mapping]] = ..., timeout: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., requests_recovery: bool = ..., allow_overlap: bool = ..., calendars: _Optional[_Iterable[str]] = ..., labels: _Optional[_Mapping[str, str]] = ..., idempotency_key: _Optional[str] = ...) -> None: ...

class Trigger(_message.Message):
    __slots__ = ["cron", "jitter", "misfire", "name", "on_startup", "once", "periodic"]
    CRON_FIELD_NUMBER: _ClassVar[int]
    JITTER_FIELD_NUMBER: _ClassVar[int]
    MISFIRE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    ONCE_FIELD_NUMBER: _ClassVar[int]
    ON_STARTUP_FIELD_NUMBER: _ClassVar[int]
    PERIODIC_FIELD_NUMBER: _ClassVar[int]
    cron: CronTrigger
    jitter: _duration_pb2.Duration
    misfire: MisfirePolicy
    name: str
    on_startup: OnStartupTrigger
    once: OnceTrigger
    periodic: PeriodicTrigger
    def __init__(self, once: _Optional[_Union[OnceTrigger, _Mapping]] = ..., periodic: _Optional[_Union[PeriodicTrigger, _Mapping]] = ..., cron: _Optional[_Union[CronTrigger, _Mapping]] = ..., on_startup: _Optional[_Union[OnStartupTrigger, _Mapping]] = ..., misfire: _Optional[_Union[MisfirePolicy, str]] = ..., name: _Optional[str] = ..., jitter: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class UpdateTaskRequest(_message.Message):
    __slots__ = ["add_triggers", "identity", "remove_triggers", "revision", "spec", "task_id"]
    ADD_TRIGGERS_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    REMOVE_TRIGGERS_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    add_triggers: _containers.RepeatedCompositeFieldContainer[Trigger]
    identity: str
    remove_triggers: _containers.RepeatedScalarFieldContainer[str]
    revision: int
    spec: TaskSpec
    task_id: str
    def __init__(self, identity: _Optional[str] = ..., task_id: _Optional[str] = ..., spec: _Optional[_Union[TaskSpec, _Mapping]] = ..., revision: _Optional[int] = ..., add_triggers: _Optional[_Iterable[_Union[Trigger, _Mapping]]] = ..., remove_triggers: _Optional[_Iterable[str]] = ...) -> None: ...

class UpdateTaskResponse(_message.Message):
    __slots__ = ["task"]
    TASK_FIELD_NUMBER: _ClassVar[int]
    task: Task
    def __init__(self, task: _Optional[_Union[Task, _Mapping]] = ...) -> None: ...

class WatchEventsRequest(_message.Message):
    __slots__ = ["cursor", "identity", "kind", "node", "task_id", "types"]
    CURSOR_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    TYPES_FIELD_NUMBER: _ClassVar[int]
    cursor: str
    identity: str
    kind: str
    node: str
    task_id: str
    types: _containers.RepeatedScalarFieldContainer[EventType]
    def __init__(self, identity: _Optional[str] = ..., task_id: _Optional[str] = ..., kind: _Optional[str] = ..., node: _Optional[str] = ..., types: _Optional[_Iterable[_Union[EventType, str]]] = ..., cursor: _Optional[str] = ...) -> None: ...

class WatchEventsResponse(_message.Message):
    __slots__ = ["events"]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    events: _containers.RepeatedCompositeFieldContainer[Event]
    def __init__(self, events: _Optional[_Iterable[_Union[Event, _Mapping]]] = ...) -> None: ...

class WeeklyCalendar(_message.Message):
    __slots__ = ["days"]
    DAYS_FIELD_NUMBER: _ClassVar[int]
    days: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, days: _Optional[_Iterable[str]] = ...) -> None: ...

class Scope(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class MisfirePolicy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class TaskState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class Outcome(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class NodeState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class EventType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
