import json

from kernelpilot.foundation.errors import KernelpilotError


def test_error_hierarchy_has_message_and_hint():
    exc = KernelpilotError("the thing is wrong", "do the other thing")
    assert str(exc) == "the thing is wrong (fix: do the other thing)"
    assert exc.to_dict()["hint"] == "do the other thing"


def test_doctor_respects_env_override(run_cli, tmp_path, monkeypatch):
    fake = tmp_path / "nvdisasm"
    fake.write_text("#!/bin/sh\necho 'Cuda compilation tools, release 99.9, V99.9.1'\n")
    fake.chmod(0o755)
    monkeypatch.setenv("KERNELPILOT_NVDISASM", str(fake))
    r = run_cli("--json", "doctor", "--no-probe-gpus")
    assert r.code == 0
    tools = {t["name"]: t for t in json.loads(r.out)["tools"]}
    assert tools["nvdisasm"]["found"] and tools["nvdisasm"]["path"] == str(fake)
    assert "99.9" in tools["nvdisasm"]["version"]
    caps = {c["capability"]: c for c in json.loads(r.out)["capabilities"]}
    assert caps["SASS disassembly and instruction mix"]["available"]


def test_bad_type_names_the_flag(run_cli):
    from kernelpilot.adapters.cli import run_capability
    from kernelpilot.capabilities import Capability
    from kernelpilot.foundation.errors import InvalidArgumentError
    from kernelpilot.host.doctor import DoctorRequest, DoctorResult

    cap = Capability(
        tool="t",
        command=("t",),
        summary="",
        description="",
        request=DoctorRequest,
        result=DoctorResult,
        target="kernelpilot.host.doctor:run_doctor",
    )
    try:
        run_capability(cap, {"probe_gpus": "maybe"})
    except InvalidArgumentError as exc:
        assert "--probe-gpus" in exc.message
    else:
        raise AssertionError("expected InvalidArgumentError")
