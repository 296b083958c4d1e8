"""One module per op or op family; every module here is imported by ``builtin_op_resolver``."""
