"""Predicting existing TTNN configs and scoring the model on published measurements."""
