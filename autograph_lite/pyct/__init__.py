"""Python code tools: read a function's source, parse it with gast, templates, static analyses."""
