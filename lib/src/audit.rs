//! Audit of repositories and workspaces with no baseline: planted hooks, armed config, redirects, nested repositories; JSON and SARIF output.
