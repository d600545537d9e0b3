"""The package's version, written once: hatch reads it for the wheel, ``trt_widget.__version__`` re-exports it."""

__version__ = "0.1.0"
