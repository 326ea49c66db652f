"""What every backend does with a job: its file names, environment and rlimits, host paths,
a host process run with a deadline, the shared Result."""
