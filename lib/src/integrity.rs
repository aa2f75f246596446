//! End-of-turn integrity of the git folder: pin a baseline, check against it, restore what changed.
