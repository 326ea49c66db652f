"""BFCL mode: bfcl-eval's decoders, AST checker and relevance rule, reimplemented."""
