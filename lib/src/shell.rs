//! agent-shell: the launcher for the agent's commands (defused environment, shim first on PATH, Docker socket selection).
