//! The watcher (filled in below).
