"""The worker side: runs programs and keeps a session's state on a Dask worker; it never imports
the planner, the client or training."""
