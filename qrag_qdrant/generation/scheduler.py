"""The shared model as a scheduled resource: a bounded queue in front of a generation backend, fair
across namespaces, that drops a request whose client has gone before it reaches the model.

One team's burst must not starve another: the model takes the namespaces in turn (round robin), one
request of each, first come within a namespace; the team it served last waits behind the others.
Nor may one team fill the queue: a namespace holds at most ``share`` of its places, so a burst is
refused past that while another team's request still gets in. A full queue, or a namespace at its
share, refuses at once (``QueueFull``: the service's 503 with ``Retry-After``), and a request that is
waiting reports its place as it moves.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from ..errors import GenerationError
from .base import Completer


class QueueFull(GenerationError):
    """The model's queue is full: try again later."""

    def __init__(self, waiting: int, retry_after: int, held: int | None = None):
        why = (
            f"this namespace already has {held} answers waiting or being written, its share of the queue "
            "(service.queue_share)"
            if held is not None
            else f"{waiting} answers are waiting"
        )
        super().__init__(f"the model is busy: {why}; try again in {retry_after} s")
        self.retry_after = retry_after


class LeftQueue(GenerationError):
    """The request's client went away while it waited: it never reached the model."""


@dataclass(eq=False)
class Ticket:
    namespace: str
    cancelled: threading.Event
    queued_at: float = field(default_factory=time.monotonic)
    granted: threading.Event = field(default_factory=threading.Event)


@dataclass
class QueueStats:
    """What ``/metrics`` shows of the queue: waiting now, served, dropped, refused, total wait."""

    waiting: int = 0
    served: int = 0
    dropped: int = 0
    refused: int = 0
    wait_seconds: float = 0.0


class GenerationScheduler:
    """``slots`` requests hold the model at once (1: a single llama.cpp slot); at most ``capacity``
    wait. ``turn`` blocks until it is the caller's, fairly across namespaces."""

    def __init__(self, capacity: int = 64, slots: int = 1, seconds_per_answer: float = 15.0, share: float = 1.0):
        self.capacity, self.slots, self.seconds_per_answer = capacity, slots, seconds_per_answer
        #: the places one namespace may hold, waiting or at the model (at least one)
        self.per_namespace = max(1, math.floor(capacity * share))
        self._lock = threading.Condition()
        self._queues: dict[str, deque[Ticket]] = {}
        #: when each namespace last got the model (a count of grants): the longest waiting goes first
        self._last_turn: dict[str, int] = {}
        self._turns = 0
        self._running = 0
        #: requests at the model, per namespace
        self._running_of: dict[str, int] = {}
        self.stats = QueueStats()

    @contextmanager
    def turn(
        self,
        namespace: str,
        cancelled: threading.Event | None = None,
        on_wait: Callable[[int], None] | None = None,
    ) -> Iterator[float]:
        """Hold the model for the block; yields the seconds waited. ``on_wait(position)`` is told the
        request's place (1: next) when it queues and as it moves up. Raises ``QueueFull`` at once
        when the queue is full, and ``LeftQueue`` when ``cancelled`` is set while it waits."""
        ticket = Ticket(namespace, cancelled or threading.Event())
        with self._lock:
            if (held := self._held(namespace)) >= self.per_namespace:
                raise self._refused(held)
            if self._running < self.slots and not self.stats.waiting:
                self._grant(ticket)
            elif self.stats.waiting >= self.capacity:
                raise self._refused()
            else:
                self._queues.setdefault(namespace, deque()).append(ticket)
                self.stats.waiting += 1
        try:
            self._wait(ticket, on_wait)
        except BaseException:
            self._leave(ticket)
            raise
        waited = time.monotonic() - ticket.queued_at
        with self._lock:
            self.stats.served += 1
            self.stats.wait_seconds += waited
        try:
            yield waited
        finally:
            self._release(namespace)

    def check_room(self, namespace: str) -> None:
        """``QueueFull`` now if a new request of ``namespace`` would find the queue full, or its
        namespace at its share (before a response starts)."""
        with self._lock:
            if (held := self._held(namespace)) >= self.per_namespace:
                raise self._refused(held)
            if self.stats.waiting >= self.capacity and self._running >= self.slots:
                raise self._refused()

    def _held(self, namespace: str) -> int:
        """The places ``namespace`` holds: its waiting requests and the ones at the model (lock held)."""
        return len(self._queues.get(namespace, ())) + self._running_of.get(namespace, 0)

    def position(self, ticket: Ticket) -> int:
        """The ticket's place in the order the model will take the queue (1: next)."""
        with self._lock:
            order = self._order()
        return order.index(ticket) + 1 if ticket in order else 0

    def _rotation(self) -> list[str]:
        """The waiting namespaces in their turn order: the one served longest ago first."""
        return sorted(self._queues, key=lambda namespace: self._last_turn.get(namespace, -1))

    def _order(self) -> list[Ticket]:
        """Every waiting ticket in the order they will be served: one per namespace per round."""
        queues = [list(self._queues[namespace]) for namespace in self._rotation()]
        order: list[Ticket] = []
        for depth in range(max(map(len, queues), default=0)):
            order += [q[depth] for q in queues if depth < len(q)]
        return order

    def _wait(self, ticket: Ticket, on_wait: Callable[[int], None] | None) -> None:
        told = 0
        while not ticket.granted.is_set():
            if ticket.cancelled.is_set():
                raise LeftQueue("the client went away while the request waited for the model")
            place = self.position(ticket)
            if on_wait is not None and place and place != told:
                on_wait(place)
                told = place
            with self._lock:
                if not ticket.granted.is_set():  # woken by a release, a cancel poll, or a new arrival
                    self._lock.wait(timeout=0.25)

    def _leave(self, ticket: Ticket) -> None:
        """A ticket that will not run: out of the queue, or its slot handed on if it was granted."""
        with self._lock:
            queue = self._queues.get(ticket.namespace)
            if queue is not None and ticket in queue:
                queue.remove(ticket)
                self.stats.waiting -= 1
                self.stats.dropped += 1
                if not queue:
                    del self._queues[ticket.namespace]
                self._lock.notify_all()
                return
        if ticket.granted.is_set():
            self._release(ticket.namespace)

    def _release(self, namespace: str) -> None:
        """The model is free: hand it to the next namespace in turn, skipping requests whose client left."""
        with self._lock:
            self._running -= 1
            self._running_of[namespace] -= 1
            if not self._running_of[namespace]:
                del self._running_of[namespace]
            while self._running < self.slots and self._queues:
                namespace = self._rotation()[0]
                ticket = self._queues[namespace].popleft()
                self.stats.waiting -= 1
                if not self._queues[namespace]:
                    del self._queues[namespace]
                if ticket.cancelled.is_set():
                    self.stats.dropped += 1
                    continue
                self._grant(ticket)
            self._lock.notify_all()

    def _grant(self, ticket: Ticket) -> None:
        """The model is the ticket's (lock held); its namespace goes to the end of the rotation."""
        self._running += 1
        self._running_of[ticket.namespace] = self._running_of.get(ticket.namespace, 0) + 1
        self._turns += 1
        self._last_turn[ticket.namespace] = self._turns
        ticket.granted.set()

    def _refused(self, held: int | None = None) -> QueueFull:
        """A full queue's refusal (``held``: a namespace at its share), counted (lock held); it says
        when to try again."""
        self.stats.refused += 1
        waiting = self.stats.waiting
        return QueueFull(waiting, max(1, round(max(waiting, held or 0) * self.seconds_per_answer / self.slots)), held)


