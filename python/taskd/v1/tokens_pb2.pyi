from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor
TOKEN_SOURCE_ETCD: TokenSource
TOKEN_SOURCE_FILE: TokenSource
TOKEN_SOURCE_UNSPECIFIED: TokenSource

class CreateTokenRequest(_message.Message):
    __slots__ = ["description", "id", "identities", "verbs"]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    IDENTITIES_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    VERBS_FIELD_NUMBER: _ClassVar[int]
    description: str
    id: str
    identities: _containers.RepeatedScalarFieldContainer[str]
    verbs: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, id: _Optional[str] = ..., verbs: _Optional[_Iterable[str]] = ..., identities: _Optional[_Iterable[str]] = ..., description: _Optional[str] = ...) -> None: ...

class CreateTokenResponse(_message.Message):
    __slots__ = ["bearer", "token"]
    BEARER_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    bearer: str
    token: Token
    def __init__(self, token: _Optional[_Union[Token, _Mapping]] = ..., bearer: _Optional[str] = ...) -> None: ...

class ListTokensRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class ListTokensResponse(_message.Message):
    __slots__ = ["tokens"]
    TOKENS_FIELD_NUMBER: _ClassVar[int]
    tokens: _containers.RepeatedCompositeFieldContainer[Token]
    def __init__(self, tokens: _Optional[_Iterable[_Union[Token, _Mapping]]] = ...) -> None: ...

class RevokeTokenRequest(_message.Message):
    __slots__ = ["id"]
    ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    def __init__(self, id: _Optional[str] = ...) -> None: ...

class RevokeTokenResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class Token(_message.Message):
    __slots__ = ["created_at", "created_by", "description", "id", "identities", "source", "verbs"]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    CREATED_BY_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    IDENTITIES_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    VERBS_FIELD_NUMBER: _ClassVar[int]
    created_at: _timestamp_pb2.Timestamp
    created_by: str
    description: str
    id: str
    identities: _containers.RepeatedScalarFieldContainer[str]
    source: TokenSource
    verbs: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, id: _Optional[str] = ..., verbs: _Optional[_Iterable[str]] = ..., identities: _Optional[_Iterable[str]] = ..., description: _Optional[str] = ..., source: _Optional[_Union[TokenSource, str]] = ..., created_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., created_by: _Optional[str] = ...) -> None: ...

class TokenSource(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
