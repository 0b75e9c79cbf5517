"""What every concept builds on: the error hierarchy, request/result base models, progress, bundled
paths, atomic file writes, input validation and the JSON-schema cache. Imports nothing else of kernelpilot."""
