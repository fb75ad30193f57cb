"""Training: optimizers, learning-rate schedules, replicas, checkpoints, and the session-driving
loop (hooks, monitored sessions, supervisor)."""
