//! Enumeration of every config value a repository can make git read, with its origin (file, scope, include chain), following `include.path` and `includeIf.*.path` as a superset.
