"""Batch jobs: the calls the cache lacks sent as one provider batch, at the batch price
(opt-in: docs/sampling.md, "Batch jobs"). A batch only fills the call cache, under the keys
`complete` uses; a job is recorded before each step, so a rerun never submits it twice.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from losona.core.config import BatchSettings, ModelSpec
from losona.core.errors import LosonaError
from losona.core.files import write_json
from losona.models.call_cache import CacheLocation, CallCache, cache_file, offline
from losona.models.completions import require_every_call
from losona.models.litellm_api import api_key, litellm_module, provider_of, resolve
from losona.models.options import CallOptions
from losona.models.prepare import Prepared, prepare
from losona.models.pricing import Usage
from losona.models.progress import progress_bar
from losona.models.retry import RetryPolicy, status_of, transient
from losona.models.runlog import BatchReport
from losona.models.send import destination, error_name, masked
from losona.models.values import Completion, Request

# Providers whose batches litellm sends and returns in OpenAI's shape; its others need a
# bucket a model config cannot name (Vertex AI, Bedrock) or have formats of their own.
BATCH_PROVIDERS = ("openai", "azure")
# What a server without a Batch API answers to its paths: no such route, or no such method.
NO_SUCH_ENDPOINT = frozenset({404, 405})
# The only window OpenAI and Azure offer.
COMPLETION_WINDOW = "24h"
ENDPOINT = "/v1/chat/completions"
# What a provider reports for a batch that will change no more.
TERMINAL = frozenset({"completed", "failed", "expired", "cancelled"})
# The state file's format; bumped when its fields change.
STATE_FORMAT = 1
# How many of the provider's latest batches `_recover` searches.
LIST_LIMIT = 100

T = TypeVar("T")


class BatchFailed(LosonaError):
    """A batch ended failed, expired or cancelled; what it answered is in the cache."""


def state_dir(cache_path: CacheLocation) -> Path:
    """Where batch jobs waiting for results are recorded: beside the call cache."""
    path = cache_file(cache_path).expanduser()
    return path.with_name(path.name + ".batches")


def batch_provider(spec: ModelSpec, settings: BatchSettings) -> str:
    """The litellm provider batches go to, or a LosonaError naming the setting and provider."""
    provider = provider_of(spec)
    turn_off = f"set {settings.where}batch=false to call the model one call at a time"
    if provider not in BATCH_PROVIDERS:
        raise LosonaError(
            f"{settings.where}batch=true, but model '{spec.name}' ({spec.model}) goes to the "
            f"provider '{provider}', for which litellm offers no batch jobs this pipeline can "
            f"run (it runs them for {', '.join(BATCH_PROVIDERS)}); {turn_off}"
        )
    if spec.endpoints:
        raise LosonaError(
            f"{settings.where}batch=true, but model '{spec.name}' spreads its calls over "
            f"{len(spec.endpoints)} endpoints; a batch goes to one provider account: use "
            f"api_base, or {turn_off}"
        )
    return provider


def fill_cache_by_batch(
    spec: ModelSpec, requests: Sequence[Request], options: CallOptions, settings: BatchSettings
) -> BatchReport:
    """Answer the requests the call cache lacks through batch jobs, storing the results;
    BatchFailed when a batch ends otherwise, CallsFailed when lines still fail after `rounds`."""
    job = _BatchJob(spec, settings, options.cache_path, options.progress)
    return asyncio.run(job.run(requests, options.max_cost_usd))


@dataclass
class _State:
    """One batch job as recorded on disk: enough to find its batch again after a kill."""

    job: str
    model_config: str
    model: str
    provider: str
    endpoint: str | None
    keys: list[str]
    round: int
    input_file_id: str | None = None
    batch_id: str | None = None

    @classmethod
    def read(cls, path: Path) -> _State | None:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise LosonaError(
                f"{path}: a batch job's record cannot be read ({exc}); if its batch is done "
                "or abandoned, delete the file and rerun"
            ) from None
        if data.get("format") != STATE_FORMAT:
            return None
        data.pop("format")
        return cls(**data)


class _BatchJob:
    """Batch mode for one model and one set of requests."""

    def __init__(
        self,
        spec: ModelSpec,
        settings: BatchSettings,
        cache_path: CacheLocation,
        progress: str | None,
    ) -> None:
        self.spec = spec
        self.settings = settings
        self.provider = batch_provider(spec, settings)
        self.prepared: Prepared = prepare(spec)
        self.cache_path = cache_path
        self.progress = progress
        self.dir = state_dir(cache_path)
        self.litellm = litellm_module()
        self.model_name = resolve(spec)[0]
        rates = self.prepared.rates
        self.report = BatchReport(
            batch_price_from=f"{rates.source} ({rates.batch_basis})", state_dir=str(self.dir)
        )
        self.secret = spec.api_key()
        self.cache: CallCache  # open while `run` runs

    async def run(self, requests: Sequence[Request], max_cost_usd: float | None) -> BatchReport:
        keyed: dict[str, tuple[Request, dict[str, Any]]] = {}
        for request in requests:
            key, params = self.prepared.key_and_params(request)
            keyed.setdefault(key, (request, params))
        with CallCache(self.cache_path) as cache:
            self.cache = cache
            missing = self._missing(keyed)
            if not missing:
                return self.report
            if offline(self.cache_path):
                return self.report  # `complete` says which calls are missing
            self.spec.check_credentials()
            waiting = [s for s in self._waiting_jobs() if set(s.keys) & set(missing)]
            if not waiting and max_cost_usd is not None:
                self._check_cap(missing, keyed, max_cost_usd)
            failures: dict[str, LineFailure] = {}
            rounds = 0
            for state in waiting:
                # A batch submitted by a run that was killed or stopped: wait for it.
                failures.update(await self._finish(state, resumed=True))
                rounds = max(rounds, state.round)
            missing = self._missing(keyed)
            while missing and rounds < self.settings.rounds:
                if any(not failures[k].retryable for k in missing if k in failures):
                    break  # a request the provider refused will be refused again
                rounds += 1
                if rounds > 1:
                    self.report.retried += len(missing)
                state = await self._submit(rounds, {k: keyed[k] for k in missing})
                failures.update(await self._finish(state, resumed=False))
                missing = self._missing(keyed)
            if missing:
                require_every_call(
                    [
                        (failures.get(k) or _failure("not answered by any batch")).completion
                        for k in missing
                    ],
                    to=f"'{self.spec.name}' in batch mode ({rounds} batch{'es' * (rounds != 1)})",
                )
        return self.report

    def _missing(self, keyed: Mapping[str, Any]) -> list[str]:
        found = self.cache.get_many(list(keyed))
        return [k for k in keyed if k not in found]

    def _check_cap(
        self, missing: list[str], keyed: Mapping[str, tuple[Request, Any]], cap: float
    ) -> None:
        # A batch cannot be stopped halfway: refuse it whole when its estimate passes the cap.
        estimate = sum(self.prepared.estimate(keyed[k][0]) for k in missing)
        if estimate > cap:
            raise LosonaError(
                f"model '{self.spec.name}': the batch of {len(missing)} calls is estimated at "
                f"${estimate:.4f} at list price, above the cost cap of ${cap:.4f}; a batch is "
                "sent whole, so raise the cap or send fewer calls"
            )

    async def _submit(
        self, round_: int, pending: Mapping[str, tuple[Request, dict[str, Any]]]
    ) -> _State:
        state = _State(
            job=uuid.uuid4().hex,
            model_config=self.spec.name,
            model=self.spec.model,
            provider=self.provider,
            endpoint=self.spec.api_base,
            keys=list(pending),
            round=round_,
        )
        # Recorded before the upload, so that nothing is ever sent unrecorded.
        self._save(state)
        lines = "".join(self._line(k, *pending[k]) for k in state.keys).encode("utf-8")
        try:
            uploaded = await self._call(
                "upload the batch file",
                lambda: self.litellm.acreate_file(
                    file=(f"losona-{state.job}.jsonl", lines, "application/jsonl"),
                    purpose="batch",
                    **self._connection(),
                ),
                nothing_sent=True,
            )
        except LosonaError:
            # Nothing reached the provider: there is no job to resume, so no record.
            self._state_path(state).unlink()
            raise
        state.input_file_id = uploaded.id
        self._save(state)
        await self._create(state)
        return state

    async def _create(self, state: _State) -> None:
        """Create the batch of the job's uploaded requests."""
        created = await self._call(
            "create the batch",
            lambda: self.litellm.acreate_batch(
                completion_window=COMPLETION_WINDOW,
                endpoint=ENDPOINT,
                input_file_id=state.input_file_id,
                metadata={"losona_job": state.job},
                **self._connection(),
            ),
            # A create whose answer was lost may have created the batch all the same.
            before_retry=lambda: self._recover(state),
        )
        if state.batch_id is None:
            state.batch_id = created.id
            self._save(state)
        self._note_sent(state, resumed=False)

    async def _recover(self, state: _State) -> bool:
        """Adopt the provider's batch for this job if one was created; whether it was."""
        listed = await self._call(
            "list batches",
            lambda: self.litellm.alist_batches(limit=LIST_LIMIT, **self._connection()),
        )
        for batch in getattr(listed, "data", None) or []:
            if (getattr(batch, "metadata", None) or {}).get("losona_job") == state.job:
                state.batch_id = batch.id
                self._save(state)
                return True
        return False

    async def _finish(self, state: _State, *, resumed: bool) -> dict[str, LineFailure]:
        """Wait for a job's batch, store its results; the failed lines, by key."""
        if state.batch_id is None:
            if state.input_file_id is None:
                # Killed before its upload was recorded: nothing was submitted.
                self._state_path(state).unlink()
                return {}
            if await self._recover(state):
                self._note_sent(state, resumed=True)
            else:
                # Killed between the upload and the batch's creation: create it now.
                await self._create(state)
        elif resumed:
            self._note_sent(state, resumed=True)
        assert state.batch_id is not None
        batch = await self._wait(state)
        failures: dict[str, LineFailure] = {}
        answered: set[str] = set()
        wanted = set(state.keys)
        for file_id in (batch.output_file_id, batch.error_file_id):
            if file_id:
                for key, outcome in self._read_lines(await self._content(file_id), wanted):
                    answered.add(key)
                    if isinstance(outcome, Completion):
                        self._store(key, outcome)
                    else:
                        failures[key] = outcome
        for key in wanted - answered:
            failures[key] = _failure(f"no result in batch {state.batch_id} ({batch.status})")
        self._state_path(state).unlink()
        if batch.status != "completed":
            came_back = sum(1 for key in answered if key not in failures)
            errors = getattr(batch, "errors", None)
            said = "; ".join(
                f"{getattr(e, 'code', '')}: {getattr(e, 'message', '')}"
                for e in (getattr(errors, "data", None) or [])
            )
            raise BatchFailed(
                f"model '{self.spec.name}': batch {state.batch_id} ended {batch.status}"
                f"{f' ({said})' if said else ''}. {came_back} "
                f"of its {len(wanted)} requests came back and are in the call cache; nothing "
                "was written. Rerun to send the rest in a new batch, or set "
                f"{self.settings.where}batch=false to call the model one call at a time."
            )
        return failures

    def _note_sent(self, state: _State, *, resumed: bool) -> None:
        """Count a job's batch in the run log: created by this run, or by one that stopped."""
        assert state.batch_id is not None
        self.report.batch_ids.append(state.batch_id)
        if resumed:
            self.report.resumed.append(state.batch_id)
        self.report.lines_sent += len(state.keys)

    async def _wait(self, state: _State) -> Any:
        """Poll the batch until it ends, with a progress bar; the final batch object."""
        label = f"{self.progress or self.spec.name} (batch {state.batch_id})"
        bar = progress_bar(label if self.progress is not None else None, len(state.keys), 0)
        with bar:
            while True:
                batch = await self._call(
                    "check the batch",
                    lambda: self.litellm.aretrieve_batch(
                        batch_id=state.batch_id,
                        # litellm's own switch for pollers: otherwise its logging downloads
                        # the whole output file again to price it, on every finished look.
                        litellm_metadata={"batch_ignore_default_logging": True},
                        **self._connection(),
                    ),
                )
                counts = getattr(batch, "request_counts", None)
                done = (getattr(counts, "completed", 0) or 0) + (getattr(counts, "failed", 0) or 0)
                bar.update(max(0, min(done, bar.total) - bar.n))
                bar.set_postfix_str(str(batch.status), refresh=True)
                if batch.status in TERMINAL:
                    return batch
                await asyncio.sleep(self.settings.poll_interval_s)

    async def _content(self, file_id: str) -> bytes:
        response = await self._call(
            "download the batch results",
            lambda: self.litellm.afile_content(file_id=file_id, **self._connection()),
        )
        return bytes(response.content)

    def _line(self, key: str, request: Request, params: Mapping[str, Any]) -> str:
        """One request of the batch file: what `complete` would send, with the key as id."""
        body = {"model": self.model_name, "messages": [dict(m) for m in request.messages]}
        line = {"custom_id": key, "method": "POST", "url": ENDPOINT, "body": body | dict(params)}
        return json.dumps(line, ensure_ascii=False) + "\n"

    def _read_lines(
        self, content: bytes, wanted: set[str]
    ) -> list[tuple[str, Completion | LineFailure]]:
        """Each result line for a key of this job: a completion, or why it failed."""
        results = []
        for raw in content.decode("utf-8", errors="replace").splitlines():
            if not raw.strip():
                continue
            try:
                entry = json.loads(raw)
            except json.JSONDecodeError:
                continue  # no custom_id to pin it on: its request counts as not answered
            key = entry.get("custom_id") if isinstance(entry, dict) else None
            if key not in wanted:
                continue  # never store what this job did not ask for
            results.append((key, self._outcome(entry)))
        return results

    def _outcome(self, entry: Mapping[str, Any]) -> Completion | LineFailure:
        """What one result line says: a completion to store, or why the request failed."""
        error = entry.get("error")
        response = entry.get("response") or {}
        status = response.get("status_code")
        body = response.get("body") or {}
        if error or status != 200:
            detail = error or (body.get("error") if isinstance(body, dict) else None) or {}
            message = detail.get("message", "") if isinstance(detail, dict) else str(detail)
            return _failure(
                f"batch line error ({status}): {masked(message, self.secret)}",
                status if isinstance(status, int) else None,
            )
        try:
            choice = body["choices"][0]
            text = choice["message"]["content"]
            usage = body.get("usage") or {}
            prompt_tokens = int(usage.get("prompt_tokens") or 0)
            completion_tokens = int(usage.get("completion_tokens") or 0)
            cached_tokens = int(
                (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
            )
        except (KeyError, IndexError, TypeError, ValueError):
            return _failure("malformed body: a batch result line without a chat completion")
        if not (isinstance(text, str) and text.strip()):
            return _failure(f"empty reply (finish_reason {choice.get('finish_reason')})")
        return Completion(
            text=text,
            finish_reason=choice.get("finish_reason"),
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            # The list price, as `complete` records it; the batch price goes to the run log.
            cost_usd=self.prepared.rates.list_cost(Usage(prompt_tokens, completion_tokens)),
            attempts=1,
            billed_usd=self.prepared.rates.batch_cost(
                Usage(prompt_tokens, completion_tokens, cache_read_tokens=cached_tokens)
            ),
        )

    def _store(self, key: str, completion: Completion) -> None:
        self.cache.put(key, self.spec.model, completion)
        self.report.completed += 1
        self.report.prompt_tokens += completion.prompt_tokens
        self.report.completion_tokens += completion.completion_tokens
        self.report.cost_usd_list_price += completion.cost_usd
        self.report.cost_usd_batch_price += completion.billed_usd or 0.0

    def _connection(self) -> dict[str, Any]:
        """The provider, endpoint and key of every batch call (the key read now, never kept)."""
        key = api_key(self.spec)  # as `complete` sends it (batch mode forbids endpoints)
        return {
            "custom_llm_provider": self.provider,
            "api_base": self.spec.api_base,
            "api_key": key,
            "timeout": self.spec.timeout_s,
            "max_retries": 0,  # ours (`_call`): the SDK's would create a lost batch twice
        }

    async def _call(
        self,
        what: str,
        send: Callable[[], Awaitable[T]],
        before_retry: Callable[[], Awaitable[bool]] | None = None,
        nothing_sent: bool = False,
    ) -> T:
        """One request of the Batch API, retried on transient faults like a model call.

        Not the SDK's retries: a create whose answer was lost would bill a second batch; here
        `before_retry` first adopts the one it made. `nothing_sent`: a failure leaves no job.
        """
        openai = self.litellm.exceptions.openai
        policy = RetryPolicy.of(self.spec)
        attempt = 0
        while True:
            attempt += 1
            try:
                return await send()
            except openai.APIError as exc:
                status = status_of(exc)
                if policy.fatal(status) or not transient(exc) or policy.gives_up(attempt):
                    raise LosonaError(
                        f"model '{self.spec.name}': could not {what} ({error_name(exc)}, after "
                        f"{attempt} attempts): {masked(str(exc), self.secret)}. "
                        f"{self._after_failure(status, nothing_sent)}"
                    ) from None
            await asyncio.sleep(policy.wait(attempt))
            if before_retry is not None and await before_retry():
                return None  # type: ignore[return-value]  # the caller reads the state

    def _after_failure(self, status: int | None, nothing_sent: bool) -> str:
        """What a failed Batch API request left behind, and what to do about it."""
        left = (
            "Nothing was submitted."
            if nothing_sent
            else f"Batch jobs waiting for results are recorded in {self.dir}; a rerun resumes them."
        )
        if status in NO_SUCH_ENDPOINT:
            where = destination(self.spec)
            return (
                f"{left} {where} answers {status} to OpenAI's Batch API (/files, /batches): "
                f"it has none, as most servers of one's own (vLLM, llama.cpp, Ollama) have "
                f"none. Set {self.settings.where}batch=false to call the model one call at a time."
            )
        return left

    def _waiting_jobs(self) -> list[_State]:
        """Recorded jobs of this model and endpoint that have not been collected."""
        if not self.dir.is_dir():
            return []
        states = (_State.read(path) for path in sorted(self.dir.glob("*.json")))
        return [
            s
            for s in states
            if s is not None and s.model == self.spec.model and s.endpoint == self.spec.api_base
        ]

    def _state_path(self, state: _State) -> Path:
        return self.dir / f"{state.job}.json"

    def _save(self, state: _State) -> None:
        write_json({"format": STATE_FORMAT, **dataclasses.asdict(state)}, self._state_path(state))


@dataclass(frozen=True)
class LineFailure:
    """A request of a batch that got no usable answer, and its line's HTTP status, if any."""

    completion: Completion
    status: int | None = None

    @property
    def retryable(self) -> bool:
        """Whether another batch may answer it (the one retry policy decides)."""
        return RetryPolicy.worth_retrying(self.status)


def _failure(error: str, status: int | None = None) -> LineFailure:
    return LineFailure(Completion.failed(error, attempts=1), status)
