"""``ferromx.profiler`` (placeholder until the profiler lands)."""
