"""The pure core: periods, planning, the state machine, recovery, validation."""
