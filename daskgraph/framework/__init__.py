"""Building graphs: dtypes, shapes, device specs, operations and tensors, the graph, its scopes,
and the op and gradient registries."""
