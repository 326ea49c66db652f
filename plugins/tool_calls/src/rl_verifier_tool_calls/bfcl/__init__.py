"""BFCL-style AST checking of function-call outputs, implemented from its published rules."""
