"""The command line: the parser and its environment flags, the shared argument types, one module per
command (``commands/``), and what only commands use (the HTTP endpoint, the demo, standalone's log
of transitions).
"""
