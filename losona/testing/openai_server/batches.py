"""OpenAI's Batch API, as litellm's OpenAI provider calls it: /files and /batches. A batch
completes `batch_delay` seconds after its creation; `batch_faults` fails lines, `batch_fate`
ends a whole batch otherwise."""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from aiohttp import web

from losona.testing.openai_server.chat import ChatCompletions
from losona.testing.openai_server.faults import FAULT_STATUS, FaultPlan, error, fault_for
from losona.testing.openai_server.replies import Body

# What a whole batch can end as instead of "completed" (OpenAI's terminal statuses).
BatchFate = Literal["completed", "failed", "expired", "cancelled"]


@dataclass
class Batch:
    """One batch job as the server keeps it."""

    id: str
    input_file_id: str
    endpoint: str
    completion_window: str
    metadata: dict[str, str] | None
    lines: list[Body]  # the input file's request lines, in order
    created_at: float
    fate: BatchFate
    status: str = "in_progress"
    output_file_id: str | None = None
    error_file_id: str | None = None
    completed: int = 0
    failed: int = 0


@dataclass(kw_only=True, eq=False, repr=False)
class BatchJobs(ChatCompletions):
    """The Batch API's endpoints; each line is answered as a chat completion would be."""

    batch_delay: float = 0.0  # seconds from a batch's creation to its completion
    batch_faults: FaultPlan | None = None  # (line body, times seen before) -> fault
    batch_fate: Callable[[int], BatchFate] | None = None  # nth batch created (1, 2...) -> its end
    batch_api: bool = True  # False: no /files or /batches (404), as most servers of one's own
    files: dict[str, bytes] = field(init=False, default_factory=dict)  # uploaded and produced
    batches: dict[str, Batch] = field(init=False, default_factory=dict)  # in creation order
    batches_created: int = field(init=False, default=0)
    batch_retrievals: int = field(init=False, default=0)
    _batch_seen: Counter[str] = field(init=False, default_factory=Counter)

    def _add_batch_routes(self, app: web.Application) -> None:
        for prefix in ("/v1", ""):
            app.router.add_post(f"{prefix}/files", self._upload)
            app.router.add_get(f"{prefix}/files/{{file_id}}/content", self._file_content)
            app.router.add_post(f"{prefix}/batches", self._create_batch)
            app.router.add_get(f"{prefix}/batches", self._list_batches)
            app.router.add_get(f"{prefix}/batches/{{batch_id}}", self._retrieve_batch)

    async def _upload(self, request: web.Request) -> web.StreamResponse:
        form = await request.post()
        upload, purpose = form.get("file"), form.get("purpose")
        if not isinstance(upload, web.FileField) or purpose != "batch":
            return error(400, "expected a multipart upload with a file and purpose=batch")
        content = upload.file.read()
        file_id = f"file-{len(self.files) + 1}"
        self.files[file_id] = content
        return web.json_response(
            {
                "id": file_id,
                "object": "file",
                "bytes": len(content),
                "created_at": 0,
                "filename": upload.filename,
                "purpose": "batch",
                "status": "processed",
            }
        )

    async def _file_content(self, request: web.Request) -> web.StreamResponse:
        content = self.files.get(request.match_info["file_id"])
        if content is None:
            return error(404, "no such file")
        return web.Response(body=content, content_type="application/octet-stream")

    async def _create_batch(self, request: web.Request) -> web.StreamResponse:
        body: Body = await request.json()
        content = self.files.get(body.get("input_file_id", ""))
        if content is None:
            return error(400, "input_file_id names no uploaded file")
        lines = [json.loads(line) for line in content.decode().splitlines() if line.strip()]
        self.batches_created += 1
        batch = Batch(
            id=f"batch_{self.batches_created}",
            input_file_id=body["input_file_id"],
            endpoint=body.get("endpoint", ""),
            completion_window=body.get("completion_window", "24h"),
            metadata=body.get("metadata"),
            lines=lines,
            created_at=time.time(),
            fate=self.batch_fate(self.batches_created) if self.batch_fate else "completed",
        )
        self.batches[batch.id] = batch
        return web.json_response(self._batch_object(batch))

    async def _retrieve_batch(self, request: web.Request) -> web.StreamResponse:
        batch = self.batches.get(request.match_info["batch_id"])
        if batch is None:
            return error(404, "no such batch")
        self.batch_retrievals += 1
        self._advance(batch)
        return web.json_response(self._batch_object(batch))

    async def _list_batches(self, request: web.Request) -> web.StreamResponse:
        newest_first = list(reversed(self.batches.values()))
        for batch in newest_first:
            self._advance(batch)
        data = [self._batch_object(b) for b in newest_first]
        return web.json_response(
            {"object": "list", "data": data, "first_id": None, "last_id": None, "has_more": False}
        )

    def _advance(self, batch: Batch) -> None:
        """Bring a batch to where `batch_delay` says it is now; answer its lines when due."""
        if batch.status != "in_progress":
            return
        elapsed = time.time() - batch.created_at
        if elapsed < self.batch_delay:
            # Progress as a provider reports it: part of the lines done, none written yet.
            batch.completed = int(len(batch.lines) * elapsed / self.batch_delay)
            return
        batch.completed = 0
        if batch.fate in ("failed", "cancelled"):
            batch.status = batch.fate
            return
        answers, errors = [], []
        for number, line in enumerate(batch.lines, start=1):
            body = line.get("body", {})
            fault = fault_for(self.batch_faults, self._batch_seen, body)
            entry: Body = {"id": f"{batch.id}_req_{number}", "custom_id": line.get("custom_id")}
            if fault is not None:
                self.faults_injected[f"batch_{fault.kind}"] += 1
                status = FAULT_STATUS[fault.kind]
                error = {"message": f"injected {fault.kind}", "type": "test_fault", "code": status}
                response = {"status_code": status, "body": {"error": error}}
                errors.append(entry | {"response": response})
                continue
            completion = self._completion(body, self.reply(body))
            answers.append(entry | {"response": {"status_code": 200, "body": completion}})
        if batch.fate == "expired":
            # An expired batch keeps what it finished: here, its first half.
            answers = answers[: len(answers) // 2]
        batch.completed, batch.failed = len(answers), len(errors)
        batch.output_file_id = self._produce(answers)
        batch.error_file_id = self._produce(errors)
        batch.status = batch.fate

    def _produce(self, entries: list[Body]) -> str | None:
        if not entries:
            return None
        file_id = f"file-{len(self.files) + 1}"
        self.files[file_id] = "".join(json.dumps(e) + "\n" for e in entries).encode()
        return file_id

    def _batch_object(self, batch: Batch) -> Body:
        errors = None
        if batch.status in ("failed", "expired"):
            message = f"injected: the batch {batch.status}"
            errors = {
                "object": "list",
                "data": [{"code": f"batch_{batch.status}", "message": message, "line": None}],
            }
        return {
            "id": batch.id,
            "object": "batch",
            "endpoint": batch.endpoint,
            "errors": errors,
            "input_file_id": batch.input_file_id,
            "completion_window": batch.completion_window,
            "status": batch.status,
            "output_file_id": batch.output_file_id,
            "error_file_id": batch.error_file_id,
            "created_at": int(batch.created_at),
            "request_counts": {
                "total": len(batch.lines),
                "completed": batch.completed,
                "failed": batch.failed,
            },
            "metadata": batch.metadata,
        }
