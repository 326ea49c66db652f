"""The Tinker API: one handler per route, the calls behind them, the protobuf bodies."""
