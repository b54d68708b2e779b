"""Calculator graphs after MediaPipe: typed calculators, timestamped packets, a threaded scheduler.

See ``docs/pipeline.md``. Calculator modules under ``gpulite.pipeline.calculators`` register
themselves with :func:`register_calculator` and are discovered on first lookup.
"""

from gpulite.pipeline.builder import GraphBuilder
from gpulite.pipeline.calculator import Calculator
from gpulite.pipeline.config import GraphConfig, NodeConfig, parse_yaml
from gpulite.pipeline.context import CalculatorContext
from gpulite.pipeline.flow_limiter import FlowLimiter, FlowLimiterOptions
from gpulite.pipeline.gpu_image import GpuImage
from gpulite.pipeline.graph import Graph
from gpulite.pipeline.packet import DONE, UNSTARTED, Packet
from gpulite.pipeline.registry import get_calculator, register_calculator, registered_calculators, unregister_calculator
from gpulite.pipeline.tracing import NodeStats

__all__ = [
    "DONE", "UNSTARTED", "Calculator", "CalculatorContext", "FlowLimiter", "FlowLimiterOptions", "GpuImage", "Graph",
    "GraphBuilder", "GraphConfig", "NodeConfig", "NodeStats", "Packet", "get_calculator", "parse_yaml",
    "register_calculator", "registered_calculators", "unregister_calculator",
]
