"""The mixed load of issue 33's acceptance, sent to every server of a `SharedServers` at random, and what it must
have left behind: every run ended exactly once, every view folded each event once, the build scored once.

What a round sends (each request to a server picked at random, and to another when that one cannot be reached):

- a `ticking` workflow run: a `set`, a timer, a call of the computation `echo`, a `set` (timers and calls);
- an `asking` workflow run, which waits on the interaction `approve`; `drive` answers its request, listed and
  answered on servers picked at random (interaction answers);
- a `listening` workflow run, which waits on a `listen`; `drive` sends it its event once it waits (sent events);
- a `hearing` workflow run, which waits on a `listen` for the playbook's published ticks (offers);
- an event published to the playbook, which the recall view `ticks` folds (published events feeding a view), and
  which the event trigger of the workflow `reacting` turns into one run (triggers); the holder of the playbook's
  partition carries both reactions, and hands each input for a run of another server's partition to that server.

Besides the rounds, `start_build` and `finish_build` carry one build of the prediction function `units` through
its candidate upload, its trainer's answer and its scoring, each part on another server.

Every request is safe to send again (a run id, an event id, the same answer: the seeds' retries), which is how a
request that met a server being killed is sent again to another. A `503 unavailable` is sent again after its
`Retry-After` and counted by route (`refused`): the test without kills requires none for workflow starts.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import httpx

from auto_runtime.ledger import partition_of
from tests.conformance.helpers import create_computation, new_playbook
from tests.conformance.prediction.helpers import create, uploaded
from tests.conformance.prediction.seeding import TRAINER
from tests.conformance.recall.documents import counting
from tests.e2e.server_process import ServerProcess
from tests.e2e.shared_servers import SETTLE_SECONDS, SharedServers
from tests.e2e.test_workflow_crashes import ECHO, ENDINGS, callee_ids, check_callees_once, check_once, history
from tests.functions.prediction.onnx_models import candidate

TICK = "com.acme.load.tick"
TICKING = """document: { dsl: '1.0.3', namespace: load, name: ticking, version: '1.0.0' }
do:
  - first: { set: '${ {"n": data["n"]} }' }
  - pause: { wait: PT0.3S }
  - echoed:
      call: run_definition
      with: { type: computation, name: echo, input: '${ {"n": data["n"]} }' }
  - last: { set: '${ {"n": data["n"] + 1} }' }
"""
APPROVE = """---
to: '{{ input.lead }}'
expires: PT30M
input:
  schema: { type: object, required: [lead], properties: { lead: { type: string } } }
output:
  schema: { type: object, required: [decision], properties: { decision: { type: string, enum: [go, hold] } } }
---
May it go out?
"""
ASKING = """document: { dsl: '1.0.3', namespace: load, name: asking, version: '1.0.0' }
do:
  - ask:
      call: run_definition
      with: { type: interaction, name: approve, input: { lead: '${ data["lead"] }' } }
  - after: { set: '${ {"decision": data["decision"]} }' }
"""
LISTENING = """document: { dsl: '1.0.3', namespace: load, name: listening, version: '1.0.0' }
do:
  - first: { set: '${ {"n": data["n"]} }' }
  - hear: { listen: { to: { one: { with: { type: com.acme.load.go } } } } }
  - last: { set: '${ {"heard": data[0]["n"]} }' }
"""
HEARING = f"""document: {{ dsl: '1.0.3', namespace: load, name: hearing, version: '1.0.0' }}
do:
  - hear: {{ listen: {{ to: {{ one: {{ with: {{ type: {TICK} }} }} }} }} }}
  - last: {{ set: {{ heard: true }} }}
"""
REACTING = f"""document: {{ dsl: '1.0.3', namespace: load, name: reacting, version: '1.0.0' }}
schedule:
  on: {{ one: {{ with: {{ type: {TICK} }} }} }}
do:
  - seen: {{ set: '${{ {{"n": data[0]["data"]["n"]}} }}' }}
"""
WORKFLOWS = {"ticking": TICKING, "asking": ASKING, "listening": LISTENING, "hearing": HEARING, "reacting": REACTING}
DATASET = (
    "period,series,units\n"
    + "".join(f"2025-{month:02d},a,{month}\n" for month in range(1, 13))
    + "".join(f"2025-{month:02d},b,{2 * month}\n" for month in range(1, 13))
).encode()
PREDICTION = """---
dataset: {dataset}
period: month
target: units
lags: 2
horizons: [1]
season: 1
backtest: 2
trainer: train-forecasts
---
Whole boxes.
"""
LINEAR = candidate([[-1], [2]], [0.5])
"""The exact model of both series (each grows by the same step every month): the build's one candidate."""


