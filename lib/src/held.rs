//! Held writes: a durable, crash-safe store of writes that wait for the owner's approval.
