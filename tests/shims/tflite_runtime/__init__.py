"""A ``tflite_runtime`` package that is this project: for running real packages written for
``tflite_runtime.interpreter`` unmodified (put ``tests/shims`` on ``sys.path``)."""
