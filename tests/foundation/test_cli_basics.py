import json


def test_doctor_text_and_json(run_cli):
    r = run_cli("doctor", "--no-probe-gpus")
    assert r.code == 0, r.err
    assert "Tools:" in r.out and "Capabilities:" in r.out
    r = run_cli("--json", "doctor", "--no-probe-gpus")
    data = json.loads(r.out)
    names = [t["name"] for t in data["tools"]]
    assert names[:2] == ["ncu", "rocprofv3"]
    assert all(t["env_var"].startswith("KERNELPILOT_") for t in data["tools"])


def test_unknown_option_is_an_error(run_cli):
    r = run_cli("doctor", "--bogus")
    assert r.code == 2
    assert "--bogus" in r.err
