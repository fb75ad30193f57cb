"""Running a graph: the planner places and lowers it into programs, workers run them, the client
ties a run together."""
