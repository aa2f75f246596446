//! The agent's git: the session's rules on worktrees and persistent config writes, checked against the effective repository.
