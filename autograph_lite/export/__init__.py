"""Exporters of a traced graph to other formats: `onnx.export_onnx` (needs the onnx extra)."""
from .onnx import export_onnx

__all__ = ["export_onnx"]
