"""Front-end of the embedded target: preprocessor, lexer, parser and AST for P4_16."""
