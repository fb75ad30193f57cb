"""TensorBoard summaries: the summary ops, event-file writing and reading, ``tf.summary``'s
names."""
