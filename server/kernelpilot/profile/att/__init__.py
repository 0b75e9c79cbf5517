"""AMD rocprofv3 advanced thread trace (ATT): read a decoded dispatch folder, analyse it, diagnose it.

Owns the ATT folder format (`reader`), the numbers an agent needs from it (`analysis`), the AMD findings
drawn from them (`diagnose`), the bottleneck verdict they give (`verdict`), the request/result models and
their text view (`models`) and the thread-trace capture argv (`capture`). Not the kernel-trace / counter
CSVs (those are `profile.rocprof`).
"""
