"""A remedy that fails keeps the useful part of its exception (`remedies_child.failure_reason`): the innermost
cause's type and message, bounded. The chains below are built the way torch raises them (no torch here):
dynamo's BackendCompilerFailed keeps the backend's error in `inner_exception` and is raised `from None`;
inductor's InductorError wraps the lowering or compile error the same way."""

from __future__ import annotations

import pytest

from kernelpilot.workload.remedies_child import (
    REASON_CHARS,
    _remedy,
    exception_chain,
    failure_reason,
    raised_at,
)

HINT = (
    "Set TORCHDYNAMO_VERBOSE=1 for the internal stack trace (please do this especially if you're reporting a "
    'bug to PyTorch). For even more developer context, set TORCH_LOGS="+dynamo"'
)


class BackendCompilerFailed(RuntimeError):
    def __init__(self, inner: Exception) -> None:
        self.inner_exception = inner
        super().__init__(f"backend='inductor' raised:\n{type(inner).__name__}: {inner}\n\n{HINT}\n")


class InductorError(RuntimeError):
    def __init__(self, inner: Exception) -> None:
        self.inner_exception = inner
        super().__init__(f"{type(inner).__name__}: {inner}")


def _compile_failure(inner: Exception) -> BackendCompilerFailed:
    """Raise `inner` deep down, wrap it twice as torch does (`from None`), and return what the caller sees."""
    try:
        try:
            try:
                raise inner
            except Exception as e:
                raise InductorError(e) from None
        except Exception as e:
            raise BackendCompilerFailed(e) from None
    except BackendCompilerFailed as caught:
        return caught


def test_a_compiler_failure_names_the_innermost_error_and_its_last_lines():
    cmd = "\n".join(
        ["Command '['gcc', '/tmp/torchinductor_root/ab/cab.cpp', '-shared', '-fPIC']' returned 1.", "output:"]
        + [f"/tmp/x.cpp:{i}: note: candidate {i}" for i in range(40)]
        + ["/tmp/x.cpp:99:10: fatal error: Python.h: No such file or directory", "compilation terminated."]
    )
    exc = _compile_failure(OSError(cmd))
    assert [type(e).__name__ for e in exception_chain(exc)] == [
        "BackendCompilerFailed",
        "InductorError",
        "OSError",
    ]
    why = failure_reason(exc)
    assert why.startswith(
        "BackendCompilerFailed (backend='inductor' raised:) → InductorError → OSError: Command"
    )
    assert why.endswith("fatal error: Python.h: No such file or directory | compilation terminated.")
    assert "candidate 3 " not in why and "candidate 39" in why  # the first line and the last four
    assert "TORCHDYNAMO_VERBOSE" not in why
    assert len(why) <= REASON_CHARS


def test_cause_and_context_are_walked_and_a_long_message_is_bounded():
    try:
        try:
            raise KeyError("x" * 5000 + " the end")
        except KeyError as e:
            raise RuntimeError("capture failed") from e
    except RuntimeError as caught:
        why = failure_reason(caught, limit=200)
    assert why.startswith("RuntimeError (capture failed) → KeyError: 'xxx") and why.endswith(" the end'")
    assert len(why) <= 200 and " … " in why
    try:
        try:
            raise ValueError("inner")
        except ValueError:
            raise TypeError("while handling") from None  # suppressed context: still the real error
    except TypeError as caught:
        assert failure_reason(caught) == "TypeError (while handling) → ValueError: inner"
    assert failure_reason(ValueError("one line\n\n two ")) == "ValueError: one line | two"
    assert failure_reason(AssertionError()) == "AssertionError"


def test_a_cycle_in_the_chain_ends_the_walk():
    a, b = RuntimeError("a"), ValueError("b")
    a.__cause__, b.__cause__ = b, a
    assert exception_chain(a) == [a, b]


def test_the_child_reports_the_reason_and_where_it_was_raised():
    """`_remedy` with a build that fails as a compile does: status not_applicable, the inner reason, and the
    innermost frame as a note (no torch needed before the build raises)."""

    def build(notes: list[str]):
        raise _compile_failure(RuntimeError("LoweringException: AssertionError: strides\n  target: aten.mm"))

    res = _remedy(None, "torch_compile_reduce_overhead", build, lambda: None, None, 1)
    assert res["status"] == "not_applicable"
    assert res["why"].endswith("RuntimeError: LoweringException: AssertionError: strides | target: aten.mm")
    assert any(
        n.startswith("the innermost error was raised at ") and "_compile_failure" in n for n in res["notes"]
    )
    assert raised_at(ValueError("never raised")) is None


