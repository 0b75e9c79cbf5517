"""The machine kernelpilot runs on: external programs (`toolchain`: discovery, argv-only calls, timeouts)
and the `doctor` check of what is installed."""
