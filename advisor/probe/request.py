"""What POST /v1/probes takes and answers (the OpenAPI document shows these schemas)."""
from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from advisor.hostmodel.names import MAX_POOL_NAME_LEN

MIN_REQUEST_SECONDS = 60  # the shortest run a request may ask for


class RequestBudget(BaseModel):
    model_config = ConfigDict(extra="forbid")
    seconds: float = Field(300.0, ge=MIN_REQUEST_SECONDS, description="wall time of the run (at most [profiler] max_request_seconds)")
    space_bytes: int = Field(4 << 30, ge=256 << 20, le=1 << 40, description="quota of each candidate's scratch dataset")


class ProbeRequest(BaseModel):
    """The body of POST /v1/probes. The daily budget is the prober's ([profiler] daily_*), not the client's."""

    model_config = ConfigDict(extra="forbid")
    pool: str = Field(min_length=1, max_length=MAX_POOL_NAME_LEN)
    workload: str = Field(min_length=1, max_length=64)
    role: str | None = Field(None, max_length=64, description="which of the workload's datasets (default: its first)")
    params: dict[str, list[str]] = Field(
        default_factory=dict, max_length=4,
        description="candidates per parameter, e.g. {\"recordsize\": [\"8K\", \"16K\", \"128K\"]} "
        "(default: a recordsize grid around the workload's I/O size)")
    set: dict[str, str] = Field(default_factory=dict, max_length=16, description="workload parameters, e.g. page_size")
    budget: RequestBudget = Field(default_factory=RequestBudget)


class ProbeQueued(BaseModel):
    id: int
    status: str
    location: str

