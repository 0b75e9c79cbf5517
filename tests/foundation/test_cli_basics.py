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


def test_top_level_help_lists_every_command(run_cli):
    from kernelpilot.capabilities import all_capabilities

    r = run_cli("--help")
    assert r.code == 0, r.err
    for word in {c.command[0] for c in all_capabilities()}:
        assert word in r.out


def test_every_command_help_is_the_same_from_the_quick_parser(run_cli):
    """`kernelpilot isa resources ...` builds only the isa module's parsers: same options, same help."""
    import argparse

    from kernelpilot.adapters.cli import build_parser
    from kernelpilot.capabilities import all_capabilities, capabilities_for_command

    def leaf(parser: argparse.ArgumentParser, command: tuple[str, ...]) -> argparse.ArgumentParser:
        for word in command:
            sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
            parser = sub.choices[word]
        return parser

    full = build_parser([])
    quick_seen = 0
    for cap in all_capabilities():
        argv = [*cap.command, "--help"]
        quick = build_parser(argv)
        quick_seen += capabilities_for_command(list(cap.command)) is not None
        assert leaf(quick, cap.command).format_help() == leaf(full, cap.command).format_help()
        r = run_cli(*argv)
        assert r.code == 0 and "usage: kernelpilot " + " ".join(cap.command) in r.out, r.err
    assert quick_seen >= 6  # at least the isa commands take the quick path
    assert capabilities_for_command(["isa"]) is None  # a group alone: everything, for its full help
    assert capabilities_for_command(["isa", "nope"]) is None
    assert capabilities_for_command(["../etc"]) is None
