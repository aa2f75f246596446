//! End-of-turn commit scans: refs at pin time against refs now, every new commit's changed paths checked against rules, with bounded work.
