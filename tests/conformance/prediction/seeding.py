"""Playbooks with interaction functions for the prediction tests, created through the real server.

A prediction function names an interaction function as its `trainer` and may name one as its `approve`
(prediction-format §3); its save reads that function from the `definitions` projection. `seed` creates a playbook
and these functions with `create_definition`, so the interaction type checks each document as it would any.
"""

from __future__ import annotations

import httpx

from tests.conformance.helpers import new_playbook

ORG = "acme"
TRAINER = """---
description: Trains forecasts
to: '{{ input.function }}-trainers'
expires: P2D
output:
  schema:
    type: object
---
Please train {{ input.function }}.
"""
CALLS_A_TOOL = """---
call:
  server: models
  tool: train
output:
  schema:
    type: object
---
"""
READS_REPLIES = """---
to: data-team
expires: P1D
deliver:
  server: chat
  tool: post
  sent:
    conversation: /channel
    id: /ts
replies:
  read:
    list: /messages
    order: oldest_first
    each: { id: /ts, sender: /user, text: /text }
output:
  schema:
    type: object
---
Train it.
"""
APPROVER = """---
to: lead
expires: P1D
output:
  schema:
    type: object
    required: [decision]
    properties:
      decision: { type: string, enum: [approve, reject] }
---
Approve {{ input.version }}?
"""
NO_DECISION = """---
to: lead
expires: P1D
output:
  schema:
    type: object
    properties:
      note: { type: string }
---
Look at it.
"""
UNRENDERABLE = """---
to: '{{ input.team }}'
expires: P1D
output:
  schema:
    type: object
---
Train it.
"""
QUICK = """---
to: quick-team
expires: PT1M
output:
  schema:
    type: object
---
Train it within the minute.
"""
INTERACTIONS = {
    "train-forecasts": TRAINER,
    "call-tool": CALLS_A_TOOL,
    "read-replies": READS_REPLIES,
    "approve-versions": APPROVER,
    "no-decision": NO_DECISION,
    "unrenderable": UNRENDERABLE,
    "quick-trainer": QUICK,
}


def seed(client: httpx.Client) -> str:
    """A new playbook in the org `acme` with the interaction functions of `INTERACTIONS`, created through the
    real server (`create_playbook`, `create_definition`); its URL prefix."""
    playbook = new_playbook(client, ORG)
    for name, source in INTERACTIONS.items():
        response = client.post(f"{playbook}/definitions/interaction", json={"name": name, "source": source})
        assert response.status_code == 201, response.text
    return playbook
