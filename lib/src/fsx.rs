//! No-follow file system access: every path below a trusted root is opened component by component with `openat` + `O_NOFOLLOW`, so a link swapped in for a folder is refused, never followed.
