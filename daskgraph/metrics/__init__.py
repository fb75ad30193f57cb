"""TensorFlow 1's ``tf.metrics``: streaming metrics as local variables and update ops."""