@pytest.mark.parametrize("limit", [40, 120, 700])
def test_the_bound_holds_for_any_limit(limit: int):
    exc = _compile_failure(RuntimeError("\n".join(f"line {i} " + "y" * 300 for i in range(20))))
    assert len(failure_reason(exc, limit=limit)) <= limit


def test_the_parent_keeps_the_childs_stderr_when_a_remedy_failed(monkeypatch: pytest.MonkeyPatch, tmp_path):
    """`run_remedies` with the child replaced by what it writes on a GPU where compile failed: the reason from
    the JSON, and the end of what torch logged on stderr as a note."""
    import json

    from kernelpilot.host import toolchain
    from kernelpilot.workload.models import CaptureTarget
    from kernelpilot.workload.remedies import STDERR_CHARS, run_remedies

    def fake_run(argv, timeout_s, cwd, env, check):
        out = argv[argv.index("--out") + 1]
        why = failure_reason(_compile_failure(RuntimeError("no working C compiler found")))
        doc = {
            "remedies": [{"name": "torch_compile_reduce_overhead", "status": "not_applicable", "why": why}]
        }
        with open(out, "w") as f:
            json.dump(doc, f)
        return toolchain.RunResult(
            tuple(argv), 0, "", "W1127 inductor log\n" + "x" * 2000 + " gcc: not found\n", 1.0
        )

    monkeypatch.setattr(toolchain, "run", fake_run)
    rep = run_remedies(CaptureTarget(spec="step.py:make", workdir=str(tmp_path)), 100.0, 60.0)
    comp = next(r for r in rep.remedies if r.name == "torch_compile_reduce_overhead")
    assert comp.why is not None and comp.why.endswith("RuntimeError: no working C compiler found")
    (note,) = [n for n in rep.notes if n.startswith("the remedies child's stderr ends: ")]
    assert (
        note.endswith(" gcc: not found")
        and len(note) <= len("the remedies child's stderr ends: ") + STDERR_CHARS
    )


class _FakeTensor:
    """A tensor as `runs_in_inference_mode` sees one: only `is_inference` (no torch here)."""

    def __init__(self, inference: bool) -> None:
        self.inference = inference

    def is_inference(self) -> bool:
        return self.inference


def test_an_inference_tensor_anywhere_in_the_output_marks_the_step():
    import types

    from kernelpilot.workload.remedies_child import runs_in_inference_mode, tensors_of

    torch = types.SimpleNamespace(Tensor=_FakeTensor)
    plain, inference = _FakeTensor(False), _FakeTensor(True)
    assert tensors_of(torch, {"a": [plain, (inference, 3)], "b": "text"}) == [plain, inference]
    assert runs_in_inference_mode(torch, {"logits": plain, "cache": [(plain, inference)]})
    assert not runs_in_inference_mode(torch, (plain, [plain], 1.0, None))
    assert not runs_in_inference_mode(torch, None)


def test_a_failed_compile_of_an_inference_mode_step_says_what_to_try():
    """The hint goes after the reason and where it was raised, only when the remedy could not apply."""
    from kernelpilot.workload.remedies_child import INFERENCE_MODE_HINT

    def build(notes: list[str]):
        raise _compile_failure(RuntimeError("Cannot set version_counter for inference tensor"))

    res = _remedy(None, "torch_compile_reduce_overhead", build, lambda: None, None, 1, INFERENCE_MODE_HINT)
    assert res["status"] == "not_applicable"
    assert res["why"].endswith("RuntimeError: Cannot set version_counter for inference tensor")
    assert res["notes"][0].startswith("the innermost error was raised at ")
    assert res["notes"][-1] == INFERENCE_MODE_HINT
    assert "torch.no_grad()" in INFERENCE_MODE_HINT and "pytorch/pytorch#169477" in INFERENCE_MODE_HINT
    plain = _remedy(None, "torch_compile_reduce_overhead", build, lambda: None, None, 1)
    assert INFERENCE_MODE_HINT not in plain["notes"]