@dataclass
class MixedLoad:
    servers: SharedServers
    playbook: str
    ticking: dict[str, int] = field(default_factory=dict)
    """Each `ticking` run id with its input's `n`."""
    asking: dict[str, str] = field(default_factory=dict)
    """Each `asking` run id with the party its request goes to."""
    listening: dict[str, int] = field(default_factory=dict)
    """Each `listening` run id with the `n` of the event sent to it."""
    hearing: dict[str, int] = field(default_factory=dict)
    """Each `hearing` run id with its round (it hears that round's tick or a later one)."""
    answered: set[str] = field(default_factory=set)
    """The `asking` and `listening` runs whose answer or event was taken."""
    published: list[str] = field(default_factory=list)
    builds: list[str] = field(default_factory=list)
    refused: Counter[str] = field(default_factory=Counter)
    """The `503 unavailable` answers met, by what was asked (`start`, `answer`, `send`, ...)."""
    rounds: int = 0
    placement: list[set[int]] = field(default_factory=list)
    """With the partitions each server holds (`place`), round n's runs get ids in the partitions of server
    n mod the count, so that every server holds runs of the load; empty: ids at random."""
    partitions: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    # -- sending ------------------------------------------------------------------------------------------------

    def send(self, what: str, method: str, url: str, **options: Any) -> httpx.Response:
        """The request, to a server up picked at random; sent again to another while the one asked cannot be
        reached, and again after `Retry-After` (counted in `refused` under `what`) while it answers 503."""
        deadline = time.monotonic() + SETTLE_SECONDS
        while True:
            server = self.servers.any_alive()
            try:
                with server.client() as client:
                    response = client.request(method, url, **options)
            except httpx.TransportError:
                assert time.monotonic() < deadline, f"no server answered {method} {url}"
                time.sleep(0.05)
                continue
            if response.status_code == 500:
                raise AssertionError(incident(server, response))
            if response.status_code != 503:
                return response
            assert response.json()["reason"] == "unavailable", response.text
            with self.lock:
                self.refused[what] += 1
            assert time.monotonic() < deadline, f"{method} {url} still unavailable: {response.text}"
            time.sleep(min(float(response.headers.get("retry-after", "1")), 0.25))

    def place(self, held: list[list[int]], partitions: int) -> None:
        """Round n's runs go to the partitions `held[n mod len(held)]`, among `partitions`."""
        self.placement = [set(numbers) for numbers in held]
        self.partitions = partitions

    def new_run_id(self, number: int) -> str:
        """A new run id: in the partitions of round `number`'s server when the load is placed."""
        while True:
            run_id = str(uuid.uuid4())
            if not self.placement:
                return run_id
            if partition_of(run_id, self.partitions) in self.placement[number % len(self.placement)]:
                return run_id

    def start(self, name: str, value: dict[str, Any], number: int) -> str:
        run_id = self.new_run_id(number)
        body = {"input": value, "run_id": run_id}
        response = self.send("start", "POST", f"{self.playbook}/definitions/workflow/{name}/run", json=body)
        assert response.status_code == 200, response.text
        assert response.json()["run_id"] == run_id, response.text
        return run_id

    # -- the load -------------------------------------------------------------------------------------------------

    def round(self) -> None:
        """One run of each workflow and one published event, each to a server picked at random."""
        with self.lock:
            number = self.rounds
            self.rounds += 1
        ticking = self.start("ticking", {"n": number}, number)
        lead = f"lead-{number}"
        asking = self.start("asking", {"lead": lead}, number)
        listening = self.start("listening", {"n": number}, number)
        hearing = self.start("hearing", {}, number)
        with self.lock:
            self.ticking[ticking] = number
            self.asking[asking] = lead
            self.listening[listening] = number
            self.hearing[hearing] = number
        self.publish(f"tick-{number}", number)

    def publish(self, event_id: str, number: int) -> None:
        event = {"type": TICK, "source": "/load", "id": event_id, "data": {"n": number}}
        response = self.send("publish", "POST", f"{self.playbook}/events", json={"event": event})
        assert response.status_code in (200, 201), response.text
        with self.lock:
            self.published.append(event_id)

    def drive(self) -> int:
        """Answers each `asking` run's request once it is listed, and sends each `listening` run its event once it
        waits at its listen; answers how many runs are still to answer or send to."""
        with self.lock:
            asking = [(run_id, lead) for run_id, lead in self.asking.items() if run_id not in self.answered]
            listening = [(run_id, n) for run_id, n in self.listening.items() if run_id not in self.answered]
        for run_id, lead in asking:
            listed = self.send("list", "GET", f"{self.playbook}/interactions", params={"to": lead})
            assert listed.status_code == 200, listed.text
            requests = listed.json()["interactions"]
            if requests:
                (request,) = requests
                url = f"{self.playbook}/runs/{request['run_id']}/answer"
                answer = self.send("answer", "POST", url, json={"answer": {"decision": "go"}})
                assert answer.status_code == 200, answer.text
                with self.lock:
                    self.answered.add(run_id)
        for run_id, number in listening:
            if self.waits_at(run_id, "/do/1/hear"):
                event = {"type": "com.acme.load.go", "id": f"go-{run_id}", "data": {"n": number}}
                sent = self.send("send", "POST", f"{self.playbook}/runs/{run_id}/events", json={"event": event})
                assert sent.status_code == 200 or self.took_it_before(run_id, sent), sent.text
                with self.lock:
                    self.answered.add(run_id)
        with self.lock:
            return len(self.asking) + len(self.listening) - len(self.answered)

    def took_it_before(self, run_id: str, sent: httpx.Response) -> bool:
        """A `not_found` to a sent event whose run has ended: the same event sent before reached a server that
        recorded it and was killed before it answered, so `send` sent it again (the seeds: an event to a run that
        ended is `not_found`). That the run heard it once is checked with every run's output at the end."""
        if sent.status_code != 404 or sent.json()["reason"] != "not_found":
            return False
        run = self.send("get", "GET", f"{self.playbook}/runs/{run_id}")
        return run.status_code == 200 and run.json()["status"] != "started"

    def waits_at(self, run_id: str, reference: str) -> bool:
        response = self.send("history", "GET", f"{self.playbook}/runs/{run_id}/history", params={"limit": 100})
        assert response.status_code == 200, response.text
        return any(
            event["type"] == "step_waiting" and event["data"]["reference"] == reference
            for event in response.json()["events"]
        )

    def drive_all(self) -> None:
        """`drive` until every waiting run took its answer or its event."""
        deadline = time.monotonic() + SETTLE_SECONDS
        while self.drive():
            assert time.monotonic() < deadline, "some asking or listening runs never waited"
            time.sleep(0.1)

    # -- the build ------------------------------------------------------------------------------------------------

    def start_build(self) -> str:
        response = self.send("build", "POST", f"{self.playbook}/definitions/prediction/units/run", json=BUILD)
        assert response.status_code == 200, response.text
        run_id = str(response.json()["run_id"])
        self.builds.append(run_id)
        return run_id

    def finish_build(self, run_id: str) -> None:
        """The candidate uploaded (once the build asked its trainer) and the trainer's answer given, each to a
        server picked at random."""
        url = f"{self.playbook}/runs/{run_id}/build/candidates"
        upload = self.send("upload", "POST", url, content=LINEAR, headers={"Content-Type": "application/octet-stream"})
        assert upload.status_code == 200, upload.text
        answer = {"answer": {"candidates": [upload.json()["candidate"]]}}
        response = self.send("answer", "POST", f"{self.playbook}/runs/{run_id}/answer", json=answer)
        assert response.status_code == 200, response.text

    # -- what it must have left behind -------------------------------------------------------------------------------

    def run_ids(self) -> list[str]:
        with self.lock:
            return [*self.ticking, *self.asking, *self.listening, *self.hearing, *self.builds]

    def wait_ended(self) -> None:
        """Polls `list_runs` for runs still `started` until none of the load's is (the load must have stopped),
        and until the trigger started a run for every published tick."""
        ours = set(self.run_ids())
        deadline = time.monotonic() + SETTLE_SECONDS
        while True:
            still = ours & self.started()
            reacted = self.reacting()
            if not still and len(reacted) >= len(self.published) and not self.started(name="reacting"):
                return
            assert time.monotonic() < deadline, (
                f"{len(still)} run(s) neither ended nor waiting, such as {min(still, default=None)}; "
                f"{len(reacted)} triggered run(s) for {len(self.published)} ticks"
            )
            time.sleep(0.2)

    def reacting(self) -> dict[str, str]:
        """The runs the trigger of `reacting` started, with their status."""
        return {run_id: run["status"] for run_id, run in self.listed({"type": "workflow", "name": "reacting"}).items()}

    def started(self, name: str | None = None) -> set[str]:
        params: dict[str, Any] = {"status": "started"}
        if name is not None:
            params.update(type="workflow", name=name)
        return set(self.listed(params))

    def listed(self, filters: dict[str, Any]) -> dict[str, dict[str, Any]]:
        found: dict[str, dict[str, Any]] = {}
        params: dict[str, Any] = {**filters, "limit": 100}
        while True:
            response = self.send("list", "GET", f"{self.playbook}/runs", params=params)
            assert response.status_code == 200, response.text
            page = response.json()
            found.update({str(run["run_id"]): run for run in page["runs"]})
            if not page["has_more"]:
                return found
            params["cursor"] = page["next_cursor"]

    def check(self, client: httpx.Client) -> None:
        """Every run ended once with the output it should have, each callee (computation, interaction) ended
        once, the view folded each published event once, and the build activated the version it scored."""
        expected: dict[str, Any] = {run_id: {"n": n + 1} for run_id, n in self.ticking.items()}
        expected.update({run_id: {"decision": "go"} for run_id in self.asking})
        expected.update({run_id: {"heard": n} for run_id, n in self.listening.items()})
        expected.update({run_id: {"heard": True} for run_id in self.hearing})
        for run_id, output in expected.items():
            run = client.get(f"{self.playbook}/runs/{run_id}").json()
            assert run["status"] == "succeeded" and run["output"] == output, run
            events = history(client, self.playbook, run_id)
            check_once(events)
            check_callees_once(client, self.playbook, events)
            inputs = [event for event in events if event["type"] == "workflow_input_applied"]
            assert len({event["data"]["input"]["key"] for event in inputs}) == len(inputs), run_id
            if run_id in self.asking:
                assert len(callee_ids(events)) == 1, events
        self.check_reacted(client)
        for run_id in self.builds:
            run = client.get(f"{self.playbook}/runs/{run_id}").json()
            assert run["status"] == "succeeded" and run["output"]["state"] == "active", run
            kinds = Counter(event["type"] for event in history(client, self.playbook, run_id))
            assert kinds["run_started"] == 1 and sum(kinds[ending] for ending in ENDINGS) == 1, kinds
            assert kinds["version_built"] == 1 and kinds["build_ended"] == 1, kinds
        self.check_view(client)

    def check_reacted(self, client: httpx.Client) -> None:
        """The trigger started one run for each published tick, none twice, and each ended once with its tick."""
        reacted = self.reacting()
        assert len(reacted) == len(self.published), (len(reacted), len(self.published))
        ticks: Counter[int] = Counter()
        for run_id, status in reacted.items():
            assert status == "succeeded", (run_id, status)
            events = history(client, self.playbook, run_id)
            check_once(events)
            ticks[events[-1]["data"]["output"]["n"]] += 1
        assert [n for n, times in ticks.items() if times > 1] == [], "a tick started two runs"

    def check_view(self, client: httpx.Client) -> None:
        """The view `ticks` once it is live and has folded as many events as were published: each id once."""
        deadline = time.monotonic() + SETTLE_SECONDS
        while True:
            standing = client.get(f"{self.playbook}/definitions/recall/ticks").json()["standing"]
            if standing["state"] == "live" and standing["folded"] >= len(self.published):
                break
            assert standing["state"] in ("live", "rebuilding"), standing
            assert time.monotonic() < deadline, standing
            time.sleep(0.2)
        response = client.post(f"{self.playbook}/definitions/recall/ticks/run", json={})
        assert response.status_code == 200, response.text
        view = response.json()["output"]
        folded = Counter(view["ids"])
        assert [event_id for event_id, count in folded.items() if count > 1] == [], "an event folded twice"
        assert set(folded) == set(self.published), set(self.published) ^ set(folded)
        assert view["count"] == len(self.published) == standing["folded"], (view["count"], standing)


