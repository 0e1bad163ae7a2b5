"""Resolver dependency injection for MCPServer tools, prompts and resource templates.

A tool parameter annotated Annotated[T, Resolve(fn)] is filled by running the
resolver fn before the tool body, instead of from the LLM-supplied arguments.
Resolvers form a DAG analysed at registration (`plan`) and run per call
(`run`): concurrently, at most once each, asking the client when a resolver
returns a question marker.
"""

from .markers import Elicit, ListRoots, Resolve, Sample
from .plan import ResolverPlan, build_resolver_plans, find_resolved_parameters, returns_input_required
from .run import resolve_arguments

__all__ = [
    "Elicit",
    "ListRoots",
    "Resolve",
    "ResolverPlan",
    "Sample",
    "build_resolver_plans",
    "find_resolved_parameters",
    "resolve_arguments",
    "returns_input_required",
]
