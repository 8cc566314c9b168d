"""Reading a synthesized template: a construct's logical id and properties, the statements a role
is granted, and the folder in cdk.out an asset is zipped from."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aws_cdk as cdk
from aws_cdk.assertions import Template
from constructs import Construct

# What the operator's tool calls on the DLQ and the parking lot, and on the state table.
OPERATOR_QUEUE_ACTIONS = [
    "sqs:ChangeMessageVisibility",
    "sqs:DeleteMessage",
    "sqs:GetQueueAttributes",
    "sqs:ReceiveMessage",
    "sqs:SendMessage",
]
OPERATOR_TABLE_ACTIONS = [
    "dynamodb:BatchGetItem",
    "dynamodb:BatchWriteItem",
    "dynamodb:DeleteItem",
    "dynamodb:GetItem",
    "dynamodb:PutItem",
]

# What it calls on the audit trail's log group.
OPERATOR_AUDIT_ACTIONS = ["logs:CreateLogStream", "logs:FilterLogEvents", "logs:PutLogEvents"]


def as_list(value: Any) -> list[Any]:
    """A policy field that holds one value or a list of them, as a list."""
    return value if isinstance(value, list) else [value]


def logical_id(construct: Construct) -> str:
    """The template's name for the resource behind ``construct``."""
    child = construct.node.default_child
    assert isinstance(child, cdk.CfnElement)
    return cdk.Stack.of(construct).get_logical_id(child)


def arn_of(construct: Construct) -> dict[str, Any]:
    """The template's reference to the ARN of the resource behind ``construct``."""
    return {"Fn::GetAtt": [logical_id(construct), "Arn"]}


def properties(template: Template, construct: Construct) -> dict[str, Any]:
    found: dict[str, Any] = template.to_json()["Resources"][logical_id(construct)]["Properties"]
    return found


def role_statements(template: Template, function: dict[str, Any]) -> list[dict[str, Any]]:
    """Every statement of the policies attached to ``function``'s role."""
    role_ref = function["Role"]["Fn::GetAtt"][0]
    policies = template.find_resources("AWS::IAM::Policy")
    return [
        statement
        for policy in policies.values()
        if {"Ref": role_ref} in policy["Properties"]["Roles"]
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
    ]


def statements_on(statements: list[dict[str, Any]], resource_id: str) -> list[dict[str, Any]]:
    """The statements whose resources include ``resource_id``'s ARN (or the resource itself)."""

    def names(resource: Any) -> bool:
        return resource_id in str(resource)

    return [s for s in statements if any(names(r) for r in as_list(s["Resource"]))]


def key_actions(statements: list[dict[str, Any]], key_ref: Any) -> set[str]:
    """Every action ``statements`` allow on the key ``key_ref`` (a GetAtt or an ARN)."""
    return {
        action
        for statement in statements
        if key_ref in as_list(statement["Resource"])
        for action in as_list(statement["Action"])
    }


def via(service: str, region: str | None = None) -> dict[str, Any]:
    """A key statement's condition: used through ``service`` only, in ``region`` (the stack's when
    None), as the template spells it."""
    in_region: list[Any] = (
        [f"{service}.{region}."] if region else [f"{service}.", {"Ref": "AWS::Region"}, "."]
    )
    return {"StringEquals": {"kms:ViaService": {"Fn::Join": ["", [*in_region, {"Ref": "AWS::URLSuffix"}]]}}}


def key_uses(statements: list[dict[str, Any]], key_ref: Any) -> dict[str, set[str]]:
    """The actions ``statements`` allow on the key ``key_ref``, by the service they are allowed
    through (its ``kms:ViaService`` endpoint's first label; "" for none)."""
    uses: dict[str, set[str]] = {}
    for statement in statements:
        if key_ref not in as_list(statement["Resource"]):
            continue
        endpoint = statement.get("Condition", {}).get("StringEquals", {}).get("kms:ViaService")
        service = _first_label(endpoint) if endpoint is not None else ""
        uses.setdefault(service, set()).update(as_list(statement["Action"]))
    return uses


def _first_label(endpoint: Any) -> str:
    first = endpoint if isinstance(endpoint, str) else endpoint["Fn::Join"][1][0]
    return str(first).split(".")[0]


def asset_dir(assembly: Path, template: Template, construct: Construct) -> Path:
    """The folder in the cloud assembly ``assembly`` that the function's code or the layer's
    content is zipped from."""
    found = properties(template, construct)
    key = (found.get("Code") or found["Content"])["S3Key"]
    return assembly / f"asset.{key.removesuffix('.zip')}"
