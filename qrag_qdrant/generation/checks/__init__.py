"""The answer's checks: citations, grounding, the supported mark, readings and planted instructions."""
