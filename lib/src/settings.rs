//! Settings rules: which project settings files are guarded, how each is parsed, and which changes widen what the agent may do.