BUILD = {"input": {"build": {}}}


def incident(server: ServerProcess, response: httpx.Response) -> str:
    """A 500's answer with the lines of the server's log that name its incident (its `instance`), so that a
    failure met under load says what broke."""
    reference = str(response.json().get("instance", "")).removeprefix("urn:uuid:")
    lines = [line for line in server.log().splitlines() if reference and reference in line]
    return f"{response.request.method} {response.request.url} answered {response.text}\n" + "\n".join(lines[-5:])


def prepare(servers: SharedServers) -> MixedLoad:
    """A new playbook with everything the load runs, saved through one server (definitions are read by all)."""
    with servers.any_alive().client() as client:
        playbook = new_playbook(client)
        create_computation(client, playbook, "echo", ECHO)
        for kind, name, source in (
            ("interaction", "approve", APPROVE),
            ("interaction", "train-forecasts", TRAINER),
            ("recall", "ticks", counting(TICK)),
            *(("workflow", name, source) for name, source in WORKFLOWS.items()),
        ):
            saved = client.post(f"{playbook}/definitions/{kind}", json={"name": name, "source": source})
            assert saved.status_code == 201, saved.text
        dataset = uploaded(client, playbook, DATASET)["dataset"]
        made = create(client, playbook, "units", PREDICTION.format(dataset=dataset))
        assert made.status_code == 201, made.text
    return MixedLoad(servers, playbook)