#: set by the service while it retrieves for a request: an event set once the request's client has
#: left, so the model calls retrieval makes for it leave the queue (or stop) as its answer would
CLIENT_LEFT: ContextVar[threading.Event | None] = ContextVar("qrag_client_left", default=None)


class EitherSet(threading.Event):
    """Set when it is set itself or any of ``events`` is: a call's own cancel, or its request's
    client leaving. Read with ``is_set``, as the queue and the backends read a cancel."""

    def __init__(self, *events: threading.Event):
        super().__init__()
        self.events = events

    def is_set(self) -> bool:
        return super().is_set() or any(event.is_set() for event in self.events)


@dataclass(frozen=True)
class QueuedCompleter:
    """A backend's prompts under the fair queue, as its answers are: the model calls retrieval
    makes (a follow-up's rewrite, the model's question split, expansions) wait for the model's
    turn in their namespace, are refused when it is at its share, and leave the queue when their
    ``cancelled`` is set, so no team's follow-ups take the model outside its share."""

    backend: Completer
    scheduler: GenerationScheduler
    namespace: str
    #: the request's ``CLIENT_LEFT`` when it was opened: its client leaving stops the call too
    client_left: threading.Event | None = None

    def complete(self, system: str, prompt: str, max_tokens: int, cancelled: threading.Event) -> str:
        stop = EitherSet(cancelled, self.client_left) if self.client_left is not None else cancelled
        with self.scheduler.turn(self.namespace, stop):
            return self.backend.complete(system, prompt, max_tokens, stop)

    @classmethod
    def of(cls, backend: object, scheduler: GenerationScheduler | None, namespace: str) -> object:
        """``backend`` under ``scheduler`` when it completes prompts, for the request this thread
        works for (``CLIENT_LEFT``); as it is otherwise (no queue, or a backend that cannot
        complete a prompt, which its caller then says)."""
        if scheduler is None or not isinstance(backend, Completer):
            return backend
        return cls(backend, scheduler, namespace, CLIENT_LEFT.get())
