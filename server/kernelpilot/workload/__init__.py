"""Workload triage: from a model step to the kernels worth optimizing (see `workload.names`, `workload.join`,
`workload.drill`)."""
