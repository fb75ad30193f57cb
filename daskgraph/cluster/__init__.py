"""Clusters and processes: the devices of a cluster's workers, their liveness, the embedded local
cluster, servers, TLS, GPU worker set-up and quiet shutdown; nothing here knows graphs."""
