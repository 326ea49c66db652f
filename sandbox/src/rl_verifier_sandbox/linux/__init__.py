"""The Linux mechanisms the isolating backends stand on: per-job cgroups, the seccomp filter,
dedicated uids, host process ids."""
