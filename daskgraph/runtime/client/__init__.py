"""The client side: ``Session``, its connection to a cluster, fetches and feeds, and dispatching a
run's programs to the workers."""
