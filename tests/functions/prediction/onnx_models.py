"""Small, exact ONNX models built offline with the `onnx` helper API (prediction-format §15)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def candidate(
    weights: Sequence[Sequence[float]],
    half_width: Sequence[float],
    bias: Sequence[float] | None = None,
    opset: int = 17,
    names: tuple[str, str, str, str] = ("history", "value", "low", "high"),
) -> bytes:
    """value = history @ weights + bias; low/high = value -/+ half_width (per horizon)."""
    w = np.asarray(weights, np.float32)
    lags, horizons = w.shape
    b = np.zeros(horizons, np.float32) if bias is None else np.asarray(bias, np.float32)
    hw = np.asarray(half_width, np.float32)
    inp, val, lo, hi = names
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", [inp, "w"], ["m"]),
            helper.make_node("Add", ["m", "b"], [val]),
            helper.make_node("Sub", [val, "hw"], [lo]),
            helper.make_node("Add", [val, "hw"], [hi]),
        ],
        "candidate",
        [helper.make_tensor_value_info(inp, TensorProto.FLOAT, ["N", lags])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, ["N", horizons]) for n in (val, lo, hi)],
        initializer=[numpy_helper.from_array(a, n) for a, n in ((w, "w"), (b, "b"), (hw, "hw"))],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)
    onnx.checker.check_model(model)
    return model.SerializeToString()


def allocating(lags: int, horizons: int, elements: int = 400_000_000) -> bytes:
    """A model with the candidate's signature whose `ConstantOfShape` of `elements` floats fails its allocation
    under a small memory limit (1.6 GB for the default 400,000,000)."""
    graph = helper.make_graph(
        [
            helper.make_node(
                "ConstantOfShape", ["size"], ["big"], value=helper.make_tensor("v", TensorProto.FLOAT, [1], [1.0])
            ),
            helper.make_node("ReduceSum", ["big"], ["total"], keepdims=1),
            helper.make_node("MatMul", ["history", "w"], ["m"]),
            helper.make_node("Add", ["m", "total"], ["value"]),
            helper.make_node("Identity", ["value"], ["low"]),
            helper.make_node("Identity", ["value"], ["high"]),
        ],
        "allocating",
        [helper.make_tensor_value_info("history", TensorProto.FLOAT, ["N", lags])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, ["N", horizons]) for n in ("value", "low", "high")],
        initializer=[
            numpy_helper.from_array(np.asarray([elements], np.int64), "size"),
            numpy_helper.from_array(np.ones((lags, horizons), np.float32), "w"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model)
    return model.SerializeToString()


def endless(lags: int, horizons: int) -> bytes:
    """A model with the candidate's signature that never finishes: a `Loop` of 2⁶² steps adding one each."""
    body = helper.make_graph(
        [
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
            helper.make_node("Add", ["total_in", "one"], ["total_out"]),
        ],
        "body",
        [
            helper.make_tensor_value_info("step", TensorProto.INT64, []),
            helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
            helper.make_tensor_value_info("total_in", TensorProto.FLOAT, [1]),
        ],
        [
            helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
            helper.make_tensor_value_info("total_out", TensorProto.FLOAT, [1]),
        ],
        initializer=[numpy_helper.from_array(np.ones(1, np.float32), "one")],
    )
    graph = helper.make_graph(
        [
            helper.make_node("Loop", ["steps", "yes", "start"], ["total"], body=body),
            helper.make_node("MatMul", ["history", "w"], ["m"]),
            helper.make_node("Add", ["m", "total"], ["value"]),
            helper.make_node("Identity", ["value"], ["low"]),
            helper.make_node("Identity", ["value"], ["high"]),
        ],
        "endless",
        [helper.make_tensor_value_info("history", TensorProto.FLOAT, ["N", lags])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, ["N", horizons]) for n in ("value", "low", "high")],
        initializer=[
            numpy_helper.from_array(np.asarray(2**62, np.int64), "steps"),
            numpy_helper.from_array(np.asarray(True), "yes"),
            numpy_helper.from_array(np.zeros(1, np.float32), "start"),
            numpy_helper.from_array(np.ones((lags, horizons), np.float32), "w"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model)
    return model.SerializeToString()


def _gated(
    lags: int,
    weights: list[list[float]],
    half_width: float,
    gate: float,
    name: str,
    *,
    past: str,
    steps_per_unit: float = 0.0,
) -> bytes:
    """A linear candidate (`history @ weights ± half_width`, one horizon) that behaves only while every history
    value is at most `gate`; past it, it loops without end (`endless`), loops `steps_per_unit` steps for each unit
    its largest history value passes the gate and then answers (`slow`), allocates 1.6 GB (`allocating`) or
    answers NaN (`not_finite`: the square root of a negative)."""
    nodes = [
        helper.make_node("ReduceMax", ["history"], ["top"], keepdims=0),
        helper.make_node("MatMul", ["history", "w"], ["m"]),
    ]
    initializers = [
        numpy_helper.from_array(np.asarray(weights, np.float32), "w"),
        numpy_helper.from_array(np.asarray(gate, np.float32), "gate"),
        numpy_helper.from_array(np.asarray([half_width], np.float32), "hw"),
        numpy_helper.from_array(np.zeros(1, np.float32), "zero"),
    ]
    if past == "allocating":
        nodes += [
            helper.make_node("Greater", ["top", "gate"], ["past"]),
            helper.make_node("Cast", ["past"], ["past_size"], to=TensorProto.INT64),
            helper.make_node("Mul", ["past_size", "big"], ["size"]),
            helper.make_node("Reshape", ["size", "one_dim"], ["shape"]),
            helper.make_node(
                "ConstantOfShape", ["shape"], ["block"], value=helper.make_tensor("v", TensorProto.FLOAT, [1], [1.0])
            ),
            helper.make_node("ReduceSum", ["block"], ["total"], keepdims=1),
            helper.make_node("Mul", ["total", "zero"], ["nothing"]),
        ]
        initializers += [
            numpy_helper.from_array(np.asarray(400_000_000, np.int64), "big"),
            numpy_helper.from_array(np.asarray([1], np.int64), "one_dim"),
        ]
    elif past in ("endless", "slow"):
        body = helper.make_graph(
            [
                helper.make_node("Identity", ["cond_in"], ["cond_out"]),
                helper.make_node("Add", ["t_in", "one"], ["t_out"]),
            ],
            "body",
            [
                helper.make_tensor_value_info("step", TensorProto.INT64, []),
                helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
                helper.make_tensor_value_info("t_in", TensorProto.FLOAT, [1]),
            ],
            [
                helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
                helper.make_tensor_value_info("t_out", TensorProto.FLOAT, [1]),
            ],
            initializer=[numpy_helper.from_array(np.ones(1, np.float32), "one")],
        )
        if past == "endless":
            nodes += [
                helper.make_node("Greater", ["top", "gate"], ["past"]),
                helper.make_node("Cast", ["past"], ["past_steps"], to=TensorProto.INT64),
                helper.make_node("Mul", ["past_steps", "many"], ["steps"]),
            ]
            initializers.append(numpy_helper.from_array(np.asarray(2**62, np.int64), "many"))
        else:
            nodes += [
                helper.make_node("Sub", ["top", "gate"], ["over"]),
                helper.make_node("Relu", ["over"], ["past"]),
                helper.make_node("Mul", ["past", "per_unit"], ["past_steps"]),
                helper.make_node("Cast", ["past_steps"], ["steps"], to=TensorProto.INT64),
            ]
            initializers.append(numpy_helper.from_array(np.asarray(steps_per_unit, np.float32), "per_unit"))
        nodes += [
            helper.make_node("Loop", ["steps", "yes", "zero"], ["total"], body=body),
            helper.make_node("Mul", ["total", "zero"], ["nothing"]),
        ]
        initializers.append(numpy_helper.from_array(np.asarray(True), "yes"))
    else:
        nodes += [
            helper.make_node("Sub", ["gate", "top"], ["room"]),
            helper.make_node("Sqrt", ["room"], ["root"]),
            helper.make_node("Mul", ["root", "zero"], ["nothing"]),
        ]
    nodes += [
        helper.make_node("Add", ["m", "nothing"], ["value"]),
        helper.make_node("Sub", ["value", "hw"], ["low"]),
        helper.make_node("Add", ["value", "hw"], ["high"]),
    ]
    graph = helper.make_graph(
        nodes,
        name,
        [helper.make_tensor_value_info("history", TensorProto.FLOAT, ["N", lags])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, ["N", 1]) for n in ("value", "low", "high")],
        initializer=initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model)
    return model.SerializeToString()


def endless_past(lags: int, weights: list[list[float]], half_width: float, gate: float) -> bytes:
    """A linear candidate that never finishes once a history value passes `gate`."""
    return _gated(lags, weights, half_width, gate, "endless_past", past="endless")


def allocating_past(lags: int, weights: list[list[float]], half_width: float, gate: float) -> bytes:
    """A linear candidate that allocates 1.6 GB once a history value passes `gate`."""
    return _gated(lags, weights, half_width, gate, "allocating_past", past="allocating")


def not_finite_past(lags: int, weights: list[list[float]], half_width: float, gate: float) -> bytes:
    """A linear candidate whose value is NaN once a history value passes `gate`."""
    return _gated(lags, weights, half_width, gate, "not_finite_past", past="not_finite")


def slow_past(lags: int, weights: list[list[float]], half_width: float, gate: float, steps_per_unit: float) -> bytes:
    """A linear candidate that loops `steps_per_unit` steps for each unit its largest history value passes `gate`
    (a few microseconds a step), then answers as the linear one."""
    return _gated(lags, weights, half_width, gate, "slow_past", past="slow", steps_per_unit=steps_per_unit)
